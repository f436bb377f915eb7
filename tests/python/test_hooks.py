"""SDK hooks: Skipper sends ``hooks.invoke {sessionId, hookType, input}`` and honours the output.

The SDK answers ``hooks.invoke`` from the hooks registered on the session (``hooks={...}``
on create). Where a recording exists the fake model replays it, so the tool results, prompts
and extra messages the hooks produce must equal what the original CLI sent; where it does not
(errorOccurred), scripted replies are used.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import pytest

from copilot.rpc import PermissionDecisionReject
from copilot.session import PermissionHandler
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import (
    Ctx,
    record_events,
    snapshot_final_reply,
    tap_server_requests,
    tool_calls,
    tool_results,
    user_texts,
)


def _write(ctx: Ctx, name: str, text: str) -> None:
    (ctx.work_dir / name).write_text(text, encoding="utf-8")


def _check_common_input(inp: dict, session_id: str | None = None) -> None:
    """Fields every hook input carries (after the SDK's cwd→workingDirectory mapping)."""
    assert isinstance(inp.get("timestamp"), datetime), inp
    assert inp["timestamp"].timestamp() > 0, inp
    assert inp.get("workingDirectory"), inp
    if session_id is not None:
        assert inp.get("sessionId") == session_id, inp


async def test_pre_tool_use_deny_blocks_the_tool(ctx: Ctx, client):
    snapshot = "hooks/should_deny_tool_execution_when_pretooluse_returns_deny.yaml"
    original = "Original content that should not be modified"
    _write(ctx, "protected.txt", original)
    ctx.load(snapshot)
    inputs: list[dict] = []
    invocations: list[dict] = []

    def on_pre_tool_use(inp, invocation):
        inputs.append(inp)
        invocations.append(invocation)
        return {"permissionDecision": "deny"}

    permission_requests = []

    def on_permission(request, invocation):
        permission_requests.append(request)
        return PermissionHandler.approve_all(request, invocation)

    session = await client.create_session(
        on_permission_request=on_permission, hooks={"on_pre_tool_use": on_pre_tool_use}
    )
    events = record_events(session)
    response = await session.send_and_wait(
        "Edit protected.txt and replace 'Original' with 'Modified'", timeout=30
    )
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)

    # The hook saw both tool calls, with their arguments, before anything ran.
    names = [i.get("toolName") for i in inputs]
    assert "view" in names, inputs
    view_input = next(i for i in inputs if i.get("toolName") == "view")
    assert view_input["toolArgs"] == {"path": str(ctx.work_dir / "protected.txt")}
    for inp in inputs:
        _check_common_input(inp, session.session_id)
    assert all(inv["session_id"] == session.session_id for inv in invocations)

    # Denied: the model got the hook's denial text for each call, nothing asked for permission.
    reqs = ctx.fake.requests()
    assert len(reqs) == 2, len(reqs)
    contents = [r["content"] for r in tool_results(reqs[-1])]
    assert contents == ["Denied by preToolUse hook: No reason provided"] * 2, contents
    assert permission_requests == [], "a denied tool must not reach the permission handler"
    assert (ctx.work_dir / "protected.txt").read_text() == original
    completes = events.of("tool.execution_complete")
    assert completes and all(not c.data.success for c in completes), completes


async def test_pre_and_post_tool_use_both_fire_for_one_call(ctx: Ctx, client):
    snapshot = "hooks/should_invoke_both_pretooluse_and_posttooluse_hooks_for_a_single_tool_call.yaml"
    _write(ctx, "both.txt", "Testing both hooks!")
    ctx.load(snapshot)
    order: list[tuple[str, str]] = []
    pre_inputs: list[dict] = []
    post_inputs: list[dict] = []

    async def on_pre(inp, invocation):
        pre_inputs.append(inp)
        order.append(("pre", inp.get("toolName")))
        return {"permissionDecision": "allow"}

    async def on_post(inp, invocation):
        post_inputs.append(inp)
        order.append(("post", inp.get("toolName")))
        return None

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        hooks={"on_pre_tool_use": on_pre, "on_post_tool_use": on_post},
    )
    response = await session.send_and_wait("Read the contents of both.txt", timeout=30)
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)

    path = str(ctx.work_dir / "both.txt")
    pre_view = [i for i in pre_inputs if i.get("toolName") == "view"]
    post_view = [i for i in post_inputs if i.get("toolName") == "view"]
    assert len(pre_view) == 1 and len(post_view) == 1, (pre_inputs, post_inputs)
    assert pre_view[0]["toolArgs"] == {"path": path}
    assert post_view[0]["toolArgs"] == {"path": path}
    result = post_view[0].get("toolResult")
    assert isinstance(result, dict), post_view[0]
    assert result.get("textResultForLlm") == "1. Testing both hooks!", result
    assert result.get("resultType") == "success", result
    for inp in pre_view + post_view:
        _check_common_input(inp, session.session_id)
    assert order.index(("pre", "view")) < order.index(("post", "view")), order


