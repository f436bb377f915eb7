"""Issue 34: what a session read from disk, listed and read again as the original 1.0.102 does —
its instruction files (once a stub that listed none), a reload of its customizations, its
configured MCP servers — and the answers for services this runtime does not have (managed
settings, content exclusion, token prices), through the official SDK's typed RPC."""

from __future__ import annotations

import json

from copilot.generated.rpc import ContentExclusionCheckPathsRequest
from copilot.session import PermissionHandler

from conftest import Ctx

APPROVE = PermissionHandler.approve_all


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_instruction_sources_are_listed_and_read_again_for_the_next_turn(ctx: Ctx, client):
    work = ctx.work_dir
    _write(work / ".github" / "copilot-instructions.md", "Be kind to the reader.")
    _write(work / ".github" / "instructions" / "py.instructions.md", "---\napplyTo: '**/*.py'\n---\nPython rules.")
    session = await client.create_session(on_permission_request=APPROVE)

    sources = (await session.rpc.instructions.get_sources()).sources
    assert [(s.id, s.source_path, s.content) for s in sources] == [
        ("repo-copilot", ".github/copilot-instructions.md", "Be kind to the reader."),
        ("vscode-instructions/.github/instructions/py.instructions.md", ".github/instructions/py.instructions.md",
         "---\napplyTo: '**/*.py'\n---\nPython rules."),
    ]
    assert sources[1].apply_to == ["**/*.py"]

    # A file added later is listed, and reaches the model, after a reload.
    ctx.fake.replies({"text": "before"}, {"text": "after"})
    await session.send_and_wait("one")
    assert "Agents: write tests first." not in json.dumps(ctx.fake.requests()[-1]["body"]["messages"][0])
    _write(work / "AGENTS.md", "Agents: write tests first.")
    reloaded = (await session.rpc.instructions.reload()).sources
    assert [s.id for s in reloaded] == [
        "repo-copilot", "model-agents-md", "vscode-instructions/.github/instructions/py.instructions.md",
    ]
    await session.send_and_wait("two")
    assert "Agents: write tests first." in json.dumps(ctx.fake.requests()[-1]["body"]["messages"][0])


async def test_a_customizations_reload_says_what_it_read_again(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    result = await session.rpc.customizations.reload()
    outcomes = {o.subsystem.value: o.status.value for o in result.outcomes}
    assert outcomes == {
        "repositoryContext": "skipped", "instructions": "reloaded", "plugins": "skipped", "hooks": "skipped",
        "skills": "reloaded", "agents": "reloaded", "mcp": "skipped", "extensions": "skipped",
    }
    skipped = [o for o in result.outcomes if o.status.value == "skipped"]
    assert all(o.detail for o in skipped), "a skipped part says why"
    assert result.errors == []


async def test_configured_mcp_servers_are_listed_without_starting_them(ctx: Ctx, client):
    (ctx.copilot_home / "mcp-config.json").write_text(json.dumps({"mcpServers": {
        "notes": {"type": "http", "url": "http://127.0.0.1:9/mcp", "tools": ["*"]},
    }}))
    session = await client.create_session(on_permission_request=APPROVE)
    listed = {s.name: s for s in (await session.rpc.mcp.list_configured()).servers}
    assert "notes" in listed, listed
    notes = listed["notes"]
    assert notes.enabled is True and notes.source.value == "user"
    assert notes.live.status.value == "not_configured", "not started by being listed"


async def test_services_this_runtime_lacks_answer_as_the_original_does_without_them(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    managed = await session.rpc.managed_settings.get()
    assert (managed.source.value, managed.managed_keys, managed.fail_closed) == ("none", [], False)
    # Exclusion is not evaluated here, so no path is vouched for: unavailable, which callers must
    # read as "every path excluded" (failing closed).
    paths = [str(ctx.work_dir / "a.txt"), "/etc/passwd"]
    checked = await session.rpc.content_exclusion.check_paths(ContentExclusionCheckPathsRequest(paths=paths))
    assert (checked.available, checked.checks) == (False, [])
    assert (await client.rpc.models.list_token_price_units()).units == []
