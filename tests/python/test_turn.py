"""Item 3/4 of issue 2: one conversation turn, its events and their envelope."""

from __future__ import annotations

import asyncio
import re
import uuid

from copilot.session import PermissionHandler
from copilot.session_events import AssistantMessageData, SessionEventType

from conftest import Ctx, tap_raw_events, wait_for

ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$")
TURN_TYPES = (
    "user.message",
    "assistant.turn_start",
    "assistant.usage",
    "assistant.message",
    "assistant.turn_end",
    "session.idle",
)


def _events(raw: list[dict], session_id: str) -> list[dict]:
    return [p["event"] for p in raw if p["sessionId"] == session_id]


def _types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


def _is_uuid4(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    return str(parsed) == value.lower() and parsed.version == 4


async def _idle_after(raw: list[dict], session_id: str, start: int) -> None:
    await wait_for(
        lambda: "session.idle" in _types(_events(raw, session_id)[start:]),
        timeout=30,
        what="session.idle",
    )


async def test_send_and_wait_returns_final_assistant_message(ctx: Ctx, client):
    ctx.load("session/sendandwait_blocks_until_session_idle_and_returns_final_assistant_message.yaml")
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    response = await session.send_and_wait("What is 2+2?", timeout=30)
    assert response is not None
    assert response.type == SessionEventType.ASSISTANT_MESSAGE
    assert isinstance(response.data, AssistantMessageData)
    assert response.data.content == "2 + 2 = 4"

    # The model saw exactly the system prompt and the user's message.
    reqs = ctx.fake.requests()
    assert len(reqs) == 1, reqs
    messages = reqs[0]["body"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "What is 2+2?" in str(messages[1]["content"])


async def test_turn_events_order_and_envelope(ctx: Ctx, client):
    ctx.load("session/should_receive_session_events.yaml")
    raw = tap_raw_events(client)
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    sid = session.session_id
    before = len(_events(raw, sid))

    message_id = await session.send("What is 100+200?")
    await _idle_after(raw, sid, before)
    await asyncio.sleep(0.3)  # anything emitted after idle would be a bug; give it a chance
    raw.assert_parseable()

    events = _events(raw, sid)
    turn = events[before:]
    types = _types(turn)

    # -- the turn's events, in order ----------------------------------------------------------
    for t in TURN_TYPES:
        assert types.count(t) == 1, f"expected exactly one {t}: {types}"
    # Order as CLI 1.0.102 sends it (spec/reference/event-sequence-1.0.102.txt): the usage
    # report precedes the assistant message of the same model call.
    assert [t for t in types if t in TURN_TYPES] == [
        "user.message",
        "assistant.turn_start",
        "assistant.usage",
        "assistant.message",
        "assistant.turn_end",
        "session.idle",
    ], types
    assert types[-1] == "session.idle", f"session.idle must be the last event: {types}"
    # Streaming is off by default: no deltas.
    assert "assistant.message_delta" not in types, types

    # -- payloads ----------------------------------------------------------------------------
    by_type = {e["type"]: e for e in turn}
    user = by_type["user.message"]["data"]
    assert user["content"] == "What is 100+200?"
    assert user["messageId"] == message_id
    assistant = by_type["assistant.message"]["data"]
    assert assistant["content"] == "100 + 200 = 300"
    assert assistant["originatingMessageId"] == message_id
    assert assistant.get("toolRequests", []) == []
    assert by_type["assistant.turn_start"]["data"]["turnId"] == "0"
    assert by_type["assistant.turn_end"]["data"]["turnId"] == "0"
    assert isinstance(by_type["assistant.usage"]["data"].get("model"), str)

    # -- envelope ----------------------------------------------------------------------------
    ids = [e.get("id") for e in events]
    assert all(_is_uuid4(x) for x in ids), ids
    assert len(set(ids)) == len(ids), "event ids must be unique"
    for e in events:
        assert isinstance(e.get("timestamp"), str) and ISO_Z.match(e["timestamp"]), e
        assert isinstance(e.get("data"), dict), e
    # parentId: every event points at the latest persisted event before it. Ephemeral events
    # are on no disk, so nothing points at them.
    # The log also holds records clients never see (`session.usage_record`): a parent this
    # client has not seen is one of those.
    seen = {e["id"] for e in events}
    last_persisted = events[0].get("parentId")
    for cur in events:
        if cur.get("parentId") not in (last_persisted, None) and cur.get("parentId") not in seen:
            last_persisted = cur["parentId"]
        assert cur.get("parentId") == last_persisted, (
            f"{cur['type']}.parentId={cur.get('parentId')} but the latest persisted event is "
            f"{last_persisted}"
        )
        if not cur.get("ephemeral"):
            last_persisted = cur["id"]
    first = events[0]
    if first["type"] == "session.start":
        assert first.get("parentId") is None, first
    for e in events[1:]:
        assert e.get("parentId") is not None, f"only the first event may lack parentId: {e}"
    # ephemeral: true on idle/usage, absent (never true) on persisted events.
    assert by_type["session.idle"].get("ephemeral") is True
    assert by_type["assistant.usage"].get("ephemeral") is True
    for t in ("user.message", "assistant.turn_start", "assistant.message", "assistant.turn_end"):
        assert not by_type[t].get("ephemeral"), by_type[t]

    # -- persisted log == the non-ephemeral events, same ids, same order ----------------------
    persisted = await session.get_events()
    persisted_ids = [str(e.id) for e in persisted]
    assert persisted[0].type == SessionEventType.SESSION_START
    assert persisted[0].parent_id is None
    live_persisted = [e["id"] for e in events if not e.get("ephemeral")]
    assert [x for x in persisted_ids if x in set(live_persisted)] == live_persisted
    assert set(live_persisted) <= set(persisted_ids), "an event was sent but not persisted"
    persisted_types = [e.type.value for e in persisted]
    assert "session.idle" not in persisted_types and "assistant.usage" not in persisted_types
    ephemeral_ids = {e["id"] for e in events if e.get("ephemeral")}
    assert not ephemeral_ids & set(persisted_ids), "ephemeral events must not be persisted"


async def test_send_returns_message_id_that_correlates_events(ctx: Ctx, client):
    ctx.fake.replies({"text": "correlated"})
    raw = tap_raw_events(client)
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    sid = session.session_id
    before = len(_events(raw, sid))
    message_id = await session.send("correlate me")
    assert isinstance(message_id, str) and message_id
    await _idle_after(raw, sid, before)
    raw.assert_parseable()
    turn = _events(raw, sid)[before:]
    users = [e for e in turn if e["type"] == "user.message"]
    assistants = [e for e in turn if e["type"] == "assistant.message"]
    assert [u["data"]["messageId"] for u in users] == [message_id]
    assert [a["data"]["originatingMessageId"] for a in assistants] == [message_id]
    assert assistants[0]["data"]["content"] == "correlated"


async def test_two_sends_in_sequence_keep_history(ctx: Ctx, client):
    ctx.fake.replies({"text": "first answer"}, {"text": "second answer"})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    first = await session.send_and_wait("first question", timeout=30)
    second = await session.send_and_wait("second question", timeout=30)
    assert first is not None and first.data.content == "first answer"
    assert second is not None and second.data.content == "second answer"
    reqs = ctx.fake.requests()
    assert len(reqs) == 2
    roles = [m["role"] for m in reqs[1]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"], roles
    assert reqs[1]["body"]["messages"][2]["content"] == "first answer"


async def test_tool_call_runs_and_calls_model_again(ctx: Ctx, client):
    """One model call = one turn; a tool request runs the tool and calls the model again."""
    ctx.fake.replies(
        {
            "tool_calls": [
                {
                    "name": "bash",
                    "arguments": {"command": "echo tool-output-42", "description": "echo"},
                }
            ]
        },
        {"text": "The tool said tool-output-42."},
    )
    raw = tap_raw_events(client)
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    sid = session.session_id
    before = len(_events(raw, sid))
    try:
        response = await session.send_and_wait("run the tool", timeout=30)
    finally:
        raw.assert_parseable()
    assert response is not None and response.data.content == "The tool said tool-output-42."
    await asyncio.sleep(0.2)

    turn = _events(raw, sid)[before:]
    types = _types(turn)
    assert types.count("assistant.turn_start") == 2, types
    assert types.count("assistant.turn_end") == 2, types
    assert types.count("assistant.message") == 2, types
    assert types[-1] == "session.idle", types
    starts = [e["data"]["turnId"] for e in turn if e["type"] == "assistant.turn_start"]
    assert starts == ["0", "1"], starts

    first_msg = next(e for e in turn if e["type"] == "assistant.message")
    reqs = first_msg["data"].get("toolRequests") or []
    assert len(reqs) == 1 and reqs[0]["name"] == "bash", first_msg
    call_id = reqs[0]["toolCallId"]
    t_start = next(e for e in turn if e["type"] == "tool.execution_start")
    t_done = next(e for e in turn if e["type"] == "tool.execution_complete")
    assert t_start["data"]["toolCallId"] == call_id and t_start["data"]["toolName"] == "bash"
    assert t_done["data"]["toolCallId"] == call_id and t_done["data"]["success"] is True
    # tool events sit inside the first turn
    first_end = types.index("assistant.turn_end")
    assert types.index("tool.execution_start") < types.index("tool.execution_complete") < first_end

    # The second model request carries the assistant tool call and the tool's result.
    requests = ctx.fake.requests()
    assert len(requests) == 2, requests
    msgs = requests[1]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool"], msgs
    assert msgs[2]["tool_calls"][0]["function"]["name"] == "bash"
    assert msgs[3]["tool_call_id"] == msgs[2]["tool_calls"][0]["id"]
    assert msgs[3]["content"] == "tool-output-42\n<exited with exit code 0>", msgs[3]

    # Headers the spec requires on every model call (llm-wire.md section 2).
    interaction = next(e for e in turn if e["type"] == "assistant.turn_start")["data"]
    for req, initiator in zip(requests, ("user", "agent")):
        headers = {k.lower(): v for k, v in req["headers"].items()}
        assert headers.get("authorization", "").startswith("Bearer "), headers
        assert headers.get("x-initiator") == initiator, headers
        assert headers.get("openai-intent"), headers
        assert headers.get("x-interaction-id") == interaction["interactionId"], headers


async def test_streaming_deltas_add_up_to_the_message(ctx: Ctx, client):
    ctx.fake.replies({"text": "one two three four five six"})
    raw = tap_raw_events(client)
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, streaming=True
    )
    sid = session.session_id
    before = len(_events(raw, sid))
    try:
        response = await session.send_and_wait("stream please", timeout=30)
    finally:
        raw.assert_parseable()
    assert response is not None and response.data.content == "one two three four five six"
    turn = _events(raw, sid)[before:]
    deltas = [e for e in turn if e["type"] == "assistant.message_delta"]
    message = next(e for e in turn if e["type"] == "assistant.message")
    assert deltas, _types(turn)
    assert "".join(d["data"]["deltaContent"] for d in deltas) == message["data"]["content"]
    assert all(d["data"]["messageId"] == message["data"]["messageId"] for d in deltas)
    assert all(d.get("ephemeral") is True for d in deltas)
    assert turn.index(deltas[-1]) < turn.index(message)
    assert ctx.fake.requests()[0]["body"].get("stream") is True