async def test_post_tool_use_modified_result_reaches_the_model(ctx: Ctx, client):
    snapshot = "hooks_extended/should_allow_posttooluse_to_return_modifiedresult.yaml"
    _write(ctx, "a.txt", "a")
    ctx.load(snapshot)
    inputs: list[dict] = []

    def on_post(inp, invocation):
        inputs.append(inp)
        if inp.get("toolName") != "view":
            return None
        return {
            "modifiedResult": {
                "textResultForLlm": "modified by post hook",
                "resultType": "success",
                "toolTelemetry": {},
            },
            "suppressOutput": False,
        }

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={"on_post_tool_use": on_post}
    )
    response = await session.send_and_wait(
        "Call the view tool to read the current directory, then reply done.", timeout=30
    )
    assert response is not None and response.data.content == "Done."
    assert [i.get("toolName") for i in inputs] == ["view"], inputs
    # The original result (a directory listing) went to the hook; the model got the new one.
    assert "a.txt" in str(inputs[0].get("toolResult")), inputs[0]
    last = ctx.fake.requests()[-1]
    assert [r["content"] for r in tool_results(last)] == ["modified by post hook"]


async def test_pre_tool_use_modified_args_replace_the_call(ctx: Ctx, client):
    snapshot = "hooks_extended/should_allow_pretooluse_to_return_modifiedargs_and_suppressoutput.yaml"
    ctx.load(snapshot)
    inputs: list[dict] = []
    handler_args: list = []

    def echo_value(invocation: ToolInvocation) -> ToolResult:
        handler_args.append(invocation.arguments)
        return ToolResult(text_result_for_llm=str((invocation.arguments or {}).get("value", "")))

    def on_pre(inp, invocation):
        inputs.append(inp)
        if inp.get("toolName") != "echo_value":
            return {"permissionDecision": "allow"}
        return {
            "permissionDecision": "allow",
            "modifiedArgs": {"value": "modified by hook"},
            "suppressOutput": False,
        }

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[
            Tool(
                name="echo_value",
                description="Echoes the supplied value",
                parameters={
                    "type": "object",
                    "properties": {"value": {"type": "string", "description": "Value to echo"}},
                    "required": ["value"],
                },
                handler=echo_value,
            )
        ],
        hooks={"on_pre_tool_use": on_pre},
    )
    response = await session.send_and_wait(
        "Call echo_value with value 'original', then reply with the result.", timeout=30
    )
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)
    echo_inputs = [i for i in inputs if i.get("toolName") == "echo_value"]
    assert len(echo_inputs) == 1 and echo_inputs[0]["toolArgs"] == {"value": "original"}
    assert handler_args == [{"value": "modified by hook"}], handler_args
    # The next request shows the call with the modified arguments.
    last = ctx.fake.requests()[-1]
    echo_calls = [c for c in tool_calls(last) if c["name"] == "echo_value"]
    assert len(echo_calls) == 1
    assert json.loads(echo_calls[0]["arguments"]) == {"value": "modified by hook"}
    results = {r["tool_call_id"]: r["content"] for r in tool_results(last)}
    assert results[echo_calls[0]["id"]] == "modified by hook"


async def test_user_prompt_submitted_modified_prompt(ctx: Ctx, client):
    ctx.load("hooks_extended/should_invoke_userpromptsubmitted_hook_and_modify_prompt.yaml")
    inputs: list[dict] = []

    async def on_submitted(inp, invocation):
        inputs.append(inp)
        assert invocation["session_id"] == session.session_id
        return {"modifiedPrompt": "Reply with exactly: HOOKED_PROMPT"}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        hooks={"on_user_prompt_submitted": on_submitted},
    )
    response = await session.send_and_wait("Say something else", timeout=30)
    assert response is not None and response.data.content == "HOOKED_PROMPT"
    assert len(inputs) == 1 and "Say something else" in inputs[0].get("prompt", ""), inputs
    _check_common_input(inputs[0], session.session_id)
    users = user_texts(ctx.fake.requests()[0])
    assert any("Reply with exactly: HOOKED_PROMPT" in u for u in users), users
    assert not any("Say something else" in u for u in users), users


