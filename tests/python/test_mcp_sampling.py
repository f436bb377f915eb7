"""MCP sampling, with the Python SDK as the client and the project's MCP test server asking for
samples (its ``sample`` tool sends ``sampling/createMessage`` and returns what it got).

The server's request becomes an ephemeral ``sampling.requested`` event (with the raw MCP
request, as the original sends it); the client runs the inference with
``session.mcp.executeSampling`` (one call of the session's model, cancellable with
``cancelSamplingExecution``) and answers with ``session.ui.handlePendingSampling``, after which
``sampling.completed`` goes out and the server (and so the model) sees the result.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from copilot.generated.rpc import (
    MCPCancelSamplingExecutionParams,
    MCPExecuteSamplingParams,
    UIHandlePendingSamplingRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, record_events, tap_raw_events, tool_names, tool_results, wait_for
from test_mcp import MCP_SERVER_BIN, stdio_server, value, wait_status

pytestmark = pytest.mark.skipif(not MCP_SERVER_BIN.is_file(), reason="build crates/mcp-test-server first")


def sampling_requests(raw, session_id: str) -> list[dict]:
    return [e for e in raw.of(session_id) if e["type"] == "sampling.requested"]


async def start_sampling_turn(ctx: Ctx, client, *after: dict):
    """A session whose model calls `s-sample`; returns it, its events, the raw events and
    the running turn once the server's request has arrived."""
    ctx.fake.replies(
        {"tool_calls": [{"name": "s-sample", "arguments": {"prompt": "Name a colour"}}]},
        *after,
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"s": stdio_server("s")},
    )
    events = record_events(session)
    raw = tap_raw_events(client)
    turn = asyncio.create_task(session.send_and_wait("Ask the server to sample", timeout=60))
    await wait_for(lambda: sampling_requests(raw, session.session_id), timeout=30, what="sampling.requested")
    return session, events, raw, turn


async def test_sampling_request_executed_and_answered(ctx: Ctx, client):
    session, events, raw, turn = await start_sampling_turn(ctx, client, {"text": "Blue."}, {"text": "done"})
    requested = sampling_requests(raw, session.session_id)[0]
    assert requested.get("ephemeral") is True
    data = requested["data"]
    assert data["serverName"] == "s" and data["mcpRequestId"] is not None
    assert data["request"]["messages"] == [{"role": "user", "content": {"type": "text", "text": "Name a colour"}}]
    assert data["request"]["systemPrompt"] == "Answer in one short sentence."
    typed = events.of("sampling.requested")[0].data
    assert typed.request_id == data["requestId"] and typed.server_name == "s"

    outcome = await session.rpc.mcp.execute_sampling(
        MCPExecuteSamplingParams(
            request_id=f"exec-{uuid.uuid4().hex}",
            server_name="s",
            mcp_request_id=data["mcpRequestId"],
            request=data["request"],
        )
    )
    assert value(outcome.action) == "success", outcome
    result = outcome.result
    assert result["role"] == "assistant" and result["content"] == {"type": "text", "text": "Blue."}
    assert result["stopReason"] == "endTurn" and result["model"]

    # The inference is the session's model with the server's system prompt and messages only.
    sampled = ctx.fake.requests()[1]["body"]
    assert not sampled.get("tools")
    messages = sampled["messages"]
    assert messages[0] == {"role": "system", "content": "Answer in one short sentence."}
    assert messages[-1]["role"] == "user" and "Name a colour" in str(messages[-1]["content"])

    answered = await session.rpc.ui.handle_pending_sampling(
        UIHandlePendingSamplingRequest(request_id=data["requestId"], response=result)
    )
    assert answered.success is True
    reply = await turn
    assert reply is not None and reply.data.content == "done"
    tool_result = tool_results(ctx.fake.requests()[2])[0]["content"]
    assert tool_result == f"sampled ({result['model']}): Blue.", tool_result
    completed = [e for e in raw.of(session.session_id) if e["type"] == "sampling.completed"]
    assert [e["data"] for e in completed] == [{"requestId": data["requestId"]}]

    # Answered once: the id is no longer pending.
    again = await session.rpc.ui.handle_pending_sampling(UIHandlePendingSamplingRequest(request_id=data["requestId"]))
    assert again.success is False
    await session.disconnect()


