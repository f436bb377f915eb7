"""Issue 11: per-session methods on what a session holds and does — its queue, activity,
permission mode and offered tools — and the features answered truthfully without a service
behind them (remote steering, remote control), through the official SDK's typed RPC."""

from __future__ import annotations

import asyncio

import pytest

from copilot.generated.rpc import (
    PermissionMode,
    QueueDuplicateAtRequest,
    QueueInsertAtRequest,
    QueueInsertMessage,
    QueueMoveItemRequest,
    QueueRemoveAtRequest,
    QueueSendNowRequest,
    QueueSetDrainPausedRequest,
    QueueUpdateTextRequest,
    PermissionsSetModeRequest,
    RemoteEnableRequest,
    RemoteNotifySteerableChangedRequest,
    RemoteSessionMode,
    SessionsStartRemoteControlRequest,
    RemoteControlConfig,
)
from copilot.rpc import PermissionDecisionReject
from copilot.session import PermissionHandler

from conftest import Ctx, wait_until as _wait

APPROVE = PermissionHandler.approve_all


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


async def test_queued_messages_are_edited_by_id_and_the_queue_can_be_held(ctx: Ctx, client):
    """Issue 34: the original's queue edits, through the official SDK: move, change, duplicate,
    insert and remove queued messages by id, steer one into the running turn, and hold the
    queue so that nothing queued starts until it is released. What reaches the model is the
    queue as edited; an unknown id and a second hold are refused with the original's codes."""
    session = await client.create_session(on_permission_request=APPROVE)
    q = session.rpc.queue
    ctx.fake.replies(
        {"slow_text": ["working", " on", " it"], "delay_ms": 700},
        {"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "d"},
    )
    await session.send("first")
    await _wait(lambda: _is_processing(session), "the first message to run")
    for prompt in ("second", "third", "fourth"):
        await session.send(prompt)
    pending = await _wait(lambda: _pending_with(session, 3), "three queued messages")
    second, third, fourth = (i.id for i in pending.items)

    assert (await q.move_item(QueueMoveItemRequest(id=fourth, to_position=0))).changed is True
    assert (await q.move_item(QueueMoveItemRequest(id=fourth, to_position=-3))).changed is False
    assert (await q.update_text(QueueUpdateTextRequest(id=second, prompt="second, edited"))).updated is True
    assert (await q.update_text(QueueUpdateTextRequest(id=second, prompt="second, edited"))).updated is False
    copy = (await q.duplicate_at(QueueDuplicateAtRequest(id=second))).id
    assert copy not in (second, third, fourth)
    assert (await q.remove_at(QueueRemoveAtRequest(id=third))).removed is True
    inserted = (await q.insert_at(QueueInsertAtRequest(position=99, message=QueueInsertMessage(prompt="last")))).id
    listed = (await q.pending_items()).items
    assert [(i.id, i.display_text) for i in listed] == [
        (fourth, "fourth"), (second, "second, edited"), (copy, "second, edited"), (inserted, "last"),
    ]
    with pytest.raises(Exception) as unknown:
        await q.remove_at(QueueRemoveAtRequest(id=third))
    assert "unknown queue item id" in str(unknown.value)
    with pytest.raises(Exception) as hidden:
        await q.insert_at(QueueInsertAtRequest(position=0, message=QueueInsertMessage(prompt="x", source="system")))
    assert "must stay visible" in str(hidden.value)
    # Into the running turn: out of the queue, into its steering lane (it runs next).
    assert (await q.send_now(QueueSendNowRequest(id=copy))).steered is True
    assert (await q.pending_items()).steering_messages == ["second, edited"]

    # Held: the running turn ends, and nothing queued starts until the hold is released.
    await q.set_drain_paused(QueueSetDrainPausedRequest(paused=True))
    with pytest.raises(Exception) as twice:
        await q.set_drain_paused(QueueSetDrainPausedRequest(paused=True))
    assert "already paused" in str(twice.value)
    # The first turn ends; what it was steered with waits at the front of the held queue.
    held = await _wait(lambda: _pending_with(session, 4), "the first turn to end")
    assert held.items[0].display_text == "second, edited" and held.steering_messages == []
    await asyncio.sleep(0.5)
    assert len(ctx.fake.requests()) == 1, "nothing queued started while held"
    assert await _is_processing(session), "the held queue is work still to do"
    await q.set_drain_paused(QueueSetDrainPausedRequest(paused=False))
    await _wait(lambda: _idle_and_empty(session), "the queue to drain")
    prompts = [r["body"]["messages"][-1]["content"].rsplit("\n", 1)[-1] for r in ctx.fake.requests()]
    assert prompts == ["first", "second, edited", "fourth", "second, edited", "last"], prompts
    with pytest.raises(Exception) as gone:
        await q.send_now(QueueSendNowRequest(id=fourth))
    assert "unknown queue item id" in str(gone.value)


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
