"""MCP servers of a session, with the Python SDK as the client and the project's own MCP server
(``crates/mcp-test-server``, stdio and streamable HTTP) as the servers.

``mcpServers`` on create → servers start in the background → their tools reach the model as
``<server>-<tool>`` → a call asks permission (kind ``mcp``), runs the ``preMcpToolCall`` hook,
and its result reaches the model; failing, hanging and crashing servers end in tool errors,
never a stuck turn; ``session.mcp.*`` starts, stops and lists; child processes end with the
session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from copilot.generated.rpc import (
    MCPIsServerRunningRequest,
    MCPListToolsRequest,
    MCPPromptsGetRequest,
    MCPPromptsListRequest,
    MCPResourcesListTemplatesRequest,
    MCPStartServerRequest,
    MCPStopServerRequest,
)
from copilot.session import PermissionHandler

from conftest import SKIPPER_BIN, Ctx, record_events, tool_results, wait_until

MCP_SERVER_BIN = Path(
    os.environ.get("MCP_TEST_SERVER_BIN", SKIPPER_BIN.parent / "mcp-test-server")
).absolute()

pytestmark = pytest.mark.skipif(
    not MCP_SERVER_BIN.is_file(), reason=f"build crates/mcp-test-server first: {MCP_SERVER_BIN}"
)


@contextlib.contextmanager
def http_server(*args: str):
    """The project's MCP test server on streamable HTTP (loopback, any port); yields its URL."""
    proc = subprocess.Popen(
        [str(MCP_SERVER_BIN), "--http", "127.0.0.1:0", *args],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("listening "), line
        yield line.removeprefix("listening ")
    finally:
        proc.kill()
        proc.wait()


def stdio_server(name: str, *extra: str, **config) -> dict:
    return {"command": str(MCP_SERVER_BIN), "args": ["--name", name, *extra], "tools": ["*"], **config}


def value(v) -> str:
    """An SDK enum or its plain string."""
    return getattr(v, "value", v)


def tool_defs(request: dict) -> dict[str, dict]:
    return {
        t["function"]["name"]: t["function"]
        for t in request["body"].get("tools") or []
        if isinstance(t, dict) and "function" in t
    }


async def wait_status(session, name: str, status: str) -> dict:
    for _ in range(1500):
        listed = await session.rpc.mcp.list()
        for s in listed.servers:
            if s.name == name and value(s.status) == status:
                return s
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name} never reached {status}: {await session.rpc.mcp.list()}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


async def wait_gone(pids: list[int]) -> None:
    for _ in range(1500):
        if not any(alive(p) for p in pids):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"still running: {[p for p in pids if alive(p)]}")


def read_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def test_stdio_tool_is_offered_asked_for_and_called(ctx: Ctx, client):
    ctx.fake.replies(
        {"tool_calls": [{"name": "env-get_env", "arguments": {"name": "SECRET_X"}}]},
        {"text": "hunter2"},
    )
    asked = []

    def approve(request, invocation):
        asked.append(request)
        return PermissionHandler.approve_all(request, invocation)

    session = await client.create_session(
        on_permission_request=approve,
        mcp_servers={"env": stdio_server("env", env={"SECRET_X": "hunter2"})},
    )
    events = record_events(session)
    reply = await session.send_and_wait("Read SECRET_X with env/get_env", timeout=60)
    assert reply is not None and reply.data.content == "hunter2"

    first, second = ctx.fake.requests()[:2]
    defs = tool_defs(first)
    assert defs["env-get_env"]["description"] == "Returns the value of the specified environment variable."
    assert defs["env-get_env"]["parameters"]["required"] == ["name"]
    assert "env-hang" in defs and "bash" in defs
    assert tool_results(second)[0]["content"] == "hunter2"

    assert [value(a.kind) for a in asked] == ["mcp"]
    assert asked[0].server_name == "env" and asked[0].tool_name == "get_env"
    assert asked[0].read_only is False
    start = events.of("tool.execution_start")[0].data
    assert start.mcp_server_name == "env" and start.mcp_tool_name == "get_env"
    done = events.of("tool.execution_complete")[0].data
    assert done.success is True and done.result.content == "hunter2"
    await session.disconnect()


