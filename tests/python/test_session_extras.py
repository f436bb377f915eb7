"""Issue 11: per-session methods on what a session holds and does — its queue, activity,
permission mode and offered tools — and the features answered truthfully without a service
behind them (remote steering, remote control), through the official SDK's typed RPC."""

from __future__ import annotations

import asyncio

import pytest

from copilot.generated.rpc import (
    PermissionMode,
    PermissionsSetModeRequest,
    RemoteEnableRequest,
    RemoteNotifySteerableChangedRequest,
    RemoteSessionMode,
    SessionsStartRemoteControlRequest,
    RemoteControlConfig,
)
from copilot.rpc import PermissionDecisionReject
from copilot.session import PermissionHandler

from conftest import Ctx

APPROVE = PermissionHandler.approve_all


async def _wait(predicate, what: str, timeout: float = 20.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        result = await predicate()
        if result:
            return result
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_queue_shows_waiting_messages_and_can_drop_them(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    assert (await session.rpc.queue.pending_items()).items == []
    assert (await session.rpc.queue.remove_most_recent()).removed is False
    activity = await session.rpc.metadata.activity()
    assert (activity.has_active_work, activity.abortable) == (False, False)

    # A slow first answer keeps the session busy while three more messages queue behind it.
    ctx.fake.replies(
        {"slow_text": ["working", " on", " it"], "delay_ms": 700},
        {"text": "second done"},
    )
    await session.send("first")
    await _wait(lambda: _is_processing(session), "the first message to run")
    for prompt in ("second", "third", "fourth"):
        await session.send(prompt)
    pending = await _wait(lambda: _pending_with(session, 3), "three queued messages")
    assert [i.display_text for i in pending.items] == ["second", "third", "fourth"]
    assert all(i.kind.value == "message" and i.agent_mode.value == "interactive" for i in pending.items)
    activity = await session.rpc.metadata.activity()
    assert (activity.has_active_work, activity.abortable) == (True, True)

    assert (await session.rpc.queue.remove_most_recent()).removed is True
    assert [i.display_text for i in (await session.rpc.queue.pending_items()).items] == ["second", "third"]
    await session.rpc.queue.clear()
    await session.send("fifth")
    assert [i.display_text for i in (await session.rpc.queue.pending_items()).items] == ["fifth"]

    await _wait(lambda: _idle_and_empty(session), "the session to go idle")
    # Only what was left in the queue reached the model: first, then fifth.
    prompts = [r["body"]["messages"][-1]["content"] for r in ctx.fake.requests()]
    assert [p.rsplit("\n", 1)[-1] for p in prompts] == ["first", "fifth"], prompts


async def _is_processing(session) -> bool:
    return (await session.rpc.metadata.is_processing()).processing


async def _pending_with(session, n: int):
    pending = await session.rpc.queue.pending_items()
    return pending if len(pending.items) == n else None


async def _idle_and_empty(session) -> bool:
    activity = await session.rpc.metadata.activity()
    return not activity.has_active_work


async def test_permission_mode_is_the_sessions_approve_all_switch(ctx: Ctx, client):
    asked: list[str] = []

    def deny_and_record(request, _invocation):
        asked.append(str(getattr(request.kind, "value", request.kind)))
        return PermissionDecisionReject()

    session = await client.create_session(on_permission_request=deny_and_record)
    assert (await session.rpc.permissions.get_mode()).mode == PermissionMode.MANUAL
    result = await session.rpc.permissions.set_mode(PermissionsSetModeRequest(mode=PermissionMode.ALLOW_ALL))
    assert (result.success, result.mode) == (True, PermissionMode.ALLOW_ALL)
    assert (await session.rpc.permissions.get_mode()).mode == PermissionMode.ALLOW_ALL

    # With allow-all, a shell command runs without asking the client.
    ctx.fake.replies(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo allowed-by-mode", "description": "echo"}}]},
        {"text": "ran it"},
    )
    await session.send_and_wait("run it", timeout=30)
    assert asked == []
    tool_result = ctx.fake.requests()[-1]["body"]["messages"][-1]["content"]
    assert "allowed-by-mode" in tool_result

    # Assisted approval is not offered: refused, the mode stays.
    refused = await session.rpc.permissions.set_mode(PermissionsSetModeRequest(mode=PermissionMode.ASSISTED))
    assert (refused.success, refused.mode) == (False, PermissionMode.ALLOW_ALL)
    back = await session.rpc.permissions.set_mode(PermissionsSetModeRequest(mode=PermissionMode.MANUAL))
    assert (back.success, back.mode) == (True, PermissionMode.MANUAL)


async def test_current_tool_metadata_is_what_the_model_is_offered(ctx: Ctx, client):
    from copilot.tools import Tool

    async def lookup(_invocation):
        return "found"

    tool = Tool(
        name="lookup_issue",
        description="Looks up an issue",
        parameters={"type": "object", "properties": {"id": {"type": "string"}}},
        handler=lookup,
    )
    session = await client.create_session(on_permission_request=APPROVE, tools=[tool])
    metadata = await session.rpc.tools.get_current_metadata()
    names = [t.name for t in metadata.tools]
    ctx.fake.replies({"text": "ok"})
    await session.send_and_wait("hello", timeout=30)
    offered = [t["function"]["name"] for t in ctx.fake.requests()[-1]["body"]["tools"]]
    assert names == offered
    own = next(t for t in metadata.tools if t.name == "lookup_issue")
    assert own.description == "Looks up an issue"
    assert own.input_schema["properties"]["id"]["type"] == "string"
    assert all(t.description for t in metadata.tools)


async def test_remote_steering_is_recorded_and_remote_control_is_off(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    await session.rpc.remote.notify_steerable_changed(RemoteNotifySteerableChangedRequest(remote_steerable=True))
    await session.rpc.remote.notify_steerable_changed(RemoteNotifySteerableChangedRequest(remote_steerable=False))
    events = [e for e in await session.get_events() if e.type.value == "session.remote_steerable_changed"]
    assert [e.data.remote_steerable for e in events] == [True, False]

    off = await session.rpc.remote.enable(RemoteEnableRequest(mode=RemoteSessionMode.OFF))
    assert off.remote_steerable is False and not off.url
    with pytest.raises(Exception) as refused:
        await session.rpc.remote.enable(RemoteEnableRequest(mode=RemoteSessionMode.ON))
    assert "not connected to GitHub" in str(refused.value)

    assert (await client.rpc.sessions.get_remote_control_status()).status.state == "off"
    with pytest.raises(Exception) as unknown:
        await client.rpc.sessions.start_remote_control(
            SessionsStartRemoteControlRequest(
                session_id="no-such-session",
                config=RemoteControlConfig(remote=False, explicit=False, silent=True, steerable=False),
            )
        )
    assert "no-such-session" in str(unknown.value)
