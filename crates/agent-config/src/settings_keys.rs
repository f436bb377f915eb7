//! The settings a user may name on the command line (`skipper config KEY`), with the type of
//! each: what a value must look like before it is written to a settings file.
//!
//! The table holds what is known of the original CLI's settings (1.0.102): their names, their
//! types and the choices of each enum. A group whose members are only partly known says so
//! (`Group::partial`): a member Skipper does not know is refused as unknown to Skipper, never
//! guessed at.

/// What a setting holds, and so how `config` reads and writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// on/off, true/false, yes/no, 1/0.
    Bool,
    Number,
    /// One of these words (compared without case, stored as written here).
    Choice(&'static [&'static str]),
    Text,
    /// A path template: absolute, `~/`, or `{repoPath}`, naming `{branch}` or `{branchSlug}`.
    PathTemplate,
    /// A list of strings: a value is appended once; `--rm KEY VALUE` takes one out.
    List,
    Group(Group),
    /// A map by a name the user chooses (`enabledPlugins.<name>`), each entry of this kind.
    Named(&'static Kind),
    /// An object `config` does not write (edit the file).
    Complex,
    /// Kept in the file but not changed with `config`.
    FileOnly,
    /// Changed through the settings UI only.
    UiOnly,
    /// Set by an organization's policy, not by the user.
    Policy,
    /// A plain value: nothing lies beneath it.
    Leaf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub members: &'static [(&'static str, Kind)],
    /// Only some members are known to Skipper.
    pub partial: bool,
}

const fn group(members: &'static [(&'static str, Kind)]) -> Kind {
    Kind::Group(Group { members, partial: false })
}

const fn partial(members: &'static [(&'static str, Kind)]) -> Kind {
    Kind::Group(Group { members, partial: true })
}

const BOOL: Kind = Kind::Bool;
const MODEL_TIERS: &[&str] = &["default", "long_context"];

/// Inline hooks by event name: edited in the file, never from the command line.
const HOOK_EVENTS: &[(&str, Kind)] = &[
    ("sessionStart", Kind::UiOnly),
    ("sessionEnd", Kind::UiOnly),
    ("userPromptSubmitted", Kind::UiOnly),
    ("preToolUse", Kind::UiOnly),
    ("postToolUse", Kind::UiOnly),
    ("postToolUseFailure", Kind::UiOnly),
    ("agentStop", Kind::UiOnly),
    ("subagentStop", Kind::UiOnly),
    ("errorOccurred", Kind::UiOnly),
];

const SUBAGENT: Kind =
    group(&[("model", Kind::FileOnly), ("effortLevel", Kind::FileOnly), ("contextTier", Kind::FileOnly)]);

