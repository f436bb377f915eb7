"""Behaviour the original CLI shows through the model requests and events of a session:
images sent or left out per the model's vision override (on create and on ``setModel``),
``session.metadata.recomputeContextTokens``, sub-agent tool hooks naming the sub-agent, ``session.idle`` waiting for background agents, and a cold resume
that does not continue pending work interrupting the orphaned tool call."""

from __future__ import annotations

import asyncio
import base64

from copilot import ModelCapabilitiesOverride, ModelSupportsOverride
from copilot.generated.rpc import HandlePendingToolCallRequest, MetadataRecomputeContextTokensRequest
from copilot.session import PermissionHandler
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import Ctx, record_events, request_messages, tool_results

APPROVE = PermissionHandler.approve_all

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _has_image(requests: list[dict]) -> bool:
    return any(
        m.get("role") == "user"
        and isinstance(m.get("content"), list)
        and any(p.get("type") == "image_url" for p in m["content"])
        for r in requests
        for m in request_messages(r)
    )


def _view_replies(ctx: Ctx) -> None:
    path = str(ctx.work_dir / "test.png")
    ctx.fake.replies({"tool_calls": [{"name": "view", "arguments": {"path": path}}]}, {"text": "seen"})


def _vision(on: bool) -> ModelCapabilitiesOverride:
    return ModelCapabilitiesOverride(supports=ModelSupportsOverride(vision=on))


async def test_images_follow_the_vision_override_across_set_model(ctx: Ctx, client):
    (ctx.work_dir / "test.png").write_bytes(PNG_1X1)
    session = await client.create_session(
        on_permission_request=APPROVE, working_directory=str(ctx.work_dir), model_capabilities=_vision(False)
    )
    _view_replies(ctx)
    await session.send_and_wait("look at test.png", timeout=30)
    first = ctx.fake.requests()
    assert len(first) == 2 and not _has_image(first)
    # The tool result itself is unchanged; only the image message is left out.
    assert [r["content"] for r in tool_results(first[1])] == ["Viewed image file successfully."]

    await session.set_model("claude-sonnet-4.5", model_capabilities=_vision(True))
    _view_replies(ctx)
    await session.send_and_wait("look again", timeout=30)
    second = ctx.fake.requests()[2:]
    # The conversation kept the first image: a model that sees gets both.
    images = [
        p
        for m in request_messages(second[-1])
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]
    assert len(images) == 2

    await session.set_model("claude-sonnet-4.5", model_capabilities=_vision(False))
    ctx.fake.replies({"text": "blind"})
    await session.send_and_wait("and now?", timeout=30)
    assert not _has_image(ctx.fake.requests()[4:])
    await session.disconnect()


async def test_recompute_context_tokens_counts_system_and_messages(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "4"})
    await session.send_and_wait("What is 2+2?", timeout=30)
    counts = await session.rpc.metadata.recompute_context_tokens(
        MetadataRecomputeContextTokensRequest(model_id="claude-sonnet-4.5")
    )
    assert counts.system_token_count > 0 and counts.messages_token_count > 0
    assert counts.total_tokens == counts.system_token_count + counts.messages_token_count
    ctx.fake.replies({"text": "a much longer answer than before, to grow the conversation"})
    await session.send_and_wait("Say something longer please, with more words in it", timeout=30)
    again = await session.rpc.metadata.recompute_context_tokens(
        MetadataRecomputeContextTokensRequest(model_id="claude-sonnet-4.5")
    )
    assert again.messages_token_count > counts.messages_token_count
    assert again.system_token_count == counts.system_token_count
    await session.disconnect()


