"""Permission requests: ``permission.requested`` → the SDK's handler → the decision.

Replayed recordings pin what the model sees after each decision (approved output, the
``Permission denied and could not request permission from user`` text, or no further call at
all after a rejection); the fake only answers requests that match.
"""

from __future__ import annotations

import asyncio

import pytest
from copilot.rpc import (
    PermissionDecisionApproveOnce,
    PermissionDecisionReject,
    PermissionDecisionUserNotAvailable,
    PermissionsSetApproveAllRequest,
)
from copilot.session import PermissionHandler
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import Ctx, raw_request, record_events, snapshot_final_reply, tool_results, wait_for

DENIED_TEXT = "Permission denied and could not request permission from user"


def _write(ctx: Ctx, name: str, text: str) -> None:
    (ctx.work_dir / name).write_text(text, encoding="utf-8")


def _kind(value) -> str:
    return str(getattr(value, "value", value))


def _error_message(data) -> str:
    error = getattr(data, "error", None)
    if error is None:
        return ""
    return error if isinstance(error, str) else (getattr(error, "message", None) or "")


async def test_approve_all_handler(ctx: Ctx, client):
    ctx.load("permissions/should_work_with_approve_all_permission_handler.yaml")
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    response = await session.send_and_wait("What is 2+2?", timeout=30)
    assert response is not None and response.data.content == "2+2 = 4"


async def test_reject_stops_the_tool_and_the_loop(ctx: Ctx, client):
    """``reject``: the tool fails with the user-rejected text, the file is untouched and the
    turn ends (the recording has no further model call)."""
    ctx.load("permissions/should_deny_permission_when_handler_returns_denied.yaml")
    original = "protected content"
    _write(ctx, "protected.txt", original)
    kinds: list[str] = []

    def reject(request, invocation):
        kinds.append(request.kind)
        return PermissionDecisionReject()

    session = await client.create_session(on_permission_request=reject)
    events = record_events(session)
    await session.send_and_wait(
        "Edit protected.txt and replace 'protected' with 'hacked'.", timeout=30
    )
    assert kinds == ["read"], kinds
    rejected = [
        e
        for e in events.of("tool.execution_complete")
        if not e.data.success and "user rejected" in _error_message(e.data).lower()
    ]
    messages = [_error_message(e.data) for e in events.of("tool.execution_complete")]
    assert len(rejected) == 1, messages
    completed = events.of("permission.completed")
    assert [_kind(c.data.result.kind) for c in completed] == ["denied-interactively-by-user"]
    assert len(ctx.fake.requests()) == 1, "a rejected tool call must end the turn"
    assert (ctx.work_dir / "protected.txt").read_text() == original
    assert events.types()[-1] == "session.idle", events.types()


async def test_reject_feedback_reaches_the_model_and_the_turn_goes_on(ctx: Ctx, client):
    """A rejection with the user's reasons is the tool result the model sees, and the turn goes
    on (as the original 1.0.102 does); a bare rejection ends it (see the test above)."""
    ctx.fake.replies(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch ran.txt", "description": "x"}}]},
        {"text": "understood"},
    )
    ran = ctx.work_dir / "ran.txt"

    def reject(request, invocation):
        return PermissionDecisionReject(feedback="no way")

    session = await client.create_session(on_permission_request=reject)
    events = record_events(session)
    response = await session.send_and_wait("run something", timeout=30)
    done = events.of("tool.execution_complete")
    assert len(done) == 1 and not done[0].data.success, done
    assert "user rejected" in _error_message(done[0].data).lower(), done[0].data
    assert response is not None and response.data.content == "understood"
    assert len(ctx.fake.requests()) == 2, "the turn went on"
    results = tool_results(ctx.fake.requests()[-1])
    assert [r["content"] for r in results] == [
        "The user rejected this tool call. User feedback: no way"
    ], results
    assert "abort" not in events.types()
    assert not ran.exists()