/// The top level of a settings file.
pub const ROOT: Group = Group {
    partial: false,
    members: &[
        ("mouse", BOOL),
        ("askUser", BOOL),
        ("autoUpdate", BOOL),
        ("bashEnv", BOOL),
        ("powershellFlags", Kind::List),
        ("autoUpdatesChannel", Kind::Choice(&["stable", "prerelease"])),
        ("banner", Kind::Choice(&["always", "once", "never"])),
        ("bannerStyle", Kind::Choice(&["mona", "classic"])),
        ("showTipsOnStartup", BOOL),
        ("beep", BOOL),
        ("beepOnSchedule", BOOL),
        ("notifications", BOOL),
        ("taskbarPresence", BOOL),
        ("keepAlive", Kind::Choice(&["on", "off", "busy"])),
        ("includeCoAuthoredBy", BOOL),
        ("compactPaste", BOOL),
        ("copyOnSelect", BOOL),
        ("commandHistoryMaxSize", Kind::Number),
        ("worktreeBaseRef", Kind::Choice(&["head", "defaultBranch"])),
        ("worktreePathTemplate", Kind::PathTemplate),
        ("respectGitignore", BOOL),
        ("proxyKerberosServicePrincipal", Kind::Text),
        ("proxyUrl", Kind::Text),
        ("builtInAgents", partial(&[])),
        ("memory", BOOL),
        ("toolSearch", BOOL),
        ("contextManagementTools", BOOL),
        ("connectors", BOOL),
        ("imageGeneration", BOOL),
        ("imageGenerationWatermark", BOOL),
        ("model", Kind::Text),
        ("modelProviderId", Kind::Text),
        ("autoTier", Kind::Choice(&["efficiency", "balance", "intelligence"])),
        ("effortLevel", Kind::Text),
        ("contextTier", Kind::Choice(MODEL_TIERS)),
        ("planModel", Kind::Text),
        ("planModelProviderId", Kind::Text),
        ("planEffortLevel", Kind::Text),
        ("planContextTier", Kind::Choice(MODEL_TIERS)),
        ("subagents", group(&[("contextManagementTools", BOOL), ("agents", Kind::Named(&SUBAGENT))])),
        (
            "workflows",
            group(&[("defaultLimits", partial(&[])), ("maxConcurrentRuns", Kind::Number), ("logPhaseNames", BOOL)]),
        ),
        ("continueOnAutoMode", BOOL),
        ("stayInAutopilot", BOOL),
        ("defaultMode", Kind::Choice(&["interactive", "plan", "autopilot"])),
        ("defaultPermissionMode", Kind::Choice(&["manual", "assisted", "allow-all"])),
        ("assistedApprovalInstructions", Kind::Text),
        ("renderMarkdown", BOOL),
        ("renderHexColors", BOOL),
        ("inlineImages", BOOL),
        ("inlineImageLiveWindow", Kind::Number),
        ("scrollbar", BOOL),
        ("pinnedPrompts", BOOL),
        (
            "sidebar",
            group(&[
                ("enabled", BOOL),
                ("showResumableSessions", BOOL),
                ("showHeaderButtons", BOOL),
                ("showCloseButton", BOOL),
                ("hoverFocus", BOOL),
                ("coloredHints", BOOL),
                ("accentActiveSession", BOOL),
            ]),
        ),
        ("remoteExport", BOOL),
        (
            "statusLine",
            group(&[
                ("type", Kind::Choice(&["command"])),
                ("command", Kind::FileOnly),
                ("padding", Kind::Number),
                ("refreshInterval", Kind::Number),
            ]),
        ),
        ("screenReader", BOOL),
        ("theme", Kind::Choice(&["default", "github", "dim", "high-contrast", "colorblind"])),
        ("allowedUrls", Kind::List),
        ("deniedUrls", Kind::List),
        ("storeTokenPlaintext", Kind::FileOnly),
        ("stream", BOOL),
        ("streamerMode", Kind::FileOnly),
        ("footer", group(&[("showQuota", BOOL), ("showSchedules", BOOL)])),
        ("tabs", group(&[("enabled", BOOL), ("sort", Kind::List), ("hide", Kind::List)])),
        ("updateTerminalTitle", BOOL),
        ("terminalProgress", BOOL),
        ("terminalNotifications", BOOL),
        ("mergeStrategy", Kind::Choice(&["rebase", "merge"])),
        ("editorMode", Kind::Choice(&["normal", "vim"])),
        ("customAgents", group(&[("defaultLocalOnly", BOOL)])),
        ("ide", group(&[("autoConnect", BOOL), ("openDiffOnEdit", BOOL)])),
        ("companyAnnouncements", Kind::List),
        ("enabledFeatureFlags", Kind::Named(&BOOL)),
        ("feature_flags", partial(&[])),
        ("skillDirectories", Kind::List),
        ("ignoredSkillsLocations", Kind::List),
        ("disabledSkills", Kind::List),
        ("disabledMcpServers", Kind::List),
        ("enabledMcpServers", Kind::List),
        ("githubMcpToolsets", Kind::List),
        ("githubMcpTools", Kind::List),
        ("enableAllGithubMcpTools", BOOL),
        ("githubMcpInsiders", BOOL),
        ("dynamicRetrieval", partial(&[])),
        ("sandbox", partial(&[("enabled", BOOL)])),
        ("extensions", partial(&[])),
        ("enabledPlugins", Kind::Named(&BOOL)),
        ("extraKnownMarketplaces", Kind::Named(&Kind::Complex)),
        ("strictKnownMarketplaces", Kind::UiOnly),
        ("telemetry", partial(&[])),
        ("voice", partial(&[("enabled", Kind::FileOnly)])),
        ("ahpEnvironment", partial(&[])),
        ("permissions", partial(&[("allow", Kind::Policy), ("deny", Kind::Policy)])),
        ("copilotUrl", Kind::FileOnly),
        ("transcriptView", Kind::Choice(&["default", "concise"])),
        ("showReasoning", BOOL),
        ("showTimestamps", BOOL),
        ("showToolDurations", BOOL),
        ("disableAllHooks", BOOL),
        ("hooks", Kind::Group(Group { members: HOOK_EVENTS, partial: true })),
        ("disabledHooks", Kind::List),
        ("remoteSessions", Kind::FileOnly),
        ("experimental", BOOL),
        ("logLevel", Kind::FileOnly),
        ("shellShortcut", Kind::FileOnly),
    ],
};