async def test_sub_agent_hooks_name_the_sub_agent_and_idle_waits_for_it(ctx: Ctx, client):
    (ctx.work_dir / "subagent-test.txt").write_text("Hello from subagent test!")
    ctx.load("subagent_hooks/should_invoke_pretooluse_and_posttooluse_hooks_for_sub_agent_tool_calls.yaml")
    log: list[tuple[str, str, str]] = []

    async def pre(inp, _ctx):
        log.append(("pre", inp["toolName"], inp["sessionId"]))
        return {"permissionDecision": "allow"}

    async def post(inp, _ctx):
        log.append(("post", inp["toolName"], inp["sessionId"]))
        return None

    session = await client.create_session(
        on_permission_request=APPROVE,
        working_directory=str(ctx.work_dir),
        hooks={"on_pre_tool_use": pre, "on_post_tool_use": post},
    )
    events = record_events(session)
    await session.send_and_wait(
        "Use the task tool to spawn an explore agent that reads the file subagent-test.txt in the current directory "
        "and reports its contents. You must use the task tool.",
        timeout=60,
    )
    # Idle came only after the background agent and the turn its notice started.
    replies = [e.data.content or "" for e in events.of("assistant.message")]
    assert any("The explore agent successfully read the file" in r for r in replies)
    assert len(events.of("session.idle")) == 1
    task_pre = [s for kind, tool, s in log if kind == "pre" and tool == "task"]
    view_pre = [s for kind, tool, s in log if kind == "pre" and tool == "view"]
    view_post = [s for kind, tool, s in log if kind == "post" and tool == "view"]
    assert task_pre == [session.session_id]
    assert view_pre and view_post and view_pre[0] == view_post[0] == "read-file"
    await session.disconnect()


async def test_cold_resume_without_pending_work_interrupts_the_orphaned_call(ctx: Ctx, make_client):
    owner = make_client("tcp", connection_token="tok")
    await owner.start()
    port = owner.runtime_port
    started = asyncio.Event()
    never = asyncio.get_running_loop().create_future()

    async def blocked(_inv: ToolInvocation) -> ToolResult:
        started.set()
        return await never

    first = make_client(uri=f"127.0.0.1:{port}", connection_token="tok")
    await first.start()
    tool = Tool(
        name="resume_external_tool",
        description="Looks up a value",
        parameters={"type": "object", "properties": {"value": {"type": "string"}}},
        handler=blocked,
    )
    session = await first.create_session(on_permission_request=APPROVE, tools=[tool])
    events = record_events(session)
    ctx.fake.replies({"tool_calls": [{"name": "resume_external_tool", "arguments": {"value": "beta"}}]})
    await session.send("Use resume_external_tool with value 'beta'.")
    await asyncio.wait_for(started.wait(), 30)
    request_id = events.of("external_tool.requested")[0].data.request_id
    await first.force_stop()

    second = make_client(uri=f"127.0.0.1:{port}", connection_token="tok")
    await second.start()
    resumed = await second.resume_session(session.session_id, on_permission_request=APPROVE, continue_pending_work=False)
    resume = [e for e in await resumed.get_events() if e.type.value == "session.resume"][-1]
    assert resume.data.session_was_active is False and resume.data.continue_pending_work is False
    handled = await resumed.rpc.tools.handle_pending_tool_call(
        HandlePendingToolCallRequest(request_id=request_id, result="TOO LATE")
    )
    assert handled.success is False

    ctx.fake.replies({"text": "COLD_RESUMED_FOLLOWUP"})
    reply = await resumed.send_and_wait("Reply with exactly: COLD_RESUMED_FOLLOWUP", timeout=30)
    assert reply is not None and reply.data.content == "COLD_RESUMED_FOLLOWUP"
    # One model call before the resume, one for the follow-up: the interruption made none.
    requests = ctx.fake.requests()
    assert len(requests) == 2
    assert [r["content"] for r in tool_results(requests[1])] == [
        "The execution of this tool, or a previous tool was interrupted."
    ]
    await resumed.disconnect()


async def test_a_joining_client_without_a_permission_handler_leaves_approval_to_the_others(ctx: Ctx, make_client):
    owner = make_client("tcp", connection_token="tok")
    await owner.start()
    asked: list[str] = []

    def approve(request, _invocation):
        asked.append(request.kind.value if hasattr(request.kind, "value") else str(request.kind))
        return PermissionHandler.approve_all(request, _invocation)

    session = await owner.create_session(on_permission_request=approve, working_directory=str(ctx.work_dir))
    joiner = make_client(uri=f"127.0.0.1:{owner.runtime_port}", connection_token="tok")
    await joiner.start()
    # No handler: this client declines permission requests (`requestPermission: false`).
    await joiner.resume_session(session.session_id)
    ctx.fake.replies(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch ran.txt", "description": "x"}}]},
        {"text": "done"},
    )
    reply = await session.send_and_wait("run it", timeout=30)
    assert reply is not None and reply.data.content == "done"
    assert asked == ["shell"]
    assert (ctx.work_dir / "ran.txt").exists()
