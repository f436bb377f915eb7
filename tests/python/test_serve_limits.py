"""Issue 36: what a team server's tenants use, and their limits. A session's model calls,
tokens, tool calls and sandbox denials are counted per tenant and user (`tenant.getUsage`,
`/metrics`), its tool calls and permission decisions go to the audit log, and a tenant is held
to its messages at once (they wait), model requests per minute (they wait) and tokens per day
(refused) — without holding back any other tenant."""

from __future__ import annotations

import asyncio
import datetime
import json
import time
import urllib.request

import pytest
from copilot._jsonrpc import JsonRpcError
from copilot.session import PermissionHandler

import serve_support
from conftest import Ctx, raw_request

APPROVE = PermissionHandler.approve_all


_digest = serve_support.digest


def _config(ctx: Ctx) -> str:
    return f"""
[credentials]
server_fallback = true

[audit]
path = "{ctx.root / 'audit.jsonl'}"

[[tenants]]
name = "acme"
token_sha256 = "{_digest('acme-own-token')}"
workspace = "{ctx.root / 'ws-acme'}"
max_turns = 1

[[tenants.users]]
name = "ann"
token_sha256 = "{_digest('ann-token')}"

[[tenants.users]]
name = "ben"
token_sha256 = "{_digest('ben-token')}"

[[tenants]]
name = "tight"
token_sha256 = "{_digest('tight-token')}"
tokens_per_day = 1

[[tenants]]
name = "paced"
token_sha256 = "{_digest('paced-token')}"
model_requests_per_minute = 1
"""


@pytest.fixture
def served(ctx: Ctx):
    (ctx.root / "ws-acme").mkdir(parents=True, exist_ok=True)
    served = serve_support.start(ctx, _config(ctx), home=ctx.copilot_home, state_dir=ctx.root)
    yield served
    serve_support.stop(served)


async def _client(make_client, served, token: str):
    client = make_client(uri=served.sdk, connection_token=token)
    await client.start()
    return client


def _metrics(served) -> dict[str, float]:
    with urllib.request.urlopen(f"http://{served.http}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("skipper_tenant_"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def _audit(ctx: Ctx, until, timeout: float = 10) -> list[dict]:
    """The audit log's lines, once `until(lines)` holds (its writer is a thread of its own)."""
    path = ctx.root / "audit.jsonl"
    deadline = time.monotonic() + timeout
    while True:
        lines = [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []
        if until(lines) or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def _reported(session) -> list:
    """The `assistant.usage` events `session` sends from now on (ephemeral: not in its log)."""
    seen: list = []
    session.on(lambda e: seen.append(e.data) if e.type.value == "assistant.usage" else None)
    return seen


async def _settle(client, usage: int, days: int = 1) -> dict:
    """`tenant.getUsage` once `usage` model calls are in it (the session's last event may still
    be on its way when the turn's reply is)."""
    deadline = time.monotonic() + 10
    while True:
        got = await raw_request(client, "tenant.getUsage", {"days": days})
        if sum(r["modelCalls"] for r in got["usage"]) >= usage or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.1)


async def test_usage_is_counted_per_user_and_tool_calls_are_audited(ctx: Ctx, served, make_client):
    ann = await _client(make_client, served, "ann-token")
    ben = await _client(make_client, served, "ben-token")
    mine = await ann.create_session(on_permission_request=APPROVE)
    reported = {"ann": _reported(mine)}
    note = ctx.root / "ws-acme" / "note.txt"
    ctx.fake.replies(
        {"tool_calls": [
            {"name": "view", "arguments": {"path": "/etc/hostname"}},
            {"name": "create", "arguments": {"path": str(note), "file_text": "kept\n"}},
        ]},
        {"text": "done"},
    )
    reply = await mine.send_and_wait("look around", timeout=30)
    assert reply is not None and reply.data.content == "done"
    assert note.read_text() == "kept\n"
    his = await ben.create_session(on_permission_request=APPROVE)
    reported["ben"] = _reported(his)
    ctx.fake.replies({"text": "hello ben"})
    assert (await his.send_and_wait("hi", timeout=30)).data.content == "hello ben"

    # What the tenant's token sees: both users, each with what their sessions reported.
    own = await _client(make_client, served, "acme-own-token")
    got = await _settle(own, 3)
    assert got["tenant"] == "acme" and got["limits"] == {"turns": 1}
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    rows = {r["user"]: r for r in got["usage"]}
    assert set(rows) == {"ann", "ben"} and {r["day"] for r in got["usage"]} == {today}
    for user, usage in reported.items():
        row = rows[user]
        assert row["modelCalls"] == len(usage) > 0
        assert row["inputTokens"] == sum(u.input_tokens or 0 for u in usage) > 0
        assert row["outputTokens"] == sum(u.output_tokens or 0 for u in usage) > 0
    assert (rows["ann"]["toolCalls"], rows["ann"]["sandboxDenials"]) == (2, 1)
    assert (rows["ben"]["toolCalls"], rows["ben"]["sandboxDenials"]) == (0, 0)
    tokens = sum(r["inputTokens"] + r["outputTokens"] for r in got["usage"])
    assert got["tokensToday"] == tokens

    # A user sees their own rows only.
    ben_sees = await raw_request(ben, "tenant.getUsage", {})
    assert [r["user"] for r in ben_sees["usage"]] == ["ben"] and ben_sees["tokensToday"] == tokens
    with pytest.raises(JsonRpcError) as bad:
        await raw_request(ben, "tenant.getUsage", {"days": 0})
    assert bad.value.code == -32602

    metrics = _metrics(served)
    assert metrics['skipper_tenant_model_calls_total{tenant="acme"}'] == 3
    assert metrics['skipper_tenant_tool_calls_total{tenant="acme"}'] == 2
    assert metrics['skipper_tenant_sandbox_denials_total{tenant="acme"}'] == 1
    assert metrics['skipper_tenant_tokens_total{tenant="acme",kind="input"}'] == sum(
        r["inputTokens"] for r in got["usage"]
    )
    assert metrics['skipper_tenant_model_calls_total{tenant="paced"}'] == 0

    # The audit log: each tool call and permission decision, whose it was; never its arguments.
    lines = _audit(ctx, lambda ls: sum(l["act"] == "tool.call" for l in ls) >= 2)
    calls = [(l["user"], l["tool"], l["success"]) for l in lines if l["act"] == "tool.call"]
    assert sorted(calls) == [("ann", "create", True), ("ann", "view", False)], lines
    denials = [(l["tenant"], l["user"], l["tool"]) for l in lines if l["act"] == "sandbox.denial"]
    assert denials == [("acme", "ann", "view")]
    decisions = [l for l in lines if l["act"] == "permission.decision"]
    assert decisions and all(l["user"] == "ann" and l["session"].endswith(mine.session_id) for l in decisions)
    assert "kept" not in (ctx.root / "audit.jsonl").read_text()


async def test_a_tenants_messages_past_its_turns_wait_for_one_to_end(ctx: Ctx, served, make_client):
    ann = await _client(make_client, served, "ann-token")
    first = await ann.create_session(on_permission_request=APPROVE)
    second = await ann.create_session(on_permission_request=APPROVE)
    other = await _client(make_client, served, "tight-token")
    elsewhere = await other.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"delay_ms": 1500, "then": {"text": "first"}})
    slow = asyncio.ensure_future(first.send_and_wait("one", timeout=30))
    while len(ctx.fake.requests()) < 1:
        await asyncio.sleep(0.05)
    queued = asyncio.ensure_future(second.send_and_wait("two", timeout=30))
    await asyncio.sleep(0.5)
    assert len(ctx.fake.requests()) == 1, "acme's second message waits for its first"
    # Another tenant is not held back.
    ctx.fake.replies({"text": "not waiting"}, {"text": "second"})
    assert (await elsewhere.send_and_wait("x", timeout=30)).data.content == "not waiting"
    assert not queued.done()
    assert (await slow).data.content == "first"
    assert (await queued).data.content == "second"
    limits = [l for l in _audit(ctx, lambda ls: any(l["act"] == "limit" for l in ls)) if l["act"] == "limit"]
    assert [(l["tenant"], l["user"], l["limit"], l["max"]) for l in limits] == [("acme", "ann", "turns", 1)]
    assert _metrics(served)['skipper_tenant_limited_total{tenant="acme",limit="turns"}'] == 1


