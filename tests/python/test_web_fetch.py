"""``web_fetch``: the model fetches a page through the SDK's session, with a real HTTP server on
loopback. Loopback is refused unless the deployment allows private addresses
(``SKIPPER_WEB_FETCH_ALLOW_PRIVATE``); the permission request has kind ``url``."""

from __future__ import annotations

import http.server
import threading

import pytest

from copilot.session import PermissionHandler

from conftest import Ctx, tool_names, tool_results

PAGE = (
    "<html><head><title>T</title><script>var hidden = 'SCRIPT_TEXT';</script></head>"
    "<body><h1>Release notes</h1><p>Version <b>2.0</b> adds <a href='/docs'>docs</a>.</p></body></html>"
)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the stdlib's name)
        if self.path == "/notes":
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
        else:
            body = b"missing"
            self.send_response(404)
            self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def _fetch(ctx: Ctx, client, url: str) -> tuple[str, list]:
    """Has the model call web_fetch on ``url``; returns the tool result and permission kinds."""
    kinds: list = []

    def on_permission(request, invocation):
        kinds.append(getattr(request.kind, "value", request.kind))
        return PermissionHandler.approve_all(request, invocation)

    ctx.fake.replies(
        {"tool_calls": [{"name": "web_fetch", "arguments": {"url": url}}]},
        {"text": "fetched"},
    )
    before = len(ctx.fake.requests())
    session = await client.create_session(on_permission_request=on_permission)
    reply = await session.send_and_wait("Read the release notes.", timeout=60)
    assert reply is not None and reply.data.content == "fetched"
    reqs = ctx.fake.requests()[before:]
    assert "web_fetch" in tool_names(reqs[0])
    results = tool_results(reqs[-1])
    assert len(results) == 1
    return results[0]["content"], kinds


async def test_a_page_reaches_the_model_as_markdown(ctx: Ctx, make_client, site):
    client = make_client(env_extra={"SKIPPER_WEB_FETCH_ALLOW_PRIVATE": "1"})
    await client.start()
    text, kinds = await _fetch(ctx, client, f"{site}/notes")
    assert text.startswith(f"Contents of {site}/notes:\n# Release notes"), text
    assert "**2.0**" in text and "[docs](/docs)" in text
    assert "SCRIPT_TEXT" not in text
    assert kinds == ["url"]

    text, _ = await _fetch(ctx, client, f"{site}/gone")
    assert text == f"Failed to fetch {site}/gone: status code 404"


async def test_loopback_is_refused_by_default(ctx: Ctx, client, site):
    text, _ = await _fetch(ctx, client, f"{site}/notes")
    assert "WebFetchBlockedUrlError" in text and "resolves to blocked address 127.0.0.1" in text
    assert "Release notes" not in text
