"""Issue 11: per-session RPCs the SDKs call: the event log (read, tail, long-poll, interests),
shutdown, reasoning effort and the processing flag."""

from __future__ import annotations

import asyncio

import pytest

from copilot.generated.rpc import (
    EventLogReadRequest,
    MetadataSetWorkingDirectoryRequest,
    ModelSetReasoningEffortRequest,
    NameSetRequest,
    RegisterEventInterestParams,
    ReleaseEventInterestParams,
    SessionsForkRequest,
    ShutdownRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request

APPROVE = PermissionHandler.approve_all


async def test_event_log_reads_history_then_follows_live_events(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "One."})
    await session.send_and_wait("first", timeout=30)

    first = await session.rpc.event_log.read(EventLogReadRequest(max=2))
    assert first.cursor_status.value == "ok" and first.has_more is True
    assert [e.type.value for e in first.events] == ["session.start", "user.message"]
    rest = await session.rpc.event_log.read(EventLogReadRequest(cursor=first.cursor, max=100))
    kinds = [e.type.value for e in rest.events]
    assert "assistant.message" in kinds and "session.idle" not in kinds, "history is the durable log"
    assert rest.has_more is False

    # Caught up: nothing new, at once.
    empty = await session.rpc.event_log.read(EventLogReadRequest(cursor=rest.cursor, max=10, wait_ms=0))
    assert empty.events == [] and empty.has_more is False

    # A long-poll for one type wakes on it, ephemeral events included.
    tail = (await session.rpc.event_log.tail()).cursor
    poll = asyncio.create_task(
        session.rpc.event_log.read(
            EventLogReadRequest(cursor=tail, max=10, wait_ms=5000, types=["session.title_changed"])
        )
    )
    await asyncio.sleep(0.1)
    await session.rpc.name.set(NameSetRequest(name="Polled"))
    got = await asyncio.wait_for(poll, 10)
    assert [e.type.value for e in got.events] == ["session.title_changed"]
    assert got.events[0].data.title == "Polled"

    # Durable only, from the tail: a new turn's events without its deltas or idle.
    ctx.fake.replies({"text": "Two."})
    tail = (await session.rpc.event_log.tail()).cursor
    await session.send_and_wait("second", timeout=30)
    live = await session.rpc.event_log.read(EventLogReadRequest(cursor=tail, include_ephemeral=False))
    kinds = [e.type.value for e in live.events]
    assert "user.message" in kinds and "assistant.message" in kinds and "session.idle" not in kinds

    bogus = await raw_request(client, "session.eventLog.read", {"sessionId": session.session_id, "cursor": "zz"})
    assert bogus["cursorStatus"] == "expired" and bogus["events"][0]["type"] == "session.start"


async def test_interests_register_and_release_idempotently(client):
    session = await client.create_session(on_permission_request=APPROVE)
    handle = (await session.rpc.event_log.register_interest(RegisterEventInterestParams(event_type="x.y"))).handle
    again = (await session.rpc.event_log.register_interest(RegisterEventInterestParams(event_type="x.y"))).handle
    assert handle.strip() and handle != again
    for _ in range(2):
        assert (await session.rpc.event_log.release_interest(ReleaseEventInterestParams(handle=handle))).success


