"""Issue 34: acting on the running turn as the original 1.0.102 does, through the official SDK's
typed RPC — interrupt it keeping or dropping what waits, withdraw a message from its queue or
from the turn it started, add to a steering message, send a batch of messages as one turn, clear
the context from inside a tool handler — and the session's quota projection. What the model is
sent afterwards is the check: each flow changes what reaches it."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from copilot import define_tool
from copilot.generated.rpc import (
    HistoryClearContextRequest,
    InterruptMainTurnRequest,
    QueueAppendSteeringRequest,
    QueueUpdateTextRequest,
    QueueWithdrawMessageRequest,
    SendAgentMode,
    SendMessageItem,
    SendMessagesRequest,
    SessionQuotaPlanTier,
)
from copilot.session import PermissionHandler

from conftest import Ctx, wait_until as _wait

APPROVE = PermissionHandler.approve_all


def _user_texts(request: dict) -> list[str]:
    """The user messages of a model request, without the time stamp the runtime adds."""
    return [
        m["content"].rsplit("</current_datetime>\n\n", 1)[-1]
        for m in request["body"]["messages"]
        if m["role"] == "user" and isinstance(m["content"], str)
    ]


async def _calls(ctx: Ctx, n: int):
    async def enough():
        return len(ctx.fake.requests()) >= n

    await _wait(enough, f"{n} model calls")


async def _idle(session) -> bool:
    return not (await session.rpc.metadata.is_processing()).processing


async def test_interrupting_the_turn_keeps_or_drops_what_waits(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    rpc = session.rpc
    assert (await rpc.interrupt_main_turn(InterruptMainTurnRequest())).interrupted is False

    # Flushing: the hung turn stops, and what was queued and steering runs next.
    ctx.fake.replies({"hang": True}, {"text": "steered"}, {"text": "queued"})
    await session.send("first")
    await _calls(ctx, 1)
    await session.send("queued one")
    await session.send("steer me", mode="immediate")
    assert (await rpc.interrupt_main_turn(InterruptMainTurnRequest(flush_queued=True))).interrupted is True
    await _calls(ctx, 3)
    await _wait(lambda: _idle(session), "the batch to end")
    texts = [_user_texts(r)[-1] for r in ctx.fake.requests()]
    assert texts == ["first", "steer me", "queued one"], texts

    # Not flushing: the queue goes with the turn, as on an abort.
    ctx.fake.replies({"hang": True}, {"text": "never"})
    await session.send("second")
    await _calls(ctx, 4)
    await session.send("dropped")
    assert (await rpc.interrupt_main_turn(InterruptMainTurnRequest())).interrupted is True
    await _wait(lambda: _idle(session), "the interrupted turn to end")
    await asyncio.sleep(0.3)
    assert len(ctx.fake.requests()) == 4, "the dropped message never reached the model"
    assert (await rpc.queue.pending_items()).items == []


async def test_a_message_is_withdrawn_from_its_queue_or_from_the_turn_it_started(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    q = session.rpc.queue
    ctx.fake.replies({"text": "zero"}, {"hang": True}, {"text": "after"})
    await session.send_and_wait("zero")

    running = await session.send("take me back")
    await _calls(ctx, 2)
    queued = await session.send("queued")
    steering = await session.send("steering", mode="immediate")
    pending = await q.pending_items()
    assert pending.withdrawable_turn_message_id == running
    # Conditional on the text as sent; unknown ids are simply not there.
    assert (await q.withdraw_message(QueueWithdrawMessageRequest(message_id=queued, expected_prompt="edited"))).removed is False
    assert (await q.withdraw_message(QueueWithdrawMessageRequest(message_id="nope", expected_prompt="queued"))).removed is False
    # Something sent after the running message waits: the turn keeps it.
    kept = await q.withdraw_message(QueueWithdrawMessageRequest(message_id=running, expected_prompt="take me back"))
    assert (kept.removed, kept.interrupted) == (False, False)
    assert (await q.withdraw_message(QueueWithdrawMessageRequest(message_id=queued, expected_prompt="queued"))).removed is True
    assert (await q.withdraw_message(QueueWithdrawMessageRequest(message_id=steering, expected_prompt="steering"))).removed is True
    pending = await q.pending_items()
    assert (pending.items, pending.steering_messages) == ([], [])

    # Now it goes: the turn is interrupted and its events leave the log.
    out = await q.withdraw_message(QueueWithdrawMessageRequest(message_id=running, expected_prompt="take me back"))
    assert (out.removed, out.interrupted) == (True, True)
    await _wait(lambda: _idle(session), "the withdrawn turn to unwind")
    contents = [getattr(e.data, "content", None) for e in await session.get_events() if e.type.value == "user.message"]
    assert contents == ["zero"], contents
    assert (await q.pending_items()).withdrawable_turn_message_id is None

    # The model never hears of it.
    await session.send_and_wait("after")
    assert _user_texts(ctx.fake.requests()[-1]) == ["zero", "after"]
    # An answered message is no longer the turn's to give back.
    answered = await q.withdraw_message(QueueWithdrawMessageRequest(message_id=running, expected_prompt="take me back"))
    assert (answered.removed, answered.interrupted) == (False, False)


async def test_a_steering_message_grows_while_it_reads_as_expected(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    q = session.rpc.queue
    ctx.fake.replies(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 1", "description": "wait"}}]},
        {"text": "done"},
    )
    await session.send("start")
    await _calls(ctx, 1)
    steer = await session.send("also this", mode="immediate")

    def add(expected: str, mode=SendAgentMode.INTERACTIVE):
        return q.append_steering(QueueAppendSteeringRequest(
            message_id=steer, expected_prompt=expected, agent_mode=mode,
            prompt="and that", display_prompt="and that (shown)", attachments=[],
        ))

    assert (await add("something else")).updated is False
    assert (await add("also this", SendAgentMode.PLAN)).updated is False, "another mode is not merged"
    assert (await add("also this")).updated is True
    assert (await add("also this")).updated is False, "it changed since"
    assert (await q.pending_items()).steering_messages == ["also this\n\nand that (shown)"]

    await _calls(ctx, 2)
    await _wait(lambda: _idle(session), "the turn to end")
    assert _user_texts(ctx.fake.requests()[1])[-1] == "also this\n\nand that"
    # Taken into the turn: nothing is left to add to.
    assert (await add("also this\n\nand that")).updated is False


async def test_an_edited_queued_message_shows_its_new_text(ctx: Ctx, client):
    """A display text given at send does not outlive an edit of the message (the original's)."""
    session = await client.create_session(on_permission_request=APPROVE)
    q = session.rpc.queue
    ctx.fake.replies({"hang": True})
    await session.send("first")
    await _calls(ctx, 1)
    await session.send("two", display_prompt="TWO shown")
    await session.send("three", display_prompt="THREE shown")
    two, three = (i.id for i in (await q.pending_items()).items)
    assert (await q.update_text(QueueUpdateTextRequest(id=two, prompt="two edited"))).updated is True
    edited = QueueUpdateTextRequest(id=three, prompt="three edited", display_prompt="THREE edited")
    assert (await q.update_text(edited)).updated is True
    assert (await q.update_text(edited)).updated is False, "the same text and display again"
    shown = [i.display_text for i in (await q.pending_items()).items]
    assert shown == ["two edited", "THREE edited"], shown
    await session.abort()


async def test_a_batch_of_messages_is_one_turn_and_an_empty_batch_continues(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "batched"}, {"text": "continued"})
    events = []
    session.on(events.append)
    sent = await session.rpc.send_messages(SendMessagesRequest(messages=[
        SendMessageItem(prompt="context first"),
        SendMessageItem(prompt="then the question", display_prompt="the question (shown)"),
    ]))
    assert len(sent.message_ids) == 2
    await _calls(ctx, 1)
    await _wait(lambda: _idle(session), "the batch's turn")
    # One model call with both messages; the earlier one unstamped, the last stamped.
    users = [m["content"] for m in ctx.fake.requests()[0]["body"]["messages"] if m["role"] == "user"]
    assert users[0] == "context first" and users[1].endswith("\n\nthen the question"), users
    shown = [(e.data.message_id, e.data.content) for e in events if e.type.value == "user.message"]
    assert shown == [(sent.message_ids[0], "context first"), (sent.message_ids[1], "the question (shown)")]
    answer = next(e for e in events if e.type.value == "assistant.message")
    assert answer.data.originating_message_id == sent.message_ids[1]

    events.clear()
    assert (await session.rpc.send_messages(SendMessagesRequest(messages=[]))).message_ids == []
    await _calls(ctx, 2)
    await _wait(lambda: _idle(session), "the continuing turn")
    assert [e for e in events if e.type.value == "user.message"] == []
    assert _user_texts(ctx.fake.requests()[1]) == ["context first", "then the question"]
    continued = next(e for e in events if e.type.value == "assistant.message")
    assert continued.data.content == "continued" and continued.data.originating_message_id is None


