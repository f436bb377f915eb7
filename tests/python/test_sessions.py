"""Item 5 of issue 2: session management and resume from a brand-new client process."""

from __future__ import annotations

import asyncio
import subprocess
from datetime import datetime

import pytest

from copilot.session import PermissionHandler
from copilot.session_events import SessionEventType

from conftest import GITHUB_TOKEN, SKIPPER_BIN, Ctx, raw_request, tap_raw_events, wait_for

APPROVE = PermissionHandler.approve_all


async def test_list_sessions_only_lists_sessions_with_a_user_message(ctx: Ctx, client):
    ctx.load("session/should_list_sessions.yaml")
    empty = await client.create_session(on_permission_request=APPROVE)
    s1 = await client.create_session(on_permission_request=APPROVE)
    a1 = await s1.send_and_wait("Say hello", timeout=30)
    s2 = await client.create_session(on_permission_request=APPROVE)
    a2 = await s2.send_and_wait("Say goodbye", timeout=30)
    assert a1 is not None and a1.data.content.startswith("Hello! I'm GitHub Copilot CLI")
    assert a2 is not None and a2.data.content.startswith("Goodbye!")

    sessions = await client.list_sessions()
    ids = [s.session_id for s in sessions]
    assert s1.session_id in ids and s2.session_id in ids, ids
    assert empty.session_id not in ids, "a session without a user message must not be listed"
    assert len(ids) == len(set(ids))
    # most recently modified first
    assert ids.index(s2.session_id) < ids.index(s1.session_id), ids

    for meta in sessions:
        assert isinstance(meta.start_time, datetime) and meta.start_time.tzinfo is not None
        assert isinstance(meta.modified_time, datetime)
        assert meta.modified_time >= meta.start_time
        assert meta.is_remote is False
    by_id = {s.session_id: s for s in sessions}
    assert by_id[s1.session_id].context is not None
    assert by_id[s1.session_id].context.working_directory == str(ctx.work_dir)
    assert by_id[s1.session_id].summary in (None, "Say hello")


async def test_get_last_session_id(ctx: Ctx, client):
    assert await client.get_last_session_id() is None, "fresh COPILOT_HOME has no sessions"
    ctx.load("session/should_get_last_session_id.yaml")
    session = await client.create_session(on_permission_request=APPROVE)
    await session.send_and_wait("Say hello", timeout=30)
    assert await client.get_last_session_id() == session.session_id
    # a newer session without a user message does not count
    await client.create_session(on_permission_request=APPROVE)
    assert await client.get_last_session_id() == session.session_id


async def test_get_session_metadata(ctx: Ctx, client):
    ctx.load("session/should_get_session_metadata.yaml")
    session = await client.create_session(on_permission_request=APPROVE)
    assert await client.get_session_metadata(session.session_id) is None, (
        "a session without a user message has no metadata yet"
    )
    await session.send_and_wait("Say hello", timeout=30)
    meta = await client.get_session_metadata(session.session_id)
    assert meta is not None
    assert meta.session_id == session.session_id
    assert isinstance(meta.start_time, datetime) and isinstance(meta.modified_time, datetime)
    assert meta.is_remote is False
    assert meta.context is not None and meta.context.working_directory == str(ctx.work_dir)
    listed = {s.session_id: s for s in await client.list_sessions()}
    assert listed[session.session_id].start_time == meta.start_time

    assert await client.get_session_metadata("non-existent-session-id") is None


