//! The method table: every JSON-RPC method the server answers, in one place. Descriptors come
//! from the schema (`protocol::generated::methods`, `g::`) or, for the session lifecycle the
//! schema leaves out, from `protocol::methods` (`h::`). A name not listed here gets `-32601`.

use protocol::generated::methods as g;
use protocol::methods as h;

use crate::handlers::{
    account, agents, auth, canvas, client_metadata, commands, discovery, factory, fleet, history, inference, mcp,
    mcp_extras, not_offered, permission_paths, plugins, providers, quota, rewind, sandbox, server, session,
    session_extras, session_fs, session_services, session_state, sessions_admin, shell, tasks, tenant_usage,
    turn_control, ui, user_settings, workflow, workspace_extras, workspace_notes, workspaces,
};
use crate::table::{method_table, Entry};

method_table! {
    // Server: handshake, status, catalogues.
    Connect: g::Connect => server::connect, lane |_p| None, aliases [];
    Ping: g::Ping => server::ping, lane |_p| None, aliases [];
    StatusGet: h::StatusGet => server::status, lane |_p| None, aliases [];
    AuthGetStatus: h::AuthGetStatus => server::auth_status, lane |_p| None, aliases [];
    ModelsList: g::ModelsList => server::models_list, lane |_p| None, aliases [];
    ToolsList: g::ToolsList => server::tools_list, lane |_p| None, aliases [];
    AccountGetQuota: g::AccountGetQuota => auth::get_quota, lane |_p| None, aliases [];
    AccountGetCurrentAuth: g::AccountGetCurrentAuth => account::get_current_auth, lane |_p| None, aliases [];
    AccountGetAllUsers: g::AccountGetAllUsers => account::get_all_users, lane |_p| None, aliases [];
    AccountLogin: g::AccountLogin => account::login, lane |_p| None, aliases [];
    AccountLogout: g::AccountLogout => account::logout, lane |_p| None, aliases [];
    RuntimeShutdown: g::RuntimeShutdown => server::runtime_shutdown, lane |_p| None, aliases [];
    CommandsList: g::CommandsList => commands::list_first_message, lane |_p| None, aliases [];
    TenantGetUsage: h::TenantGetUsage => tenant_usage::get, lane |_p| None, aliases [];

    // Features Skipper does not have, answered as the original answers without them.
    ConnectorsGetAccounts: g::ConnectorsGetAccounts => not_offered::connectors_accounts, lane |_p| None, aliases [];
    ConnectorsGetCapabilities: g::ConnectorsGetCapabilities
        => not_offered::connectors_capabilities, lane |_p| None, aliases [];
    ConnectorsList: g::ConnectorsList => not_offered::connectors_list, lane |_p| None, aliases [];
    ConnectorsRefresh: g::ConnectorsRefresh => not_offered::connectors_refresh, lane |_p| None, aliases [];
    ManagedSettingsRead: g::ManagedSettingsRead => not_offered::managed_settings_read, lane |_p| None, aliases [];
    ManagedSettingsResolve: g::ManagedSettingsResolve
        => not_offered::managed_settings_resolve, lane |_p| None, aliases [];
    ManagedSettingsClearCache: g::ManagedSettingsClearCache
        => not_offered::managed_settings_clear_cache, lane |_p| None, aliases [];
    HostListSessions: g::HostListSessions => not_offered::host_list_sessions, lane |_p| None, aliases [];
    HostDispose: g::HostDispose => not_offered::host_dispose, lane |_p| None, aliases [];
    HostPublishSession: g::HostPublishSession => not_offered::host_publish_session, lane |_p| None, aliases [];
    HostUnpublishSession: g::HostUnpublishSession
        => not_offered::host_unpublish_session, lane |_p| None, aliases [];
    RegisterExtensionLaunchProvider: g::RegisterExtensionLaunchProvider
        => not_offered::register_extension_launch_provider, lane |_p| None, aliases [];

    // SDK-hosted inference: a client performs the model's HTTP requests.
    LlmInferenceSetProvider: g::LlmInferenceSetProvider => inference::set_provider, lane |_p| None, aliases [];
    LlmInferenceHttpResponseStart: g::LlmInferenceHttpResponseStart
        => inference::response_start, lane |_p| None, aliases [];
    LlmInferenceHttpResponseChunk: g::LlmInferenceHttpResponseChunk
        => inference::response_chunk, lane |_p| None, aliases [];

    // Sessions: lifecycle.
    SessionCreate: h::SessionCreate => session::create, lane |p| p.session_id.as_deref(), aliases [], follower Read;
    SessionResume: h::SessionResume => session::resume, lane |p| p.session_id.as_deref(), aliases [], follower Read;
    SessionGetMessages: h::SessionGetMessages => session::get_messages, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionDetach: h::SessionDetach => session::detach, lane |p| Some(&p.session_id), aliases ["session.destroy"], follower Read;
    SessionDelete: h::SessionDelete => session::delete, lane |p| Some(&p.session_id), aliases [], follower Handler;
    SessionList: h::SessionList => session::list, lane |_p| None, aliases [];
    SessionGetLastId: h::SessionGetLastId => session::last_id, lane |_p| None, aliases [];
    SessionGetMetadata: h::SessionGetMetadata => session::metadata, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionsFork: g::SessionsFork => session::fork, lane |_p| None, aliases [], follower Read;
    SessionGetForeground: h::SessionGetForeground => session::get_foreground, lane |_p| None, aliases [];
    SessionSetForeground: h::SessionSetForeground => session::set_foreground, lane |_p| None, aliases [];

    // Sessions: conversation and pending client work.
    SessionSend: g::SessionSend => session::send, lane |p| Some(&p.session_id), aliases [], follower Forward;
    SessionAbort: g::SessionAbort => session::abort, lane |p| Some(&p.session_id), aliases [], follower Forward;
    SessionLog: g::SessionLog => session::log, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsHandlePendingPermissionRequest: g::SessionPermissionsHandlePendingPermissionRequest
        => session::answer_permission, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsSetApproveAll: g::SessionPermissionsSetApproveAll
        => session::set_approve_all, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsPendingRequests: g::SessionPermissionsPendingRequests
        => session::pending_permissions, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionToolsListPendingRequests: g::SessionToolsListPendingRequests
        => session::pending_tool_calls, lane |p| Some(&p.session_id), aliases [], follower Forward;
    SessionToolsHandlePendingToolCall: g::SessionToolsHandlePendingToolCall
        => session::answer_tool_call, lane |p| Some(&p.session_id), aliases [];
    SessionToolsSet: g::SessionToolsSet => session::set_tools, lane |p| Some(&p.session_id), aliases [];

    // Sessions: model, mode, plan.
    SessionModelGetCurrent: g::SessionModelGetCurrent => session_state::model_get, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionModelSwitchTo: g::SessionModelSwitchTo => session_state::model_switch, lane |p| Some(&p.session_id), aliases [];
    SessionModeGet: g::SessionModeGet => session_state::mode_get, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionModeSet: g::SessionModeSet => session_state::mode_set, lane |p| Some(&p.session_id), aliases [];
    SessionPlanRead: g::SessionPlanRead => session_state::plan_read, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionPlanUpdate: g::SessionPlanUpdate => session_state::plan_update, lane |p| Some(&p.session_id), aliases [];
    SessionPlanDelete: g::SessionPlanDelete => session_state::plan_delete, lane |p| Some(&p.session_id), aliases [];
    SessionNameGet: g::SessionNameGet => session_state::name_get, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionNameSet: g::SessionNameSet => session_state::name_set, lane |p| Some(&p.session_id), aliases [];
    SessionNameSetAuto: g::SessionNameSetAuto => session_state::name_set_auto, lane |p| Some(&p.session_id), aliases [];
    SessionShutdown: g::SessionShutdown => session_state::shutdown, lane |p| Some(&p.session_id), aliases [];
    SessionModelSetReasoningEffort: g::SessionModelSetReasoningEffort
        => session_state::set_reasoning_effort, lane |p| Some(&p.session_id), aliases [];
    // The command sandbox: the host, the settings slice and its floor, a session's sandbox.
    SandboxGetHostSupport: g::SandboxGetHostSupport => sandbox::host_support, lane |_p| None, aliases [];
    SandboxCheckPlatformSupport: g::SandboxCheckPlatformSupport => sandbox::platform_support, lane |_p| None, aliases [];
    SandboxCheckWindowsHostLoopbackSupport: g::SandboxCheckWindowsHostLoopbackSupport
        => sandbox::windows_loopback_support, lane |_p| None, aliases [];
    SandboxGetUnsupportedMessage: g::SandboxGetUnsupportedMessage => sandbox::unsupported_message, lane |_p| None, aliases [];
    SandboxGetDocsUrl: g::SandboxGetDocsUrl => sandbox::docs_url, lane |_p| None, aliases [];
    SandboxGetUnsupportedStartupNotice: g::SandboxGetUnsupportedStartupNotice
        => sandbox::unsupported_startup_notice, lane |_p| None, aliases [];
    SandboxGetUnsupportedSettingDisabledNotice: g::SandboxGetUnsupportedSettingDisabledNotice
        => sandbox::unsupported_setting_disabled_notice, lane |_p| None, aliases [];
    SandboxSettingsApplyDefaults: g::SandboxSettingsApplyDefaults => sandbox::apply_defaults, lane |_p| None, aliases [];
    SandboxResolveFlooredConfig: g::SandboxResolveFlooredConfig => sandbox::resolve_floored, lane |_p| None, aliases [];
    SandboxResolveForOptional: g::SandboxResolveForOptional => sandbox::resolve_for_optional, lane |_p| None, aliases [];
    SandboxCheckEnforcementCommand: g::SandboxCheckEnforcementCommand
        => sandbox::enforcement_command, lane |_p| None, aliases [];
    SandboxPreparePickerPolicy: g::SandboxPreparePickerPolicy => sandbox::prepare_picker, lane |_p| None, aliases [];
    SandboxFilterPickerCandidates: g::SandboxFilterPickerCandidates => sandbox::filter_picker, lane |_p| None, aliases [];
    SandboxProxyCaCheckInstallationSupport: g::SandboxProxyCaCheckInstallationSupport
        => sandbox::proxy_ca_installable, lane |_p| None, aliases [];
    SandboxProxyCaCheckRelevance: g::SandboxProxyCaCheckRelevance => sandbox::proxy_ca_relevant, lane |_p| None, aliases [];
    SandboxProxyCaGetStatus: g::SandboxProxyCaGetStatus => sandbox::proxy_ca_status, lane |_p| None, aliases [];
    SandboxProxyCaCreate: g::SandboxProxyCaCreate => sandbox::proxy_ca_create, lane |_p| None, aliases [];
    SandboxProxyCaRotate: g::SandboxProxyCaRotate => sandbox::proxy_ca_change, lane |_p| None, aliases [];
    SandboxProxyCaTrust: g::SandboxProxyCaTrust => sandbox::proxy_ca_change, lane |_p| None, aliases [];
    SandboxProxyCaRemove: g::SandboxProxyCaRemove => sandbox::proxy_ca_remove, lane |_p| None, aliases [];
    SandboxProxySecretGetLocation: g::SandboxProxySecretGetLocation
        => sandbox::proxy_secret_location, lane |_p| None, aliases [];
    SandboxProxySecretGet: g::SandboxProxySecretGet => sandbox::proxy_secret_get, lane |_p| None, aliases [];
    SandboxProxySecretSave: g::SandboxProxySecretSave => sandbox::proxy_secret_save, lane |_p| None, aliases [];
    SandboxProxySecretDelete: g::SandboxProxySecretDelete => sandbox::proxy_secret_delete, lane |_p| None, aliases [];
    SessionSandboxGetEnforcementStatus: g::SessionSandboxGetEnforcementStatus
        => sandbox::enforcement_status, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionSandboxGetCredentialSuggestions: g::SessionSandboxGetCredentialSuggestions
        => sandbox::credential_suggestions, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionSandboxDisableForSession: g::SessionSandboxDisableForSession
        => sandbox::disable_for_session, lane |p| Some(&p.session_id), aliases [];
    SessionSandboxGrantPathForRequest: g::SessionSandboxGrantPathForRequest
        => sandbox::grant_path_for_request, lane |p| Some(&p.session_id), aliases [];
    // MCP servers of a session.
    SessionMcpList: g::SessionMcpList => mcp::list, lane |_p| None, aliases [], follower Read;
    SessionMcpListTools: g::SessionMcpListTools => mcp::list_tools, lane |_p| None, aliases [], follower Read;
    SessionMcpIsServerRunning: g::SessionMcpIsServerRunning => mcp::is_running, lane |_p| None, aliases [], follower Read;
    SessionMcpStartServer: g::SessionMcpStartServer => mcp::start, lane |_p| None, aliases [];
    SessionMcpStopServer: g::SessionMcpStopServer => mcp::stop, lane |_p| None, aliases [];
    SessionMcpRestartServer: g::SessionMcpRestartServer => mcp::restart, lane |_p| None, aliases [];
    SessionMcpEnable: g::SessionMcpEnable => mcp::enable, lane |_p| None, aliases [];
    SessionMcpDisable: g::SessionMcpDisable => mcp::disable, lane |_p| None, aliases [];
    SessionMcpReload: g::SessionMcpReload => mcp::reload, lane |_p| None, aliases [];
    SessionMcpResourcesList: g::SessionMcpResourcesList => mcp::resources_list, lane |_p| None, aliases [];
    SessionMcpResourcesListTemplates: g::SessionMcpResourcesListTemplates => mcp::resources_list_templates, lane |_p| None, aliases [];
    SessionMcpPromptsList: g::SessionMcpPromptsList => mcp::prompts_list, lane |_p| None, aliases [];
    SessionMcpPromptsGet: g::SessionMcpPromptsGet => mcp::prompts_get, lane |_p| None, aliases [];
    SessionMcpResourcesRead: g::SessionMcpResourcesRead => mcp::resources_read, lane |_p| None, aliases [];
    SessionMcpSetEnvValueMode: g::SessionMcpSetEnvValueMode => mcp_extras::set_env_value_mode, lane |_p| None, aliases [];
    SessionMcpRemoveGitHub: g::SessionMcpRemoveGitHub => mcp_extras::remove_github, lane |_p| None, aliases [];
    SessionMcpExecuteSampling: g::SessionMcpExecuteSampling => mcp_extras::execute_sampling, lane |_p| None, aliases [];
    SessionMcpCancelSamplingExecution: g::SessionMcpCancelSamplingExecution => mcp_extras::cancel_sampling, lane |_p| None, aliases [];
    SessionMcpAppsSetHostContext: g::SessionMcpAppsSetHostContext => mcp_extras::apps_set_host_context, lane |_p| None, aliases [];
    SessionMcpAppsGetHostContext: g::SessionMcpAppsGetHostContext => mcp_extras::apps_get_host_context, lane |_p| None, aliases [];
    SessionMcpAppsDiagnose: g::SessionMcpAppsDiagnose => mcp_extras::apps_diagnose, lane |_p| None, aliases [];
    SessionMcpAppsListTools: g::SessionMcpAppsListTools => mcp_extras::apps_list_tools, lane |_p| None, aliases [];
    SessionMcpAppsCallTool: g::SessionMcpAppsCallTool => mcp_extras::apps_call_tool, lane |_p| None, aliases [];
    SessionMcpAppsReadResource: g::SessionMcpAppsReadResource => mcp_extras::apps_read_resource, lane |_p| None, aliases [];
    SessionMcpOauthLogin: g::SessionMcpOauthLogin => mcp_extras::oauth_login, lane |_p| None, aliases [];
    SessionMcpOauthHandlePendingRequest: g::SessionMcpOauthHandlePendingRequest
        => mcp_extras::oauth_handle_pending, lane |_p| None, aliases [];
    SessionExtensionsList: g::SessionExtensionsList => mcp_extras::extensions_list, lane |_p| None, aliases [], follower Read;
    SessionExtensionsEnable: g::SessionExtensionsEnable => mcp_extras::extensions_enable, lane |_p| None, aliases [];
    SessionExtensionsDisable: g::SessionExtensionsDisable => mcp_extras::extensions_disable, lane |_p| None, aliases [];
    SessionExtensionsReload: g::SessionExtensionsReload => mcp_extras::extensions_reload, lane |_p| None, aliases [];
    // Server: the user's MCP config, plugins and marketplaces.
    McpConfigList: g::McpConfigList => plugins::config_list, lane |_p| None, aliases [];
    McpConfigAdd: g::McpConfigAdd => plugins::config_add, lane |_p| None, aliases [];
    McpConfigUpdate: g::McpConfigUpdate => plugins::config_update, lane |_p| None, aliases [];
    McpConfigRemove: g::McpConfigRemove => plugins::config_remove, lane |_p| None, aliases [];
    McpConfigEnable: g::McpConfigEnable => plugins::config_enable, lane |_p| None, aliases [];
    McpConfigDisable: g::McpConfigDisable => plugins::config_disable, lane |_p| None, aliases [];
    McpConfigReload: g::McpConfigReload => plugins::config_reload, lane |_p| None, aliases [];
    McpDiscover: g::McpDiscover => plugins::discover, lane |_p| None, aliases [];
    SkillsDiscover: g::SkillsDiscover => discovery::skills_discover, lane |_p| None, aliases [];
    SkillsGetDiscoveryPaths: g::SkillsGetDiscoveryPaths => discovery::skills_get_discovery_paths, lane |_p| None, aliases [];
    AgentsDiscover: g::AgentsDiscover => discovery::agents_discover, lane |_p| None, aliases [];
    AgentsGetDiscoveryPaths: g::AgentsGetDiscoveryPaths => discovery::agents_get_discovery_paths, lane |_p| None, aliases [];
    SkillsConfigSetDisabledSkills: g::SkillsConfigSetDisabledSkills => discovery::set_disabled_skills, lane |_p| None, aliases [];
    SkillsConfigSetSkillDisabled: g::SkillsConfigSetSkillDisabled => discovery::set_skill_disabled, lane |_p| None, aliases [];
    InstructionsDiscover: g::InstructionsDiscover => discovery::instructions_discover, lane |_p| None, aliases [];
    InstructionsGetDiscoveryPaths: g::InstructionsGetDiscoveryPaths => discovery::instructions_get_discovery_paths, lane |_p| None, aliases [];
    PluginsList: g::PluginsList => plugins::list, lane |_p| None, aliases [];
    PluginsInstall: g::PluginsInstall => plugins::install, lane |_p| None, aliases [];
    PluginsUninstall: g::PluginsUninstall => plugins::uninstall, lane |_p| None, aliases [];
    PluginsUpdate: g::PluginsUpdate => plugins::update, lane |_p| None, aliases [];
    PluginsUpdateAll: g::PluginsUpdateAll => plugins::update_all, lane |_p| None, aliases [];
    PluginsEnable: g::PluginsEnable => plugins::enable, lane |_p| None, aliases [];
    PluginsDisable: g::PluginsDisable => plugins::disable, lane |_p| None, aliases [];
    PluginsMarketplacesList: g::PluginsMarketplacesList => plugins::marketplaces_list, lane |_p| None, aliases [];
    PluginsMarketplacesAdd: g::PluginsMarketplacesAdd => plugins::marketplaces_add, lane |_p| None, aliases [];
    PluginsMarketplacesRemove: g::PluginsMarketplacesRemove => plugins::marketplaces_remove, lane |_p| None, aliases [];
    PluginsMarketplacesBrowse: g::PluginsMarketplacesBrowse => plugins::marketplaces_browse, lane |_p| None, aliases [];
    PluginsMarketplacesRefresh: g::PluginsMarketplacesRefresh => plugins::marketplaces_refresh, lane |_p| None, aliases [];
    // Sessions: background tasks.
    SessionFleetStart: g::SessionFleetStart => fleet::start, lane |p| Some(&p.session_id), aliases [];
    SessionTasksList: g::SessionTasksList => tasks::list, lane |_p| None, aliases [], follower Read;
    SessionTasksStartAgent: g::SessionTasksStartAgent => tasks::start_agent, lane |_p| None, aliases [];
    SessionTasksRefresh: g::SessionTasksRefresh => tasks::refresh, lane |_p| None, aliases [];
    SessionTasksWaitForPending: g::SessionTasksWaitForPending => tasks::wait_for_pending, lane |_p| None, aliases [];
    SessionTasksGetProgress: g::SessionTasksGetProgress => tasks::get_progress, lane |_p| None, aliases [], follower Read;
    SessionTasksGetCurrentPromotable: g::SessionTasksGetCurrentPromotable => tasks::get_current_promotable, lane |_p| None, aliases [], follower Read;
    SessionTasksPromoteToBackground: g::SessionTasksPromoteToBackground => tasks::promote, lane |_p| None, aliases [];
    SessionTasksPromoteCurrentToBackground: g::SessionTasksPromoteCurrentToBackground => tasks::promote_current, lane |_p| None, aliases [];
    SessionTasksCancel: g::SessionTasksCancel => tasks::cancel, lane |_p| None, aliases [];
    SessionTasksRemove: g::SessionTasksRemove => tasks::remove, lane |_p| None, aliases [];
    SessionCancelAllBackgroundAgents: g::SessionCancelAllBackgroundAgents
        => tasks::cancel_all, lane |_p| None, aliases [];
    SessionTasksSendMessage: g::SessionTasksSendMessage => tasks::send_message, lane |_p| None, aliases [];
    SessionMetadataIsProcessing: g::SessionMetadataIsProcessing
        => session_state::is_processing, lane |_p| None, aliases [], follower Read;
    SessionEventLogRegisterInterest: g::SessionEventLogRegisterInterest
        => session_state::register_interest, lane |_p| None, aliases [], follower Read;
    SessionEventLogReleaseInterest: g::SessionEventLogReleaseInterest
        => session_state::release_interest, lane |_p| None, aliases [], follower Read;
    SessionMetadataSnapshot: g::SessionMetadataSnapshot
        => session_state::metadata_snapshot, lane |_p| None, aliases [], follower Read;
    SessionMetadataGetClientMetadata: g::SessionMetadataGetClientMetadata
        => client_metadata::get, lane |_p| None, aliases [], follower Read;
    SessionMetadataUpdateClientMetadata: g::SessionMetadataUpdateClientMetadata
        => client_metadata::update, lane |p| Some(&p.session_id), aliases [], follower Forward;
    SessionsGetClientMetadata: g::SessionsGetClientMetadata
        => client_metadata::get_many, lane |_p| None, aliases [], follower Read;
    SessionMetadataSetWorkingDirectory: g::SessionMetadataSetWorkingDirectory
        => session_state::set_working_directory, lane |p| Some(&p.session_id), aliases [];
    SessionMetadataRecordContextChange: g::SessionMetadataRecordContextChange
        => session_state::record_context_change, lane |p| Some(&p.session_id), aliases [];
    SessionEventLogTail: g::SessionEventLogTail => session_state::event_log_tail, lane |_p| None, aliases [], follower Read;
    SessionEventLogRead: g::SessionEventLogRead => session_state::event_log_read, lane |_p| None, aliases [], follower Read;
    SessionSuspend: g::SessionSuspend => session_state::suspend, lane |_p| None, aliases [];
    SessionOptionsUpdate: g::SessionOptionsUpdate
        => session_state::options_update, lane |p| Some(&p.session_id), aliases [];

    // Sessions: queue, activity, permission mode, offered tools, and the features answered
    // without a service behind them.
    SessionMetadataActivity: g::SessionMetadataActivity => session_extras::activity, lane |_p| None, aliases [], follower Read;
    SessionQueuePendingItems: g::SessionQueuePendingItems
        => session_extras::queue_pending, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionQueueRemoveMostRecent: g::SessionQueueRemoveMostRecent
        => session_extras::queue_remove_most_recent, lane |p| Some(&p.session_id), aliases [];
    SessionQueueClear: g::SessionQueueClear => session_extras::queue_clear, lane |p| Some(&p.session_id), aliases [];
    SessionQueueMoveItem: g::SessionQueueMoveItem => session_extras::queue_move_item, lane |p| Some(&p.session_id), aliases [];
    SessionQueueRemoveAt: g::SessionQueueRemoveAt => session_extras::queue_remove_at, lane |p| Some(&p.session_id), aliases [];
    SessionQueueUpdateText: g::SessionQueueUpdateText
        => session_extras::queue_update_text, lane |p| Some(&p.session_id), aliases [];
    SessionQueueDuplicateAt: g::SessionQueueDuplicateAt
        => session_extras::queue_duplicate_at, lane |p| Some(&p.session_id), aliases [];
    SessionQueueInsertAt: g::SessionQueueInsertAt => session_extras::queue_insert_at, lane |p| Some(&p.session_id), aliases [];
    SessionQueueSendNow: g::SessionQueueSendNow => session_extras::queue_send_now, lane |p| Some(&p.session_id), aliases [];
    SessionQueueSetDrainPaused: g::SessionQueueSetDrainPaused
        => session_extras::queue_set_drain_paused, lane |p| Some(&p.session_id), aliases [];
    // Acting on the running turn. A withdrawal from the turn answers once the turn unwound, and a
    // clear comes from inside a tool handler: both off the lane, so nothing queues behind them.
    // What a client keeps in the session's folder: summaries and the autopilot objective.
    SessionWorkspacesAddSummary: g::SessionWorkspacesAddSummary
        => workspace_notes::add_summary, lane |p| Some(&p.session_id), aliases [];
    SessionWorkspacesTruncateSummaries: g::SessionWorkspacesTruncateSummaries
        => workspace_notes::truncate_summaries, lane |p| Some(&p.session_id), aliases [];
    SessionWorkspacesReadAutopilotObjective: g::SessionWorkspacesReadAutopilotObjective
        => workspace_notes::read_objective, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionWorkspacesWriteAutopilotObjective: g::SessionWorkspacesWriteAutopilotObjective
        => workspace_notes::write_objective, lane |p| Some(&p.session_id), aliases [];
    SessionWorkspacesDeleteAutopilotObjective: g::SessionWorkspacesDeleteAutopilotObjective
        => workspace_notes::delete_objective, lane |p| Some(&p.session_id), aliases [];
    SessionWorkspacesAutopilotObjectiveExists: g::SessionWorkspacesAutopilotObjectiveExists
        => workspace_notes::objective_exists, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionAutopilotObjectiveGetState: g::SessionAutopilotObjectiveGetState
        => workspace_notes::objective_state, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionInterruptMainTurn: g::SessionInterruptMainTurn
        => turn_control::interrupt_main_turn, lane |p| Some(&p.session_id), aliases [];
    SessionQueueWithdrawMessage: g::SessionQueueWithdrawMessage
        => turn_control::withdraw_message, lane |_p| None, aliases [];
    SessionQueueAppendSteering: g::SessionQueueAppendSteering
        => turn_control::append_steering, lane |p| Some(&p.session_id), aliases [];
    SessionSendMessages: g::SessionSendMessages => turn_control::send_messages, lane |p| Some(&p.session_id), aliases [];
    SessionHistoryClearContext: g::SessionHistoryClearContext
        => turn_control::clear_context, lane |_p| None, aliases [];
    SessionQuotaGet: g::SessionQuotaGet => quota::get, lane |_p| None, aliases [], follower Read;
    SessionQuotaRefresh: g::SessionQuotaRefresh => quota::refresh, lane |_p| None, aliases [], follower Read;
    SessionQuotaTakeWarnings: g::SessionQuotaTakeWarnings => quota::take_warnings, lane |_p| None, aliases [];
    SessionPermissionsGetMode: g::SessionPermissionsGetMode
        => session_extras::permissions_get_mode, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionPermissionsSetMode: g::SessionPermissionsSetMode
        => session_extras::permissions_set_mode, lane |p| Some(&p.session_id), aliases [];
    SessionToolsGetCurrentMetadata: g::SessionToolsGetCurrentMetadata
        => session_extras::tools_current_metadata, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionToolsUpdateSubagentSettings: g::SessionToolsUpdateSubagentSettings
        => session_extras::tools_update_subagent_settings, lane |p| Some(&p.session_id), aliases [];
    SessionVisibilityGet: g::SessionVisibilityGet => session_extras::visibility_get, lane |_p| None, aliases [], follower Read;
    SessionVisibilitySet: g::SessionVisibilitySet => session_extras::visibility_set, lane |_p| None, aliases [];
    SessionCompletionsGetTriggerCharacters: g::SessionCompletionsGetTriggerCharacters
        => session_extras::completions_trigger_characters, lane |_p| None, aliases [], follower Read;
    SessionCompletionsRequest: g::SessionCompletionsRequest
        => session_extras::completions_request, lane |_p| None, aliases [];
    SessionPlanReadSqlTodos: g::SessionPlanReadSqlTodos
        => session_fs::read_sql_todos, lane |_p| None, aliases [], follower Read;
    SessionPlanReadSqlTodosWithDependencies: g::SessionPlanReadSqlTodosWithDependencies
        => session_fs::read_sql_todos_with_dependencies, lane |_p| None, aliases [], follower Read;
    SessionFsSetProvider: g::SessionFsSetProvider => session_fs::set_provider, lane |_p| None, aliases [];
    SessionWorkspacesDiff: g::SessionWorkspacesDiff => workspace_extras::diff, lane |_p| None, aliases [], follower Read;
    SessionWorkspacesSaveLargePaste: g::SessionWorkspacesSaveLargePaste
        => workspace_extras::save_large_paste, lane |p| Some(&p.session_id), aliases [];
    SessionTelemetryGetEngagementId: g::SessionTelemetryGetEngagementId
        => session_extras::telemetry_engagement_id, lane |_p| None, aliases [], follower Read;
    SessionPluginsList: g::SessionPluginsList => session_extras::plugins_list, lane |_p| None, aliases [], follower Read;
    SessionPluginsReload: g::SessionPluginsReload => session_extras::plugins_reload, lane |_p| None, aliases [];
    SessionScheduleList: g::SessionScheduleList => session_extras::schedule_list, lane |_p| None, aliases [], follower Read;
    SessionScheduleStop: g::SessionScheduleStop => session_extras::schedule_stop, lane |_p| None, aliases [];
    SessionRemoteEnable: g::SessionRemoteEnable => session_extras::remote_enable, lane |_p| None, aliases [];
    SessionRemoteDisable: g::SessionRemoteDisable => session_extras::remote_disable, lane |_p| None, aliases [];
    SessionRemoteNotifySteerableChanged: g::SessionRemoteNotifySteerableChanged
        => session_extras::remote_notify_steerable, lane |p| Some(&p.session_id), aliases [];
    SessionsGetRemoteControlStatus: g::SessionsGetRemoteControlStatus
        => session_extras::remote_control_status, lane |_p| None, aliases [];
    SessionsSetRemoteControlSteering: g::SessionsSetRemoteControlSteering
        => session_extras::remote_control_steering, lane |_p| None, aliases [];
    SessionsStopRemoteControl: g::SessionsStopRemoteControl
        => session_extras::remote_control_stop, lane |_p| None, aliases [];
    SessionsTransferRemoteControl: g::SessionsTransferRemoteControl
        => session_extras::remote_control_transfer, lane |_p| None, aliases [];
    SessionsStartRemoteControl: g::SessionsStartRemoteControl
        => session_extras::remote_control_start, lane |_p| None, aliases [];
    // Sessions: custom agents and skills.
    SessionAgentList: g::SessionAgentList => agents::list, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionAgentGetCurrent: g::SessionAgentGetCurrent => agents::get_current, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionAgentSelect: g::SessionAgentSelect => agents::select, lane |p| Some(&p.session_id), aliases [];
    SessionAgentDeselect: g::SessionAgentDeselect => agents::deselect, lane |p| Some(&p.session_id), aliases [];
    SessionAgentReload: g::SessionAgentReload => agents::reload, lane |p| Some(&p.session_id), aliases [];
    SessionSkillsList: g::SessionSkillsList => agents::skills_list, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionSkillsEnable: g::SessionSkillsEnable => agents::skills_enable, lane |p| Some(&p.session_id), aliases [];
    SessionSkillsDisable: g::SessionSkillsDisable => agents::skills_disable, lane |p| Some(&p.session_id), aliases [];
    SessionSkillsReload: g::SessionSkillsReload => agents::skills_reload, lane |p| Some(&p.session_id), aliases [];
    SessionSkillsEnsureLoaded: g::SessionSkillsEnsureLoaded
        => agents::skills_ensure_loaded, lane |p| Some(&p.session_id), aliases [];
    SessionSkillsGetInvoked: g::SessionSkillsGetInvoked
        => agents::skills_get_invoked, lane |p| Some(&p.session_id), aliases [], follower Read;

    // Sessions: models and bring-your-own-key providers.
    SessionModelList: g::SessionModelList => providers::model_list, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionProviderAdd: g::SessionProviderAdd => providers::provider_add, lane |p| Some(&p.session_id), aliases [];
    SessionProviderGetEndpoint: g::SessionProviderGetEndpoint
        => providers::provider_endpoint, lane |p| Some(&p.session_id), aliases [], follower Read;

    // Sessions: history.
    SessionHistoryTruncate: g::SessionHistoryTruncate
        => history::truncate, lane |p| Some(&p.session_id), aliases [];
    // Compaction and checkpoints. Off the session's lane: a compaction or a summary
    // waits for the model, and must not hold up the session's other requests (nor its abort).
    SessionHistoryCompact: g::SessionHistoryCompact
        => history::compact, lane |_p| None, aliases ["session.compaction.compact"];
    SessionHistorySummarizeForHandoff: g::SessionHistorySummarizeForHandoff
        => history::summarize_for_handoff, lane |_p| None, aliases [];
    SessionHistoryCancelBackgroundCompaction: g::SessionHistoryCancelBackgroundCompaction
        => history::cancel_background, lane |_p| None, aliases [];
    SessionHistoryAbortManualCompaction: g::SessionHistoryAbortManualCompaction
        => history::abort_manual, lane |_p| None, aliases [];
    SessionWorkspacesListCheckpoints: g::SessionWorkspacesListCheckpoints
        => history::list_checkpoints, lane |_p| None, aliases [], follower Read;
    SessionWorkspacesReadCheckpoint: g::SessionWorkspacesReadCheckpoint
        => history::read_checkpoint, lane |_p| None, aliases [], follower Read;

    // Sessions: workspace files (`files/`); the seed's `session.workspace.*` names too.
    SessionWorkspacesListFiles: g::SessionWorkspacesListFiles
        => workspaces::list_files, lane |p| Some(&p.session_id), aliases ["session.workspace.listFiles"], follower Read;
    SessionWorkspacesReadFile: g::SessionWorkspacesReadFile
        => workspaces::read_file, lane |p| Some(&p.session_id), aliases ["session.workspace.readFile"], follower Read;
    SessionWorkspacesCreateFile: g::SessionWorkspacesCreateFile
        => workspaces::create_file, lane |p| Some(&p.session_id), aliases ["session.workspace.createFile"];
    SessionWorkspacesCreateDirectory: g::SessionWorkspacesCreateDirectory
        => workspaces::create_directory, lane |p| Some(&p.session_id), aliases [];
    SessionWorkspacesStatFile: g::SessionWorkspacesStatFile
        => workspaces::stat_file, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionWorkspacesRemovePath: g::SessionWorkspacesRemovePath
        => workspaces::remove_path, lane |p| Some(&p.session_id), aliases [];
    SessionWorkspacesRenamePath: g::SessionWorkspacesRenamePath
        => workspaces::rename_path, lane |p| Some(&p.session_id), aliases [];
    SessionWorkspacesGetWorkspace: g::SessionWorkspacesGetWorkspace
        => workspaces::get_workspace, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionWorkspacesEnsure: g::SessionWorkspacesEnsure
        => workspaces::ensure, lane |p| Some(&p.session_id), aliases [];

    // Persisted sessions as a whole (`sessions.*`), gated server features.
    SessionsList: g::SessionsList => sessions_admin::list, lane |_p| None, aliases [];
    SessionsSave: g::SessionsSave => sessions_admin::save, lane |p| Some(&p.session_id), aliases [];
    SessionsOpen: h::SessionsOpen => sessions_admin::open, lane |_p| None, aliases [];
    SessionsClose: g::SessionsClose => sessions_admin::close, lane |p| Some(&p.session_id), aliases [];
    SessionsGetMetadata: g::SessionsGetMetadata => sessions_admin::get_metadata, lane |_p| None, aliases [], follower Read;
    SessionsFindByPrefix: g::SessionsFindByPrefix => sessions_admin::find_by_prefix, lane |_p| None, aliases [];
    SessionsFindByTaskId: g::SessionsFindByTaskId => sessions_admin::find_by_task_id, lane |_p| None, aliases [];
    SessionsGetLastForContext: g::SessionsGetLastForContext
        => sessions_admin::get_last_for_context, lane |_p| None, aliases [];
    SessionsGetSizes: g::SessionsGetSizes => sessions_admin::get_sizes, lane |_p| None, aliases [], follower Read;
    SessionsCheckInUse: g::SessionsCheckInUse => sessions_admin::check_in_use, lane |_p| None, aliases [], follower Read;
    SessionsReleaseLock: g::SessionsReleaseLock => sessions_admin::release_lock, lane |_p| None, aliases [];
    SessionsReadPersistedEvents: g::SessionsReadPersistedEvents
        => sessions_admin::read_persisted_events, lane |_p| None, aliases [];
    SessionsPruneOld: g::SessionsPruneOld => sessions_admin::prune_old, lane |_p| None, aliases [];
    SessionsBulkDelete: g::SessionsBulkDelete => sessions_admin::bulk_delete, lane |_p| None, aliases [];
    SessionsSetAdditionalPlugins: g::SessionsSetAdditionalPlugins
        => sessions_admin::set_additional_plugins, lane |_p| None, aliases [];
    SessionsReloadPluginHooks: g::SessionsReloadPluginHooks
        => sessions_admin::reload_plugin_hooks, lane |p| Some(&p.session_id), aliases [];
    SessionsLoadDeferredRepoHooks: g::SessionsLoadDeferredRepoHooks
        => sessions_admin::load_deferred_repo_hooks, lane |p| Some(&p.session_id), aliases [];
    SessionsEnrichMetadata: g::SessionsEnrichMetadata => sessions_admin::enrich_metadata, lane |_p| None, aliases [];
    SessionsConnect: g::SessionsConnect => sessions_admin::connect, lane |_p| None, aliases [];
    UserSettingsGet: g::UserSettingsGet => user_settings::get, lane |_p| None, aliases [];
    UserSettingsSet: g::UserSettingsSet => user_settings::set, lane |_p| None, aliases [];
    UserSettingsReload: g::UserSettingsReload => user_settings::reload, lane |_p| None, aliases [];
    SecretsAddFilterValues: g::SecretsAddFilterValues
        => session_services::add_secret_filter_values, lane |_p| None, aliases [];
    AgentRegistrySpawn: g::AgentRegistrySpawn => session_services::agent_registry_spawn, lane |_p| None, aliases [];

    // Sessions: identity, services, usage and context make-up.
    SessionGitHubAuthGetStatus: g::SessionGitHubAuthGetStatus => auth::get_status, lane |_p| None, aliases [], follower Read;
    SessionGitHubAuthSetCredentials: g::SessionGitHubAuthSetCredentials
        => auth::set_credentials, lane |p| Some(&p.session_id), aliases [];
    SessionExtensionsSendAttachmentsToMessage: g::SessionExtensionsSendAttachmentsToMessage
        => session_services::send_attachments, lane |_p| None, aliases [];
    SessionLspInitialize: g::SessionLspInitialize => session_services::lsp_initialize, lane |_p| None, aliases [];
    SessionTelemetrySetFeatureOverrides: g::SessionTelemetrySetFeatureOverrides
        => session_services::telemetry_set_feature_overrides, lane |_p| None, aliases [];
    SessionToolsInitializeAndValidate: g::SessionToolsInitializeAndValidate
        => session_services::tools_initialize_and_validate, lane |p| Some(&p.session_id), aliases [];
    SessionInstructionsGetSources: g::SessionInstructionsGetSources
        => session_services::instructions_get_sources, lane |_p| None, aliases [], follower Read;
    SessionInstructionsReload: g::SessionInstructionsReload
        => session_services::instructions_reload, lane |p| Some(&p.session_id), aliases [];
    SessionCustomizationsReload: g::SessionCustomizationsReload
        => session_services::customizations_reload, lane |p| Some(&p.session_id), aliases [];
    SessionManagedSettingsGet: g::SessionManagedSettingsGet
        => not_offered::session_managed_settings, lane |_p| None, aliases [], follower Read;
    SessionContentExclusionCheckPaths: g::SessionContentExclusionCheckPaths
        => not_offered::content_exclusion_check_paths, lane |_p| None, aliases [], follower Read;
    ModelsListTokenPriceUnits: g::ModelsListTokenPriceUnits
        => not_offered::models_token_price_units, lane |_p| None, aliases [];
    SessionMcpListConfigured: g::SessionMcpListConfigured => mcp::list_configured, lane |_p| None, aliases [], follower Read;
    SessionUsageGetMetrics: g::SessionUsageGetMetrics => session_services::usage_get_metrics, lane |_p| None, aliases [], follower Read;
    SessionMetadataContextInfo: g::SessionMetadataContextInfo => session_services::context_info, lane |_p| None, aliases [], follower Read;
    SessionMetadataRecomputeContextTokens: g::SessionMetadataRecomputeContextTokens
        => session_services::recompute_context_tokens, lane |_p| None, aliases [];
    SessionMetadataGetContextAttribution: g::SessionMetadataGetContextAttribution
        => session_services::context_attribution, lane |_p| None, aliases [], follower Read;
    SessionMetadataGetContextHeaviestMessages: g::SessionMetadataGetContextHeaviestMessages
        => session_services::context_heaviest_messages, lane |_p| None, aliases [], follower Read;

    // Sessions: permission settings, allowed paths, locations, folder trust.
    SessionPermissionsConfigure: g::SessionPermissionsConfigure
        => permission_paths::configure, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsResetSessionApprovals: g::SessionPermissionsResetSessionApprovals
        => permission_paths::reset_session_approvals, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsSetRequired: g::SessionPermissionsSetRequired
        => permission_paths::set_required, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsNotifyPromptShown: g::SessionPermissionsNotifyPromptShown
        => permission_paths::notify_prompt_shown, lane |_p| None, aliases [];
    SessionPermissionsModifyRules: g::SessionPermissionsModifyRules
        => permission_paths::modify_rules, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsUrlsSetUnrestrictedMode: g::SessionPermissionsUrlsSetUnrestrictedMode
        => permission_paths::urls_set_unrestricted, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsPathsList: g::SessionPermissionsPathsList
        => permission_paths::paths_list, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionPermissionsPathsAdd: g::SessionPermissionsPathsAdd
        => permission_paths::paths_add, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsPathsIsPathWithinAllowedDirectories: g::SessionPermissionsPathsIsPathWithinAllowedDirectories
        => permission_paths::paths_within_allowed, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionPermissionsPathsUpdatePrimary: g::SessionPermissionsPathsUpdatePrimary
        => permission_paths::paths_update_primary, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsPathsIsPathWithinWorkspace: g::SessionPermissionsPathsIsPathWithinWorkspace
        => permission_paths::paths_within_workspace, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionPermissionsLocationsResolve: g::SessionPermissionsLocationsResolve
        => permission_paths::locations_resolve, lane |_p| None, aliases [];
    SessionPermissionsLocationsAddToolApproval: g::SessionPermissionsLocationsAddToolApproval
        => permission_paths::locations_add_tool_approval, lane |_p| None, aliases [];
    SessionPermissionsLocationsApply: g::SessionPermissionsLocationsApply
        => permission_paths::locations_apply, lane |p| Some(&p.session_id), aliases [];
    SessionPermissionsFolderTrustIsTrusted: g::SessionPermissionsFolderTrustIsTrusted
        => permission_paths::folder_trust_is_trusted, lane |_p| None, aliases [], follower Read;
    SessionPermissionsFolderTrustAddTrusted: g::SessionPermissionsFolderTrustAddTrusted
        => permission_paths::folder_trust_add, lane |_p| None, aliases [];
    // Slash commands and UI requests a client answers. Waiting ones run off the session's
    // lane: the answer comes back on that lane.
    SessionCommandsList: g::SessionCommandsList => commands::list, lane |p| Some(&p.session_id), aliases [], follower Read;
    SessionCommandsInvoke: g::SessionCommandsInvoke => commands::invoke, lane |p| Some(&p.session_id), aliases [];
    SessionCommandsExecute: g::SessionCommandsExecute => commands::execute, lane |_p| None, aliases [];
    SessionCommandsEnqueue: g::SessionCommandsEnqueue => commands::enqueue, lane |p| Some(&p.session_id), aliases [];
    SessionCommandsRespondToQueuedCommand: g::SessionCommandsRespondToQueuedCommand
        => commands::respond_to_queued, lane |p| Some(&p.session_id), aliases [];
    SessionCommandsHandlePendingCommand: g::SessionCommandsHandlePendingCommand
        => commands::handle_pending, lane |p| Some(&p.session_id), aliases [];
    SessionUiElicitation: g::SessionUiElicitation => ui::elicitation, lane |_p| None, aliases [];
    SessionUiHandlePendingElicitation: g::SessionUiHandlePendingElicitation
        => ui::handle_pending_elicitation, lane |p| Some(&p.session_id), aliases [];
    SessionUiHandlePendingUserInput: g::SessionUiHandlePendingUserInput
        => ui::handle_pending_user_input, lane |p| Some(&p.session_id), aliases [];
    SessionUiHandlePendingSampling: g::SessionUiHandlePendingSampling
        => ui::handle_pending_sampling, lane |p| Some(&p.session_id), aliases [];
    SessionUiHandlePendingAutoModeSwitch: g::SessionUiHandlePendingAutoModeSwitch
        => ui::handle_pending_auto_mode_switch, lane |p| Some(&p.session_id), aliases [];
    SessionUiHandlePendingExitPlanMode: g::SessionUiHandlePendingExitPlanMode
        => ui::handle_pending_exit_plan_mode, lane |p| Some(&p.session_id), aliases [];
    SessionUiHandlePendingSessionLimitsExhausted: g::SessionUiHandlePendingSessionLimitsExhausted
        => ui::handle_pending_session_limits, lane |p| Some(&p.session_id), aliases [];
    SessionUiRegisterDirectAutoModeSwitchHandler: g::SessionUiRegisterDirectAutoModeSwitchHandler
        => ui::register_auto_mode_switch_handler, lane |p| Some(&p.session_id), aliases [];
    SessionUiUnregisterDirectAutoModeSwitchHandler: g::SessionUiUnregisterDirectAutoModeSwitchHandler
        => ui::unregister_auto_mode_switch_handler, lane |p| Some(&p.session_id), aliases [];
    SessionUiEphemeralQuery: g::SessionUiEphemeralQuery => ui::ephemeral_query, lane |_p| None, aliases [];
    SessionMcpHeadersHandlePendingHeadersRefreshRequest: g::SessionMcpHeadersHandlePendingHeadersRefreshRequest
        => ui::handle_pending_headers_refresh, lane |p| Some(&p.session_id), aliases [];

    // The session's shell as clients use it; a user-requested command runs to its end off the
    // lane, so that its cancel is not queued behind it.
    SessionShellExec: g::SessionShellExec => shell::exec, lane |p| Some(&p.session_id), aliases [];
    SessionShellKill: g::SessionShellKill => shell::kill, lane |p| Some(&p.session_id), aliases [];
    SessionShellExecuteUserRequested: g::SessionShellExecuteUserRequested
        => shell::execute_user_requested, lane |_p| None, aliases [];
    SessionShellCancelUserRequested: g::SessionShellCancelUserRequested
        => shell::cancel_user_requested, lane |p| Some(&p.session_id), aliases [];

    // Workflows extensions declare (handlers/workflow.rs), and the same under the SDKs' names
    // (handlers/factory.rs). A body's sub-agent runs as long as it runs: outside the lane.
    SessionWorkflowRun: g::SessionWorkflowRun => workflow::run, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowResume: g::SessionWorkflowResume => workflow::resume, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowGetRun: g::SessionWorkflowGetRun => workflow::get_run, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowListRuns: g::SessionWorkflowListRuns => workflow::list_runs, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowGetRunDetail: g::SessionWorkflowGetRunDetail => workflow::get_run_detail, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowGetRunProgress: g::SessionWorkflowGetRunProgress => workflow::get_run_progress, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowCancel: g::SessionWorkflowCancel => workflow::cancel, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowPause: g::SessionWorkflowPause => workflow::pause, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowLog: g::SessionWorkflowLog => workflow::log, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowAgent: g::SessionWorkflowAgent => workflow::agent, lane |_p| None, aliases [];
    SessionWorkflowJournalGet: g::SessionWorkflowJournalGet => workflow::journal_get, lane |p| Some(&p.session_id), aliases [];
    SessionWorkflowJournalPut: g::SessionWorkflowJournalPut => workflow::journal_put, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryRun: g::SessionFactoryRun => factory::run, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryResume: g::SessionFactoryResume => factory::resume, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryGetRun: g::SessionFactoryGetRun => factory::get_run, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryListRuns: g::SessionFactoryListRuns => factory::list_runs, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryGetRunDetail: g::SessionFactoryGetRunDetail => factory::get_run_detail, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryGetRunProgress: g::SessionFactoryGetRunProgress => factory::get_run_progress, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryCancel: g::SessionFactoryCancel => factory::cancel, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryPause: g::SessionFactoryPause => factory::pause, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryLog: g::SessionFactoryLog => factory::log, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryAgent: g::SessionFactoryAgent => factory::agent, lane |_p| None, aliases [];
    SessionFactoryJournalGet: g::SessionFactoryJournalGet => factory::journal_get, lane |p| Some(&p.session_id), aliases [];
    SessionFactoryJournalPut: g::SessionFactoryJournalPut => factory::journal_put, lane |p| Some(&p.session_id), aliases [];

    // Canvases SDK clients provide.
    SessionCanvasList: g::SessionCanvasList => canvas::list, lane |p| Some(&p.session_id), aliases [];
    SessionCanvasListOpen: g::SessionCanvasListOpen => canvas::list_open, lane |p| Some(&p.session_id), aliases [];
    SessionCanvasOpen: g::SessionCanvasOpen => canvas::open, lane |p| Some(&p.session_id), aliases [];
    SessionCanvasClose: g::SessionCanvasClose => canvas::close, lane |p| Some(&p.session_id), aliases [];
    SessionCanvasActionInvoke: g::SessionCanvasActionInvoke
        => canvas::invoke_action, lane |p| Some(&p.session_id), aliases [];

    // Rewinds with file restore.
    SessionHistoryListRewindPoints: g::SessionHistoryListRewindPoints
        => rewind::list_points, lane |p| Some(&p.session_id), aliases [];
    SessionHistoryPreviewRewind: g::SessionHistoryPreviewRewind
        => rewind::preview, lane |p| Some(&p.session_id), aliases [];
    SessionHistoryRewind: g::SessionHistoryRewind => rewind::rewind, lane |p| Some(&p.session_id), aliases [];
}

/// The table row for a method name.
pub fn lookup(name: &str) -> Option<&'static Entry<Call>> {
    METHODS.iter().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_scopes_match_the_lanes() {
        let mut names: Vec<&str> = METHODS.iter().map(|e| e.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a method is listed twice");
        assert!(lookup("session.destroy").is_some());
        assert!(lookup("session.sendAndWait").is_none());
    }
}