async def test_rejected_sampling_request_fails_the_servers_call(ctx: Ctx, client):
    session, _events, raw, turn = await start_sampling_turn(ctx, client, {"text": "it was rejected"})
    request_id = sampling_requests(raw, session.session_id)[0]["data"]["requestId"]
    answered = await session.rpc.ui.handle_pending_sampling(UIHandlePendingSamplingRequest(request_id=request_id))
    assert answered.success is True
    reply = await turn
    assert reply is not None and reply.data.content == "it was rejected"
    tool_result = tool_results(ctx.fake.requests()[1])[0]["content"]
    assert "sampling failed" in tool_result and "rejected" in tool_result, tool_result
    assert any(e["type"] == "sampling.completed" for e in raw.of(session.session_id))
    await session.disconnect()


async def test_sampling_execution_cancelled_and_bad_requests_fail(ctx: Ctx, client):
    ctx.fake.replies({"hang": True})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"s": stdio_server("s")},
    )
    await wait_status(session, "s", "connected")
    request = {"messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}], "maxTokens": 16}

    def params(server: str, req: dict, request_id: str = "") -> MCPExecuteSamplingParams:
        return MCPExecuteSamplingParams(
            request_id=request_id or f"exec-{uuid.uuid4().hex}", server_name=server, mcp_request_id=1, request=req
        )

    unknown = await session.rpc.mcp.execute_sampling(params("missing-server", request))
    assert value(unknown.action) == "failure" and "not configured" in unknown.error
    empty = await session.rpc.mcp.execute_sampling(params("s", {}))
    assert value(empty.action) == "failure" and "no messages" in empty.error

    running = asyncio.create_task(session.rpc.mcp.execute_sampling(params("s", request, "exec-hang")))
    await wait_for(lambda: len(ctx.fake.requests()) == 1, timeout=30, what="the sampling call")
    cancelled = await session.rpc.mcp.cancel_sampling_execution(MCPCancelSamplingExecutionParams(request_id="exec-hang"))
    assert cancelled.cancelled is True
    outcome = await running
    assert value(outcome.action) == "cancelled" and outcome.result is None
    gone = await session.rpc.mcp.cancel_sampling_execution(MCPCancelSamplingExecutionParams(request_id="exec-hang"))
    assert gone.cancelled is False
    await session.disconnect()


async def test_abort_answers_a_waiting_sampling_request(ctx: Ctx, client):
    session, _events, raw, turn = await start_sampling_turn(ctx, client)
    await session.abort()
    with pytest.raises(RuntimeError, match="aborted"):
        await turn
    # The server was answered with an error: nothing waits under that id any more.
    request_id = sampling_requests(raw, session.session_id)[0]["data"]["requestId"]
    late = await session.rpc.ui.handle_pending_sampling(UIHandlePendingSamplingRequest(request_id=request_id))
    assert late.success is False
    await session.disconnect()


async def test_sampling_honours_the_requests_limits_and_model_hint(ctx: Ctx, client):
    """The server's maxTokens, temperature and stopSequences reach the model request, and a
    model hint naming one of the session's models (here by substring) picks it."""
    ctx.fake.replies(
        {
            "tool_calls": [
                {
                    "name": "s-sample",
                    "arguments": {
                        "prompt": "Name a colour",
                        "maxTokens": 64,
                        "temperature": 0.3,
                        "stopSequences": ["STOP"],
                        "model": "GPT-4",
                    },
                }
            ]
        },
        {"text": "Red."},
        {"text": "done"},
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"s": stdio_server("s")},
    )
    raw = tap_raw_events(client)
    turn = asyncio.create_task(session.send_and_wait("Ask the server to sample", timeout=60))
    await wait_for(lambda: sampling_requests(raw, session.session_id), timeout=30, what="sampling.requested")
    data = sampling_requests(raw, session.session_id)[0]["data"]
    request = data["request"]
    assert request["maxTokens"] == 64 and request["temperature"] == 0.3, request
    assert request["modelPreferences"]["hints"] == [{"name": "GPT-4"}], request

    outcome = await session.rpc.mcp.execute_sampling(
        MCPExecuteSamplingParams(
            request_id=f"exec-{uuid.uuid4().hex}",
            server_name="s",
            mcp_request_id=data["mcpRequestId"],
            request=request,
        )
    )
    assert value(outcome.action) == "success", outcome
    sampled = ctx.fake.requests()[1]["body"]
    assert sampled["max_tokens"] == 64 and sampled["temperature"] == 0.3, sampled
    assert sampled["stop"] == ["STOP"], sampled
    assert sampled["model"] == "gpt-4.1" and outcome.result["model"] == "gpt-4.1", (sampled["model"], outcome)

    await session.rpc.ui.handle_pending_sampling(
        UIHandlePendingSamplingRequest(request_id=data["requestId"], response=outcome.result)
    )
    reply = await turn
    assert reply is not None and reply.data.content == "done"
    # The session's own calls keep their usual sampling: no limits, temperature 0.
    turn_body = ctx.fake.requests()[2]["body"]
    assert turn_body["temperature"] == 0 and "max_tokens" not in turn_body and "stop" not in turn_body
    assert tool_results(ctx.fake.requests()[2])[0]["content"] == "sampled (gpt-4.1): Red."

    # A hint naming no model the session can use leaves the session's model; no limits, no keys.
    ctx.fake.replies({"text": "Green."})
    plain = await session.rpc.mcp.execute_sampling(
        MCPExecuteSamplingParams(
            request_id=f"exec-{uuid.uuid4().hex}",
            server_name="s",
            mcp_request_id=2,
            request={
                "messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}],
                "modelPreferences": {"hints": [{"name": "no-such-model"}]},
            },
        )
    )
    assert value(plain.action) == "success", plain
    body = ctx.fake.requests()[-1]["body"]
    assert body["model"] == turn_body["model"] == plain.result["model"], (body["model"], turn_body["model"])
    assert body["temperature"] == 0 and "max_tokens" not in body and "stop" not in body, body
    await session.disconnect()


