"""Custom agents, sub-agents (the ``task`` tool) and skills.

Selection: ``session.agent.*`` and what a selected agent changes in the next model request.
Sub-agents: a ``task`` call runs its own loop (own context, own tools) and its final answer is
the call's result; its events carry the ``task`` call's id; siblings run concurrently; abort
reaches them. Skills: discovery from ``skillDirectories``, ``session.skills.*``, the ``skill``
tool replayed against the original's recording. The model is scripted (or replayed); the client
is the official SDK.
"""

from __future__ import annotations

import asyncio
import json

from copilot.generated.rpc import AgentSelectRequest, SkillsDisableRequest, SkillsEnableRequest
from copilot.session import PermissionHandler
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import (
    Ctx,
    record_events,
    request_messages,
    snapshot_final_reply,
    tool_names,
    tool_results,
    user_texts,
    wait_for,
)

REVIEWER = {
    "name": "reviewer",
    "display_name": "Reviewer",
    "description": "Reviews code",
    "prompt": "Review every change with care.",
    "tools": ["view", "grep"],
}


def _task(name: str, prompt: str, agent_type: str = "explore") -> dict:
    return {
        "name": "task",
        "arguments": {"name": name, "agent_type": agent_type, "description": name, "prompt": prompt},
    }


def _data(event) -> dict:
    return event.data.to_dict() if hasattr(event.data, "to_dict") else dict(event.data)


async def test_select_and_deselect_change_the_next_model_request(ctx: Ctx, client):
    ctx.fake.replies({"text": "plain"}, {"text": "as reviewer"}, {"text": "plain again"})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, custom_agents=[REVIEWER]
    )
    events = record_events(session)
    assert (await session.rpc.agent.get_current()).agent is None

    await session.send_and_wait("first", timeout=30)
    selected = await session.rpc.agent.select(AgentSelectRequest(name="reviewer"))
    assert selected.agent.name == "reviewer" and selected.agent.display_name == "Reviewer"
    assert (await session.rpc.agent.get_current()).agent.name == "reviewer"
    await session.send_and_wait("second", timeout=30)
    await session.rpc.agent.deselect()
    assert (await session.rpc.agent.get_current()).agent is None
    await session.send_and_wait("third", timeout=30)

    first, second, third = ctx.fake.requests()
    assert "<agent_instructions>" not in user_texts(first)[-1]
    assert "<agent_instructions>\nReview every change with care.\n</agent_instructions>" in user_texts(second)[-1]
    assert "<agent_instructions>" not in user_texts(third)[-1]
    assert tool_names(second) == ["view", "grep"], tool_names(second)
    assert "bash" in tool_names(first) and "bash" in tool_names(third)

    sel = events.of("subagent.selected")
    assert len(sel) == 1 and sel[0].data.agent_name == "reviewer" and sel[0].data.tools == ["view", "grep"]
    assert len(events.of("subagent.deselected")) == 1


async def test_unknown_agent_is_refused_and_agent_files_are_listed(ctx: Ctx, client):
    agents_dir = ctx.work_dir / ".github" / "agents"
    agents_dir.mkdir(parents=True)
    (agents_dir / "docs-writer.agent.md").write_text(
        "---\nname: Docs Writer\ndescription: Writes docs\ntools: [view, create]\n---\nWrite clear docs.\n"
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        custom_agents=[REVIEWER],
        working_directory=str(ctx.work_dir),
        enable_config_discovery=True,
    )
    listed = (await session.rpc.agent.list()).agents
    assert [(a.name, a.display_name) for a in listed] == [("reviewer", "Reviewer"), ("docs-writer", "Docs Writer")]
    assert listed[1].path.endswith("docs-writer.agent.md")
    try:
        await session.rpc.agent.select(AgentSelectRequest(name="nope"))
        raise AssertionError("selecting an unknown agent must fail")
    except Exception as e:  # noqa: BLE001 - the SDK raises its JSON-RPC error type
        assert "Custom agent 'nope' not found" in str(e)

    (agents_dir / "later.agent.md").write_text("---\ndescription: Added later\n---\nBe late.\n")
    reloaded = (await session.rpc.agent.reload()).agents
    assert [a.name for a in reloaded] == ["reviewer", "docs-writer", "later"]


