"""Item 1/2 of issue 2: start over stdio and TCP, handshake, ping, status, auth, models."""

from __future__ import annotations

import json
import socket
import time
from datetime import datetime, timedelta, timezone

import pytest

from copilot.session import PermissionHandler

from conftest import SKIPPER_BIN, Ctx, raw_request


def _assert_recent(ts: datetime) -> None:
    assert ts.tzinfo is not None, f"timestamp without timezone: {ts!r}"
    now = datetime.now(timezone.utc)
    assert now - timedelta(minutes=5) < ts < now + timedelta(minutes=5), ts


async def test_start_ping_and_stop_stdio_client(make_client):
    client = make_client()
    await client.start()
    proc = client._cli_process
    assert proc is not None and proc.poll() is None
    assert proc.args[0] == str(SKIPPER_BIN)
    assert "--stdio" in proc.args and "--headless" in proc.args

    pong = await client.ping("test message")
    assert pong.message == "pong: test message"
    assert pong.protocol_version == 3
    _assert_recent(pong.timestamp)

    bare = await client.ping()
    assert bare.protocol_version == 3

    started = time.monotonic()
    await client.stop()  # raises an ExceptionGroup if any cleanup step failed
    assert time.monotonic() - started < 5, "stop() took too long"
    # stop() closes stdin after runtime.shutdown: the server must exit by itself, cleanly.
    assert proc.returncode == 0, f"skipper exit code {proc.returncode}"


@pytest.mark.parametrize("attempt", range(3))
async def test_an_unknown_flag_fails_start_with_the_usage_error_from_stderr(make_client, attempt):
    # The SDK reads stderr on a thread of its own and fails `connect` with what that thread has
    # read when stdout closes: the server must not be gone before the SDK's write, nor before
    # its stderr reader has the usage error (several attempts: it is a race when wrong).
    client = make_client(args=["--nonexistent-flag-for-testing"])
    with pytest.raises(Exception) as failure:
        await client.start()
    message = str(failure.value)
    # The code itself may read `None`: the SDK polls the process as soon as stdout closes,
    # which can be a moment before the exit is reaped.
    assert "CLI process exited with code" in message, message
    assert "stderr:" in message and "--nonexistent-flag-for-testing" in message, message


async def test_start_ping_and_stop_tcp_client(make_client):
    client = make_client("tcp")
    await client.start()
    assert client.runtime_port is not None and client.runtime_port > 0
    proc = client._cli_process
    assert proc is not None
    assert "--stdio" not in proc.args

    pong = await client.ping("over tcp")
    assert pong.message == "pong: over tcp"
    assert pong.protocol_version == 3

    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    assert session.session_id
    await session.disconnect()
    await client.stop()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_tcp_with_explicit_port(make_client):
    port = _free_port()
    client = make_client("tcp", port=port)
    await client.start()
    assert client.runtime_port == port
    proc = client._cli_process
    assert proc is not None
    i = proc.args.index("--port")
    assert proc.args[i + 1] == str(port)
    assert (await client.ping("p")).message == "pong: p"


async def test_tcp_connection_token_flow(make_client):
    """COPILOT_CONNECTION_TOKEN: the spawning client passes; others need the same token."""
    owner = make_client("tcp", connection_token="right-token")
    await owner.start()
    port = owner.runtime_port
    assert port
    assert (await owner.ping("hi")).message == "pong: hi"

    sibling = make_client(uri=f"127.0.0.1:{port}", connection_token="right-token")
    await sibling.start()
    assert (await sibling.ping("sibling")).message == "pong: sibling"

    wrong = make_client(uri=f"127.0.0.1:{port}", connection_token="wrong-token")
    with pytest.raises(Exception, match="AUTHENTICATION_FAILED"):
        await wrong.start()

    missing = make_client(uri=f"127.0.0.1:{port}")
    with pytest.raises(Exception, match="AUTHENTICATION_FAILED"):
        await missing.start()

    # The server survived the rejected handshakes.
    assert (await owner.ping("still up")).message == "pong: still up"


async def test_tcp_auto_generated_connection_token(make_client):
    """Without an explicit token the SDK generates one (a UUID) and must still connect."""
    client = make_client("tcp")
    await client.start()
    assert client._effective_connection_token  # the SDK sent COPILOT_CONNECTION_TOKEN
    assert (await client.ping("auto")).message == "pong: auto"


def _frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_frame(sock: socket.socket) -> dict:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        assert chunk, "connection closed"
        buf += chunk
    header, rest = buf.split(b"\r\n\r\n", 1)
    length = None
    for line in header.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    assert length is not None, header
    while len(rest) < length:
        chunk = sock.recv(4096)
        assert chunk, "connection closed"
        rest += chunk
    return json.loads(rest[:length])


