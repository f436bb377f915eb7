"""Issue 11: methods the SDK suites call that had no test of their own here — session
visibility, schedules, remote sessions and remote control (answered as the original does
without GitHub's service), URL mode, `sessions.releaseLock` and the seed's `session.compaction.compact`."""

from __future__ import annotations

import pytest

from copilot.generated.rpc import (
    PermissionUrlsSetUnrestrictedModeParams,
    RemoteControlStatusOff,
    ScheduleStopRequest,
    SessionsReleaseLockRequest,
    SessionsSetRemoteControlSteeringRequest,
    SessionsStopRemoteControlRequest,
    SessionsTransferRemoteControlRequest,
    SessionVisibilityStatus,
    VisibilitySetRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request, record_events, wait_for

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