async def test_task_runs_a_sub_agent_whose_answer_is_the_result(ctx: Ctx, client):
    (ctx.work_dir / "notes.txt").write_text("the secret is 42")
    ctx.fake.replies(
        {"tool_calls": [_task("reader", "Read notes.txt and report it.")]},
        {"tool_calls": [{"name": "view", "arguments": {"path": str(ctx.work_dir / "notes.txt")}}]},
        {"text": "The notes say: the secret is 42"},
        {"text": "Your notes hold 42."},
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, working_directory=str(ctx.work_dir)
    )
    events = record_events(session)
    reply = await session.send_and_wait("what do my notes say?", timeout=30)
    assert reply is not None and reply.data.content == "Your notes hold 42."

    parent1, sub1, sub2, parent2 = ctx.fake.requests()
    assert "task" in tool_names(parent1)
    # The sub-agent has its own context: its prompt is its only user message, and the explore
    # agent gets read-only tools and never `task`.
    assert [t.split("</current_datetime>")[-1].strip() for t in user_texts(sub1)] == ["Read notes.txt and report it."]
    assert "task" not in tool_names(sub1) and "view" in tool_names(sub1) and "create" not in tool_names(sub1)
    assert [r["content"] for r in tool_results(sub2)] == ["1. the secret is 42"]
    assert [r["content"] for r in tool_results(parent2)] == ["The notes say: the secret is 42"]
    assert not any("the secret is 42" in json.dumps(m) for m in request_messages(parent1))

    task_start = [e for e in events.of("tool.execution_start") if e.data.tool_name == "task"]
    assert len(task_start) == 1
    task_id = task_start[0].data.tool_call_id
    started = events.of("subagent.started")
    assert len(started) == 1 and started[0].data.tool_call_id == task_id
    assert started[0].data.agent_name == "explore"
    completed = events.of("subagent.completed")
    assert len(completed) == 1 and completed[0].data.tool_call_id == task_id

    view_start = [e for e in events.of("tool.execution_start") if e.data.tool_name == "view"]
    assert len(view_start) == 1 and view_start[0].data.parent_tool_call_id == task_id
    assert view_start[0].agent_id == "reader"
    sub_messages = [e for e in events.of("assistant.message") if e.data.parent_tool_call_id == task_id]
    assert [m.data.content for m in sub_messages][-1] == "The notes say: the secret is 42"
    task_done = [e for e in events.of("tool.execution_complete") if e.data.tool_call_id == task_id]
    assert task_done[0].data.result.content == "The notes say: the secret is 42"


async def test_sibling_sub_agents_run_concurrently(ctx: Ctx, client):
    # Each sub-agent calls `rendezvous`, which returns only once both calls have arrived: run one
    # after the other, the first would wait forever.
    arrived: list[str] = []
    both = asyncio.Event()

    async def rendezvous(invocation: ToolInvocation) -> ToolResult:
        arrived.append(invocation.tool_call_id)
        if len(arrived) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), timeout=20)
        return ToolResult(text_result_for_llm="met", result_type="success")

    ctx.fake.replies(
        {"tool_calls": [_task("one", "first job", "task"), _task("two", "second job", "task")]},
        {"tool_calls": [{"name": "rendezvous", "arguments": {}}]},
        {"tool_calls": [{"name": "rendezvous", "arguments": {}}]},
        {"text": "job done"},
        {"text": "job done"},
        {"text": "both finished"},
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[Tool(name="rendezvous", description="Meet the sibling", parameters={"type": "object", "properties": {}}, handler=rendezvous, skip_permission=True)],
    )
    events = record_events(session)
    reply = await session.send_and_wait("do two jobs", timeout=40)
    assert reply is not None and reply.data.content == "both finished"
    assert len(arrived) == 2
    assert [r["content"] for r in tool_results(ctx.fake.requests()[-1])] == ["job done", "job done"]
    task_ids = {e.data.tool_call_id for e in events.of("tool.execution_start") if e.data.tool_name == "task"}
    assert {e.data.tool_call_id for e in events.of("subagent.completed")} == task_ids
    parents = {e.data.parent_tool_call_id for e in events.of("tool.execution_start") if e.data.tool_name == "rendezvous"}
    assert parents == task_ids
    assert {e.agent_id for e in events.of("tool.execution_start") if e.data.tool_name == "rendezvous"} == {"one", "two"}


async def test_abort_reaches_a_running_sub_agent(ctx: Ctx, client):
    entered = asyncio.Event()

    async def block(invocation: ToolInvocation) -> ToolResult:
        entered.set()
        await asyncio.sleep(3600)
        return ToolResult(text_result_for_llm="never", result_type="success")

    ctx.fake.replies(
        {"tool_calls": [_task("waiter", "wait for it", "general-purpose")]},
        {"tool_calls": [{"name": "block", "arguments": {}}]},
        {"text": "must not be requested"},
    )
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[Tool(name="block", description="Blocks", parameters={"type": "object", "properties": {}}, handler=block, skip_permission=True)],
    )
    events = record_events(session)
    await session.send("go")
    await asyncio.wait_for(entered.wait(), timeout=20)
    await session.abort()
    await wait_for(lambda: events.has("session.idle"), timeout=20, what="session.idle")
    assert len(ctx.fake.requests()) == 2, "nothing is asked of the model after the abort"
    task_id = next(e.data.tool_call_id for e in events.of("tool.execution_start") if e.data.tool_name == "task")
    failed = events.of("subagent.failed")
    assert len(failed) == 1 and failed[0].data.tool_call_id == task_id
    assert not events.has("subagent.completed")