async def test_user_not_available_is_reported_to_the_model(ctx: Ctx, client):
    snapshot = "permissions/should_deny_tool_operations_when_handler_explicitly_denies.yaml"
    ctx.load(snapshot)
    session = await client.create_session(
        on_permission_request=lambda req, inv: PermissionDecisionUserNotAvailable()
    )
    events = record_events(session)
    response = await session.send_and_wait("Run 'node --version'", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    denied = [
        e
        for e in events.of("tool.execution_complete")
        if not e.data.success and "Permission denied" in _error_message(e.data)
    ]
    assert len(denied) == 1, events.types()
    assert tool_results(ctx.fake.requests()[-1])[-1]["content"] == DENIED_TEXT
    completed = events.of("permission.completed")
    assert [_kind(c.data.result.kind) for c in completed] == [
        "denied-no-approval-rule-and-could-not-request-from-user"
    ]


async def test_handler_exception_denies(ctx: Ctx, client):
    snapshot = "permissions/should_handle_permission_handler_errors_gracefully.yaml"
    ctx.load(snapshot)
    kinds: list[str] = []

    def broken(request, invocation):
        kinds.append(request.kind)
        raise RuntimeError("Handler error")

    session = await client.create_session(on_permission_request=broken)
    response = await session.send_and_wait(
        "Run 'echo test'. If you can't, say 'failed'.", timeout=30
    )
    assert response is not None and response.data.content == "failed"
    assert kinds == ["shell"], kinds
    assert tool_results(ctx.fake.requests()[-1])[-1]["content"] == DENIED_TEXT


async def test_concurrent_requests_from_parallel_tools(ctx: Ctx, client):
    """Both requests are outstanding at once and resolve independently: the first tool runs
    while the second one's permission is still pending."""
    ctx.load("permissions/should_handle_concurrent_permission_requests_from_parallel_tools.yaml")
    seen: dict[str, str] = {}
    both = asyncio.Event()
    first_ran = asyncio.Event()
    called: list[str] = []

    async def handler(request, invocation):
        seen[request.tool_name] = request.tool_call_id
        if len(seen) >= 2:
            both.set()
        # Neither request is answered until both are outstanding.
        await asyncio.wait_for(both.wait(), timeout=15)
        if request.tool_name == "second_permission_tool":
            # Answered only after the first tool has run on its own approval.
            await asyncio.wait_for(first_ran.wait(), timeout=15)
        return PermissionDecisionApproveOnce()

    def tool(name: str) -> Tool:
        def run(invocation: ToolInvocation) -> ToolResult:
            called.append(name)
            if name == "first_permission_tool":
                first_ran.set()
            return ToolResult(
                text_result_for_llm=f"{name} completed after permission approval",
                result_type="rejected",
            )

        return Tool(
            name=name,
            description=f"{name} for the concurrency test",
            parameters={"type": "object", "properties": {}},
            handler=run,
        )

    session = await client.create_session(
        on_permission_request=handler,
        tools=[tool("first_permission_tool"), tool("second_permission_tool")],
    )
    events = record_events(session)
    await session.send(
        "Call both first_permission_tool and second_permission_tool in the same turn. Do not "
        "call any other tools."
    )
    await wait_for(lambda: events.has("session.idle"), timeout=30, what="session.idle")
    assert sorted(seen) == ["first_permission_tool", "second_permission_tool"], seen
    assert len(set(seen.values())) == 2 and all(seen.values()), seen
    assert called == ["first_permission_tool", "second_permission_tool"], called
    failed = [e for e in events.of("tool.execution_complete") if not e.data.success]
    assert len(failed) == 2, events.types()
    assert not events.has("session.error"), events.types()
    # "rejected" results end the turn: the recording has no second model call.
    assert len(ctx.fake.requests()) == 1


async def test_tool_call_id_in_permission_requests(ctx: Ctx, client):
    ctx.load("permissions/should_receive_toolcallid_in_permission_requests.yaml")
    requests = []

    def handler(request, invocation):
        requests.append(request)
        assert invocation["session_id"] == session.session_id
        return PermissionDecisionApproveOnce()

    session = await client.create_session(on_permission_request=handler)
    events = record_events(session)
    response = await session.send_and_wait("Run 'echo test'", timeout=30)
    assert response is not None and response.data.content == "✓ Command output: `test`"
    assert [r.kind for r in requests] == ["shell"], requests
    shell = requests[0]
    assert shell.full_command_text == "echo test"
    starts = {e.data.tool_call_id: e.data.tool_name for e in events.of("tool.execution_start")}
    assert isinstance(shell.tool_call_id, str) and shell.tool_call_id, shell
    assert starts.get(shell.tool_call_id) == "bash", (shell.tool_call_id, starts)
    requested = events.of("permission.requested")
    assert [e.data.permission_request.tool_call_id for e in requested] == [shell.tool_call_id]


async def test_slow_async_handler_blocks_the_tool(ctx: Ctx, client):
    ctx.load("permissions/should_wait_for_slow_permission_handler.yaml")
    entered = asyncio.Event()
    release = asyncio.Event()
    lifecycle: list[tuple[str, str | None]] = []

    async def slow(request, invocation):
        lifecycle.append(("permission-start", request.tool_call_id))
        entered.set()
        await asyncio.wait_for(release.wait(), timeout=20)
        lifecycle.append(("permission-complete", request.tool_call_id))
        return PermissionDecisionApproveOnce()

    session = await client.create_session(on_permission_request=slow)

    def on_event(event):
        if event.type.value in ("tool.execution_start", "tool.execution_complete"):
            lifecycle.append((event.type.value, event.data.tool_call_id))

    session.on(on_event)
    waiter = asyncio.ensure_future(
        session.send_and_wait("Run 'echo slow_handler_test'", timeout=30)
    )
    try:
        await asyncio.wait_for(entered.wait(), timeout=20)
        await asyncio.sleep(0.5)
        assert not any(p == "tool.execution_complete" for p, _ in lifecycle), lifecycle
        assert not waiter.done()
        release.set()
        response = await waiter
    finally:
        release.set()
    assert response is not None and "slow_handler_test" in response.data.content
    target = lifecycle[0][1]
    phases = [p for p, tid in lifecycle if tid == target]
    assert phases.index("permission-complete") < phases.index("tool.execution_complete"), phases
    assert tool_results(ctx.fake.requests()[-1])[-1]["content"].startswith("slow_handler_test\n")


async def test_async_handler(ctx: Ctx, client):
    snapshot = "permissions/should_handle_async_permission_handler.yaml"
    ctx.load(snapshot)
    kinds = []

    async def handler(request, invocation):
        kinds.append(request.kind)
        await asyncio.sleep(0)
        return PermissionDecisionApproveOnce()

    session = await client.create_session(on_permission_request=handler)
    response = await session.send_and_wait("Run 'echo test' and tell me what happens", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert kinds == ["shell"], kinds


async def test_set_approve_all_short_circuits_the_handler(ctx: Ctx, client):
    snapshot = "permissions/should_short_circuit_permission_handler_when_set_approve_all_enabled.yaml"
    ctx.load(snapshot)
    calls = []

    def counting(request, invocation):
        calls.append(request)
        return PermissionDecisionApproveOnce()

    session = await client.create_session(on_permission_request=counting)
    events = record_events(session)
    result = await session.rpc.permissions.set_approve_all(
        PermissionsSetApproveAllRequest(enabled=True)
    )
    assert result.success is True
    response = await session.send_and_wait("Run 'echo test' and tell me what happens", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert calls == [], "the handler must not be consulted while approve-all is on"
    assert not events.has("permission.requested"), events.types()
    ok = [e for e in events.of("tool.execution_complete") if e.data.success]
    assert len(ok) == 1, events.types()
    off = await session.rpc.permissions.set_approve_all(
        PermissionsSetApproveAllRequest(enabled=False)
    )
    assert off.success is True


async def test_write_permission_request_carries_a_unified_diff(ctx: Ctx, client):
    snapshot = "permissions/should_invoke_permission_handler_for_write_operations.yaml"
    ctx.load(snapshot)
    _write(ctx, "test.txt", "original content")
    requests = []

    def handler(request, invocation):
        requests.append(request)
        assert invocation["session_id"] == session.session_id
        return PermissionDecisionApproveOnce()

    session = await client.create_session(on_permission_request=handler)
    response = await session.send_and_wait(
        "Edit test.txt and replace 'original' with 'modified'", timeout=30
    )
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert [r.kind for r in requests] == ["read", "write"], [r.kind for r in requests]
    write = requests[1]
    path = str(ctx.work_dir / "test.txt")
    assert write.file_name == path, write
    assert write.tool_call_id
    diff = write.diff
    lines = diff.splitlines()
    assert any(line.startswith("--- ") for line in lines), diff
    assert any(line.startswith("+++ ") for line in lines), diff
    assert any(line.startswith("@@ ") for line in lines), diff
    assert "-original content" in lines and "+modified content" in lines, diff
    assert (ctx.work_dir / "test.txt").read_text() == "modified content"


async def test_deny_after_resume(ctx: Ctx, client):
    snapshot = "permissions/should_deny_tool_operations_when_handler_explicitly_denies_after_resume.yaml"
    ctx.load(snapshot)
    first = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    answer = await first.send_and_wait("What is 1+1?", timeout=30)
    assert answer is not None and answer.data.content == "1+1 equals 2."

    calls = []

    def deny_all(request, invocation):
        calls.append(request)
        return PermissionDecisionUserNotAvailable()

    resumed = await client.resume_session(first.session_id, on_permission_request=deny_all)
    events = record_events(resumed)
    response = await resumed.send_and_wait("Run 'node --version'", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert [c.kind for c in calls] == ["shell"], calls
    denied = [
        e
        for e in events.of("tool.execution_complete")
        if not e.data.success and "Permission denied" in _error_message(e.data)
    ]
    assert len(denied) == 1, events.types()
    assert tool_results(ctx.fake.requests()[-1])[-1]["content"] == DENIED_TEXT


async def test_rules_set_by_the_client_decide_before_the_handler_is_asked(ctx: Ctx, client):
    """``session.permissions.configure`` rules go through the same engine as ``-p``'s
    ``--allow-tool`` / ``--deny-tool``: a denial beats the handler's approval and names its rule;
    an allowed write runs without asking the handler (which would refuse it)."""
    asked: list[str] = []

    def handler(request, invocation):
        asked.append(_kind(request.kind))
        return PermissionDecisionApproveOnce() if _kind(request.kind) == "shell" else PermissionDecisionReject()

    session = await client.create_session(on_permission_request=handler)
    _write(ctx, "keep.txt", "kept")
    configured = await raw_request(client, "session.permissions.configure", {
        "sessionId": session.session_id,
        "rules": {"approved": [{"kind": "write", "argument": None}], "denied": [{"kind": "shell", "argument": "rm"}]},
    })
    assert configured == {"success": True}
    bash = lambda command: {"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "run"}}]}
    ctx.fake.replies(
        bash("rm -f keep.txt"),
        {"tool_calls": [{"name": "create", "arguments": {"path": "new.txt", "file_text": "made"}}]},
        bash("touch ran.txt"),
        {"text": "done"},
    )
    await session.send_and_wait("go", timeout=30)
    told = [r["content"] for r in tool_results(ctx.fake.requests()[-1])]
    assert told[0] == "Permission to run this tool was denied due to the following rules: `shell(rm)`", told
    assert (ctx.work_dir / "keep.txt").read_text() == "kept"
    assert (ctx.work_dir / "new.txt").read_text() == "made", told
    assert (ctx.work_dir / "ran.txt").exists(), told
    assert asked == ["shell"], "only the command no rule speaks to is put to the handler"
