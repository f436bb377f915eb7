"""The user's own MCP servers start in every session: ``$COPILOT_HOME/mcp-config.json`` (as
``mcp.config.*`` writes it) and the enabled installed plugins' ``.mcp.json`` servers, with the
names ``mcp.config.disable`` turned off listed as disabled — unless the session configures that
server itself. Python SDK as the client, the project's MCP test server as the servers.
"""

from __future__ import annotations

import json

import pytest

from copilot.session import PermissionHandler

from conftest import Ctx, raw_request
from test_mcp import MCP_SERVER_BIN, stdio_server, tool_defs, wait_status

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
