"""Issue 36: users inside tenants, and whose credentials a team server's model calls carry.
Each user connects with a token of their own; a session's model calls carry the GitHub token
of the user who created it (else its tenant's), a tenant's own provider key when it brings its
own account, the server's only where the configuration allows it — never another's, and no
token in an event, an error or the server's log."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from copilot._jsonrpc import JsonRpcError
from copilot.session import PermissionHandler

import serve_support
from conftest import SKIPPER_BIN, Ctx, raw_request

APPROVE = PermissionHandler.approve_all
SERVER_TOKEN = "fake-token-for-e2e-tests"  # what serve_support gives the server as GH_TOKEN


_digest = serve_support.digest


def _config(ctx: Ctx) -> str:
    return f"""
[credentials]
server_fallback = false

[audit]
path = "{ctx.root / 'audit.jsonl'}"

[sandbox]
# The tenants' own provider is this test's fake model, on loopback.
internal_network = true

[[tenants]]
name = "alpha"
token_sha256 = "{_digest('alpha-own-token')}"
github_token_env = "ALPHA_GH_TOKEN"

[[tenants.users]]
name = "alice"
token_sha256 = "{_digest('alice-token')}"
github_token_file = "{ctx.root / 'alice.secret'}"

[[tenants.users]]
name = "bob"
token_sha256 = "{_digest('bob-token')}"

[[tenants]]
name = "byok"
token_sha256 = "{_digest('byok-token')}"

[tenants.provider]
type = "openai"
base_url = "{ctx.fake.url}/v1"
api_key_env = "BYOK_KEY"

[[tenants]]
name = "bare"
token_sha256 = "{_digest('bare-token')}"

