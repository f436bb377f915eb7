"""The built-in GitHub MCP server, with the Python SDK as the client and the fake model's
``/mcp`` endpoint (crates/fake-model) standing in for the Copilot API's.

A session with ``enable_config_discovery`` gets ``github-mcp-server``: nothing is contacted
until its first message (or ``session.mcp.list``); then it connects to ``<COPILOT_API_URL>/mcp``
with the session's token and the ``X-MCP-*`` headers its ``github_mcp_tool_config`` asks for,
and its tools reach the model as ``github-mcp-server-<tool>``. Named in
``disabled_mcp_servers``, it is listed as disabled and never contacted.
"""

from __future__ import annotations

import asyncio

from copilot.session import PermissionHandler

from conftest import GITHUB_TOKEN, Ctx, raw_request, record_events, tool_results

NAME = "github-mcp-server"


def value(v) -> str:
    return getattr(v, "value", v)


def mcp_requests(ctx: Ctx) -> list[dict]:
    return ctx.fake._call("GET", "/_fake/mcp_requests")


async def wait_listed(session, status: str):
    for _ in range(1500):
        for s in (await session.rpc.mcp.list()).servers:
            if s.name == NAME and value(s.status) == status:
                return s
        await asyncio.sleep(0.02)
    raise AssertionError(f"{NAME} never reached {status}: {await session.rpc.mcp.list()}")


async def test_starts_on_the_first_message_with_the_asked_tools(ctx: Ctx, client):
    ctx.fake.replies(
        {"tool_calls": [{"name": f"{NAME}-get_me", "arguments": {}}]},
        {"text": "You are octocat."},
    )
    asked = []

    def approve(request, invocation):
        asked.append(request)
        return PermissionHandler.approve_all(request, invocation)

    session = await client.create_session(
        on_permission_request=approve,
        enable_config_discovery=True,
        github_mcp_tool_config={"enable_all_tools": True, "enable_insiders_mode": True},
    )
    events = record_events(session)
    await session.rpc.plan.read()
    assert mcp_requests(ctx) == []

    reply = await session.send_and_wait("Who am I on GitHub?", timeout=60)
    assert reply is not None and reply.data.content == "You are octocat."

    requests = mcp_requests(ctx)
    assert requests, "no request reached /mcp"
    assert {r["path"] for r in requests} == {"/mcp"}
    first = requests[0]
    assert first["body"]["method"] == "initialize"
    headers = first["headers"]
    assert headers["authorization"] == f"Bearer {GITHUB_TOKEN}"
    assert headers["x-mcp-toolsets"] == "all"
    assert headers["x-mcp-insiders"] == "true"
    assert headers["x-mcp-host"] == "copilot-cli"
    assert "x-mcp-tools" not in headers

    model_calls = ctx.fake.requests()
    offered = [t["function"]["name"] for t in model_calls[0]["body"]["tools"]]
    assert f"{NAME}-get_me" in offered
    assert tool_results(model_calls[1])[0]["content"] == "You are octocat (fake GitHub MCP server)."
    # Read-only (readOnlyHint): no permission asked.
    assert asked == []
    assert any(r["body"].get("method") == "tools/call" for r in requests)

    listed = await wait_listed(session, "connected")
    assert value(listed.source) == "builtin"
    loaded = events.of("session.mcp_servers_loaded")
    assert loaded and any(s.name == NAME and value(s.source) == "builtin" for s in loaded[-1].data.servers)


async def test_disabled_by_name_is_listed_and_never_contacted(ctx: Ctx, client):
    ctx.fake.replies({"text": "done"})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        enable_config_discovery=True,
        github_mcp_tool_config={"enable_all_tools": True},
        disabled_mcp_servers=[NAME],
    )
    events = record_events(session)
    reply = await session.send_and_wait("Hello", timeout=60)
    assert reply is not None and reply.data.content == "done"
    listed = await wait_listed(session, "disabled")
    assert value(listed.source) == "builtin"
    loaded = events.of("session.mcp_servers_loaded")
    assert [(s.name, value(s.status)) for s in loaded[-1].data.servers] == [(NAME, "disabled")]
    offered = [t["function"]["name"] for t in ctx.fake.requests()[0]["body"]["tools"]]
    assert not any(n.startswith(f"{NAME}-") for n in offered)
    assert mcp_requests(ctx) == []


async def test_listing_starts_it_read_only_by_default(ctx: Ctx, client):
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        enable_config_discovery=True,
    )
    assert mcp_requests(ctx) == []
    await session.rpc.mcp.list()
    await wait_listed(session, "connected")
    requests = mcp_requests(ctx)
    assert {r["path"] for r in requests} == {"/mcp/readonly"}
    tools = requests[0]["headers"]["x-mcp-tools"].split(",")
    assert tools[:3] == ["get_file_contents", "search_code", "get_copilot_space"]
    assert "x-mcp-toolsets" not in requests[0]["headers"]


async def test_own_toolsets_and_no_discovery(ctx: Ctx, client):
    plain = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    assert [s.name for s in (await plain.rpc.mcp.list()).servers] == []

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        enable_config_discovery=True,
        github_mcp_tool_config={"additional_toolsets": ["actions", "repos"], "additional_tools": ["get_me"]},
    )
    await wait_listed(session, "connected")
    headers = mcp_requests(ctx)[0]["headers"]
    assert mcp_requests(ctx)[0]["path"] == "/mcp"
    assert headers["x-mcp-toolsets"] == "actions,repos"
    assert headers["x-mcp-tools"] == "get_me"
    assert "x-mcp-insiders" not in headers


async def test_remove_github_drops_only_the_built_in_server(ctx: Ctx, client):
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        enable_config_discovery=True,
    )
    await wait_listed(session, "connected")
    sid = session.session_id
    assert (await raw_request(client, "session.mcp.removeGitHub", {"sessionId": sid}))["removed"] is True
    assert NAME not in [s.name for s in (await session.rpc.mcp.list()).servers]
    assert (await raw_request(client, "session.mcp.removeGitHub", {"sessionId": sid}))["removed"] is False

    own = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        enable_config_discovery=True,
        mcp_servers={NAME: {"type": "http", "url": ctx.fake.url + "/mcp", "tools": ["*"]}},
    )
    await wait_listed(own, "connected")
    assert (await raw_request(client, "session.mcp.removeGitHub", {"sessionId": own.session_id}))["removed"] is False
    listed = [s for s in (await own.rpc.mcp.list()).servers if s.name == NAME]
    assert [value(s.source) for s in listed] == ["user"]
