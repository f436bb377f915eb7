"""The user's own MCP servers start in every session: ``$COPILOT_HOME/mcp-config.json`` (as
``mcp.config.*`` writes it) and the enabled installed plugins' ``.mcp.json`` servers, with the
names ``mcp.config.disable`` turned off listed as disabled — unless the session configures that
server itself. They start lazily, as the original starts them: with the session's first turn
or ``session.mcp.list``, never with ``session.create``. Python SDK as the client, the project's
MCP test server as the servers.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from copilot.rpc import MCPIsServerRunningRequest
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request, record_events
from test_mcp import MCP_SERVER_BIN, read_pids, stdio_server, tool_defs, value, wait_status

pytestmark = pytest.mark.skipif(not MCP_SERVER_BIN.is_file(), reason="build crates/mcp-test-server first")


async def test_user_config_and_installed_plugin_servers_start(ctx: Ctx, client):
    await raw_request(client, "mcp.config.add", {"name": "mine", "config": stdio_server("mine")})
    await raw_request(client, "mcp.config.add", {"name": "offsrv", "config": stdio_server("offsrv")})
    await raw_request(client, "mcp.config.disable", {"names": ["offsrv"]})
    plugin = ctx.root / "plugin"
    plugin.mkdir()
    (plugin / "plugin.json").write_text(json.dumps({"name": "withmcp", "version": "1.0.0"}))
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {"plug": stdio_server("plug")}}))
    await raw_request(client, "plugins.install", {"source": str(plugin)})

    ctx.fake.replies({"text": "ok"})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await wait_status(session, "mine", "connected")
    await wait_status(session, "plug", "connected")
    await wait_status(session, "offsrv", "disabled")
    reply = await session.send_and_wait("hello", timeout=60)
    assert reply is not None and reply.data.content == "ok"
    offered = tool_defs(ctx.fake.requests()[0])
    assert "mine-echo" in offered and "plug-echo" in offered
    assert not any(name.startswith("offsrv-") for name in offered)

    # A server the session configures itself is not turned off by the user's list; its own
    # list still applies to the user's servers.
    own = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"offsrv": stdio_server("offsrv")},
        disabled_mcp_servers=["mine"],
    )
    await wait_status(own, "offsrv", "connected")
    await wait_status(own, "mine", "disabled")

    # Disabling the plugin keeps its servers out of new sessions.
    await raw_request(client, "plugins.disable", {"names": ["withmcp"]})
    later = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await wait_status(later, "mine", "connected")
    assert "plug" not in [s.name for s in (await later.rpc.mcp.list()).servers]


async def test_user_servers_start_with_the_first_turn_not_the_session(ctx: Ctx, client):
    pids = ctx.root / "pids"
    await raw_request(
        client, "mcp.config.add", {"name": "mine", "config": stdio_server("mine", "--pid-file", str(pids))}
    )
    ctx.fake.replies({"text": "ok"})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        mcp_servers={"own": stdio_server("own", "--pid-file", str(pids))},
    )
    events = record_events(session)
    # The session's own server starts with the session; the user's would have been spawned by
    # the same call had it started then. `isServerRunning` starts nothing.
    for _ in range(1500):
        if (await session.rpc.mcp.is_server_running(MCPIsServerRunningRequest(server_name="own"))).running:
            break
        await asyncio.sleep(0.02)
    else:
        raise AssertionError("own never connected")
    assert len(read_pids(pids)) == 1, "only the session's own server runs before a turn"
    assert not (await session.rpc.mcp.is_server_running(MCPIsServerRunningRequest(server_name="mine"))).running
    assert not [e for e in events.of("session.mcp_server_status_changed") if e.data.server_name == "mine"]

    reply = await session.send_and_wait("hello", timeout=60)
    assert reply is not None and reply.data.content == "ok"
    assert len(read_pids(pids)) == 2, "the first turn started the user's server"
    offered = tool_defs(ctx.fake.requests()[0])
    assert "mine-echo" in offered and "own-echo" in offered
    mine = [s for s in (await session.rpc.mcp.list()).servers if s.name == "mine"]
    assert len(mine) == 1 and value(mine[0].status) == "connected"
    assert value(mine[0].source) == "user"


async def test_listing_waits_for_the_servers_it_starts(ctx: Ctx, client):
    await raw_request(client, "mcp.config.add", {"name": "mine", "config": stdio_server("mine")})
    await raw_request(client, "mcp.config.add", {"name": "broken", "config": stdio_server("broken", "--fail-start")})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    # One listing starts the user's servers and answers once they have settled, as the
    # original's does: no polling.
    listed = {s.name: s for s in (await session.rpc.mcp.list()).servers}
    assert value(listed["mine"].status) == "connected"
    assert value(listed["broken"].status) == "failed" and "failing on purpose" in listed["broken"].error
    await session.disconnect()


async def test_a_work_trees_servers_start_with_config_discovery_in_a_trusted_folder(ctx: Ctx, client):
    # The original 1.0.102 starts `.mcp.json` at the root of the work tree for a session that
    # reads the project's configuration, and only in a folder the user trusts.
    (ctx.work_dir / ".git").mkdir()
    (ctx.work_dir / ".mcp.json").write_text(json.dumps({"mcpServers": {"ws": stdio_server("ws")}}))
    plain = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    untrusted = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, enable_config_discovery=True
    )
    for session in (plain, untrusted):
        assert "ws" not in [s.name for s in (await session.rpc.mcp.list()).servers]

    (ctx.copilot_home / "config.json").write_text(json.dumps({"trustedFolders": [str(ctx.work_dir)]}))
    ctx.fake.replies({"text": "ok"})
    trusted = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, enable_config_discovery=True
    )
    listed = await wait_status(trusted, "ws", "connected")
    assert value(listed.source) == "workspace"
    reply = await trusted.send_and_wait("hello", timeout=60)
    assert reply is not None and reply.data.content == "ok"
    assert "ws-echo" in tool_defs(ctx.fake.requests()[-1])