class _NoArgs(BaseModel):
    pass


async def test_a_tool_handler_clears_the_context_and_seeds_the_fresh_window(ctx: Ctx, make_client):
    client = make_client()
    holder: dict = {}
    cleared: list[int] = []

    @define_tool("start_over", description="Starts the conversation over")
    async def start_over(params: _NoArgs) -> str:
        rpc = holder["session"].rpc.history
        cleared.append((await rpc.clear_context(HistoryClearContextRequest(prompt="Begin again from the plan."))).messages_cleared)
        cleared.append((await rpc.clear_context(HistoryClearContextRequest(prompt="And keep it short."))).messages_cleared)
        return "cleared"

    session = await client.create_session(on_permission_request=APPROVE, tools=[start_over])
    holder["session"] = session
    with pytest.raises(Exception) as outside:
        await session.rpc.history.clear_context(HistoryClearContextRequest(prompt="x"))
    assert "must be called from inside a tool handler" in str(outside.value)

    ctx.fake.replies({"text": "hello"}, {"tool_calls": [{"name": "start_over", "arguments": {}}]}, {"text": "fresh"})
    await session.send_and_wait("hi")
    answer = await session.send_and_wait("start over please")
    assert answer.data.content == "fresh"
    # user, assistant, user, the assistant's call: four went; a second clear takes nothing more.
    assert cleared == [4, 0]
    last = ctx.fake.requests()[-1]["body"]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "user"]
    assert [m["content"] for m in last[1:]] == ["Begin again from the plan.", "And keep it short."]
    kinds = [e.type.value for e in await session.get_events()]
    assert kinds.count("session.context_cleared") == 2

    # Resumed elsewhere, the history is the cleared one.
    session_id = session.session_id
    other = make_client()
    resumed = await other.resume_session(session_id, on_permission_request=APPROVE, tools=[start_over])
    ctx.fake.replies({"text": "still fresh"})
    await resumed.send_and_wait("and now?")
    texts = _user_texts(ctx.fake.requests()[-1])
    assert texts == ["Begin again from the plan.", "And keep it short.", "and now?"], texts


async def test_the_quota_projection_names_the_account_s_plan(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    got = await session.rpc.quota.get()
    # The fake GitHub API's account is on `individual_pro`, which the original shows as Pro+.
    assert got.plan_tier == SessionQuotaPlanTier.PRO_PLUS
    assert (got.is_free_user, got.premium_requests_billable) == (False, True)
    assert (await session.rpc.quota.refresh()).plan_tier == SessionQuotaPlanTier.PRO_PLUS
    assert await session.rpc.quota.take_warnings() == []
