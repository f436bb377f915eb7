"""Issue 10: the official Python SDK against the team server, `skipper serve`, over its SDK TCP
port (`RuntimeConnection.for_uri(addr, connection_token=…)`): the token goes in `connect` and
selects the tenant."""

from __future__ import annotations

from pathlib import Path

import pytest

import asyncio
import json
import os

from copilot.rpc import PermissionDecisionApproveOnce
from copilot.session import PermissionHandler

import serve_support
from conftest import Ctx, tool_results

TOKEN = "python-tenant-token"
OTHER_TOKEN = "another-tenant-token"


def _start_serve_with(ctx: Ctx, **env: str) -> serve_support.Served:
    """`skipper serve` with two tenants."""
    config = serve_support.tenant("py", TOKEN) + serve_support.tenant("other", OTHER_TOKEN)
    return serve_support.start(ctx, config, home=ctx.copilot_home, state_dir=ctx.root, **env)


@pytest.fixture
def serve(ctx: Ctx):
    served = _start_serve_with(ctx)
    yield served.sdk
    serve_support.stop(served)


async def test_sdk_runs_a_turn_on_the_team_server(ctx: Ctx, serve: str, make_client):
    ctx.fake.replies({"text": "Hello from the team server"})
    client = make_client(uri=serve, connection_token=TOKEN)
    await client.start()
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    response = await session.send_and_wait("Say hello", timeout=30)
    assert response is not None
    assert response.data.content == "Hello from the team server"
    # The turn ran in the tenant's workspace, and the session is listed for the tenant.
    [request] = ctx.fake.requests()
    assert request["body"]["messages"][-1]["content"].endswith("Say hello")
    sessions = await client.list_sessions()
    assert [s.session_id for s in sessions] == [session.session_id]
    assert Path(sessions[0].context.working_directory) == (ctx.copilot_home / "workspaces" / "py").resolve()


async def test_a_wrong_token_is_refused(ctx: Ctx, serve: str, make_client):
    client = make_client(uri=serve, connection_token="not-the-token")
    with pytest.raises(Exception) as refused:
        await client.start()
    assert "not-the-token" not in str(refused.value)
    assert ctx.fake.requests() == []


async def test_another_tenant_cannot_see_or_resume_the_session(ctx: Ctx, serve: str, make_client):
    ctx.fake.replies({"text": "private answer"})
    owner = make_client(uri=serve, connection_token=TOKEN)
    await owner.start()
    session = await owner.create_session(on_permission_request=PermissionHandler.approve_all)
    await session.send_and_wait("private prompt", timeout=30)

    other = make_client(uri=serve, connection_token=OTHER_TOKEN)
    await other.start()
    assert await other.list_sessions() == []
    with pytest.raises(Exception) as foreign:
        await other.resume_session(session.session_id, on_permission_request=PermissionHandler.approve_all)
    unknown_id = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(Exception) as unknown:
        await other.resume_session(unknown_id, on_permission_request=PermissionHandler.approve_all)
    # Answered exactly as an id that does not exist.
    assert str(foreign.value).replace(session.session_id, "ID") == str(unknown.value).replace(unknown_id, "ID")
    # The owner still has it.
    assert [s.session_id for s in await owner.list_sessions()] == [session.session_id]


async def test_two_tenants_may_give_their_sessions_the_same_id(ctx: Ctx, serve: str, make_client):
    """Issue 33: session ids are per tenant. A tenant creating a session with an id another
    tenant uses gets its own session, exactly as with a free id (no "already exists" to tell
    it the other one is there), and each sees only its own under that id."""
    owner = make_client(uri=serve, connection_token=TOKEN)
    await owner.start()
    other = make_client(uri=serve, connection_token=OTHER_TOKEN)
    await other.start()
    ctx.fake.replies({"text": "the owner's answer"}, {"text": "the other's answer"})
    mine = await owner.create_session(session_id="nightly", on_permission_request=PermissionHandler.approve_all)
    await mine.send_and_wait("the owner's prompt", timeout=30)
    theirs = await other.create_session(session_id="nightly", on_permission_request=PermissionHandler.approve_all)
    assert (mine.session_id, theirs.session_id) == ("nightly", "nightly")
    await theirs.send_and_wait("the other's prompt", timeout=30)

    def said(events) -> list[str]:
        return [e.data.content for e in events if e.type.value in ("user.message", "assistant.message")]

    assert said(await mine.get_events()) == ["the owner's prompt", "the owner's answer"]
    assert said(await theirs.get_events()) == ["the other's prompt", "the other's answer"]
    start = [e for e in await mine.get_events() if e.type.value == "session.start"][0]
    assert start.data.session_id == "nightly"

    # The other tenant deleting its `nightly` leaves the owner's alone.
    await other.delete_session("nightly")
    assert [s.session_id for s in await other.list_sessions()] == []
    assert [s.session_id for s in await owner.list_sessions()] == ["nightly"]
    resumed = await owner.resume_session("nightly", on_permission_request=PermissionHandler.approve_all)
    assert said(await resumed.get_events()) == ["the owner's prompt", "the owner's answer"]


