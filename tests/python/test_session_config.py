"""Session config that shapes the model request: custom instructions (repository, user and
``instruction_directories``), ``client_name`` in the user agent, ``session_limits`` and
source-qualified ``available_tools`` / ``excluded_tools`` patterns (the SDK's ``ToolSet``).

Each test reads the captured model request, which is what these options exist to change."""

from __future__ import annotations

from pathlib import Path

from copilot.session import PermissionHandler
from copilot import define_tool
from pydantic import BaseModel

from conftest import Ctx, system_prompt, tool_names, user_texts

LIMITS_TAG = "<session_limits_status>"


async def _first_request(ctx: Ctx, session, prompt: str = "What is 1+1?") -> dict:
    ctx.fake.replies({"text": "2"})
    before = len(ctx.fake.requests())
    reply = await session.send_and_wait(prompt, timeout=30)
    assert reply is not None and reply.data.content == "2"
    reqs = ctx.fake.requests()
    assert len(reqs) == before + 1
    return reqs[-1]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


async def test_custom_instructions_come_from_the_user_the_repository_and_extra_directories(ctx: Ctx, client):
    project = ctx.work_dir / "project"
    extra = ctx.work_dir / "extra"
    _write(ctx.copilot_home / "copilot-instructions.md", "USER_LEVEL_RULE\n")
    _write(project / ".github" / "copilot-instructions.md", "REPO_RULE\n")
    _write(project / "AGENTS.md", "AGENTS_RULE\n")
    _write(project / ".github" / "instructions" / "always.instructions.md", "ALWAYS_RULE\n")
    _write(
        project / ".github" / "instructions" / "ts.instructions.md",
        '---\napplyTo: "**/*.ts"\ndescription: TypeScript rules\n---\nTS_ONLY_RULE\n',
    )
    _write(extra / ".github" / "instructions" / "extra.instructions.md", "Always include EXTRA_RULE.")
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        working_directory=str(project),
        instruction_directories=[str(extra)],
    )
    prompt = system_prompt(await _first_request(ctx, session))
    for text in ("USER_LEVEL_RULE", "REPO_RULE", "AGENTS_RULE", "ALWAYS_RULE", "Always include EXTRA_RULE."):
        assert text in prompt, text
    assert prompt.index("USER_LEVEL_RULE") < prompt.index("REPO_RULE") < prompt.index("AGENTS_RULE")
    assert "<custom_instruction>\nREPO_RULE\n\n</custom_instruction>" in prompt
    # A scoped file is listed for the model to read, not inlined.
    assert "TS_ONLY_RULE" not in prompt
    assert "| **/*.ts | '.github/instructions/ts.instructions.md' | TypeScript rules |" in prompt
    await session.disconnect()


async def test_instruction_directories_given_on_resume_apply(ctx: Ctx, client):
    extra = ctx.work_dir / "resume-extra"
    _write(extra / ".github" / "instructions" / "r.instructions.md", "RESUME_ONLY_RULE\n")
    first = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    assert "RESUME_ONLY_RULE" not in system_prompt(await _first_request(ctx, first))
    resumed = await client.resume_session(
        first.session_id,
        on_permission_request=PermissionHandler.approve_all,
        instruction_directories=[str(extra)],
    )
    assert "RESUME_ONLY_RULE" in system_prompt(await _first_request(ctx, resumed))
    await resumed.disconnect()


async def test_skip_custom_instructions_leaves_them_out(ctx: Ctx, client):
    _write(ctx.work_dir / "AGENTS.md", "SKIPPABLE_RULE\n")
    kept = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    assert "SKIPPABLE_RULE" in system_prompt(await _first_request(ctx, kept))
    skipped = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, skip_custom_instructions=True
    )
    assert "SKIPPABLE_RULE" not in system_prompt(await _first_request(ctx, skipped))


async def test_the_default_prompt_names_what_skipper_stands_in_for(ctx: Ctx, client):
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        system_message={"mode": "append", "content": "APPENDED_LAST"},
    )
    prompt = system_prompt(await _first_request(ctx, session))
    assert "GitHub Copilot CLI" in prompt
    assert prompt.rstrip().endswith("APPENDED_LAST")


async def test_client_name_is_in_the_user_agent(ctx: Ctx, client):
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, client_name="py-conformance-client"
    )
    request = await _first_request(ctx, session)
    agent = {k.lower(): v for k, v in request["headers"].items()}["user-agent"]
    assert agent.endswith("client/py-conformance-client"), agent


async def test_session_limits_are_told_to_the_model_after_each_prompt(ctx: Ctx, client):
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, session_limits={"max_ai_credits": 30}
    )
    texts = user_texts(await _first_request(ctx, session, "Acknowledge the limits."))
    assert "Acknowledge the limits." in texts[-2]
    assert texts[-1].startswith(LIMITS_TAG)
    assert "Remaining session limits: 30 AI credits." in texts[-1]
    assert "Be frugal; avoid optional exploration and unnecessary tool calls." in texts[-1]

    plain = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    assert not any(LIMITS_TAG in t for t in user_texts(await _first_request(ctx, plain)))
    resumed = await client.resume_session(
        plain.session_id,
        on_permission_request=PermissionHandler.approve_all,
        session_limits={"max_ai_credits": 12.5},
    )
    texts = user_texts(await _first_request(ctx, resumed))
    assert "Remaining session limits: 12.5 AI credits." in texts[-1]


class _Nothing(BaseModel):
    pass


async def test_source_qualified_tool_patterns_select_by_source(ctx: Ctx, client):
    @define_tool(description="A tool of the client's")
    def client_probe(params: _Nothing) -> str:
        return "probe"

    everything_builtin = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[client_probe],
        available_tools=["builtin:*"],
        excluded_tools=["builtin:bash"],
    )
    names = tool_names(await _first_request(ctx, everything_builtin))
    assert "view" in names and "grep" in names
    assert "bash" not in names, "builtin:bash is excluded"
    assert "client_probe" not in names, "builtin:* does not select the client's tools"

    only_some = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[client_probe],
        available_tools=["builtin:task", "builtin:skill", "custom:*"],
    )
    names = tool_names(await _first_request(ctx, only_some))
    assert sorted(names) == ["client_probe", "skill", "task"], names


def _task_agent_types(request: dict) -> list[str]:
    body = request.get("body", request)
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        if fn.get("name") == "task":
            return list(fn["parameters"]["properties"]["agent_type"]["enum"])
    raise AssertionError("task is not offered")


async def test_excluded_builtin_agents_are_not_offered_to_task(ctx: Ctx, client):
    plain = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    assert "explore" in _task_agent_types(await _first_request(ctx, plain))
    excluded = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, excluded_builtin_agents=["explore"]
    )
    types = _task_agent_types(await _first_request(ctx, excluded))
    assert types and "explore" not in types and "task" in types
    resumed = await client.resume_session(
        plain.session_id,
        on_permission_request=PermissionHandler.approve_all,
        excluded_builtin_agents=["task"],
    )
    types = _task_agent_types(await _first_request(ctx, resumed))
    assert "task" not in types and "explore" in types