[[tenants]]
name = "trusted"
token_sha256 = "{_digest('trusted-token')}"
server_fallback = true
max_sessions = 2
"""


@pytest.fixture
def served(ctx: Ctx):
    (ctx.root / "alice.secret").write_text("gho-alice-secret\n", encoding="utf-8")
    for token, login in (("gho-alice-secret", "alice-gh"), ("gho-alpha-secret", "alpha-bot")):
        user = {"login": login, "copilot_plan": "business", "endpoints": {"api": ctx.fake.url}}
        ctx.fake._call("POST", "/_fake/user", {"token": token, "response": user})
    served = serve_support.start(
        ctx, _config(ctx), home=ctx.copilot_home, state_dir=ctx.root,
        ALPHA_GH_TOKEN="gho-alpha-secret", BYOK_KEY="sk-byok-secret",
    )
    yield served
    serve_support.stop(served)


def _auth(ctx: Ctx, since: int = 0) -> list[tuple[str, str | None]]:
    return [(r["path"], r["headers"].get("authorization")) for r in ctx.fake.requests()[since:]]


async def _turn(session, text: str) -> None:
    reply = await session.send_and_wait("hi", timeout=30)
    assert reply is not None and reply.data.content == text


async def test_each_users_sessions_carry_their_own_token_else_the_tenants(ctx: Ctx, served, make_client):
    alice = make_client(uri=served.sdk, connection_token="alice-token")
    bob = make_client(uri=served.sdk, connection_token="bob-token")
    own = make_client(uri=served.sdk, connection_token="alpha-own-token")
    sessions = {}
    for name, client in (("alice", alice), ("bob", bob), ("own", own)):
        await client.start()
        sessions[name] = await client.create_session(on_permission_request=APPROVE)
    for name in ("alice", "bob", "own"):
        ctx.fake.replies({"text": f"for {name}"})
        await _turn(sessions[name], f"for {name}")
    assert [auth for _, auth in _auth(ctx)] == [
        "Bearer gho-alice-secret",  # alice's own, from her file
        "Bearer gho-alpha-secret",  # bob has none: the tenant's
        "Bearer gho-alpha-secret",  # the tenant's own token: the tenant's
    ]

    # The session's identity is its creator's account.
    status = await raw_request(alice, "session.gitHubAuth.getStatus", {"sessionId": sessions["alice"].session_id})
    assert status["login"] == "alice-gh"

    # Bob resumes alice's session (the tenant's, so he may): it goes on carrying alice's token,
    # the creator's, not the resumer's.
    resumed = await bob.resume_session(sessions["alice"].session_id, on_permission_request=APPROVE)
    before = len(ctx.fake.requests())
    ctx.fake.replies({"text": "alice's again"})
    await _turn(resumed, "alice's again")
    assert [auth for _, auth in _auth(ctx, before)] == ["Bearer gho-alice-secret"]

    # A session that brings its own token keeps it.
    ctx.fake._call("POST", "/_fake/user", {"token": "gho-session-own", "response": {"login": "s", "endpoints": {"api": ctx.fake.url}}})
    explicit = await bob.create_session(on_permission_request=APPROVE, github_token="gho-session-own")
    before = len(ctx.fake.requests())
    ctx.fake.replies({"text": "explicit"})
    await _turn(explicit, "explicit")
    assert [auth for _, auth in _auth(ctx, before)] == ["Bearer gho-session-own"]

    # No token reached an event, and the server's log holds none of them.
    events = json.dumps([e.to_dict() for e in await sessions["alice"].get_events()])
    for secret in ("gho-alice-secret", "gho-alpha-secret", SERVER_TOKEN):
        assert secret not in events
    serve_support.stop(served)
    log = served.stderr_path.read_text(errors="replace")
    for secret in ("gho-alice-secret", "gho-alpha-secret", "sk-byok-secret", "alice-token", "bob-token"):
        assert secret not in log, secret


async def test_a_tenants_own_provider_carries_its_key_and_no_github_token(ctx: Ctx, served, make_client):
    client = make_client(uri=served.sdk, connection_token="byok-token")
    await client.start()
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "from the tenant's account"})
    await _turn(session, "from the tenant's account")
    assert _auth(ctx) == [("/v1/chat/completions", "Bearer sk-byok-secret")]
    events = json.dumps([e.to_dict() for e in await session.get_events()])
    assert "sk-byok-secret" not in events


async def test_without_credentials_a_tenant_may_not_use_the_servers(ctx: Ctx, served, make_client):
    bare = make_client(uri=served.sdk, connection_token="bare-token")
    await bare.start()
    with pytest.raises(Exception) as refused:
        await bare.create_session(on_permission_request=APPROVE)
    assert "no model credentials" in str(refused.value) and "tenant bare" in str(refused.value)
    assert SERVER_TOKEN not in str(refused.value)
    # Its own token, passed by the client, is enough.
    ctx.fake._call("POST", "/_fake/user", {"token": "gho-bare-own", "response": {"login": "b", "endpoints": {"api": ctx.fake.url}}})
    session = await bare.create_session(on_permission_request=APPROVE, github_token="gho-bare-own")
    ctx.fake.replies({"text": "own"})
    await _turn(session, "own")
    # A tenant allowed the fallback uses the server's identity.
    trusted = make_client(uri=served.sdk, connection_token="trusted-token")
    await trusted.start()
    session = await trusted.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "server's"})
    await _turn(session, "server's")
    assert [auth for _, auth in _auth(ctx)] == ["Bearer gho-bare-own", f"Bearer {SERVER_TOKEN}"]
    # Nothing of the server's account is told to a tenant without credentials.
    quota = await raw_request(bare, "account.getQuota", {})
    assert quota["quotaSnapshots"] == {}


def _tenants_cmd(config: Path, *args: str) -> str:
    """`skipper tenants --config CONFIG ARGS…`; returns its output (the token is on line 1)."""
    done = subprocess.run([str(SKIPPER_BIN), "tenants", "--config", str(config), *args],
                          capture_output=True, text=True, timeout=30, check=True)
    return done.stdout


async def _closed_within(client, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            await asyncio.wait_for(client.list_sessions(), timeout=2)
        except Exception:  # noqa: BLE001 - any failure of a closed connection will do
            return True
        await asyncio.sleep(0.2)
    return False


async def test_users_and_tokens_reload_without_a_restart(ctx: Ctx, served, make_client):
    config = ctx.root / "server.toml"
    own = make_client(uri=served.sdk, connection_token="alpha-own-token")
    bob = make_client(uri=served.sdk, connection_token="bob-token")
    alice = make_client(uri=served.sdk, connection_token="alice-token")
    for client in (own, bob, alice):
        await client.start()
    bobs = await bob.create_session(on_permission_request=APPROVE)

    # Bob removed and alice's token rotated by the operator's command: the server sees the file
    # change by itself; their connections close, the tenant's own (unchanged) stays.
    _tenants_cmd(config, "remove", "alpha", "--user", "bob")
    rotated = _tenants_cmd(config, "rotate", "alpha", "--user", "alice").splitlines()[0].rsplit(" ", 1)[1]
    assert await _closed_within(bob, 15), "a removed user's connection is closed"
    assert await _closed_within(alice, 15), "a rotated token's connection is closed"
    assert await own.list_sessions() is not None, "an unchanged token's connection stays"

    refused = make_client(uri=served.sdk, connection_token="bob-token")
    with pytest.raises(Exception):
        await refused.start()
    again = make_client(uri=served.sdk, connection_token=rotated)
    await again.start()
    session = await again.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "alice, rotated"})
    await _turn(session, "alice, rotated")
    assert _auth(ctx)[-1][1] == "Bearer gho-alice-secret"

    # Bob's session is the tenant's still; with bob gone its calls carry the tenant's token.
    resumed = await own.resume_session(bobs.session_id, on_permission_request=APPROVE)
    ctx.fake.replies({"text": "bob's, on the tenant"})
    await _turn(resumed, "bob's, on the tenant")
    assert _auth(ctx)[-1][1] == "Bearer gho-alpha-secret"

    # A user added, applied at once on SIGHUP.
    carol_token = _tenants_cmd(config, "add", "alpha", "--user", "carol").splitlines()[0].rsplit(" ", 1)[1]
    served.proc.send_signal(signal.SIGHUP)
    carol = make_client(uri=served.sdk, connection_token=carol_token)
    deadline = time.monotonic() + 10
    while True:
        try:
            await carol.start()
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.3)
            carol = make_client(uri=served.sdk, connection_token=carol_token)
    assert await carol.list_sessions() is not None

    # A configuration that does not load changes nothing.
    good = config.read_text()
    config.write_text(good + "\n[[tenants]]\nname = \"broken\"\n")
    served.proc.send_signal(signal.SIGHUP)
    await asyncio.sleep(1)
    assert await own.list_sessions() is not None and await carol.list_sessions() is not None
    config.write_text(good)
    log = served.stderr_path.read_text(errors="replace")
    assert "does not load" in log and "SIGHUP" in log
    assert served.proc.poll() is None


def _audit(ctx: Ctx, until_act: str) -> list[dict]:
    """The audit log's lines, once one with `until_act` is there (its writer is a thread)."""
    path = ctx.root / "audit.jsonl"
    deadline = time.monotonic() + 10
    while True:
        lines = [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []
        if any(l["act"] == until_act for l in lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


async def test_the_audit_log_says_who_did_what_and_nothing_secret(ctx: Ctx, served, make_client):
    alice = make_client(uri=served.sdk, connection_token="alice-token")
    await alice.start()
    session = await alice.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "noted"})
    reply = await session.send_and_wait("the quarterly numbers are confidential", timeout=30)
    assert reply is not None
    refused = make_client(uri=served.sdk, connection_token="not-a-token")
    with pytest.raises(Exception):
        await refused.start()
    await alice.delete_session(session.session_id)

    lines = _audit(ctx, "session.delete")
    mine = [(l["act"], l.get("tenant"), l.get("user")) for l in lines if l["act"] != "connect.refused"]
    assert mine == [
        ("connect", "alpha", "alice"),
        ("session.create", "alpha", "alice"),
        ("message", "alpha", "alice"),
        ("session.delete", "alpha", "alice"),
    ], lines
    assert all(l["session"].endswith(session.session_id) for l in lines if l["act"].startswith(("session.", "message")))
    assert [l for l in lines if l["act"] == "connect.refused"] != []
    assert all(l["time"].endswith("Z") for l in lines)
    text = (ctx.root / "audit.jsonl").read_text()
    for secret in ("alice-token", "not-a-token", "gho-alice-secret", "confidential"):
        assert secret not in text, secret


async def test_a_tenant_holds_no_more_sessions_than_it_may(ctx: Ctx, served, make_client):
    client = make_client(uri=served.sdk, connection_token="trusted-token")
    await client.start()
    first = await client.create_session(on_permission_request=APPROVE)
    await client.create_session(on_permission_request=APPROVE)
    with pytest.raises(Exception) as refused:
        await client.create_session(on_permission_request=APPROVE)
    assert "holds 2 sessions" in str(refused.value)
    with pytest.raises(JsonRpcError) as fork:
        await raw_request(client, "sessions.fork", {"sessionId": first.session_id})
    assert fork.value.code == -32012 and fork.value.data == {"limit": "sessions", "max": 2}, fork.value
    # Another tenant is not held back by it.
    other = make_client(uri=served.sdk, connection_token="alpha-own-token")
    await other.start()
    await other.create_session(on_permission_request=APPROVE)
    # A deleted session frees its place.
    await client.delete_session(first.session_id)
    again = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "room again"})
    await _turn(again, "room again")
    limits = [l for l in _audit(ctx, "limit") if l["act"] == "limit"]
    assert [(l["tenant"], l["limit"], l["max"]) for l in limits] == [("trusted", "sessions", 2)] * 2