async def test_what_a_tenant_configures_and_names_stays_in_its_own_files(ctx: Ctx, serve: str, make_client):
    """Issue 33 through the official SDK: MCP servers one tenant configures are its own (the
    server's home is not written), and a directory of another tenant's is refused by name."""
    from copilot.generated.rpc import MCPConfigAddRequest, SkillsDiscoverRequest

    owner = make_client(uri=serve, connection_token=TOKEN)
    await owner.start()
    other = make_client(uri=serve, connection_token=OTHER_TOKEN)
    await other.start()
    server = {"type": "local", "command": "true", "args": [], "tools": ["*"]}
    await owner.rpc.mcp.config.add(MCPConfigAddRequest.from_dict({"name": "py-server", "config": server}))
    assert "py-server" in (await owner.rpc.mcp.config.list()).servers
    assert (await other.rpc.mcp.config.list()).servers == {}
    assert not (ctx.copilot_home / "mcp-config.json").exists(), "a tenant wrote the server's configuration"

    owners_workspace = (ctx.copilot_home / "workspaces" / "py").resolve()
    (owners_workspace / "skills" / "mine").mkdir(parents=True)
    (owners_workspace / "skills" / "mine" / "SKILL.md").write_text("---\nname: mine\ndescription: d\n---\nbody\n")
    with pytest.raises(Exception) as refused:
        await other.rpc.skills.discover(SkillsDiscoverRequest(skill_directories=[str(owners_workspace / "skills")]))
    assert "is not in this tenant's workspace" in str(refused.value)
    found = await owner.rpc.skills.discover(SkillsDiscoverRequest(skill_directories=["skills"]))
    assert [s.name for s in found.skills] == ["mine"]


def _sessions_active(http: str) -> int:
    import urllib.request

    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as r:
        text = r.read().decode()
    [line] = [l for l in text.splitlines() if l.startswith("skipper_sessions_active ")]
    return int(float(line.split()[1]))


async def test_an_idle_session_unloads_and_a_new_client_resumes_it_unchanged(ctx: Ctx, make_client):
    import asyncio

    served = _start_serve_with(ctx, SKIPPER_IDLE_UNLOAD_MS="200")
    sdk, http = served.sdk, served.http
    try:
        ctx.fake.replies({"text": "Noted: the code word is HERON."}, {"text": "HERON"})
        first = make_client(uri=sdk, connection_token=TOKEN)
        await first.start()
        session = await first.create_session(on_permission_request=PermissionHandler.approve_all)
        await session.send_and_wait("Remember the code word HERON.", timeout=30)
        assert _sessions_active(http) == 1
        await first.stop()

        for _ in range(200):
            if _sessions_active(http) == 0:
                break
            await asyncio.sleep(0.1)
        assert _sessions_active(http) == 0, "the session stayed in memory with no client"

        second = make_client(uri=sdk, connection_token=TOKEN)
        await second.start()
        resumed = await second.resume_session(session.session_id, on_permission_request=PermissionHandler.approve_all)
        assert _sessions_active(http) == 1
        answer = await resumed.send_and_wait("What was the code word?", timeout=30)
        assert answer is not None and answer.data.content == "HERON"
        # The model saw the whole conversation: the reload lost nothing.
        last = ctx.fake.requests()[-1]["body"]["messages"]
        contents = [m.get("content") for m in last]
        assert any(isinstance(c, str) and c.endswith("Remember the code word HERON.") for c in contents), contents
        assert "Noted: the code word is HERON." in contents, contents
        await second.stop()
    finally:
        serve_support.stop(served)