async def test_user_prompt_transformed_modified_transformed_prompt(ctx: Ctx, client):
    ctx.load(
        "hooks_extended/should_invoke_userprompttransformed_hook_and_modify_transformed_prompt.yaml"
    )
    inputs: list[dict] = []

    async def on_transformed(inp, invocation):
        inputs.append(inp)
        return {"modifiedTransformedPrompt": "Reply with exactly: HOOKED_TRANSFORMED_PROMPT"}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        hooks={"on_user_prompt_transformed": on_transformed},
    )
    response = await session.send_and_wait("Answer the request above.", timeout=30)
    assert response is not None and response.data.content == "HOOKED_TRANSFORMED_PROMPT"
    assert len(inputs) == 1, inputs
    assert "Answer the request above." in inputs[0]["prompt"]
    assert "Answer the request above." in inputs[0]["transformedPrompt"]
    assert "<current_datetime>" in inputs[0]["transformedPrompt"], inputs[0]
    _check_common_input(inputs[0], session.session_id)


async def test_session_start_hook_on_new_session(ctx: Ctx, client):
    snapshot = "hooks_extended/should_invoke_onsessionstart_hook_on_new_session.yaml"
    ctx.load(snapshot)
    inputs: list[dict] = []

    async def on_start(inp, invocation):
        inputs.append(inp)
        assert invocation["session_id"] == session.session_id
        return None

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={"on_session_start": on_start}
    )
    response = await session.send_and_wait("Say hi", timeout=30)
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)
    assert len(inputs) == 1, inputs
    assert inputs[0].get("source") == "new", inputs[0]
    _check_common_input(inputs[0], session.session_id)


async def test_session_start_hook_additional_context_reaches_the_model(ctx: Ctx, client):
    snapshot = "hooks_extended/should_invoke_sessionstart_hook.yaml"
    ctx.load(snapshot)
    inputs: list[dict] = []

    async def on_start(inp, invocation):
        inputs.append(inp)
        return {"additionalContext": "Session start hook context."}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={"on_session_start": on_start}
    )
    try:
        response = await session.send_and_wait("Say hi", timeout=30)
    finally:
        assert len(inputs) == 1 and inputs[0].get("source") == "new", inputs
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)
    # additionalContext reaches the model as its own user message before the prompt.
    users = user_texts(ctx.fake.requests()[0])
    assert len(users) == 2 and "Session start hook context." in users[0], users


async def test_session_end_hook_on_disconnect(ctx: Ctx, client):
    ctx.load("hooks_extended/should_invoke_sessionend_hook.yaml")
    inputs: list[dict] = []
    invoked = asyncio.get_running_loop().create_future()

    async def on_end(inp, invocation):
        inputs.append(inp)
        if not invoked.done():
            invoked.set_result(inp)
        return {"sessionSummary": "session ended"}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={"on_session_end": on_end}
    )
    await session.send_and_wait("Say bye", timeout=30)
    assert inputs == [], "sessionEnd must not fire before the session ends"
    await session.disconnect()
    inp = await asyncio.wait_for(invoked, 10)
    assert inp.get("reason") == "user_exit", inp
    _check_common_input(inp, session.session_id)
    assert len(inputs) == 1


async def test_agent_stop_block_continues_the_conversation(ctx: Ctx, client):
    ctx.load("hooks_extended/should_invoke_agentstop_hook_and_apply_block_response.yaml")
    inputs: list[dict] = []

    async def on_stop(inp, invocation):
        assert invocation["session_id"] == session.session_id
        inputs.append(inp)
        if len(inputs) == 1:
            return {"decision": "block", "reason": "Reply with exactly: AGENT_STOP_CONTINUED"}
        return None

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={"on_agent_stop": on_stop}
    )
    response = await session.send_and_wait("Reply with exactly: AGENT_STOP_INITIAL", timeout=30)
    assert response is not None and response.data.content == "AGENT_STOP_CONTINUED"
    assert len(inputs) == 2, inputs
    assert inputs[0].get("stopHookActive") is not True, inputs[0]
    assert inputs[1].get("stopHookActive") is True, inputs[1]
    assert inputs[0].get("stopReason") == "end_turn", inputs[0]
    assert inputs[0].get("transcriptPath"), inputs[0]
    reqs = ctx.fake.requests()
    assert len(reqs) == 2
    assert "AGENT_STOP_CONTINUED" in user_texts(reqs[1])[-1]


