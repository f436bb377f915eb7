"""Issue 11: methods the SDK suites call that had no test of their own here — session
visibility, schedules, remote sessions and remote control (answered as the original does
without GitHub's service), `session.workspaces.ensure`, persisted events of a session loaded or
not, URL mode, the seed's `session.compaction.compact`, and a plan
review answered through `session.ui.handlePendingExitPlanMode`."""

from __future__ import annotations

import asyncio

import pytest

from copilot.generated.rpc import (
    EventsReadDirection,
    PermissionUrlsSetUnrestrictedModeParams,
    RemoteControlStatusOff,
    ScheduleStopRequest,
    SessionsCloseRequest,
    SessionsReadPersistedEventsRequest,
    SessionsReleaseLockRequest,
    SessionsSetRemoteControlSteeringRequest,
    SessionsStopRemoteControlRequest,
    SessionsTransferRemoteControlRequest,
    SessionVisibilityStatus,
    UIExitPlanModeAction,
    UIExitPlanModeResponse,
    UIHandlePendingExitPlanModeRequest,
    VisibilitySetRequest,
    WorkspacesEnsureRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request, record_events, tool_results, wait_for

APPROVE = PermissionHandler.approve_all


async def test_visibility_schedules_and_remote_control_answer_as_a_local_session(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    initial = await session.rpc.visibility.get()
    assert (initial.synced, initial.status, initial.share_url) == (False, None, None)
    updated = await session.rpc.visibility.set(VisibilitySetRequest(status=SessionVisibilityStatus.REPO))
    assert (updated.synced, updated.status, updated.share_url) == (False, None, None)

    assert (await session.rpc.schedule.list()).entries == []
    assert (await session.rpc.schedule.stop(ScheduleStopRequest(id=2_147_483_647))).entry is None

    assert await session.rpc.remote.disable() is None
    steering = await client.rpc.sessions.set_remote_control_steering(
        SessionsSetRemoteControlSteeringRequest(enabled=False)
    )
    assert isinstance(steering.status, RemoteControlStatusOff)
    stopped = await client.rpc.sessions.stop_remote_control(SessionsStopRemoteControlRequest())
    assert stopped.stopped is False and stopped.status.state == "off"
    moved = await client.rpc.sessions.transfer_remote_control(
        SessionsTransferRemoteControlRequest(to_session_id=session.session_id, expected_from_session_id="rc-from")
    )
    assert moved.transferred is False and moved.status.state == "off"

    on = await session.rpc.permissions.urls.set_unrestricted_mode(PermissionUrlsSetUnrestrictedModeParams(enabled=True))
    off = await session.rpc.permissions.urls.set_unrestricted_mode(PermissionUrlsSetUnrestrictedModeParams(enabled=False))
    assert on.success is True and off.success is True
    with pytest.raises(Exception, match="not found"):
        await raw_request(client, "session.visibility.get", {"sessionId": "no-such-session"})
    released = await client.rpc.sessions.release_lock(SessionsReleaseLockRequest(session_id=session.session_id))
    assert released is not None
    with pytest.raises(Exception):
        await client.rpc.sessions.release_lock(SessionsReleaseLockRequest(session_id="../escape"))


async def test_workspace_ensure_is_the_sessions_workspace(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    got = await session.rpc.workspaces.get_workspace()
    ensured = await session.rpc.workspaces.ensure(WorkspacesEnsureRequest(context={"cwd": str(ctx.work_dir)}))
    assert ensured.workspace.id == session.session_id == got.workspace.id
    assert ensured.path == got.path and ensured.path.endswith(session.session_id)
    assert ensured.workspace.cwd == str(ctx.work_dir)


async def test_persisted_events_page_both_ways_loaded_or_not(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    ctx.fake.replies({"text": "first"}, {"text": "second"})
    await session.send_and_wait("one", timeout=30)
    await session.send_and_wait("two", timeout=30)
    read = client.rpc.sessions.read_persisted_events

    everything = await read(SessionsReadPersistedEventsRequest(session_id=sid, max=1000))
    types = [e.type.value if hasattr(e.type, "value") else e.type for e in everything.events]
    assert everything.has_more is False and everything.cursor_status.value == "ok"
    assert types[0] == "session.start" and types.count("user.message") == 2
    assert types.count("assistant.message") == 2
    assert "session.idle" not in types and "assistant.message_delta" not in types, "only persisted events"
    ids = [e.id for e in everything.events]

    # Forward pages of three continue where the last ended and end with has_more false.
    paged, cursor = [], None
    while True:
        page = await read(SessionsReadPersistedEventsRequest(session_id=sid, cursor=cursor, max=3))
        assert len(page.events) <= 3
        paged += [e.id for e in page.events]
        cursor = page.cursor
        if not page.has_more:
            break
    assert paged == ids

    # Backward: the newest first page, then older ones, each in log order.
    tail = await read(SessionsReadPersistedEventsRequest(session_id=sid, direction=EventsReadDirection.BACKWARD, max=2))
    assert [e.id for e in tail.events] == ids[-2:] and tail.has_more is True
    older = await read(
        SessionsReadPersistedEventsRequest(
            session_id=sid, direction=EventsReadDirection.BACKWARD, cursor=tail.cursor, max=2
        )
    )
    assert [e.id for e in older.events] == ids[-4:-2]

    # Closed (unloaded here) it is still read from its log; the lock is released.
    await client.rpc.sessions.close(SessionsCloseRequest(session_id=sid))
    assert await client.rpc.sessions.release_lock(SessionsReleaseLockRequest(session_id=sid)) is not None
    after = await read(SessionsReadPersistedEventsRequest(session_id=sid, max=1000))
    # Closing wrote the session's shutdown after what was there.
    assert [e.id for e in after.events][:-1] == ids
    assert after.events[-1].type.value == "session.shutdown"
    stale = await read(SessionsReadPersistedEventsRequest(session_id=sid, cursor="not-a-cursor", max=1000))
    assert stale.cursor_status.value == "expired" and stale.events == [] and stale.has_more is False
    with pytest.raises(Exception, match="not found"):
        await read(SessionsReadPersistedEventsRequest(session_id="no-such-session"))


async def test_seed_compaction_name_compacts_like_history_compact(ctx: Ctx, client):
    ctx.load("compaction/should_compact_session_history_after_messages.yaml")
    session = await client.create_session(on_permission_request=APPROVE)
    events = record_events(session)
    await session.send_and_wait("What is 2+2?", timeout=30)
    result = await raw_request(client, "session.compaction.compact", {"sessionId": session.session_id})
    assert result["success"] is True and result["messagesRemoved"] == 1
    assert result["summaryContent"].startswith("<overview>")
    await wait_for(lambda: events.has("session.compaction_complete"), 10, "compaction_complete")
    assert events.of("session.compaction_complete")[0].data.success is True
    assert [c.number for c in (await session.rpc.workspaces.list_checkpoints()).checkpoints] == [1]


PLAN = {"summary": "Add greeting.txt", "actions": ["autopilot", "interactive", "exit_only"]}


async def test_a_plan_review_is_answered_through_handle_pending_exit_plan_mode(ctx: Ctx, client):
    handler_called = asyncio.Event()
    release = asyncio.Event()

    async def slow_review(request, invocation):
        # The UI answers first through handlePendingExitPlanMode; this late answer is ignored.
        handler_called.set()
        await release.wait()
        return {"approved": False, "feedback": "too late"}

    ctx.fake.replies({"tool_calls": [{"name": "exit_plan_mode", "arguments": PLAN}]}, {"text": "Implementing."})
    session = await client.create_session(on_permission_request=APPROVE, on_exit_plan_mode_request=slow_review)
    events = record_events(session)
    unknown = await session.rpc.ui.handle_pending_exit_plan_mode(
        UIHandlePendingExitPlanModeRequest(request_id="missing", response=UIExitPlanModeResponse(approved=True))
    )
    assert unknown.success is False

    turn = asyncio.ensure_future(session.send_and_wait("Plan a greeting file.", agent_mode="plan", timeout=30))
    await wait_for(lambda: events.has("exit_plan_mode.requested") and handler_called.is_set(), 20, "plan review")
    request_id = events.of("exit_plan_mode.requested")[0].data.request_id
    answer = UIExitPlanModeResponse(
        approved=True, selected_action=UIExitPlanModeAction.INTERACTIVE, feedback="Ship it"
    )
    first = await session.rpc.ui.handle_pending_exit_plan_mode(
        UIHandlePendingExitPlanModeRequest(request_id=request_id, response=answer)
    )
    again = await session.rpc.ui.handle_pending_exit_plan_mode(
        UIHandlePendingExitPlanModeRequest(request_id=request_id, response=answer)
    )
    assert (first.success, again.success) == (True, False)
    await turn
    release.set()

    completed = events.of("exit_plan_mode.completed")
    assert len(completed) == 1 and completed[0].data.request_id == request_id
    assert completed[0].data.approved is True and completed[0].data.selected_action.value == "interactive"
    assert completed[0].data.feedback == "Ship it"
    second = ctx.fake.requests()[1]
    assert tool_results(second)[0]["content"].startswith("Plan approved! Exited plan mode.\n\nYou are now in interactive mode.")
    mode = await session.rpc.mode.get()
    assert str(getattr(mode, "value", mode)) == "interactive"


async def test_features_skipper_lacks_answer_through_the_sdk_as_the_original_does_without_them(client):
    """Issue 34: connector discovery, managed settings, AHP hosts, the extension launcher and
    `commands.list`, through the SDK's own server API, answered as 1.0.102 answers them."""
    from copilot.generated.rpc import (
        ConnectorDiscoveryAccountRequest,
        HostDisposeRequest,
        HostListSessionsRequest,
        HostPublishSessionRequest,
        ManagedSettingsResolveRequest,
    )

    rpc = client.rpc
    accounts = await rpc.connectors.get_accounts()
    assert (accounts.availability.value, accounts.accounts) == ("disabled", [])
    caps = await rpc.connectors.get_capabilities()
    assert (caps.api_version, caps.availability.value, caps.opaque_account_selection, caps.conditional_cache) == (
        1, "disabled", True, True)
    with pytest.raises(Exception) as refused:
        await rpc.connectors.list(ConnectorDiscoveryAccountRequest(account_id="acc1"))
    assert "Connector discovery is disabled for this client" in str(refused.value)

    read = await rpc.managed_settings.read()
    assert (read.settings_json, read.error_message) == (None, None)
    resolved = await rpc.managed_settings.resolve(ManagedSettingsResolveRequest())
    assert resolved.resolved.source.value == "none" and resolved.resolved.managed_keys == []
    assert not (resolved.resolved.server_managed or resolved.resolved.device_managed or resolved.resolved.fail_closed)
    assert [layer.source for layer in resolved.layers] == ["device", "server"] and resolved.diagnostics == []
    assert await rpc.managed_settings.clear_cache() is None

    assert (await rpc.host.list_sessions(HostListSessionsRequest())).sessions == []
    await rpc.host.dispose(HostDisposeRequest(host_id="h1"))
    with pytest.raises(Exception) as unavailable:
        await rpc.host.publish_session(HostPublishSessionRequest(host_id="h1", session_id="s1"))
    assert "host is unavailable" in str(unavailable.value)
    assert await rpc.register_extension_launch_provider() is None

    names = [c.name for c in (await rpc.commands.list()).commands]
    assert names == ["allow-all", "permissions", "autopilot", "cwd", "model", "plan", "rename", "review"]