def _scrape(http: str, accept: str | None) -> tuple[str, str]:
    import urllib.request

    request = urllib.request.Request(f"http://{http}/metrics", headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.headers["Content-Type"], r.read().decode()


async def test_metrics_answer_in_the_format_the_scraper_asks_for(ctx: Ctx, make_client):
    """Issue 36: `/metrics` in the classic text format unless OpenMetrics is asked for, each read
    by the Prometheus project's own Python parsers, with the turns this test ran."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
    from prometheus_client.parser import text_string_to_metric_families as classic_families

    served = _start_serve_with(ctx)
    try:
        ctx.fake.replies({"text": "one"}, {"text": "two"})
        client = make_client(uri=served.sdk, connection_token=TOKEN)
        await client.start()
        session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
        await session.send_and_wait("first", timeout=30)
        await session.send_and_wait("second", timeout=30)

        def turns(families) -> float:
            [family] = [f for f in families if f.name == "skipper_turns"]
            assert family.type == "counter"
            [sample] = [s for s in family.samples if s.name == "skipper_turns_total"]
            return sample.value

        # Prometheus's own Accept when it scrapes OpenMetrics.
        prometheus = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                      "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
        kind, text = _scrape(served.http, prometheus)
        assert kind.startswith("application/openmetrics-text; version=1.0.0"), kind
        assert turns(openmetrics_families(text)) == 2

        for accept in (None, "*/*", "text/plain;version=0.0.4"):
            kind, text = _scrape(served.http, accept)
            assert kind.startswith("text/plain; version=0.0.4"), (accept, kind)
            assert "# EOF" not in text and "# UNIT" not in text
            families = list(classic_families(text))
            assert turns(families) == 2
            [latency] = [f for f in families if f.name == "skipper_model_latency_seconds"]
            assert latency.type == "histogram"
            [count] = [s for s in latency.samples if s.name == "skipper_model_latency_seconds_count"]
            assert count.value == 2
            # The OpenMetrics parser refuses the classic text: the two really differ.
            with pytest.raises(ValueError):
                list(openmetrics_families(text))
        await client.stop()
    finally:
        serve_support.stop(served)


async def test_a_link_swapped_in_while_a_write_waits_for_approval_does_not_lead_out(
    ctx: Ctx, serve: str, make_client
):
    """Issue 33, the check-then-use race, as a tenant runs it: the model asks to edit a file of
    its workspace, and while the permission prompt is open the file is swapped for a link to
    another tenant's file. The edit lands in the file that was checked, and the other tenant's
    file is untouched."""
    workspaces = ctx.copilot_home / "workspaces"
    mine, theirs = workspaces / "py", workspaces / "other"
    mine.mkdir(parents=True, exist_ok=True)
    theirs.mkdir(parents=True, exist_ok=True)
    (mine / "notes.txt").write_text("hello from py\n", encoding="utf-8")
    (theirs / "secret.txt").write_text("hello from other\n", encoding="utf-8")
    edit = {"path": str(mine / "notes.txt"), "old_str": "hello", "new_str": "owned"}
    ctx.fake.replies({"tool_calls": [{"name": "edit", "arguments": json.dumps(edit)}]}, {"text": "done"})
    asked = []

    def swap_then_approve(request, invocation):
        asked.append(request.kind)
        if request.kind == "write":
            os.rename(mine / "notes.txt", mine / "checked.txt")
            os.symlink(theirs / "secret.txt", mine / "notes.txt")
        return PermissionDecisionApproveOnce()

    client = make_client(uri=serve, connection_token=TOKEN)
    await client.start()
    session = await client.create_session(on_permission_request=swap_then_approve)
    await session.send_and_wait("Edit notes.txt", timeout=30)
    assert "write" in asked, asked
    assert (theirs / "secret.txt").read_text(encoding="utf-8") == "hello from other\n"
    assert (mine / "checked.txt").read_text(encoding="utf-8") == "owned from py\n", "the file that was checked"
    [result] = tool_results(ctx.fake.requests()[-1])
    assert "hello from other" not in result["content"], result


async def test_one_tenants_clients_cannot_take_every_connection(ctx: Ctx, make_client):
    """Issue 33 through the official SDK: past its own connection limit a tenant's client is
    refused at `connect` with the reason, the other tenant still gets in, and a place the
    first tenant frees is its own again."""
    config = serve_support.tenant("py", TOKEN) + serve_support.tenant("other", OTHER_TOKEN)
    served = serve_support.start(
        ctx, config + "[limits]\nmax_connections_per_tenant = 2\n", home=ctx.copilot_home, state_dir=ctx.root
    )
    try:
        first, second = make_client(uri=served.sdk, connection_token=TOKEN), make_client(uri=served.sdk, connection_token=TOKEN)
        await first.start()
        await second.start()
        third = make_client(uri=served.sdk, connection_token=TOKEN)
        with pytest.raises(Exception) as refused:
            await third.start()
        assert "for this tenant" in str(refused.value), refused.value
        assert TOKEN not in str(refused.value)
        other = make_client(uri=served.sdk, connection_token=OTHER_TOKEN)
        await other.start()
        assert await other.list_sessions() == []
        await first.stop()
        again = make_client(uri=served.sdk, connection_token=TOKEN)
        for _ in range(100):
            try:
                await again.start()
                break
            except Exception:
                await asyncio.sleep(0.05)
                again = make_client(uri=served.sdk, connection_token=TOKEN)
        session = await again.create_session(on_permission_request=PermissionHandler.approve_all)
        assert session.session_id
    finally:
        serve_support.stop(served)