async def test_past_its_tokens_for_the_day_a_tenant_is_refused_and_others_go_on(ctx: Ctx, served, make_client):
    tight = await _client(make_client, served, "tight-token")
    session = await tight.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "the last one today"})
    assert (await session.send_and_wait("hi", timeout=30)).data.content == "the last one today"
    before = len(ctx.fake.requests())
    with pytest.raises(JsonRpcError) as refused:
        await session.send("one more")
    assert refused.value.code == -32012, refused.value
    assert refused.value.data == {"limit": "tokens_per_day", "max": 1}
    assert "00:00 UTC" in refused.value.message
    assert len(ctx.fake.requests()) == before, "nothing reached the model"
    # Another tenant goes on; the refused one's session is still there, unchanged.
    acme = await _client(make_client, served, "acme-own-token")
    theirs = await acme.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "fine"})
    assert (await theirs.send_and_wait("hi", timeout=30)).data.content == "fine"
    events = (await raw_request(tight, "session.getMessages", {"sessionId": session.session_id}))["events"]
    assert [e["data"]["content"] for e in events if e["type"] == "user.message"] == ["hi"]
    assert _metrics(served)['skipper_tenant_limited_total{tenant="tight",limit="tokens_per_day"}'] == 1


async def test_past_its_model_requests_per_minute_a_turn_waits_and_can_be_aborted(ctx: Ctx, served, make_client):
    # Both calls inside one minute: the second waits for the next.
    await serve_support.early_in_a_minute()
    paced = await _client(make_client, served, "paced-token")
    session = await paced.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "one a minute"})
    assert (await session.send_and_wait("hi", timeout=30)).data.content == "one a minute"
    await serve_support.held_back_until_aborted(ctx, session, "again", hold_s=0.5)
    lines = _audit(ctx, lambda ls: any(l["act"] == "limit" for l in ls))
    limits = [(l["tenant"], l["limit"], l["max"]) for l in lines if l["act"] == "limit"]
    assert limits == [("paced", "model_requests_per_minute", 1)], lines