async def test_get_events_returns_persisted_events_only(ctx: Ctx, client):
    ctx.fake.replies({"text": "persisted answer"})
    session = await client.create_session(on_permission_request=APPROVE, model="gpt-4.1")
    start_events = await session.get_events()
    assert start_events and start_events[0].type == SessionEventType.SESSION_START
    start = start_events[0]
    assert start.data.session_id == session.session_id
    assert start.data.selected_model == "gpt-4.1"
    assert start.parent_id is None

    await session.send_and_wait("persist this", timeout=30)
    events = await session.get_events()
    types = [e.type.value for e in events]
    assert types[0] == "session.start"
    assert str(events[0].id) == str(start.id)
    for t in ("user.message", "assistant.turn_start", "assistant.message", "assistant.turn_end"):
        assert t in types, types
    assert types.index("user.message") < types.index("assistant.message")
    for ephemeral in ("session.idle", "assistant.usage", "assistant.message_delta"):
        assert ephemeral not in types, types
    assert all(not e.ephemeral for e in events)
    user = events[types.index("user.message")]
    assert user.data.content == "persist this"
    assert ctx.fake.requests()[0]["body"]["model"] == "gpt-4.1"

    # On disk: $COPILOT_HOME/session-state/<id>/events.jsonl, one event per line.
    log = ctx.copilot_home / "session-state" / session.session_id / "events.jsonl"
    assert log.is_file(), f"missing {log}"
    lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
    # The log also keeps one usage record per model call; getMessages leaves them out.
    records = [ln for ln in lines if '"type":"session.usage_record"' in ln]
    assert len(records) == len(ctx.fake.requests())
    assert len(lines) - len(records) == len(events)
    # State goes to COPILOT_HOME (the SDK's base_directory), never to ~/.copilot.
    assert not (ctx.home_dir / ".copilot").exists()