/// Other names for a top-level setting (an older name still read).
const ALIASES: &[(&str, &str)] = &[("colorMode", "theme")];

/// The settings a repository's `.github/copilot/settings*.json` may set, as the original
/// names them (its last three are not settings `config` can name).
pub const REPO_KEYS: &[&str] = &[
    "agentDirectories",
    "autoTier",
    "companyAnnouncements",
    "contextTier",
    "deniedUrls",
    "disableAllHooks",
    "disabledMcpServers",
    "disabledSkills",
    "effortLevel",
    "enabledPlugins",
    "extraKnownMarketplaces",
    "hookDirectories",
    "hooks",
    "includeCoAuthoredBy",
    "instructionDirectories",
    "mergeStrategy",
    "model",
    "modelProviderId",
    "respectGitignore",
    "skillDirectories",
];

/// A dot-separated key, resolved against the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The segments as stored in the file (an alias replaced by its setting's name).
    pub path: Vec<String>,
    pub kind: Kind,
}

impl Setting {
    pub fn key(&self) -> String {
        self.path.join(".")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("Unknown settings key segment \"{segment}\" at \"{at}\".")]
    Unknown { segment: String, at: String },
    #[error("Skipper does not know the setting \"{0}\". Edit the settings file directly.")]
    NotKnownHere(String),
    #[error("Cannot descend into \"{segment}\" at \"{at}\".")]
    NotAGroup { segment: String, at: String },
    #[error("Empty settings key.")]
    Empty,
}

/// Resolves `key` (`footer.showQuota`).
pub fn resolve(key: &str) -> Result<Setting, KeyError> {
    let mut segments = key.split('.');
    let first = segments.next().filter(|s| !s.is_empty()).ok_or(KeyError::Empty)?;
    let first = ALIASES.iter().find(|(alias, _)| *alias == first).map_or(first, |(_, name)| *name);
    let mut path = vec![first.to_string()];
    let mut kind = member(&ROOT, first).ok_or_else(|| unknown(first, "<root>"))?;
    for segment in segments {
        let at = path.join(".");
        kind = match kind {
            Kind::Group(g) => match member(&g, segment) {
                Some(k) => k,
                None if g.partial => return Err(KeyError::NotKnownHere(format!("{at}.{segment}"))),
                None => return Err(unknown(segment, &at)),
            },
            Kind::Named(inner) if !segment.is_empty() => *inner,
            Kind::Complex | Kind::FileOnly | Kind::UiOnly | Kind::Policy => kind,
            _ => return Err(KeyError::NotAGroup { segment: segment.into(), at }),
        };
        path.push(segment.to_string());
    }
    Ok(Setting { path, kind })
}

fn member(group: &Group, name: &str) -> Option<Kind> {
    group.members.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

fn unknown(segment: &str, at: &str) -> KeyError {
    KeyError::Unknown { segment: segment.into(), at: at.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_resolve_through_groups_and_named_maps() {
        assert_eq!(resolve("beep").unwrap().kind, Kind::Bool);
        assert_eq!(resolve("footer.showQuota").unwrap().kind, Kind::Bool);
        assert_eq!(resolve("enabledPlugins.a@b").unwrap().kind, Kind::Bool);
        assert_eq!(resolve("subagents.agents.x.model").unwrap().kind, Kind::FileOnly);
        assert_eq!(resolve("colorMode").unwrap().path, ["theme"]);
        assert!(matches!(resolve("tabs").unwrap().kind, Kind::Group(_)));
    }

    #[test]
    fn unknown_keys_say_where() {
        assert_eq!(resolve("nosuch").unwrap_err().to_string(), r#"Unknown settings key segment "nosuch" at "<root>"."#);
        assert_eq!(
            resolve("footer.nosuch").unwrap_err().to_string(),
            r#"Unknown settings key segment "nosuch" at "footer"."#
        );
        assert_eq!(resolve("experimental.x").unwrap_err().to_string(), r#"Cannot descend into "x" at "experimental"."#);
        assert!(matches!(resolve("telemetry.enabled"), Err(KeyError::NotKnownHere(_))));
        assert_eq!(resolve(""), Err(KeyError::Empty));
    }

    #[test]
    fn repository_keys_are_settings() {
        for key in REPO_KEYS.iter().filter(|k| !k.ends_with("Directories") || **k == "skillDirectories") {
            assert!(resolve(key).is_ok(), "{key}");
        }
    }
}
