"""Autopilot mode: the ``task_complete`` tool, the nudge, and how a run ends.

No recording exists, so the model is scripted. In autopilot a model reply without tool calls
does not end the run: Skipper asks again with the nudge as a user message, until the model
calls ``task_complete`` (or the nudge cap is reached).
"""

from __future__ import annotations

from copilot.generated.rpc import ModeSetRequest, SessionMode
from copilot.session import PermissionHandler

from conftest import (
    Ctx,
    record_events,
    tool_names,
    tool_results,
    user_texts,
    wait_for,
)

NUDGE = "You have not yet marked the task as complete using the task_complete tool"


def _task_complete(summary: str) -> dict:
    return {"tool_calls": [{"name": "task_complete", "arguments": {"summary": summary}}]}


async def _idle(events) -> None:
    """send_and_wait may return on session.autopilot_stopped, just before session.idle."""
    await wait_for(lambda: events.has("session.idle"), timeout=10, what="session.idle")


def _mode(value) -> str:
    return str(getattr(value, "value", value))


async def _set_mode(client, session, mode: str) -> None:
    """``session.mode.set`` through the SDK's typed wrapper."""
    result = await session.rpc.mode.set(ModeSetRequest(mode=SessionMode(mode)))
    assert result.status == "applied" and result.mode_applied is True, result


async def _autopilot_session(client):
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    events = record_events(session)
    await _set_mode(client, session, "autopilot")
    return session, events


async def test_mode_set_to_autopilot(ctx: Ctx, client):
    session, events = await _autopilot_session(client)
    assert _mode(await session.rpc.mode.get()) == "autopilot"
    changed = events.of("session.mode_changed")
    assert len(changed) == 1, events.types()
    assert _mode(changed[0].data.previous_mode) == "interactive"
    assert _mode(changed[0].data.new_mode) == "autopilot"


async def test_typed_mode_set_result(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    result = await session.rpc.mode.set(ModeSetRequest(mode=SessionMode.AUTOPILOT))
    assert result.mode_applied is True and result.model_changed is False
    assert _mode(await session.rpc.mode.get()) == "autopilot"


async def test_task_complete_ends_the_run(ctx: Ctx, client):
    ctx.fake.replies(_task_complete("All work done"), {"text": "must not be requested"})
    session, events = await _autopilot_session(client)
    await session.send_and_wait("do the task", timeout=30)
    await _idle(events)
    reqs = ctx.fake.requests()
    assert len(reqs) == 1, "no model call after task_complete"
    assert "task_complete" in tool_names(reqs[0]), tool_names(reqs[0])

    done = events.of("session.task_complete")
    assert len(done) == 1, events.types()
    assert done[0].data.summary == "All work done"
    assert done[0].data.success is True
    tool_done = [e for e in events.of("tool.execution_complete")]
    assert len(tool_done) == 1 and tool_done[0].data.success is True
    types = events.types()
    assert (
        types.index("tool.execution_complete")
        < types.index("session.task_complete")
        < types.index("session.idle")
    ), types
    stopped = events.of("session.autopilot_stopped")
    assert len(stopped) == 1 and stopped[0].data.reason == "task_complete", events.types()
    assert types.index("session.autopilot_stopped") < types.index("session.idle"), types
    idle = events.of("session.idle")[-1]
    assert _mode(idle.data.mode) == "autopilot", idle.data


async def test_reply_without_tool_calls_is_nudged(ctx: Ctx, client):
    ctx.fake.replies({"text": "I have a plan."}, _task_complete("Implemented it"))
    session, events = await _autopilot_session(client)
    await session.send_and_wait("implement the feature", timeout=30)
    await _idle(events)
    reqs = ctx.fake.requests()
    assert len(reqs) == 2, len(reqs)
    # The second call repeats the history and adds the nudge as the last user message.
    last_user = user_texts(reqs[1])[-1]
    assert NUDGE in last_user, last_user
    assert NUDGE not in user_texts(reqs[0])[-1]
    roles = [m["role"] for m in reqs[1]["body"]["messages"]]
    assert roles[-2:] == ["assistant", "user"], roles
    assert reqs[1]["body"]["messages"][-2]["content"] == "I have a plan."
    done = events.of("session.task_complete")
    assert len(done) == 1 and done[0].data.summary == "Implemented it"
    assert events.types()[-1] == "session.idle", events.types()


async def test_nudges_are_capped(ctx: Ctx, client):
    ctx.fake.replies(*({"text": f"thinking {i}"} for i in range(10)))
    session, events = await _autopilot_session(client)
    await session.send_and_wait("never finishes", timeout=40)
    await _idle(events)
    reqs = ctx.fake.requests()
    # 1 + the default cap of 5 nudges.
    assert len(reqs) == 6, len(reqs)
    assert all(NUDGE in user_texts(r)[-1] for r in reqs[1:])
    assert not events.has("session.task_complete")
    stopped = events.of("session.autopilot_stopped")
    assert len(stopped) == 1 and stopped[0].data.reason != "task_complete", stopped
    assert events.types()[-1] == "session.idle", events.types()


async def test_task_complete_tool_only_in_autopilot(ctx: Ctx, client):
    ctx.fake.replies({"text": "interactive answer"}, _task_complete("done"))
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    answer = await session.send_and_wait("plain question", timeout=30)
    assert answer is not None and answer.data.content == "interactive answer"
    await _set_mode(client, session, "autopilot")
    await session.send_and_wait("now finish it", timeout=30)
    first, second = ctx.fake.requests()
    assert "task_complete" not in tool_names(first), tool_names(first)
    assert "task_complete" in tool_names(second), tool_names(second)
    tc = next(
        t["function"] for t in second["body"]["tools"] if t["function"]["name"] == "task_complete"
    )
    assert "summary" in tc["parameters"]["properties"], tc


async def test_interactive_mode_never_nudges(ctx: Ctx, client):
    ctx.fake.replies({"text": "just text"}, {"text": "must not be requested"})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    answer = await session.send_and_wait("hi", timeout=30)
    assert answer is not None and answer.data.content == "just text"
    assert len(ctx.fake.requests()) == 1


async def test_send_with_agent_mode_autopilot(ctx: Ctx, client):
    ctx.fake.replies(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo step", "description": "s"}}]},
        {"text": "step ran"},
        _task_complete("Finished via agent mode"),
    )
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    events = record_events(session)
    await session.send_and_wait("work autonomously", agent_mode="autopilot", timeout=30)
    reqs = ctx.fake.requests()
    assert len(reqs) == 3, len(reqs)
    assert all("task_complete" in tool_names(r) for r in reqs)
    # The tool result, then the nudge after the plain-text reply.
    assert tool_results(reqs[1])[-1]["content"].startswith("step\n")
    assert NUDGE in user_texts(reqs[2])[-1]
    done = events.of("session.task_complete")
    assert len(done) == 1 and done[0].data.summary == "Finished via agent mode"