async def test_error_occurred_hook_not_fired_on_a_healthy_turn(ctx: Ctx, client):
    ctx.load("hooks_extended/should_register_erroroccurred_hook.yaml")
    inputs: list[dict] = []

    def on_error(inp, invocation):
        inputs.append(inp)
        return {"errorHandling": "skip"}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={"on_error_occurred": on_error}
    )
    response = await session.send_and_wait("Say hi", timeout=30)
    assert response is not None
    assert inputs == []


async def test_error_occurred_hook_on_model_error(ctx: Ctx, client):
    ctx.fake.replies({"error": {"status": 400, "message": "bad request from fake"}})
    inputs: list[dict] = []
    invoked = asyncio.get_running_loop().create_future()

    def on_error(inp, invocation):
        inputs.append(inp)
        if not invoked.done():
            invoked.set_result(inp)
        return None

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={"on_error_occurred": on_error}
    )
    events = record_events(session)
    await session.send("trigger a model error")
    inp = await asyncio.wait_for(invoked, 20)
    assert inp.get("errorContext") == "model_call", inp
    assert isinstance(inp.get("error"), str) and inp["error"], inp
    assert isinstance(inp.get("recoverable"), bool), inp
    _check_common_input(inp, session.session_id)
    await asyncio.wait_for(_until(lambda: events.has("session.idle")), 20)
    assert events.has("session.error"), events.types()


async def test_hook_order_and_wire_shape_over_one_turn(ctx: Ctx, client):
    """All lifecycle hooks of one prompt with a tool call, in the order the CLI sends them."""
    ctx.fake.replies(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hooked", "description": "echo"}}]},
        {"text": "all hooks seen"},
    )
    wire = tap_server_requests(client, "hooks.invoke")

    def noop(inp, invocation):
        return None

    names = (
        "on_session_start",
        "on_user_prompt_submitted",
        "on_user_prompt_transformed",
        "on_pre_tool_use",
        "on_post_tool_use",
        "on_agent_stop",
        "on_error_occurred",
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, hooks={n: noop for n in names}
    )
    response = await session.send_and_wait("run one tool", timeout=30)
    assert response is not None and response.data.content == "all hooks seen"
    types = [w["params"]["hookType"] for w in wire]
    assert types == [
        "sessionStart",
        "userPromptSubmitted",
        "userPromptTransformed",
        "preToolUse",
        "postToolUse",
        "agentStop",
    ], types
    for w in wire:
        params = w["params"]
        assert params["sessionId"] == session.session_id, params
        inp = params["input"]
        assert isinstance(inp.get("timestamp"), int) and inp["timestamp"] > 1_600_000_000_000, inp
        assert inp.get("cwd") == str(ctx.work_dir), inp
    by_type = {w["params"]["hookType"]: w["params"]["input"] for w in wire}
    assert by_type["userPromptSubmitted"]["prompt"] == "run one tool"
    assert by_type["preToolUse"]["toolName"] == "bash"
    assert by_type["preToolUse"]["toolArgs"] == {"command": "echo hooked", "description": "echo"}
    post = by_type["postToolUse"]
    assert post["toolName"] == "bash" and post["toolArgs"]["command"] == "echo hooked"
    assert post["toolResult"]["resultType"] == "success", post
    assert post["toolResult"]["textResultForLlm"].startswith("hooked\n"), post


async def test_pre_tool_use_deny_reason_and_allow_skips_permission(ctx: Ctx, client):
    ctx.fake.replies(
        {
            "tool_calls": [
                {"name": "bash", "arguments": {"command": "echo allowed", "description": "a"}},
                {"name": "bash", "arguments": {"command": "echo denied", "description": "d"}},
            ]
        },
        {"text": "done"},
    )
    asked = []

    def on_permission(request, invocation):
        asked.append(request)
        return PermissionHandler.approve_all(request, invocation)

    def on_pre(inp, invocation):
        if "denied" in inp["toolArgs"]["command"]:
            return {"permissionDecision": "deny", "permissionDecisionReason": "not today"}
        return {"permissionDecision": "allow"}

    session = await client.create_session(
        on_permission_request=on_permission, hooks={"on_pre_tool_use": on_pre}
    )
    events = record_events(session)
    response = await session.send_and_wait("two commands", timeout=30)
    assert response is not None and response.data.content == "done"
    results = [r["content"] for r in tool_results(ctx.fake.requests()[-1])]
    assert results[0].startswith("allowed\n"), results
    assert results[1] == "Denied by preToolUse hook: not today", results
    assert asked == [], "an 'allow' from preToolUse skips the permission prompt"
    starts = [e.data.hook_type for e in events.of("hook.start")]
    ends = events.of("hook.end")
    assert starts.count("preToolUse") == 2, starts
    assert len(ends) == len(starts) and all(e.data.success for e in ends), ends


