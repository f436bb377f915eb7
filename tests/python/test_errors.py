"""Robustness (issue 2): errors are JSON-RPC errors; the connection and the process stay up.

Raw requests go through the SDK's own low-level JSON-RPC connection (``client._client``);
byte-level framing errors are covered by the Rust integration tests.
"""

from __future__ import annotations

import pytest

from copilot._jsonrpc import JsonRpcError
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request, tap_raw_events, wait_for

APPROVE = PermissionHandler.approve_all


async def _still_up(client) -> None:
    assert (await client.ping("alive")).message == "pong: alive"
    proc = client._cli_process
    assert proc is None or proc.poll() is None, "skipper exited"


async def test_send_to_unknown_session(client):
    with pytest.raises(JsonRpcError, match="Session not found") as info:
        await raw_request(client, "session.send", {"sessionId": "no-such-session", "prompt": "hi"})
    assert info.value.code in (-32603, -32602), info.value
    await _still_up(client)


async def test_send_after_disconnect_fails(client):
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    await session.disconnect()
    with pytest.raises(JsonRpcError, match="Session not found"):
        await raw_request(client, "session.send", {"sessionId": sid, "prompt": "hi"})
    await _still_up(client)


async def test_get_messages_of_unknown_session(client):
    with pytest.raises(JsonRpcError, match="Session not found"):
        await raw_request(client, "session.getMessages", {"sessionId": "no-such-session"})
    await _still_up(client)


async def test_unknown_method(client):
    with pytest.raises(JsonRpcError) as info:
        await raw_request(client, "no.such.method", {})
    assert info.value.code == -32601, info.value
    assert "no.such.method" in info.value.message
    await _still_up(client)


async def test_wrong_param_type_names_the_field(client):
    with pytest.raises(JsonRpcError) as info:
        await raw_request(client, "session.getMessages", {"sessionId": 123})
    assert info.value.code == -32602, info.value
    assert "sessionId" in info.value.message, info.value.message
    await _still_up(client)


async def test_missing_required_param_names_the_field(client):
    session = await client.create_session(on_permission_request=APPROVE)
    with pytest.raises(JsonRpcError) as info:
        await raw_request(client, "session.send", {"sessionId": session.session_id})
    assert info.value.code == -32602, info.value
    assert "prompt" in info.value.message, info.value.message
    await _still_up(client)


async def test_session_survives_a_failed_model_call(ctx: Ctx, client):
    """A model HTTP error ends the turn with session.error + idle; the session stays usable."""
    ctx.fake.replies(
        {"error": {"status": 400, "message": "bad request from fake"}},
        {"text": "recovered"},
    )
    raw = tap_raw_events(client)
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    message_id = await session.send("this fails")
    await wait_for(
        lambda: any(p["event"]["type"] == "session.idle" for p in raw if p["sessionId"] == sid),
        timeout=30,
        what="session.idle after a failed model call",
    )
    events = [p["event"] for p in raw if p["sessionId"] == sid]
    errors = [e for e in events if e["type"] == "session.error"]
    assert len(errors) == 1, [e["type"] for e in events]
    assert errors[0]["data"].get("message"), errors[0]
    assert errors[0]["data"].get("originatingMessageId") in (None, message_id)
    assert [e["type"] for e in events].index("session.error") < [e["type"] for e in events].index(
        "session.idle"
    )

    answer = await session.send_and_wait("try again", timeout=30)
    assert answer is not None and answer.data.content == "recovered"
    types = [e.type.value for e in await session.get_events()]
    assert "session.error" in types, types
