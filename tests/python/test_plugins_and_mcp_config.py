"""The user's MCP config (``mcp.config.*``, ``mcp.discover``), plugins and local marketplaces
(``plugins.*``), plugin MCP servers on a session (``pluginDirectories``), and the session's
``session.mcp.*`` extras / ``session.extensions.*`` / ``session.tasks.*`` answers — the Python
SDK as the client, files under the test's own ``COPILOT_HOME``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from copilot.session import PermissionHandler

from conftest import Ctx, raw_request
from test_mcp import MCP_SERVER_BIN, stdio_server, wait_status


def write_marketplace(root: Path) -> Path:
    mp = root / "mp"
    (mp / "demo").mkdir(parents=True)
    (mp / "marketplace.json").write_text(
        json.dumps(
            {
                "name": "local-mp",
                "plugins": [{"name": "demo", "source": "./demo", "description": "Demo plugin.", "version": "1.0.0"}],
            }
        )
    )
    (mp / "demo" / "SKILL.md").write_text("---\nname: demo-skill\ndescription: d\n---\nbody\n")
    return mp


async def test_mcp_config_round_trips_through_copilot_home(ctx: Ctx, client):
    assert (await raw_request(client, "mcp.config.list", {}))["servers"] == {}
    await raw_request(client, "mcp.config.add", {"name": "s", "config": {"type": "local", "command": "node", "args": []}})
    with pytest.raises(Exception, match="already exists"):
        await raw_request(client, "mcp.config.add", {"name": "s", "config": {"command": "node", "args": []}})
    await raw_request(
        client,
        "mcp.config.update",
        {"name": "s", "config": {"type": "http", "url": "https://example.com/mcp", "oauthClientId": "c", "timeout": 4000}},
    )
    listed = (await raw_request(client, "mcp.config.list", {}))["servers"]["s"]
    assert listed["url"] == "https://example.com/mcp" and listed["oauthClientId"] == "c" and listed["timeout"] == 4000
    on_disk = json.loads((ctx.copilot_home / "mcp-config.json").read_text())
    assert on_disk["mcpServers"]["s"]["url"] == "https://example.com/mcp"

    await raw_request(client, "mcp.config.disable", {"names": ["s"]})
    found = (await raw_request(client, "mcp.discover", {}))["servers"]
    assert [(s["name"], s["enabled"], s["source"]) for s in found] == [("s", False, "user")]
    await raw_request(client, "mcp.config.enable", {"names": ["s"]})
    assert (await raw_request(client, "mcp.discover", {}))["servers"][0]["enabled"] is True
    await raw_request(client, "mcp.config.reload", {})
    await raw_request(client, "mcp.config.remove", {"name": "s"})
    assert (await raw_request(client, "mcp.config.list", {}))["servers"] == {}


async def test_local_marketplace_plugin_lifecycle(ctx: Ctx, client):
    mp = write_marketplace(ctx.root)
    assert (await raw_request(client, "plugins.marketplaces.add", {"source": str(mp)}))["name"] == "local-mp"
    markets = (await raw_request(client, "plugins.marketplaces.list", {}))["marketplaces"]
    assert any(m["isDefault"] for m in markets)
    assert [m for m in markets if m["name"] == "local-mp"][0]["isDefault"] is False
    browse = await raw_request(client, "plugins.marketplaces.browse", {"name": "local-mp"})
    assert browse["plugins"] == [{"name": "demo", "description": "Demo plugin."}]
    refresh = await raw_request(client, "plugins.marketplaces.refresh", {"name": "local-mp"})
    assert refresh["results"] == [{"name": "local-mp", "success": True}]

    # A local marketplace's plugin is live, as the original's: turned on in settings.json, never copied.
    installed = await raw_request(client, "plugins.install", {"source": "demo@local-mp"})
    assert installed["plugin"]["name"] == "demo" and installed["plugin"]["enabled"] is True
    assert installed["plugin"]["installedFrom"] == str(mp.resolve())
    assert installed["skillsInstalled"] == 1 and "deprecationWarning" not in installed
    assert not (ctx.copilot_home / "installed-plugins").exists()
    settings = json.loads((ctx.copilot_home / "settings.json").read_text())
    assert settings["enabledPlugins"] == {"demo@local-mp": True}
    assert settings["extraKnownMarketplaces"]["local-mp"] == {"source": {"source": "directory", "path": str(mp.resolve())}}

    await raw_request(client, "plugins.disable", {"names": ["demo@local-mp"]})
    assert (await raw_request(client, "plugins.list", {}))["plugins"][0]["enabled"] is False
    await raw_request(client, "plugins.enable", {"names": ["demo@local-mp"]})
    update = await raw_request(client, "plugins.update", {"name": "demo@local-mp"})
    assert (update["previousVersion"], update["newVersion"], update["skillsInstalled"]) == ("1.0.0", "1.0.0", 1)
    all_updated = (await raw_request(client, "plugins.updateAll", {}))["results"]
    assert [(r["name"], r["success"]) for r in all_updated] == [("demo", True)]
    # Uninstalling a live plugin only turns it off: it is still listed, from its marketplace.
    await raw_request(client, "plugins.uninstall", {"name": "demo@local-mp"})
    listed = (await raw_request(client, "plugins.list", {}))["plugins"]
    assert [(p["name"], p["enabled"], p["installedFrom"]) for p in listed] == [("demo", False, str(mp.resolve()))]

    with pytest.raises(Exception, match="network"):
        await raw_request(client, "plugins.marketplaces.browse", {"name": "awesome-copilot"})
    # Live plugins do not hold their marketplace.
    removed = await raw_request(client, "plugins.marketplaces.remove", {"name": "local-mp"})
    assert removed == {"removed": True}
    assert (await raw_request(client, "plugins.list", {}))["plugins"] == []


async def test_direct_plugin_install_warns_and_uninstalls(ctx: Ctx, client):
    plugin = ctx.root / "direct"
    plugin.mkdir()
    (plugin / "plugin.json").write_text(json.dumps({"name": "direct", "version": "2.0.0"}))
    (plugin / "SKILL.md").write_text("---\nname: x\n---\n")
    out = await raw_request(client, "plugins.install", {"source": str(plugin)})
    assert out["plugin"]["marketplace"] == "" and out["plugin"]["directSourceId"]
    assert "deprecated" in out["deprecationWarning"].lower()
    await raw_request(client, "plugins.uninstall", {"name": "direct", "directSourceId": out["plugin"]["directSourceId"]})
    assert (await raw_request(client, "plugins.list", {}))["plugins"] == []
    with pytest.raises(Exception, match="not installed"):
        await raw_request(client, "plugins.uninstall", {"name": "direct"})


@pytest.mark.skipif(not MCP_SERVER_BIN.is_file(), reason="build crates/mcp-test-server first")
async def test_plugin_directory_servers_start_unless_disabled(ctx: Ctx, client):
    plugin = ctx.root / "plugin"
    plugin.mkdir()
    (plugin / "plugin.json").write_text(json.dumps({"name": "p", "version": "1.0.0"}))
    servers = {"control": stdio_server("control"), "off": stdio_server("off")}
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        plugin_directories=[str(plugin)],
        disabled_mcp_servers=["off"],
    )
    await wait_status(session, "control", "connected")
    await wait_status(session, "off", "disabled")
    sid = session.session_id
    with pytest.raises(Exception, match="not a remote server"):
        await raw_request(client, "session.mcp.oauth.login", {"sessionId": sid, "serverName": "control"})
    with pytest.raises(Exception, match="is not configured"):
        await raw_request(client, "session.mcp.oauth.login", {"sessionId": sid, "serverName": "nope"})
    diag = await raw_request(client, "session.mcp.apps.diagnose", {"sessionId": sid, "serverName": "control"})
    assert diag["server"]["connected"] is True and diag["server"]["toolCount"] >= 1
    with pytest.raises(Exception, match="mcp-apps"):
        await raw_request(
            client, "session.mcp.apps.listTools", {"sessionId": sid, "serverName": "control", "originServerName": "control"}
        )
    await session.disconnect()


async def test_session_without_mcp_servers_and_extras(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    sid = session.session_id
    with pytest.raises(Exception, match="No MCP host initialized"):
        await raw_request(client, "session.mcp.enable", {"sessionId": sid, "serverName": "x"})
    with pytest.raises(Exception, match="MCP config reload not available"):
        await raw_request(client, "session.mcp.reload", {"sessionId": sid})
    with pytest.raises(Exception, match="MCP host is not available"):
        await raw_request(client, "session.mcp.oauth.login", {"sessionId": sid, "serverName": "x"})
    mode = await raw_request(client, "session.mcp.setEnvValueMode", {"sessionId": sid, "mode": "indirect"})
    assert mode == {"mode": "indirect"}
    context = {"theme": "dark", "locale": "en-GB", "availableDisplayModes": ["inline"]}
    await raw_request(client, "session.mcp.apps.setHostContext", {"sessionId": sid, "context": context})
    got = await raw_request(client, "session.mcp.apps.getHostContext", {"sessionId": sid})
    assert got["context"] == context
    assert (await raw_request(client, "session.extensions.list", {"sessionId": sid})) == {"extensions": []}
    with pytest.raises(Exception, match="Extensions not available"):
        await raw_request(client, "session.extensions.reload", {"sessionId": sid})

    assert (await raw_request(client, "session.tasks.list", {"sessionId": sid})) == {"tasks": []}
    assert (await raw_request(client, "session.tasks.cancel", {"sessionId": sid, "id": "x"})) == {"cancelled": False}
    sent = await raw_request(client, "session.tasks.sendMessage", {"sessionId": sid, "id": "x", "message": "m"})
    assert sent["sent"] is False and sent["error"]
    with pytest.raises(Exception, match="not found"):
        await raw_request(
            client, "session.tasks.startAgent", {"sessionId": sid, "agentType": "nope", "prompt": "p", "name": "n"}
        )
    with pytest.raises(Exception, match="not available"):
        await raw_request(
            client,
            "session.tasks.startAgent",
            {"sessionId": sid, "agentType": "general-purpose", "prompt": "p", "name": "n", "model": "no-such-model"},
        )
    await session.disconnect()
