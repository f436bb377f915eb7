"""OAuth-protected remote MCP servers whose tokens the SDK's host provides
(``onMcpAuthRequest`` → ``mcp.oauth_required`` → ``session.mcp.oauth.handlePendingRequest``),
against the project's MCP server behind bearer tokens (``mcp-test-server --http --oauth-token``).
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from copilot.generated.rpc import (
    MCPOauthHandlePendingRequest,
    MCPOauthPendingRequestResponse,
    MCPOauthPendingRequestResponseKind,
)
from copilot.session import PermissionHandler

from conftest import Ctx, tool_results
from test_mcp import MCP_SERVER_BIN, http_server, value, wait_status

TOKEN = "conformance-token"

pytestmark = pytest.mark.skipif(
    not MCP_SERVER_BIN.is_file(), reason=f"build crates/mcp-test-server first: {MCP_SERVER_BIN}"
)


@pytest.fixture
def oauth_server():
    with http_server("--name", "guarded", "--oauth-token", TOKEN) as url:
        yield url


def seen_authorizations(mcp_url: str) -> list:
    base = mcp_url.removesuffix("/mcp")
    with urllib.request.urlopen(f"{base}/__requests", timeout=10) as r:
        return [entry["authorization"] for entry in json.load(r)]


async def test_host_tokens_across_initial_refresh_and_upscope(ctx: Ctx, client, oauth_server):
    base = oauth_server.removesuffix("/mcp")
    ctx.fake.replies(
        {"tool_calls": [{"name": "guarded-echo", "arguments": {"text": "needs-refresh"}}]},
        {"tool_calls": [{"name": "guarded-echo", "arguments": {"text": "needs-upscope"}}]},
        {"text": "done"},
    )
    asked = []

    def on_auth(request, _invocation):
        asked.append(request)
        reason = request["reason"]
        return {"kind": "token", "accessToken": TOKEN if reason == "initial" else f"{TOKEN}-{reason}"}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        on_mcp_auth_request=on_auth,
        mcp_servers={"guarded": {"type": "http", "url": oauth_server, "tools": ["*"], "oauthClientId": "conf-client"}},
    )
    await wait_status(session, "guarded", "connected")
    await session.send_and_wait("echo twice", timeout=60)

    assert [r["reason"] for r in asked] == ["initial", "refresh", "upscope"]
    initial, refresh, upscope = asked
    assert initial["serverName"] == "guarded" and initial["serverUrl"] == oauth_server
    assert initial["wwwAuthenticateParams"] == {
        "resourceMetadataUrl": f"{base}/.well-known/oauth-protected-resource",
        "scope": "mcp.read",
        "error": "invalid_token",
    }
    assert json.loads(initial["resourceMetadata"]) == {
        "resource": oauth_server,
        "authorization_servers": [base],
        "scopes_supported": ["mcp.read"],
        "bearer_methods_supported": ["header"],
    }
    assert initial["staticClientConfig"]["clientId"] == "conf-client"
    assert refresh["wwwAuthenticateParams"] == {"error": "invalid_token"}
    assert upscope["wwwAuthenticateParams"]["scope"] == "mcp.write"
    assert upscope["wwwAuthenticateParams"]["error"] == "insufficient_scope"

    # Both calls went through with the replacement tokens.
    requests = ctx.fake.requests()
    assert tool_results(requests[1])[0]["content"] == "needs-refresh"
    assert tool_results(requests[2])[-1]["content"] == "needs-upscope"
    seen = seen_authorizations(oauth_server)
    assert None in seen
    for token in (TOKEN, f"{TOKEN}-refresh", f"{TOKEN}-upscope"):
        assert f"Bearer {token}" in seen
    await session.disconnect()


async def test_declined_token_leaves_server_needing_auth(ctx: Ctx, client, oauth_server):
    asked = []

    def decline(request, _invocation):
        asked.append(request)
        return {"kind": "cancelled"}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        on_mcp_auth_request=decline,
        mcp_servers={"guarded": {"type": "http", "url": oauth_server, "tools": ["*"]}},
    )
    server = await wait_status(session, "guarded", "needs-auth")
    assert value(server.status) == "needs-auth"
    assert [r["reason"] for r in asked] == ["initial"]
    # Only unauthenticated requests reached the server.
    assert set(seen_authorizations(oauth_server)) == {None}
    # A request id nobody waits for is answered, not failed.
    handled = await session.rpc.mcp.oauth.handle_pending_request(
        MCPOauthHandlePendingRequest(
            request_id="no-such-request",
            result=MCPOauthPendingRequestResponse(kind=MCPOauthPendingRequestResponseKind.CANCELLED),
        )
    )
    assert handled.success is False
    await session.disconnect()
