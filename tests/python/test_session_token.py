"""Issue 34: a session's own `gitHubToken` (the SDKs' multi-user set-up, one token per user)
authenticates that session's model calls; the process's token stays the fallback of the
others, and the token shows in no event."""

from __future__ import annotations

import json

from copilot.session import PermissionHandler

from conftest import GITHUB_TOKEN, Ctx, raw_request

APPROVE = PermissionHandler.approve_all


def _set_user(ctx: Ctx, token: str, login: str) -> None:
    user = {"login": login, "copilot_plan": "individual_pro", "endpoints": {"api": ctx.fake.url}}
    ctx.fake._call("POST", "/_fake/user", {"token": token, "response": user})


def _auth_headers(ctx: Ctx) -> list[str | None]:
    return [r["headers"].get("authorization") for r in ctx.fake.requests()]


async def test_each_sessions_calls_carry_its_own_token_and_the_rest_the_processs(ctx: Ctx, make_client):
    _set_user(ctx, "gho-alice", "alice")
    _set_user(ctx, "gho-bob", "bob")
    client = make_client()
    await client.start()
    alice = await client.create_session(on_permission_request=APPROVE, github_token="gho-alice")
    bob = await client.create_session(on_permission_request=APPROVE, github_token="gho-bob")
    anyone = await client.create_session(on_permission_request=APPROVE)

    for session, text in ((alice, "for alice"), (bob, "for bob"), (anyone, "for the process")):
        ctx.fake.replies({"text": text})
        reply = await session.send_and_wait("hi", timeout=30)
        assert reply is not None and reply.data.content == text
    assert _auth_headers(ctx) == ["Bearer gho-alice", "Bearer gho-bob", f"Bearer {GITHUB_TOKEN}"]

    # The token is the session's secret: no event of it carries the token.
    events = json.dumps([e.to_dict() for e in await alice.get_events()])
    assert "gho-alice" not in events


async def test_a_session_token_is_enough_without_any_token_of_the_process(ctx: Ctx, make_client):
    _set_user(ctx, "gho-carol", "carol")
    client = make_client(github_token=None)
    await client.start()
    session = await client.create_session(on_permission_request=APPROVE, github_token="gho-carol")
    ctx.fake.replies({"text": "hello carol"})
    reply = await session.send_and_wait("hi", timeout=30)
    assert reply is not None and reply.data.content == "hello carol"
    assert _auth_headers(ctx) == ["Bearer gho-carol"]

    # A resume that brings the token again keeps using it.
    again = await client.resume_session(session.session_id, on_permission_request=APPROVE, github_token="gho-carol")
    ctx.fake.replies({"text": "still carol"})
    reply = await again.send_and_wait("again", timeout=30)
    assert reply is not None and reply.data.content == "still carol"
    assert _auth_headers(ctx) == ["Bearer gho-carol", "Bearer gho-carol"]


async def test_without_a_session_token_the_processs_account_answers_status_and_quota(ctx: Ctx, make_client):
    chat = {"entitlement": 100, "overage_count": 2, "overage_permitted": True, "percent_remaining": 75}
    user = {"login": "proc", "copilot_plan": "business", "endpoints": {"api": ctx.fake.url}, "quota_snapshots": {"chat": chat}}
    ctx.fake._call("POST", "/_fake/user", {"token": GITHUB_TOKEN, "response": user})
    client = make_client()
    await client.start()
    session = await client.create_session(on_permission_request=APPROVE)
    status = await raw_request(client, "session.gitHubAuth.getStatus", {"sessionId": session.session_id})
    assert (status["login"], status["copilotPlan"], status["isAuthenticated"]) == ("proc", "business", True)
    quota = await raw_request(client, "account.getQuota", {})
    assert (quota["quotaSnapshots"]["chat"]["entitlementRequests"], quota["quotaSnapshots"]["chat"]["usedRequests"]) == (100, 25)