async def test_session_log_levels(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    received: list = []
    session.on(
        lambda e: received.append(e)
        if e.type.value in ("session.info", "session.warning", "session.error")
        else None
    )
    await session.log("Info message")
    await session.log("Warning message", level="warning")
    await session.log("Error message", level="error")
    await session.log("Ephemeral message", ephemeral=True)
    await wait_for(lambda: len(received) >= 4, timeout=10, what="4 log events")

    by_message = {e.data.message: e for e in received}
    assert by_message["Info message"].type.value == "session.info"
    assert by_message["Info message"].data.info_type == "notification"
    assert by_message["Warning message"].type.value == "session.warning"
    assert by_message["Warning message"].data.warning_type == "notification"
    assert by_message["Error message"].type.value == "session.error"
    assert by_message["Error message"].data.error_type == "notification"
    assert by_message["Ephemeral message"].type.value == "session.info"
    assert by_message["Ephemeral message"].ephemeral is True

    persisted = await session.get_events()
    persisted_messages = [getattr(e.data, "message", None) for e in persisted]
    for m in ("Info message", "Warning message", "Error message"):
        assert m in persisted_messages, persisted_messages
    assert "Ephemeral message" not in persisted_messages

    # session.log answers with the id of the event it emitted.
    result = await raw_request(
        client, "session.log", {"sessionId": session.session_id, "message": "with id"}
    )
    await wait_for(lambda: any(e.data.message == "with id" for e in received), what="log event")
    event = next(e for e in received if e.data.message == "with id")
    assert result["eventId"] == str(event.id)


async def test_delete_session(ctx: Ctx, client):
    ctx.load("session/should_delete_session.yaml")
    session = await client.create_session(on_permission_request=APPROVE)
    await session.send_and_wait("Hello", timeout=30)
    sid = session.session_id
    assert sid in [s.session_id for s in await client.list_sessions()]
    state_dir = ctx.copilot_home / "session-state" / sid
    assert state_dir.is_dir()

    await client.delete_session(sid)

    assert sid not in [s.session_id for s in await client.list_sessions()]
    assert await client.get_session_metadata(sid) is None
    assert await client.get_last_session_id() != sid
    assert not state_dir.exists(), "session-state/<id>/ must be removed"
    with pytest.raises(Exception, match="Session not found"):
        await client.resume_session(sid, on_permission_request=APPROVE)


async def test_disconnect_then_get_events_fails(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    assert (await session.get_events())[0].type == SessionEventType.SESSION_START
    await session.disconnect()  # session.detach
    with pytest.raises(Exception, match="Session not found"):
        await raw_request(client, "session.getMessages", {"sessionId": session.session_id})
    # disconnect is idempotent on the SDK side
    await session.disconnect()


async def test_destroy_then_get_messages_fails(ctx: Ctx, client):
    """``session.destroy`` (Go/.NET/Rust/Java SDKs) behaves like ``session.detach``."""
    session = await client.create_session(on_permission_request=APPROVE)
    result = await raw_request(client, "session.destroy", {"sessionId": session.session_id})
    assert result.get("success") is True, result
    with pytest.raises(Exception, match="Session not found"):
        await raw_request(client, "session.getMessages", {"sessionId": session.session_id})


async def test_resume_unknown_session_fails(client):
    with pytest.raises(Exception, match="Session not found"):
        await client.resume_session("non-existent-session-id", on_permission_request=APPROVE)


async def _resume_in_new_client(ctx: Ctx, make_client, session_id: str, first_events: list):
    new_client = make_client()  # a new CopilotClient = a new skipper process, same COPILOT_HOME
    await new_client.start()
    session2 = await new_client.resume_session(session_id, on_permission_request=APPROVE)
    assert session2.session_id == session_id

    events = await session2.get_events()
    types = [e.type.value for e in events]
    assert types[0] == "session.start", types
    assert "session.resume" in types, types
    user_messages = [e for e in events if e.type.value == "user.message"]
    assert [u.data.content for u in user_messages] == ["What is 1+1?"]
    # the earlier events come back unchanged (same ids, same order)
    old_ids = [str(e.id) for e in first_events]
    assert [str(e.id) for e in events[: len(old_ids)]] == old_ids

    answer = await session2.send_and_wait("Now if you double that, what do you get?", timeout=30)
    assert answer is not None and answer.data.content == "2 doubled is 4."

    # the second model request carries the first exchange
    reqs = ctx.fake.requests()
    assert len(reqs) == 2, [r["body"]["messages"] for r in reqs]
    msgs = reqs[1]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"], msgs
    assert "What is 1+1?" in str(msgs[1]["content"])
    assert msgs[2]["content"] == "1 + 1 = 2"
    assert "Now if you double that" in str(msgs[3]["content"])

    after = await session2.get_events()
    assert [e.type.value for e in after].count("user.message") == 2


async def test_resume_a_session_using_a_new_client(ctx: Ctx, make_client):
    """As the SDK e2e test: the first client stays up while a second process resumes."""
    ctx.load("session/should_resume_a_session_using_a_new_client.yaml")
    client1 = make_client()
    await client1.start()
    session1 = await client1.create_session(on_permission_request=APPROVE)
    answer = await session1.send_and_wait("What is 1+1?", timeout=30)
    assert answer is not None and answer.data.content == "1 + 1 = 2"
    first_events = await session1.get_events()
    await _resume_in_new_client(ctx, make_client, session1.session_id, first_events)


async def test_cold_resume_after_the_first_process_stopped(ctx: Ctx, make_client):
    ctx.load("session/should_resume_a_session_using_a_new_client.yaml")
    client1 = make_client()
    await client1.start()
    session1 = await client1.create_session(on_permission_request=APPROVE)
    sid = session1.session_id
    answer = await session1.send_and_wait("What is 1+1?", timeout=30)
    assert answer is not None and answer.data.content == "1 + 1 = 2"
    first_events = await session1.get_events()
    await session1.disconnect()
    await client1.stop()
    await _resume_in_new_client(ctx, make_client, sid, first_events)


async def test_resume_in_same_client_after_disconnect(ctx: Ctx, client):
    ctx.load("session/should_resume_a_session_using_a_new_client.yaml")
    raw = tap_raw_events(client)
    session1 = await client.create_session(on_permission_request=APPROVE)
    sid = session1.session_id
    await session1.send_and_wait("What is 1+1?", timeout=30)
    await session1.disconnect()
    session2 = await client.resume_session(sid, on_permission_request=APPROVE)
    answer = await session2.send_and_wait("Now if you double that, what do you get?", timeout=30)
    assert answer is not None and answer.data.content == "2 doubled is 4."
    await asyncio.sleep(0.1)
    # The parentId chain of the persisted events continues across the resume, and live
    # events point at the latest persisted one.
    persisted = await session2.get_events()
    ids = {str(e.id) for e in persisted}
    for prev, cur in zip(persisted, persisted[1:]):
        # A parent getMessages does not return is a usage record (log-only bookkeeping).
        assert str(cur.parent_id) == str(prev.id) or str(cur.parent_id) not in ids, (prev.type, cur.type)
    live = [p["event"] for p in raw if p["sessionId"] == sid]
    resume_idx = next(i for i, e in enumerate(live) if e["type"] == "session.resume")
    after = live[resume_idx:]
    seen = {e["id"] for e in after}
    last_persisted = after[0]["id"]
    for cur in after[1:]:
        if cur.get("parentId") != last_persisted and cur.get("parentId") not in seen:
            last_persisted = cur["parentId"]  # a usage record: in the log, never sent
        assert cur.get("parentId") == last_persisted, cur["type"]
        if not cur.get("ephemeral"):
            last_persisted = cur["id"]


async def test_resume_after_crash_with_a_torn_last_line(ctx: Ctx, make_client):
    """A torn last line in events.jsonl (crash mid-write) is skipped on load, never fatal."""
    ctx.load("session/should_resume_a_session_using_a_new_client.yaml")
    client1 = make_client()
    await client1.start()
    session1 = await client1.create_session(on_permission_request=APPROVE)
    sid = session1.session_id
    answer = await session1.send_and_wait("What is 1+1?", timeout=30)
    assert answer is not None and answer.data.content == "1 + 1 = 2"
    await client1.force_stop()  # SIGKILL: no detach, no shutdown event

    log = ctx.copilot_home / "session-state" / sid / "events.jsonl"
    assert log.is_file()
    with open(log, "ab") as f:
        f.write(b'{"type":"assistant.message","data":{"content":"torn wri')

    client2 = make_client()
    await client2.start()
    session2 = await client2.resume_session(sid, on_permission_request=APPROVE)
    events = await session2.get_events()
    assert [e.data.content for e in events if e.type.value == "user.message"] == ["What is 1+1?"]
    assert all("torn wri" not in str(getattr(e.data, "content", "")) for e in events)
    # The fake only answers if the history sent to the model is exactly the first exchange.
    answer2 = await session2.send_and_wait("Now if you double that, what do you get?", timeout=30)
    assert answer2 is not None and answer2.data.content == "2 doubled is 4."
    await client2.force_stop()

    # Events appended after the torn fragment must still be readable on the next load.
    client3 = make_client()
    await client3.start()
    session3 = await client3.resume_session(sid, on_permission_request=APPROVE)
    contents = [e.data.content for e in await session3.get_events() if e.type.value == "user.message"]
    assert contents == ["What is 1+1?", "Now if you double that, what do you get?"]


async def test_a_prompt_mode_run_is_listed_and_resumable_by_an_sdk_client(ctx: Ctx, client):
    """`skipper -p` writes its session index behind, on a thread of its own: by the time the
    process exits, a client of a later server lists the run and can resume it."""
    ctx.fake.replies({"text": "Done with the prompt-mode task."})
    env = ctx.env(COPILOT_HOME=str(ctx.copilot_home), COPILOT_GITHUB_TOKEN=GITHUB_TOKEN)
    run = await asyncio.to_thread(
        subprocess.run,
        [str(SKIPPER_BIN), "-p", "summarise the prompt-mode task", "--allow-all-tools"],
        env=env,
        cwd=ctx.work_dir,
        capture_output=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    assert run.stdout.decode().strip() == "Done with the prompt-mode task."

    listed = [s for s in await client.list_sessions() if s.summary == "summarise the prompt-mode task"]
    assert len(listed) == 1, [(s.session_id, s.summary) for s in await client.list_sessions()]
    session = await client.resume_session(listed[0].session_id, on_permission_request=APPROVE)
    types = [e.type for e in await session.get_events()]
    assert SessionEventType.USER_MESSAGE in types and SessionEventType.ASSISTANT_MESSAGE in types, types