async def test_read_only_fail_and_allowlist(ctx: Ctx, client):
    """A read-only tool asks no permission; `isError` is a failed call the model reads;
    `tools` limits what the model sees."""
    ctx.fake.replies(
        {
            "tool_calls": [
                {"name": "s-read_only_info", "arguments": {}},
                {"name": "s-fail", "arguments": {"text": "no such thing"}},
            ]
        },
        {"text": "ok"},
    )
    asked = []

    def approve(request, invocation):
        asked.append(request)
        return PermissionHandler.approve_all(request, invocation)

    session = await client.create_session(
        on_permission_request=approve,
        mcp_servers={
            "s": stdio_server("s"),
            "limited": {**stdio_server("limited"), "tools": ["echo"]},
        },
    )
    events = record_events(session)
    await session.send_and_wait("go", timeout=60)
    first, second = ctx.fake.requests()[:2]
    names = [n for n in tool_defs(first) if n.startswith("limited-")]
    assert names == ["limited-echo"]
    results = {r["content"] for r in tool_results(second)}
    assert results == {"server s", "no such thing"}
    assert [(value(a.kind), a.tool_name) for a in asked] == [("mcp", "fail")]
    done = {e.data.tool_call_id: e.data for e in events.of("tool.execution_complete")}
    assert sorted(d.success for d in done.values()) == [False, True]
    await session.disconnect()


async def test_hanging_and_crashing_servers_end_in_tool_errors(ctx: Ctx, client):
    ctx.fake.replies(
        {"tool_calls": [{"name": "slow-hang", "arguments": {}}]},
        {"tool_calls": [{"name": "boom-crash", "arguments": {}}]},
        {"text": "both failed"},
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"slow": stdio_server("slow", timeout=500), "boom": stdio_server("boom")},
    )
    reply = await session.send_and_wait("go", timeout=60)
    assert reply is not None and reply.data.content == "both failed"
    second, third = ctx.fake.requests()[1:3]
    hang = tool_results(second)[0]["content"]
    assert hang == 'MCP server "slow" did not answer the call to "hang" within 0.5 seconds', hang
    crash = tool_results(third)[-1]["content"]
    assert 'MCP server "boom" failed the call to "crash"' in crash, crash
    failed = await wait_status(session, "boom", "failed")
    assert "exited" in failed.error
    await session.disconnect()


async def test_lifecycle_rpcs_and_process_cleanup(ctx: Ctx, client, tmp_path: Path):
    pid_file = tmp_path / "pids"
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={
            "life": stdio_server("life", "--pid-file", str(pid_file)),
            "broken": stdio_server("broken", "--fail-start"),
        },
    )
    await wait_status(session, "life", "connected")
    broken = await wait_status(session, "broken", "failed")
    assert "failing on purpose" in broken.error

    tools = await session.rpc.mcp.list_tools(MCPListToolsRequest(server_name="life"))
    assert "echo" in [t.name for t in tools.tools]
    assert (await session.rpc.mcp.is_server_running(MCPIsServerRunningRequest(server_name="life"))).running
    assert not (
        await session.rpc.mcp.is_server_running(MCPIsServerRunningRequest(server_name="nope"))
    ).running
    with pytest.raises(Exception, match="not connected"):
        await session.rpc.mcp.list_tools(MCPListToolsRequest(server_name="nope"))

    first = read_pids(pid_file)
    assert len(first) == 1
    await session.rpc.mcp.stop_server(MCPStopServerRequest(server_name="life"))
    assert not (await session.rpc.mcp.is_server_running(MCPIsServerRunningRequest(server_name="life"))).running
    await wait_status(session, "life", "stopped")
    await wait_gone(first)

    await session.rpc.mcp.start_server(MCPStartServerRequest(server_name="life"))
    await wait_status(session, "life", "connected")
    second = [p for p in read_pids(pid_file) if p not in first]
    assert len(second) == 1 and alive(second[0])

    await session.disconnect()
    await wait_gone(second)


