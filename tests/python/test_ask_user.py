"""ask_user: ``on_user_input_request`` → ``requestUserInput: true`` → ``userInput.request``.

The recordings pin the tool results the model sees (``User selected: X`` for a choice,
``User responded: X`` for a freeform answer); the fake only answers when they match.
"""

from __future__ import annotations

import asyncio

from copilot.session import PermissionHandler
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import (
    Ctx,
    record_events,
    snapshot_final_reply,
    tap_server_requests,
    tool_names,
    tool_results,
)


async def test_choice_answer_is_user_selected(ctx: Ctx, client):
    snapshot = "ask_user/should_invoke_user_input_handler_when_model_uses_ask_user_tool.yaml"
    ctx.load(snapshot)
    wire = tap_server_requests(client, "userInput.request")
    requests: list[dict] = []

    async def on_input(request, invocation):
        requests.append(request)
        assert invocation["session_id"] == session.session_id
        choices = request.get("choices") or []
        return {"answer": choices[0], "wasFreeform": False}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, on_user_input_request=on_input
    )
    events = record_events(session)
    response = await session.send_and_wait(
        "Ask me to choose between 'Option A' and 'Option B' using the ask_user tool. Wait for "
        "my response before continuing.",
        timeout=30,
    )
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)
    assert len(requests) == 1, requests
    assert requests[0]["question"] == "Please choose between the following options:"
    assert requests[0]["choices"] == ["Option A", "Option B"]
    params = wire[0]["params"]
    assert params["sessionId"] == session.session_id
    assert params.get("allowFreeform", True) is True, params  # defaults to true
    reqs = ctx.fake.requests()
    assert "ask_user" in tool_names(reqs[0]), tool_names(reqs[0])
    assert [r["content"] for r in tool_results(reqs[-1])] == ["User selected: Option A"]
    types = events.types()
    assert "user_input.requested" in types and "user_input.completed" in types, types
    assert types.index("user_input.requested") < types.index("user_input.completed")


async def test_freeform_answer_is_user_responded(ctx: Ctx, client):
    snapshot = "ask_user/should_handle_freeform_user_input_response.yaml"
    ctx.load(snapshot)
    answer = "This is my custom freeform answer that was not in the choices"
    requests: list[dict] = []

    def on_input(request, invocation):
        requests.append(request)
        return {"answer": answer, "wasFreeform": True}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, on_user_input_request=on_input
    )
    response = await session.send_and_wait(
        "Ask me a question using ask_user and then include my answer in your response. The "
        "question should be 'What is your favorite color?'",
        timeout=30,
    )
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)
    assert [r["question"] for r in requests] == ["What is your favorite color?"]
    assert not requests[0].get("choices"), requests[0]
    last = ctx.fake.requests()[-1]
    assert [r["content"] for r in tool_results(last)] == [f"User responded: {answer}"]


async def test_handler_receives_choices_and_allow_freeform(ctx: Ctx, client):
    snapshot = "ask_user/should_receive_choices_in_user_input_request.yaml"
    ctx.load(snapshot)
    wire = tap_server_requests(client, "userInput.request")
    requests: list[dict] = []

    def on_input(request, invocation):
        requests.append(request)
        return {"answer": request["choices"][0], "wasFreeform": False}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, on_user_input_request=on_input
    )
    response = await session.send_and_wait(
        "Use the ask_user tool to ask me to pick between exactly two options: 'Red' and 'Blue'. "
        "These should be provided as choices. Wait for my answer.",
        timeout=30,
    )
    assert response is not None and response.data.content == "You selected **Red**."
    assert requests and requests[0]["choices"] == ["Red", "Blue"], requests
    assert wire[0]["params"].get("allowFreeform") is False, wire[0]["params"]


async def test_ask_user_does_not_block_a_sibling_tool_call(ctx: Ctx, client):
    snapshot = "ask_user/ask_user_does_not_block_sibling_tool_call_in_same_turn.yaml"
    ctx.load(snapshot)
    marker_ran = asyncio.Event()

    def set_marker(invocation: ToolInvocation) -> ToolResult:
        marker_ran.set()
        value = str((invocation.arguments or {}).get("value", ""))
        return ToolResult(text_result_for_llm=f"MARKER_{value.upper()}")

    async def on_input(request, invocation):
        # Answer only once the sibling tool has run: if ask_user blocked it, this deadlocks.
        await asyncio.wait_for(marker_ran.wait(), timeout=15)
        return {"answer": request["choices"][0], "wasFreeform": False}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        on_user_input_request=on_input,
        tools=[
            Tool(
                name="set_marker",
                description="Sets a marker value",
                parameters={
                    "type": "object",
                    "properties": {"value": {"type": "string"}},
                    "required": ["value"],
                },
                handler=set_marker,
            )
        ],
    )
    response = await session.send_and_wait(
        "Call set_marker with value 'go' and, at the same time, use the ask_user tool to ask me "
        "to choose between 'Option A' and 'Option B'. Wait for my answer before continuing.",
        timeout=30,
    )
    assert response is not None
    assert response.data.content == snapshot_final_reply(snapshot)
    last = ctx.fake.requests()[-1]
    assert [r["content"] for r in tool_results(last)] == ["MARKER_GO", "User selected: Option A"]


async def test_ask_user_offered_only_with_a_handler(ctx: Ctx, client):
    ctx.fake.replies({"text": "one"}, {"text": "two"})
    plain = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await plain.send_and_wait("no handler", timeout=30)
    asking = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        on_user_input_request=lambda req, inv: {"answer": "x", "wasFreeform": True},
    )
    await asking.send_and_wait("with handler", timeout=30)
    first, second = ctx.fake.requests()
    assert "ask_user" not in tool_names(first), tool_names(first)
    assert "ask_user" in tool_names(second), tool_names(second)