async def test_post_tool_use_failure_hook_for_a_failed_tool(ctx: Ctx, client):
    ctx.fake.replies(
        {"tool_calls": [{"name": "view", "arguments": {"path": "missing.txt"}}]},
        {"text": "it is missing"},
    )
    failures: list[dict] = []
    posts: list[dict] = []

    def on_post(inp, invocation):
        posts.append(inp)
        return None

    def on_failure(inp, invocation):
        failures.append(inp)
        return None

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        hooks={"on_post_tool_use": on_post, "on_post_tool_use_failure": on_failure},
    )
    response = await session.send_and_wait("view missing.txt", timeout=30)
    assert response is not None and response.data.content == "it is missing"
    assert posts == [], "postToolUse is for successful results only"
    assert len(failures) == 1, failures
    failure = failures[0]
    assert failure["toolName"] == "view" and failure["toolArgs"] == {"path": "missing.txt"}
    assert "does not exist" in failure["error"], failure
    _check_common_input(failure, session.session_id)


async def test_post_tool_use_failure_additional_context(ctx: Ctx, client):
    snapshot = "hooks_extended/should_invoke_posttoolusefailure_hook_for_failed_tool_result.yaml"
    ctx.load(snapshot)
    failures: list[dict] = []

    def on_failure(inp, invocation):
        failures.append(inp)
        return {"additionalContext": "HOOK_FAILURE_GUIDANCE_APPLIED"}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        available_tools=["report_intent"],
        hooks={"on_post_tool_use_failure": on_failure},
    )
    try:
        response = await session.send_and_wait(
            "Call the view tool with path 'missing.txt'. If it fails, use the hook guidance to "
            "answer.",
            timeout=30,
        )
    finally:
        assert len(failures) == 1 and failures[0]["toolName"] == "view", failures
        assert "does not exist" in failures[0]["error"], failures[0]
    assert response is not None and response.data.content == "HOOK_FAILURE_GUIDANCE_APPLIED"


async def _until(predicate, interval: float = 0.02) -> None:
    while not predicate():
        await asyncio.sleep(interval)


async def test_pre_tool_use_ask_puts_the_hooks_question_to_the_user(ctx: Ctx, client):
    """A preToolUse hook that answers "ask" (as the original 1.0.102): the user gets a request
    of kind ``hook`` with the hook's question; a yes runs the tool without a second prompt, a no
    gives the model the hook's words and the user's feedback, and the turn goes on."""
    ctx.fake.replies(
        {
            "tool_calls": [
                {"name": "bash", "arguments": {"command": "echo approved", "description": "a"}},
                {"name": "bash", "arguments": {"command": "echo refused", "description": "r"}},
            ]
        },
        {"text": "done"},
    )
    asked = []

    def on_permission(request, invocation):
        asked.append(request)
        if "refused" in json.dumps(request.tool_args):
            return PermissionDecisionReject(feedback="not that one")
        return PermissionHandler.approve_all(request, invocation)

    def on_pre(inp, invocation):
        return {"permissionDecision": "ask", "permissionDecisionReason": "run " + inp["toolArgs"]["command"] + "?"}

    session = await client.create_session(
        on_permission_request=on_permission, hooks={"on_pre_tool_use": on_pre}
    )
    response = await session.send_and_wait("two commands", timeout=30)
    assert response is not None and response.data.content == "done", "the turn went on"
    assert sorted(r.kind for r in asked) == ["hook", "hook"], "one hook prompt each, no second one"
    assert {r.hook_message for r in asked} == {"run echo approved?", "run echo refused?"}
    assert {r.tool_name for r in asked} == {"bash"}
    results = [r["content"] for r in tool_results(ctx.fake.requests()[-1])]
    assert results[0].startswith("approved\n"), results
    assert results[1] == (
        "Denied by user via preToolUse hook prompt: run echo refused?."
        " The user provided the following feedback: not that one"
    ), results