async def test_children_end_when_the_server_process_stops(ctx: Ctx, make_client, tmp_path: Path):
    pid_file = tmp_path / "pids"
    client = make_client()
    await client.start()
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"a": stdio_server("a", "--pid-file", str(pid_file))},
    )
    await wait_status(session, "a", "connected")
    pids = read_pids(pid_file)
    assert len(pids) == 1
    await client.stop()
    await wait_gone(pids)


async def test_streamable_http_server_and_pre_mcp_hook(ctx: Ctx, client):
    with http_server("--name", "web") as url:
        ctx.fake.replies(
            {"tool_calls": [{"name": "web-echo_meta", "arguments": {"value": "v1"}}]},
            {"text": "done"},
        )
        hook_inputs = []

        async def on_pre_mcp(input, invocation):
            hook_inputs.append(input)
            return {"metaToUse": {"injected": "by-hook"}}

        session = await client.create_session(
            on_permission_request=PermissionHandler.approve_all,
            mcp_servers={"web": {"type": "http", "url": url, "tools": ["*"]}},
            hooks={"on_pre_mcp_tool_call": on_pre_mcp},
        )
        await session.send_and_wait("echo it", timeout=60)
        second = ctx.fake.requests()[1]
        assert tool_results(second)[0]["content"] == '{"meta":{"injected":"by-hook"},"value":"v1"}'
        assert hook_inputs and hook_inputs[0]["serverName"] == "web"
        assert hook_inputs[0]["toolName"] == "echo_meta"
        assert hook_inputs[0]["arguments"] == {"value": "v1"}
        await session.disconnect()



async def test_prompts_and_resource_templates_of_a_server(ctx: Ctx, client):
    """``session.mcp.prompts.list/get`` and ``resources.listTemplates`` ask the server itself:
    pages follow the server's own cursor, a prompt's messages come back without reaching the
    model, and the server's refusals and an unknown server are errors (as the original)."""
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"t": stdio_server("t")},
    )
    mcp = session.rpc.mcp

    async def connected():
        listed = await mcp.list()
        return any(s.name == "t" and s.status.value == "connected" for s in listed.servers)

    await wait_until(connected, "the server to connect")
    first = await mcp.prompts.list(MCPPromptsListRequest(server_name="t"))
    assert [p.name for p in first.prompts] == ["greet"]
    assert [(a.name, a.required) for a in first.prompts[0].arguments] == [("who", True)]
    second = await mcp.prompts.list(MCPPromptsListRequest(server_name="t", cursor=first.next_cursor))
    assert [p.name for p in second.prompts] == ["farewell"] and second.next_cursor is None

    got = await mcp.prompts.get(MCPPromptsGetRequest(prompt_name="greet", server_name="t", arguments={"who": "Ada"}))
    assert got.description == "greet from t"
    assert [(m.role.value, m.content) for m in got.messages] == [
        ("user", {"type": "text", "text": "Please greet Ada."})
    ]
    assert ctx.fake.requests() == [], "a prompt is not sent to the model"

    templates = await mcp.resources.list_templates(MCPResourcesListTemplatesRequest(server_name="t"))
    assert [(t.uri_template, t.name) for t in templates.resource_templates] == [
        ("test://greeting/{name}", "greeting-for")
    ]

    with pytest.raises(Exception, match=r"MCP prompts/get failed for t: MCP error -32602: no prompt nope"):
        await mcp.prompts.get(MCPPromptsGetRequest(prompt_name="nope", server_name="t"))
    with pytest.raises(Exception, match="not connected"):
        await mcp.prompts.list(MCPPromptsListRequest(server_name="missing"))