async def test_skills_are_discovered_listed_and_toggled(ctx: Ctx, client):
    skills_dir = ctx.work_dir / "my-skills"
    (skills_dir / "deploy").mkdir(parents=True)
    (skills_dir / "deploy" / "SKILL.md").write_text("---\nname: deploy\ndescription: Deploys things\n---\nRun the deploy.\n")
    ctx.fake.replies({"text": "hi"})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        skill_directories=[str(skills_dir)],
        disabled_skills=["deploy"],
    )
    listed = (await session.rpc.skills.list()).skills
    assert [(s.name, s.enabled, s.description) for s in listed] == [("deploy", False, "Deploys things")]
    assert listed[0].path.endswith("deploy/SKILL.md")
    await session.rpc.skills.enable(SkillsEnableRequest(name="deploy"))
    assert [s.enabled for s in (await session.rpc.skills.list()).skills] == [True]
    await session.send_and_wait("hello", timeout=30)
    skill_tool = next(
        t for t in ctx.fake.requests()[0]["body"]["tools"] if t["function"]["name"] == "skill"
    )
    assert '<skill name="deploy">Deploys things</skill>' in skill_tool["function"]["description"]
    await session.rpc.skills.disable(SkillsDisableRequest(name="deploy"))
    assert [s.enabled for s in (await session.rpc.skills.list()).skills] == [False]


async def test_the_user_s_disabled_skills_setting_applies_to_sessions(ctx: Ctx, client):
    skills_dir = ctx.work_dir / "my-skills"
    for name in ("deploy", "lint"):
        (skills_dir / name).mkdir(parents=True)
        (skills_dir / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Does {name}\n---\nBody.\n")
    (ctx.copilot_home / "settings.json").write_text(json.dumps({"disabledSkills": ["deploy"]}))
    ctx.fake.replies({"text": "hi"})
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        skill_directories=[str(skills_dir)],
        disabled_skills=["lint"],
    )
    listed = {s.name: s.enabled for s in (await session.rpc.skills.list()).skills}
    assert listed == {"deploy": False, "lint": False}, "the user's and the session's disabledSkills both apply"
    await session.send_and_wait("hello", timeout=30)
    skill_tools = [t for t in ctx.fake.requests()[0]["body"]["tools"] if t["function"]["name"] == "skill"]
    assert all("deploy" not in t["function"]["description"] for t in skill_tools)
    # Turned back on for this session only.
    await session.rpc.skills.enable(SkillsEnableRequest(name="deploy"))
    assert {s.name: s.enabled for s in (await session.rpc.skills.list()).skills} == {"deploy": True, "lint": False}


async def test_skill_tool_replays_the_original_recording(ctx: Ctx, client):
    snapshot = "skills/should_load_and_apply_skill_from_skilldirectories.yaml"
    skills_dir = ctx.work_dir / ".test_skills" / "test-skill"
    skills_dir.mkdir(parents=True)
    (skills_dir / "SKILL.md").write_text(
        "---\nname: test-skill\ndescription: A test skill that adds a marker to responses\n---\n\n"
        "# Test Skill Instructions\n\nIMPORTANT: You MUST include the exact text \"PINEAPPLE_COCONUT_42\" "
        "somewhere in EVERY response you give. This is a mandatory requirement. Include it naturally in your response.\n"
    )
    ctx.load(snapshot)
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        skill_directories=[str(ctx.work_dir / ".test_skills")],
        working_directory=str(ctx.work_dir),
    )
    events = record_events(session)
    reply = await session.send_and_wait("Say hello briefly using the test skill.", timeout=30)
    # The fake answers the second call only if the tool result and the skill context match.
    assert reply is not None and reply.data.content == snapshot_final_reply(snapshot)
    invoked = events.of("skill.invoked")
    assert len(invoked) == 1 and invoked[0].data.name == "test-skill"
    assert invoked[0].data.path.endswith("test-skill/SKILL.md")


async def test_a_selected_agents_own_servers_serve_the_sessions_turns(ctx: Ctx, client):
    """A selected agent's own ``mcpServers`` start with the session's next turn: their tools
    are offered and called in the session's own conversation while the agent stays selected,
    and are gone once it is deselected. They are the agent's, not the session's servers."""
    from test_mcp import stdio_server

    agent = {
        "name": "echoer",
        "display_name": "Echoer",
        "description": "Has a server of its own",
        "prompt": "Use your server.",
        "mcp_servers": {"agent-s": stdio_server("agent-s")},
    }
    ctx.fake.replies(
        {"tool_calls": [{"name": "agent-s-echo", "arguments": {"text": "from the agent's server"}}]},
        {"text": "echoed"},
        {"text": "plain"},
    )
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all, custom_agents=[agent])
    await session.rpc.agent.select(AgentSelectRequest(name="echoer"))
    reply = await session.send_and_wait("Echo something", timeout=60)
    assert reply is not None and reply.data.content == "echoed"
    listed = await session.rpc.mcp.list()
    assert all(s.name != "agent-s" for s in listed.servers), listed

    await session.rpc.agent.deselect()
    reply = await session.send_and_wait("Now without the agent", timeout=60)
    assert reply is not None and reply.data.content == "plain"

    first, second, third = ctx.fake.requests()
    assert "agent-s-echo" in tool_names(first) and "agent-s-echo" in tool_names(second)
    assert tool_results(second)[0]["content"] == "from the agent's server"
    assert "agent-s-echo" not in tool_names(third)
    await session.disconnect()