async def test_tcp_token_required_before_connect(make_client):
    """With a token set, a method before `connect` gets -32001 AUTHENTICATION_REQUIRED."""
    owner = make_client("tcp", connection_token="right-token")
    await owner.start()
    port = owner.runtime_port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_frame({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}))
        reply = _read_frame(sock)
        assert reply["id"] == 1
        assert reply["error"]["code"] == -32001, reply
        assert reply["error"]["message"] == "AUTHENTICATION_REQUIRED", reply

        sock.sendall(
            _frame({"jsonrpc": "2.0", "id": 2, "method": "connect", "params": {"token": "right-token"}})
        )
        reply = _read_frame(sock)
        assert reply["id"] == 2
        assert reply["result"]["ok"] is True, reply
        assert reply["result"]["protocolVersion"] == 3, reply

        sock.sendall(_frame({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"message": "x"}}))
        reply = _read_frame(sock)
        assert reply["result"]["message"] == "pong: x", reply


async def test_connect_handshake_result(client):
    result = await raw_request(client, "connect", {"supportedTaskKinds": ["agent", "client", "shell"]})
    assert result["ok"] is True
    assert result["protocolVersion"] == 3
    assert isinstance(result["version"], str) and result["version"]


async def test_the_originals_launch_flags_are_accepted_and_unknown_ones_refused(make_client):
    client = make_client(args=["--add-dir", "/tmp", "--experimental", "--yolo"])
    await client.start()
    assert (await client.ping("ok")).message == "pong: ok"

    # As the original: an option it does not know is a usage error the SDK reports with stderr.
    refused = make_client(args=["--frobnicate"])
    with pytest.raises(RuntimeError) as failed:
        await refused.start()
    assert "stderr" in str(failed.value) and "frobnicate" in str(failed.value)


async def test_get_status(client):
    status = await client.get_status()
    assert isinstance(status.version, str) and status.version.strip()
    assert status.protocol_version == 3


async def test_get_auth_status_with_token(client):
    auth = await client.get_auth_status()
    assert auth.isAuthenticated is True
    assert auth.authType == "token"


async def test_list_models_from_model_service(ctx: Ctx, make_client):
    ctx.fake.set_models(["claude-sonnet-4.5", "gpt-4.1", "fake-model-x"])
    client = make_client()
    await client.start()
    models = await client.list_models()
    ids = [m.id for m in models]
    # The original CLI prepends a pseudo model "auto"; anything else must come from /models.
    assert set(ids) - {"auto"} == {"claude-sonnet-4.5", "gpt-4.1", "fake-model-x"}, ids
    by_id = {m.id: m for m in models}
    x = by_id["fake-model-x"]
    assert x.name == "fake-model-x"
    assert x.capabilities.limits.max_context_window_tokens == 128000
    assert x.capabilities.supports.vision is True


async def test_get_auth_status_without_any_token(make_client):
    """Isolated HOME/XDG dirs and no token anywhere: not authenticated (and no crash)."""
    client = make_client(github_token=None)
    await client.start()
    proc = client._cli_process
    assert proc is not None and "--auth-token-env" not in proc.args
    auth = await client.get_auth_status()
    assert auth.isAuthenticated is False


async def test_token_falls_back_to_gh_token_env(ctx: Ctx, make_client):
    """Without --auth-token-env the token comes from GH_TOKEN / GITHUB_TOKEN."""
    ctx.fake.replies({"text": "authenticated via GH_TOKEN"})
    client = make_client(github_token=None, env_extra={"GH_TOKEN": "gh-env-token"})
    await client.start()
    auth = await client.get_auth_status()
    assert auth.isAuthenticated is True
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    answer = await session.send_and_wait("hello", timeout=30)
    assert answer is not None and answer.data.content == "authenticated via GH_TOKEN"


async def test_stop_client_with_active_session(ctx: Ctx, make_client):
    ctx.fake.replies({"text": "hi"})
    client = make_client()
    await client.start()
    proc = client._cli_process
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await session.send_and_wait("hello", timeout=30)
    await client.stop()  # detaches the session, runtime.shutdown, closes stdin
    assert proc.returncode == 0, f"skipper exit code {proc.returncode}"
    # the session survived on disk
    assert (ctx.copilot_home / "session-state" / session.session_id / "events.jsonl").is_file()


async def test_force_stop_client(make_client):
    client = make_client()
    await client.start()
    proc = client._cli_process
    await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await client.force_stop()
    assert proc.poll() is not None
