"""Issue 9, compaction: infinite sessions, manual compaction, checkpoints, handoff summaries.

The background case replays the SDK's own recorded conversation: the fake model answers only
if Skipper sends exactly what the original sent, including the summary that replaces the
compacted messages.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from copilot.generated.rpc import (
    HistoryTruncateRequest,
    SessionHistoryCompactRequest,
    WorkspacesReadCheckpointRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, wait_for

APPROVE = PermissionHandler.approve_all
LOW = {"enabled": True, "background_compaction_threshold": 0.005, "buffer_exhaustion_threshold": 0.01}


def of_type(events: list, kind: str) -> list:
    return [e for e in events if e.type.value == kind]


def compaction_requests(ctx: Ctx) -> list[dict]:
    return [r for r in ctx.fake.requests() if r["headers"].get("x-interaction-type") == "conversation-compaction"]


async def test_background_compaction_replaces_history_and_writes_a_checkpoint(ctx: Ctx, client):
    ctx.load("compaction/should_trigger_compaction_with_low_threshold_and_emit_events.yaml")
    session = await client.create_session(on_permission_request=APPROVE, infinite_sessions=LOW)
    events: list = []
    session.on(events.append)

    await session.send_and_wait("Tell me a story about a dragon. Be detailed.", timeout=60)
    assert not of_type(events, "session.compaction_start"), "one message is too few to compact"
    await session.send_and_wait("Continue the story with more details about the dragon's castle.", timeout=60)
    await wait_for(lambda: any(e.data.success for e in of_type(events, "session.compaction_complete")), 30,
                   "a successful compaction")

    start = of_type(events, "session.compaction_start")[0]
    assert start.data.conversation_tokens > 0 and start.data.token_limit > 0
    assert start.data.trigger.value == "threshold"
    done = next(e for e in of_type(events, "session.compaction_complete") if e.data.success)
    summary = done.data.summary_content
    for tag in ("<overview>", "<history>", "<checkpoint_title>"):
        assert tag in summary
    assert done.data.compaction_tokens_used.input_tokens > 0
    assert done.data.checkpoint_number == 1
    path = Path(done.data.checkpoint_path)
    assert path.name == "001-dragon-storytelling-creative-w.md"
    assert path.parent == ctx.copilot_home / "session-state" / session.session_id / "checkpoints"
    assert done.data.messages_removed >= 1 and done.data.pre_compaction_tokens > done.data.post_compaction_tokens

    # The summary call: the conversation so far, then the request; tools offered, not callable.
    [summary_call] = compaction_requests(ctx)[:1]
    body = summary_call["body"]
    assert body["tool_choice"] == "none" and body["tools"]
    assert body["messages"][-1]["content"].startswith("Please create a detailed summary of the conversation")

    # The model's context continues from the summary (the replay only matches if it does).
    await session.send_and_wait("Now describe the dragon's treasure in great detail.", timeout=60)
    answer = await session.send_and_wait("What was the story about?", timeout=60)
    assert "kaedrith" in answer.data.content.lower()
    last = ctx.fake.requests()[-1]["body"]["messages"]
    assert last[1]["content"].startswith("Some of the conversation history has been summarized to free up context.")
    assert "<user_message>\nTell me a story about a dragon. Be detailed.\n</user_message>" in last[1]["content"]

    listed = (await session.rpc.workspaces.list_checkpoints()).checkpoints
    assert [(c.number, c.title, c.filename) for c in listed] == [
        (1, "Dragon storytelling creative writing", "001-dragon-storytelling-creative-w.md")
    ]
    content = (await session.rpc.workspaces.read_checkpoint(WorkspacesReadCheckpointRequest(number=1))).content
    assert content.startswith("<overview>") and "<checkpoint_title>" not in content
    assert (await session.rpc.workspaces.read_checkpoint(WorkspacesReadCheckpointRequest(number=7))).content is None
    index = (path.parent / "index.md").read_text()
    assert "| 1 | Dragon storytelling creative writing | 001-dragon-storytelling-creative-w.md |" in index

    # The log keeps every message; only the model's context shrank.
    logged = [e.data.content for e in of_type(await session.get_events(), "user.message")]
    assert len(logged) == 4


async def test_disabled_infinite_sessions_never_compact(ctx: Ctx, client):
    ctx.load("compaction/should_not_emit_compaction_events_when_infinite_sessions_disabled.yaml")
    session = await client.create_session(
        on_permission_request=APPROVE, infinite_sessions={**LOW, "enabled": False}
    )
    events: list = []
    session.on(events.append)
    await session.send_and_wait("What is 2+2?", timeout=30)
    # A second exchange passes the thresholds and the minimum length that trigger compaction
    # when it is enabled (the first test).
    ctx.fake.replies({"text": "6"})
    await session.send_and_wait("And 3+3?", timeout=30)
    await asyncio.sleep(0.2)
    assert not [e for e in events if e.type.value.startswith("session.compaction")]
    assert not compaction_requests(ctx)


async def test_manual_compaction_then_resume_continues_from_the_summary(ctx: Ctx, make_client):
    ctx.load("compaction/should_compact_session_history_after_messages.yaml")
    client1 = make_client()
    await client1.start()
    session = await client1.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    await session.send_and_wait("What is 2+2?", timeout=30)

    result = await session.rpc.history.compact()
    assert result.success is True
    assert result.messages_removed == 1
    assert result.summary_content.startswith("<overview>")
    assert result.context_window.messages_length == 1 and result.context_window.current_tokens > 0
    listed = (await session.rpc.workspaces.list_checkpoints()).checkpoints
    assert [c.number for c in listed] == [1]

    # Only the summary is left: nothing more to compact, under either method name.
    with pytest.raises(Exception, match="Nothing to compact."):
        await session.rpc.history.compact(SessionHistoryCompactRequest(custom_instructions="Focus on math"))
    await session.disconnect()
    await client1.stop()

    client2 = make_client()
    await client2.start()
    try:
        resumed = await client2.resume_session(sid, on_permission_request=APPROVE)
        ctx.fake.replies({"text": "Still four."})
        answer = await resumed.send_and_wait("And again?", timeout=30)
        assert answer.data.content == "Still four."
        messages = ctx.fake.requests()[-1]["body"]["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "user"]
        assert messages[1]["content"].startswith("Some of the conversation history has been summarized")
        assert "<user_message>\nWhat is 2+2?\n</user_message>" in messages[1]["content"]
        assert messages[2]["content"].endswith("And again?")
    finally:
        await client2.stop()


async def test_compaction_methods_on_a_fresh_session(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    events: list = []
    session.on(events.append)
    with pytest.raises(Exception, match="Nothing to compact."):
        await session.rpc.history.compact()
    await wait_for(lambda: of_type(events, "session.compaction_complete"), 5, "compaction_complete")
    [done] = of_type(events, "session.compaction_complete")
    assert done.data.success is False and done.data.error == "Nothing to compact."
    assert (await session.rpc.history.summarize_for_handoff()).summary == ""
    assert (await session.rpc.history.cancel_background_compaction()).cancelled is False
    assert (await session.rpc.history.abort_manual_compaction()).aborted is False
    assert (await session.rpc.workspaces.list_checkpoints()).checkpoints == []
    assert not ctx.fake.requests(), "none of these needs the model"


async def test_handoff_summary_asks_the_model_without_tools(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "Hello there."}, {"text": "<summary>handed off</summary>"})
    await session.send_and_wait("Say hello", timeout=30)
    result = await session.rpc.history.summarize_for_handoff()
    assert result.summary == "<summary>handed off</summary>"
    body = ctx.fake.requests()[-1]["body"]
    assert "tools" not in body
    assert body["messages"][0]["content"].startswith("Your task is to create a comprehensive, detailed summary")
    assert body["messages"][-1]["content"].startswith("Summarize the conversation history so far")
    # A handoff summary changes nothing: the next turn sees the whole conversation.
    ctx.fake.replies({"text": "Bye."})
    await session.send_and_wait("Say bye", timeout=30)
    roles = [m["role"] for m in ctx.fake.requests()[-1]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


async def test_truncate_drops_an_event_and_everything_after_it(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    raw: list = []
    session.on(raw.append)
    ctx.fake.replies({"text": "One."}, {"text": "Two."})
    await session.send_and_wait("first", timeout=30)
    await session.send_and_wait("second", timeout=30)
    before = await session.get_events()
    second = next(e for e in before if e.type.value == "user.message" and e.data.content == "second")
    at = [e.id for e in before].index(second.id)
    log_path = ctx.copilot_home / "session-state" / session.session_id / "events.jsonl"
    log_ids = [json.loads(line)["id"] for line in log_path.read_text().splitlines()]

    result = await session.rpc.history.truncate(HistoryTruncateRequest(event_id=str(second.id)))
    assert result.events_removed == len(log_ids) - log_ids.index(str(second.id))
    after = await session.get_events()
    assert [e.id for e in after] == [e.id for e in before[:at]]
    rewind = [e for e in raw if e.type.value == "session.snapshot_rewind"]
    assert rewind and rewind[0].data.events_removed == result.events_removed

    with pytest.raises(Exception, match="Event nope not found in session"):
        await session.rpc.history.truncate(HistoryTruncateRequest(event_id="nope"))

    # The model no longer sees what was cut; new events chain onto what is left.
    ctx.fake.replies({"text": "Three."})
    await session.send_and_wait("third", timeout=30)
    messages = ctx.fake.requests()[-1]["body"]["messages"]
    contents = [m["content"] for m in messages[1:]]
    assert contents[0].endswith("first") and contents[1] == "One." and contents[2].endswith("third")
    assert len(contents) == 3
    parsed = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert all(b["parentId"] == a["id"] for a, b in zip(parsed, parsed[1:]))


async def test_a_context_overflow_is_compacted_and_sent_again(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    events: list = []
    session.on(events.append)
    ctx.fake.replies(
        {"text": "One."},
        {"error": {"status": 400, "message": "prompt is too long: 250000 tokens > 200000 maximum"}},
        {"text": "<overview>o</overview>\n<checkpoint_title>Overflow</checkpoint_title>"},
        {"text": "Two."},
    )
    await session.send_and_wait("first", timeout=30)
    answer = await session.send_and_wait("second", timeout=30)
    assert answer.data.content == "Two."
    assert not of_type(events, "session.error")
    [start] = of_type(events, "session.compaction_start")
    assert start.data.trigger.value == "context_limit_retry"
    [done] = of_type(events, "session.compaction_complete")
    assert done.data.success and done.data.checkpoint_number == 1
    messages = ctx.fake.requests()[-1]["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"].startswith("The conversation history has been summarized")
    assert "<user_message>\nsecond\n</user_message>" in messages[1]["content"]


async def test_a_manual_compaction_can_be_aborted(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "One."}, {"hang": True})
    await session.send_and_wait("first", timeout=30)
    compacting = asyncio.create_task(session.rpc.history.compact())
    await wait_for(lambda: len(ctx.fake.requests()) == 2, 10, "the summary call")
    assert (await session.rpc.history.cancel_background_compaction()).cancelled is False
    assert (await session.rpc.history.abort_manual_compaction()).aborted is True
    with pytest.raises(Exception, match="cancelled"):
        await asyncio.wait_for(compacting, 10)
    # Nothing changed: the next turn sees the whole conversation.
    ctx.fake.replies({"text": "Two."})
    await session.send_and_wait("second", timeout=30)
    assert [m["role"] for m in ctx.fake.requests()[-1]["body"]["messages"]] == ["system", "user", "assistant", "user"]