async def test_a_custom_agents_own_server_can_ask_for_samples(ctx: Ctx, client):
    """A custom agent's own ``mcpServers`` start when the agent runs (``task``): their tools are
    the agent's (not the session's), and a sampling request from one reaches the client like
    the session's servers' requests do, and is answered the same way."""
    agent = {
        "name": "sampler",
        "display_name": "Sampler",
        "description": "Asks its server to sample",
        "prompt": "Use your server.",
        "mcp_servers": {"agent-s": stdio_server("agent-s")},
    }
    ctx.fake.replies(
        {
            "tool_calls": [
                {
                    "name": "task",
                    "arguments": {
                        "name": "sampler-1",
                        "agent_type": "sampler",
                        "description": "sample",
                        "prompt": "Ask for a colour.",
                    },
                }
            ]
        },
        {"tool_calls": [{"name": "agent-s-sample", "arguments": {"prompt": "Name a colour"}}]},
        {"text": "Blue."},
        {"text": "AGENT DONE"},
        {"text": "done"},
    )
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all, custom_agents=[agent])
    raw = tap_raw_events(client)
    turn = asyncio.create_task(session.send_and_wait("Delegate the sampling", timeout=60))
    await wait_for(lambda: sampling_requests(raw, session.session_id), timeout=30, what="sampling.requested")
    data = sampling_requests(raw, session.session_id)[0]["data"]
    assert data["serverName"] == "agent-s", data

    outcome = await session.rpc.mcp.execute_sampling(
        MCPExecuteSamplingParams(
            request_id=f"exec-{uuid.uuid4().hex}",
            server_name="agent-s",
            mcp_request_id=data["mcpRequestId"],
            request=data["request"],
        )
    )
    assert value(outcome.action) == "success", outcome
    answered = await session.rpc.ui.handle_pending_sampling(
        UIHandlePendingSamplingRequest(request_id=data["requestId"], response=outcome.result)
    )
    assert answered.success is True
    reply = await turn
    assert reply is not None and reply.data.content == "done"

    main1, sub1, _sampled, sub2, main2 = ctx.fake.requests()
    assert "agent-s-sample" in tool_names(sub1) and "agent-s-sample" not in tool_names(main1)
    assert tool_results(sub2)[0]["content"] == f"sampled ({outcome.result['model']}): Blue."
    assert tool_results(main2)[0]["content"] == "AGENT DONE"
    # The agent's server ended with its run: the session never had it.
    listed = await session.rpc.mcp.list()
    assert all(s.name != "agent-s" for s in listed.servers), listed
    await session.disconnect()