async def test_reasoning_effort_and_processing_flag(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    assert (await session.rpc.metadata.is_processing()).processing is False
    result = await session.rpc.model.set_reasoning_effort(ModelSetReasoningEffortRequest(reasoning_effort="high"))
    assert result.reasoning_effort == "high"
    assert (await session.rpc.model.get_current()).reasoning_effort == "high"
    ctx.fake.replies({"delay_ms": 300, "then": {"text": "slow"}})
    await session.send("go")
    await asyncio.sleep(0.1)
    assert (await session.rpc.metadata.is_processing()).processing is True


async def test_shutdown_ends_the_session_here_and_keeps_it_resumable(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    events: list = []
    session.on(events.append)
    ctx.fake.replies({"text": "One."})
    await session.send_and_wait("first", timeout=30)
    await session.rpc.shutdown(ShutdownRequest(reason="done"))
    shutdown = [e for e in events if e.type.value == "session.shutdown"]
    assert shutdown and shutdown[0].data.shutdown_type.value == "routine"
    with pytest.raises(Exception, match="Session not found"):
        await raw_request(client, "session.mode.get", {"sessionId": sid})
    resumed = await client.resume_session(sid, on_permission_request=APPROVE)
    ctx.fake.replies({"text": "Two."})
    answer = await resumed.send_and_wait("second", timeout=30)
    assert answer.data.content == "Two."


async def test_fork_copies_history_up_to_an_event(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "One."}, {"text": "Two."})
    await session.send_and_wait("first", timeout=30)
    await session.send_and_wait("second", timeout=30)
    source = await session.get_events()
    second = next(e for e in source if e.type.value == "user.message" and e.data.content == "second")

    fork = await client.rpc.sessions.fork(SessionsForkRequest(session_id=session.session_id, to_event_id=str(second.id), name="Branch"))
    assert fork.session_id != session.session_id and fork.name == "Branch"
    forked = await client.resume_session(fork.session_id, on_permission_request=APPROVE)
    events = await forked.get_events()
    prompts = [e.data.content for e in events if e.type.value == "user.message"]
    assert prompts == ["first"]
    assert events[0].data.session_id == fork.session_id
    assert (await forked.rpc.name.get()).name == "Branch"
    # The fork goes on from its own history; the source is untouched.
    ctx.fake.replies({"text": "Forked."})
    await forked.send_and_wait("in the fork", timeout=30)
    roles = [m["role"] for m in ctx.fake.requests()[-1]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert not any(e.type.value == "user.message" and e.data.content == "in the fork" for e in await session.get_events())

    whole = await client.rpc.sessions.fork(SessionsForkRequest(session_id=session.session_id))
    resumed = await client.resume_session(whole.session_id, on_permission_request=APPROVE)
    assert [e.data.content for e in await resumed.get_events() if e.type.value == "user.message"] == ["first", "second"]

    with pytest.raises(Exception, match="not found"):
        await client.rpc.sessions.fork(SessionsForkRequest(session_id=session.session_id, to_event_id="nope"))
    with pytest.raises(Exception, match="not found or has no persisted events"):
        await client.rpc.sessions.fork(SessionsForkRequest(session_id="missing"))


async def test_metadata_snapshot_and_working_directory(ctx: Ctx, client):
    first = ctx.work_dir / "first"
    second = ctx.work_dir / "second"
    first.mkdir()
    second.mkdir()
    session = await client.create_session(on_permission_request=APPROVE, working_directory=str(first))
    events: list = []
    session.on(events.append)
    snap = await session.rpc.metadata.snapshot()
    assert snap.session_id == session.session_id and snap.workspace.id == session.session_id
    assert snap.current_mode.value == "interactive" and snap.is_remote is False and snap.already_in_use is False
    assert snap.working_directory == str(first) and snap.workspace_path

    with pytest.raises(Exception, match="existing absolute path"):
        await session.rpc.metadata.set_working_directory(MetadataSetWorkingDirectoryRequest(working_directory="relative"))
    moved = await session.rpc.metadata.set_working_directory(MetadataSetWorkingDirectoryRequest(working_directory=str(second)))
    assert moved.working_directory == str(second)
    assert (await session.rpc.metadata.snapshot()).working_directory == str(second)

    # A report for another directory is ignored; one for the session's is emitted as given.
    await raw_request(client, "session.metadata.recordContextChange",
                      {"sessionId": session.session_id, "context": {"cwd": str(first), "branch": "ignored"}})
    await raw_request(client, "session.metadata.recordContextChange",
                      {"sessionId": session.session_id, "context": {"cwd": str(second), "branch": "topic", "repository": "o/r"}})
    changed = [e.data for e in events if e.type.value == "session.context_changed"]
    assert [c.branch for c in changed] == [None, "topic"], "the move, then the recorded context"
    assert changed[1].repository == "o/r"
