"""Issue 11: persisted sessions as a whole (`sessions.*`), per-session GitHub identities and
quotas, permission settings (paths, locations, folder trust), usage and context make-up, user
settings, secret filtering, and the gated features' errors — through the official SDK."""

from __future__ import annotations

import json
import os

import pytest

from copilot.generated.rpc import (
    AccountGetQuotaRequest,
    SecretsAddFilterValuesRequest,
    SessionsBulkDeleteRequest,
    SessionsCheckInUseRequest,
    SessionsCloseRequest,
    SessionsFindByPrefixRequest,
    SessionsPruneOldRequest,
    UserSettingsSetRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request, record_events, wait_for

APPROVE = PermissionHandler.approve_all


def _user(login: str, plan: str, ctx: Ctx, **extra) -> dict:
    return {"login": login, "copilot_plan": plan, "endpoints": {"api": ctx.fake.url}, **extra}


def _set_user(ctx: Ctx, token: str, response: dict) -> None:
    ctx.fake._call("POST", "/_fake/user", {"token": token, "response": response})


async def _expect_error(coro) -> str:
    with pytest.raises(Exception) as info:
        await coro
    return str(info.value)


async def test_sessions_are_found_measured_closed_pruned_and_deleted(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    ctx.fake.replies({"text": "stored"})
    await session.send_and_wait("remember this")

    found = await client.rpc.sessions.find_by_prefix(SessionsFindByPrefixRequest(prefix=sid[:8]))
    assert found.session_id == sid
    assert (await client.rpc.sessions.find_by_prefix(SessionsFindByPrefixRequest(prefix="zzzz"))).session_id is None
    sizes = await client.rpc.sessions.get_sizes()
    assert sizes.sizes[sid] > 0
    in_use = await client.rpc.sessions.check_in_use(SessionsCheckInUseRequest(session_ids=[sid]))
    assert in_use.in_use == [sid]
    meta = await raw_request(client, "sessions.getMetadata", {"sessionId": sid})
    assert meta["session"]["sessionId"] == sid and meta["session"]["isRemote"] is False
    assert (await raw_request(client, "sessions.save", {"sessionId": sid})) == {}

    # A loaded session is never a prune candidate; once closed it is.
    prune = SessionsPruneOldRequest(older_than_days=0, dry_run=True, include_named=True, exclude_session_ids=[])
    first = await client.rpc.sessions.prune_old(prune)
    assert sid in first.skipped and sid not in first.candidates
    await client.rpc.sessions.close(SessionsCloseRequest(session_id=sid))
    in_use = await client.rpc.sessions.check_in_use(SessionsCheckInUseRequest(session_ids=[sid]))
    assert in_use.in_use == []
    dry = await client.rpc.sessions.prune_old(prune)
    assert dry.dry_run is True and sid in dry.candidates and dry.deleted == [] and dry.freed_bytes > 0
    listed = await raw_request(client, "sessions.list", {})
    assert any(s["sessionId"] == sid for s in listed["sessions"]), "a dry run deletes nothing"

    # Reopened by id prefix, then deleted for good.
    opened = await raw_request(client, "sessions.open", {"kind": "resume", "sessionId": sid[:8]})
    assert opened == {"status": "resumed", "sessionId": sid}
    deleted = await client.rpc.sessions.bulk_delete(SessionsBulkDeleteRequest(session_ids=[sid, "no-such-session"]))
    assert deleted.freed_bytes[sid] > 0 and deleted.freed_bytes["no-such-session"] == 0
    listed = await raw_request(client, "sessions.list", {})
    assert all(s["sessionId"] != sid for s in listed["sessions"])
    assert not (ctx.copilot_home / "session-state" / sid).exists()


async def test_open_without_a_match_is_not_found_and_remote_kinds_fail(ctx: Ctx, client):
    # As the original: no kind at all opens nothing, rather than failing.
    assert await raw_request(client, "sessions.open", {}) == {"status": "not_found"}
    last = await raw_request(client, "sessions.open", {"kind": "resumeLast"})
    assert last == {"status": "not_found"}
    none = await raw_request(client, "sessions.open", {"kind": "resumeLast", "context": {"cwd": str(ctx.work_dir)}})
    assert none == {"status": "not_found"}
    created = await raw_request(client, "sessions.open", {"kind": "create", "options": {"workingDirectory": str(ctx.work_dir)}})
    assert created["status"] == "created" and created["sessionId"]
    text = await _expect_error(raw_request(client, "sessions.connect", {"sessionId": "remote-1"}))
    assert "Remote session remote-1 not found" in text and "Unhandled method" not in text
    text = await _expect_error(raw_request(client, "agentRegistry.spawn", {"cwd": str(ctx.work_dir)}))
    assert "agentRegistry.spawn is not enabled on this server" in text
    session = await client.create_session(on_permission_request=APPROVE)
    text = await _expect_error(
        raw_request(client, "session.extensions.sendAttachmentsToMessage", {"sessionId": session.session_id, "attachments": []})
    )
    assert "may only be called from an extension-owned connection" in text


async def test_a_send_mode_the_server_does_not_know_is_accepted_and_ignored(ctx: Ctx, client):
    """The original takes `session.send` with `mode: "plan"` (a newer client's) as a plain send."""
    ctx.fake.replies({"text": "planned"})
    session = await client.create_session(on_permission_request=APPROVE)
    events = record_events(session)
    sent = await raw_request(client, "session.send", {"sessionId": session.session_id, "prompt": "hi", "mode": "plan"})
    assert sent["messageId"]
    await wait_for(lambda: events.has("session.idle"), 30, "the turn to end")
    assert [e.data.content for e in events.of("assistant.message")] == ["planned"]


async def test_each_session_has_its_own_github_identity(ctx: Ctx, make_client):
    _set_user(ctx, "token-alice", _user("alice", "individual_pro", ctx))
    _set_user(ctx, "token-bob", _user("bob", "business", ctx))
    _set_user(ctx, "token-bad", {"status": 401})
    client = make_client()
    await client.start()
    alice = await client.create_session(on_permission_request=APPROVE, github_token="token-alice")
    bob = await client.create_session(on_permission_request=APPROVE, github_token="token-bob")
    plain = await client.create_session(on_permission_request=APPROVE)
    status_a = await raw_request(client, "session.gitHubAuth.getStatus", {"sessionId": alice.session_id})
    status_b = await raw_request(client, "session.gitHubAuth.getStatus", {"sessionId": bob.session_id})
    status_p = await raw_request(client, "session.gitHubAuth.getStatus", {"sessionId": plain.session_id})
    assert (status_a["login"], status_a["copilotPlan"], status_a["isAuthenticated"]) == ("alice", "individual_pro", True)
    assert (status_b["login"], status_b["copilotPlan"]) == ("bob", "business")
    # Without a token of its own a session acts as the process's account, whose user is
    # looked up as the original does (the fake's default user for an unregistered token).
    assert (status_p["login"], status_p["isAuthenticated"]) == ("fake-user", True)

    text = await _expect_error(client.create_session(on_permission_request=APPROVE, github_token="token-bad"))
    assert "401" in text and "token-bad" not in text

    creds = {"type": "user", "host": "https://github.com", "login": "carol", "copilotUser": {"login": "carol", "copilot_plan": "business"}}
    result = await raw_request(client, "session.gitHubAuth.setCredentials", {"sessionId": plain.session_id, "credentials": creds})
    assert result == {"success": True, "copilotUserResolved": True}
    status_p = await raw_request(client, "session.gitHubAuth.getStatus", {"sessionId": plain.session_id})
    assert (status_p["authType"], status_p["login"], status_p["copilotPlan"]) == ("user", "carol", "business")


async def test_quota_comes_from_the_copilot_user_record(ctx: Ctx, client):
    snapshot = {"entitlement": 300, "overage_count": 0, "overage_permitted": False, "percent_remaining": 40, "timestamp_utc": "2026-05-01T00:00:00Z"}
    _set_user(ctx, "token-quota", _user("q", "individual_pro", ctx, quota_snapshots={"premium_interactions": snapshot}))
    quota = await client.rpc.account.get_quota(AccountGetQuotaRequest(git_hub_token="token-quota"))
    p = quota.quota_snapshots["premium_interactions"]
    assert (p.entitlement_requests, p.used_requests, p.remaining_percentage) == (300, 180, 40)
    assert p.overage_allowed_with_exhausted_quota is False and p.reset_date == "2026-05-01T00:00:00Z"


async def test_permission_paths_locations_and_trust(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    extra, other, primary = (ctx.work_dir / n for n in ("extra", "other", "primary"))
    configured = await raw_request(client, "session.permissions.configure", {
        "sessionId": sid,
        "paths": {"workspacePath": str(ctx.work_dir), "additionalDirectories": [str(extra)], "includeTempDirectory": False},
    })
    assert configured == {"success": True}
    listed = await raw_request(client, "session.permissions.paths.list", {"sessionId": sid})
    assert listed["primary"] == str(ctx.work_dir) and listed["directories"] == [str(ctx.work_dir), str(extra)]

    async def allowed(path) -> bool:
        r = await raw_request(client, "session.permissions.paths.isPathWithinAllowedDirectories", {"sessionId": sid, "path": str(path)})
        return r["allowed"]

    assert await allowed(extra / "a.txt") and not await allowed("/elsewhere/a.txt")
    await raw_request(client, "session.permissions.paths.add", {"sessionId": sid, "path": "/elsewhere"})
    assert await allowed("/elsewhere/a.txt")
    await raw_request(client, "session.permissions.paths.updatePrimary", {"sessionId": sid, "path": str(primary)})
    inside = await raw_request(client, "session.permissions.paths.isPathWithinWorkspace", {"sessionId": sid, "path": str(primary / "x")})
    outside = await raw_request(client, "session.permissions.paths.isPathWithinWorkspace", {"sessionId": sid, "path": str(other / "x")})
    assert (inside["allowed"], outside["allowed"]) == (True, False)

    other.mkdir()
    resolved = await raw_request(client, "session.permissions.locations.resolve", {"sessionId": sid, "workingDirectory": str(other)})
    assert resolved == {"locationKey": str(other), "locationType": "dir"}
    approval = {"kind": "commands", "commandIdentifiers": ["make"]}
    await raw_request(client, "session.permissions.locations.addToolApproval", {"sessionId": sid, "locationKey": str(other), "approval": approval})
    applied = await raw_request(client, "session.permissions.locations.apply", {"sessionId": sid, "workingDirectory": str(other)})
    assert applied["appliedRules"] == [{"kind": "shell", "argument": "make"}] and applied["changed"] is True
    again = await raw_request(client, "session.permissions.locations.apply", {"sessionId": sid, "workingDirectory": str(other)})
    assert again["changed"] is False

    reset = await raw_request(client, "session.permissions.resetSessionApprovals", {"sessionId": sid})
    assert reset == {"success": True}
    reapplied = await raw_request(client, "session.permissions.locations.apply", {"sessionId": sid, "workingDirectory": str(other)})
    assert reapplied["changed"] is True, "the reset forgot the applied rules"

    trusted = lambda p: raw_request(client, "session.permissions.folderTrust.isTrusted", {"sessionId": sid, "path": str(p)})  # noqa: E731
    assert (await trusted(other))["trusted"] is False
    await raw_request(client, "session.permissions.folderTrust.addTrusted", {"sessionId": sid, "path": str(other)})
    assert (await trusted(other / "sub"))["trusted"] is True


async def test_usage_and_context_make_up_after_a_turn(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    empty = await raw_request(client, "session.metadata.getContextAttribution", {"sessionId": sid})
    assert empty == {"contextAttribution": None}
    ctx.fake.replies({"text": "A fairly long answer " * 20})
    await session.send_and_wait("short question")
    metrics = await raw_request(client, "session.usage.getMetrics", {"sessionId": sid})
    assert metrics["totalUserRequests"] == 1 and metrics["sessionStartTime"]
    assert sum(m["requests"]["count"] for m in metrics["modelMetrics"].values()) == 1
    # A premium request per user message (the model's multiplier is 1), as the original counts.
    assert metrics["totalPremiumRequestCost"] == 1
    attribution = (await raw_request(client, "session.metadata.getContextAttribution", {"sessionId": sid}))["contextAttribution"]
    assert attribution["totalTokens"] > 0 and {e["label"] for e in attribution["entries"]} >= {"user message", "assistant message"}
    heaviest = await raw_request(client, "session.metadata.getContextHeaviestMessages", {"sessionId": sid, "limit": 1})
    assert heaviest["totalTokens"] == attribution["totalTokens"]
    assert len(heaviest["messages"]) == 1
    assert heaviest["messages"][0]["tokens"] == max(e["tokens"] for e in attribution["entries"])
    by_label = {e["label"]: e["tokens"] for e in attribution["entries"]}
    assert by_label["assistant message"] > by_label["user message"] > 0
    info = await raw_request(client, "session.metadata.contextInfo", {"sessionId": sid, "promptTokenLimit": 90000, "outputTokenLimit": 4096})
    info = info["contextInfo"]
    assert info["totalTokens"] == attribution["totalTokens"] > 0
    assert info["systemTokens"] == attribution["categories"]["systemPrompt"] > 0
    assert info["conversationTokens"] == attribution["categories"]["messages"] > 0
    assert info["toolDefinitionsTokens"] == attribution["categories"]["systemTools"] > 0
    assert info["promptTokenLimit"] == 90000 and info["limit"] >= 90000
    # The agent's own call after a tool is no premium request.
    ctx.fake.replies({"tool_calls": [{"name": "report_intent", "arguments": {"intent": "Looking"}}]}, {"text": "done"})
    await session.send_and_wait("another")
    metrics = await raw_request(client, "session.usage.getMetrics", {"sessionId": sid})
    assert sum(m["requests"]["count"] for m in metrics["modelMetrics"].values()) == 3
    assert metrics["totalPremiumRequestCost"] == 2 and metrics["totalUserRequests"] == 2


async def test_user_settings_are_written_to_settings_json(ctx: Ctx, client):
    before = await client.rpc.user.settings.get()
    assert before.settings["mouse"].value is True and before.settings["mouse"].is_default is True
    await client.rpc.user.settings.set(UserSettingsSetRequest(settings={"mouse": False}))
    await raw_request(client, "user.settings.reload", {})
    after = await client.rpc.user.settings.get()
    assert after.settings["mouse"].value is False and after.settings["mouse"].is_default is False
    assert json.loads((ctx.copilot_home / "settings.json").read_text()) == {"mouse": False}
    await client.rpc.user.settings.set(UserSettingsSetRequest(settings={"mouse": None}))
    assert (await client.rpc.user.settings.get()).settings["mouse"].is_default is True


async def test_secret_filter_values_are_masked_in_events(ctx: Ctx, make_client, client):
    text = await _expect_error(client.rpc.secrets.add_filter_values(SecretsAddFilterValuesRequest(values=["x"])))
    assert "COPILOT_ENABLE_SECRET_FILTERING=true" in text
    filtered = make_client(env_extra={"COPILOT_ENABLE_SECRET_FILTERING": "true"})
    await filtered.start()
    ok = await filtered.rpc.secrets.add_filter_values(SecretsAddFilterValuesRequest(values=["hunter2-secret"]))
    assert ok.ok is True
    session = await filtered.create_session(on_permission_request=APPROVE)
    seen = []
    session.on(lambda e: seen.append(e))
    await session.log("the password is hunter2-secret")
    messages = [getattr(e.data, "message", "") for e in seen if e.type.value == "session.info"]
    assert messages and all("hunter2-secret" not in m for m in messages) and "******" in messages[-1]
