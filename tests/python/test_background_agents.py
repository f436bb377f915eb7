"""Background sub-agents, fleet mode and server-level discovery.

Background agents: ``session.tasks.startAgent`` and ``task {mode: "background"}`` start an agent
that outlives the turn; ``session.tasks.*`` report, cancel and remove it; when it has answered
it goes idle, which reaches the model as a ``<system_notification>`` turn (and a
``system.notification`` event); messages (``session.tasks.sendMessage``, ``write_agent``) reach
its conversation while it runs, and start its next turn when it is idle; ``read_agent`` returns
its answers (replayed against the original's recording). Fleet: ``session.fleet.start`` sends the orchestration
instructions and the request as one message. Discovery: ``skills.*``, ``agents.*`` and
``instructions.*`` ``discover`` / ``getDiscoveryPaths`` without a session.
"""

from __future__ import annotations

import asyncio

from copilot.generated.rpc import (
    AgentsDiscoverRequest,
    AgentsGetDiscoveryPathsRequest,
    FleetStartRequest,
    InstructionsDiscoverRequest,
    InstructionsGetDiscoveryPathsRequest,
    SkillsConfigSetDisabledSkillsRequest,
    SkillsDiscoverRequest,
    SkillsGetDiscoveryPathsRequest,
    TasksCancelRequest,
    TasksRemoveRequest,
    TasksSendMessageRequest,
    TasksStartAgentRequest,
)
from copilot.session import PermissionHandler
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import Ctx, record_events, request_messages, tool_calls, tool_names, tool_results, user_texts, wait_for


def _after_datetime(text: str) -> str:
    return text.split("</current_datetime>")[-1].strip()


async def test_a_started_agent_is_listed_notifies_the_session_and_is_removed(ctx: Ctx, client):
    ctx.fake.replies({"text": "READY"}, {"text": "AGENT ANSWER"}, {"text": "NOTED"})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    events = record_events(session)
    await session.send_and_wait("get ready", timeout=30)

    started = await session.rpc.tasks.start_agent(
        TasksStartAgentRequest(
            agent_type="general-purpose", prompt="Answer please.", name="helper", description="A helper"
        )
    )
    assert started.agent_id == "helper"

    def task():
        return next((t for t in tasks if t.id == "helper"), None)

    tasks = (await session.rpc.tasks.list()).tasks
    assert task() is not None
    assert task().agent_type == "general-purpose" and task().prompt == "Answer please."
    assert task().description == "A helper" and task().execution_mode.value == "background"

    # The end of the agent reaches the model as a notification turn.
    await wait_for(lambda: any(e.data.content == "NOTED" for e in events.of("assistant.message")), 30, "notice turn")
    tasks = (await session.rpc.tasks.list()).tasks
    assert task().status.value == "idle" and task().result == "AGENT ANSWER"
    assert task().latest_response == "AGENT ANSWER" and task().idle_since

    main1, sub, main2 = ctx.fake.requests()
    assert [_after_datetime(t) for t in user_texts(sub)] == ["Answer please."]
    notice = _after_datetime(user_texts(main2)[-1])
    assert notice == (
        '<system_notification>\nAgent "helper" (general-purpose) has finished processing and is now idle. Use '
        'read_agent with agent_id "helper" to read the results, or write_agent to send follow-up messages.\n'
        "</system_notification>"
    )
    assert "read_agent" in [t["function"]["name"] for t in main1["body"]["tools"]]

    # An idle agent is cancelled before it can be removed, once.
    assert (await session.rpc.tasks.remove(TasksRemoveRequest(id="helper"))).removed is False
    assert (await session.rpc.tasks.cancel(TasksCancelRequest(id="helper"))).cancelled is True
    assert (await session.rpc.tasks.cancel(TasksCancelRequest(id="helper"))).cancelled is False
    assert (await session.rpc.tasks.remove(TasksRemoveRequest(id="helper"))).removed is True
    assert (await session.rpc.tasks.remove(TasksRemoveRequest(id="helper"))).removed is False
    assert (await session.rpc.tasks.list()).tasks == []

    sub_started = [e for e in events.of("subagent.started") if e.data.agent_name == "general-purpose"]
    assert len(sub_started) == 1 and sub_started[0].data.execution_mode == "background"
    assert len(events.of("subagent.completed")) == 1


async def test_a_message_sent_while_the_agent_runs_reaches_it_and_its_end_is_a_system_notification(
    ctx: Ctx, client
):
    session = None
    sent = []

    async def nudge(invocation: ToolInvocation) -> ToolResult:
        # Runs inside the agent's turn: the agent is certainly still running.
        reply = await session.rpc.tasks.send_message(
            TasksSendMessageRequest(id="helper", message="Also check the docs folder.")
        )
        sent.append(reply)
        return ToolResult(text_result_for_llm="nudged")

    tool = Tool(
        name="nudge", description="Nudges.", parameters={"type": "object", "properties": {}}, handler=nudge,
        skip_permission=True,
    )
    ctx.fake.replies(
        {"tool_calls": [{"name": "nudge", "arguments": {}}]}, {"text": "CHECKED THE DOCS"}, {"text": "NOTED"}
    )
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all, tools=[tool])
    events = record_events(session)
    started = await session.rpc.tasks.start_agent(
        TasksStartAgentRequest(agent_type="general-purpose", prompt="Look around.", name="helper", description="Looks")
    )
    await wait_for(lambda: any(e.data.content == "NOTED" for e in events.of("assistant.message")), 30, "notice turn")

    assert len(sent) == 1 and sent[0].sent is True and sent[0].error is None
    first, second, notice_turn = ctx.fake.requests()
    assert [_after_datetime(t) for t in user_texts(first)] == ["Look around."]
    assert user_texts(second)[-1] == "Also check the docs folder.", "the message follows the tool result"
    assert [r["content"] for r in tool_results(second)] == ["nudged"]
    tasks = (await session.rpc.tasks.list()).tasks
    assert [(t.id, t.status.value, t.result) for t in tasks] == [("helper", "idle", "CHECKED THE DOCS")]

    notices = events.of("system.notification")
    assert len(notices) == 1
    notice = notices[0].data
    assert notice.content == _after_datetime(user_texts(notice_turn)[-1])
    assert notice.content.startswith('<system_notification>\nAgent "helper" (general-purpose) has finished')
    kind = notice.kind
    assert (kind.type.value if hasattr(kind.type, "value") else kind.type) == "agent_idle"
    assert (kind.agent_id, kind.agent_type, kind.description) == ("helper", "general-purpose", "Looks")

    # The idle agent takes a message as its next turn, in the same conversation.
    ctx.fake.replies({"text": "MORE ANSWER"}, {"text": "NOTED AGAIN"})
    late = await session.rpc.tasks.send_message(TasksSendMessageRequest(id=started.agent_id, message="More?"))
    assert late.sent is True and late.error is None
    await wait_for(
        lambda: any(e.data.content == "NOTED AGAIN" for e in events.of("assistant.message")), 30, "second notice"
    )
    resumed = ctx.fake.requests()[3]
    assert [_after_datetime(t) for t in user_texts(resumed)] == ["Look around.", "Also check the docs folder.", "More?"]
    said = [m.get("content") for m in resumed["body"]["messages"] if m.get("role") == "assistant"]
    assert "CHECKED THE DOCS" in said, "its earlier answer is part of the conversation"
    tasks = (await session.rpc.tasks.list()).tasks
    assert [(t.status.value, t.result, t.prompt) for t in tasks] == [("idle", "MORE ANSWER", "More?")]
    assert len(events.of("system.notification")) == 2
    # A cancelled agent takes no more messages; an unknown one neither.
    assert (await session.rpc.tasks.cancel(TasksCancelRequest(id="helper"))).cancelled is True
    refused = await session.rpc.tasks.send_message(TasksSendMessageRequest(id="helper", message="Still there?"))
    assert refused.sent is False and "cancelled" in refused.error
    missing = await session.rpc.tasks.send_message(TasksSendMessageRequest(id="nobody", message="Hi"))
    assert missing.sent is False and "nobody" in missing.error


async def test_write_agent_messages_a_running_agent(ctx: Ctx, client):
    ctx.fake.replies({"hang": True})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await session.rpc.tasks.start_agent(TasksStartAgentRequest(agent_type="explore", prompt="Wait.", name="looker"))
    await wait_for(lambda: len(ctx.fake.requests()) == 1, 30, "the agent's model call")
    ctx.fake.replies(
        {
            "tool_calls": [
                {"name": "write_agent", "arguments": {"agent_id": "looker", "message": "Look at src too."}},
                {"name": "write_agent", "arguments": {"agent_id": "nobody", "message": "Hello?"}},
                {"name": "write_agent", "arguments": {"agent_ids": ["looker", "nobody"], "message": "Both?"}},
                {"name": "write_agent", "arguments": {"scope": "children", "message": "All of you."}},
                {"name": "write_agent", "arguments": {"agent_id": "looker", "scope": "children", "message": "?"}},
            ]
        },
        {"text": "SENT"},
    )
    # `session.idle` waits for background agents, and this one runs on: wait for the main
    # turn's second model call instead.
    await session.send("tell the looker")
    await wait_for(lambda: len(ctx.fake.requests()) == 3, 30, "the main turn's second model call")
    main1, main2 = ctx.fake.requests()[1:]
    names = [t["function"]["name"] for t in main1["body"]["tools"]]
    assert names.index("read_agent") + 1 == names.index("write_agent") == names.index("list_agents") - 1
    results = [r["content"] for r in tool_results(main2)]
    assert results[0] == "Message delivered to agent looker. Use read_agent to check the agent's response."
    assert "nobody" in results[1] and results[1] != results[0]
    assert results[2].startswith("One or more recipients cannot receive messages") and "nobody" in results[2]
    assert results[3] == "Message delivered to agent looker. Use read_agent to check the agent's response."
    assert results[4] == 'Provide exactly one of "agent_id", "agent_ids", or "scope"'
    assert [c["name"] for c in tool_calls(main2)] == ["write_agent"] * 5
    write = next(t["function"] for t in main1["body"]["tools"] if t["function"]["name"] == "write_agent")
    assert write["parameters"]["required"] == ["message"]
    assert set(write["parameters"]["properties"]) == {"agent_id", "agent_ids", "scope", "message"}
    assert (await session.rpc.tasks.cancel(TasksCancelRequest(id="looker"))).cancelled is True


async def test_a_running_agent_can_be_cancelled(ctx: Ctx, client):
    ctx.fake.replies({"hang": True})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    started = await session.rpc.tasks.start_agent(
        TasksStartAgentRequest(agent_type="explore", prompt="Look around.", name="looker")
    )
    await wait_for(lambda: len(ctx.fake.requests()) == 1, 30, "the agent's model call")
    assert (await session.rpc.tasks.cancel(TasksCancelRequest(id=started.agent_id))).cancelled is True
    tasks = (await session.rpc.tasks.list()).tasks
    assert [t.status.value for t in tasks] == ["cancelled"]
    # A second agent of the same name gets its own id.
    ctx.fake.replies({"hang": True})
    again = await session.rpc.tasks.start_agent(
        TasksStartAgentRequest(agent_type="explore", prompt="Look again.", name="looker")
    )
    assert again.agent_id == "looker-2"
    assert (await session.rpc.tasks.cancel(TasksCancelRequest(id="looker-2"))).cancelled is True


async def test_background_task_call_replays_the_original_recording(ctx: Ctx, client):
    (ctx.work_dir / "subagent-test.txt").write_text("Hello from subagent test!")
    ctx.load("subagent_hooks/should_invoke_pretooluse_and_posttooluse_hooks_for_sub_agent_tool_calls.yaml")
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, working_directory=str(ctx.work_dir)
    )
    events = record_events(session)
    await session.send_and_wait(
        "Use the task tool to spawn an explore agent that reads the file subagent-test.txt in the current directory "
        "and reports its contents. You must use the task tool.",
        timeout=60,
    )
    await wait_for(
        lambda: any(
            "The explore agent successfully read the file" in (e.data.content or "")
            for e in events.of("assistant.message")
        ),
        60,
        "the reply after read_agent",
    )
    task_done = [e for e in events.of("tool.execution_complete") if e.data.result and "background" in e.data.result.content]
    assert task_done[0].data.result.content.startswith("Agent started in background with agent_id: read-file.")
    read = [
        r
        for req in ctx.fake.requests()
        for r in tool_results(req)
        if r["content"].startswith("Agent is idle (waiting for messages).")
    ]
    assert read and "agent_type: explore, status: idle" in read[-1]["content"]
    assert ", total_turns: 1\n\n[Turn 0]\n" in read[-1]["content"]
    assert "Hello from subagent test!" in read[-1]["content"]


async def test_fleet_start_sends_the_instructions_and_the_request(ctx: Ctx, client):
    ctx.load("rpc_shell_and_fleet/should_start_fleet_and_complete_custom_tool_task.yaml")
    recorded: list[str] = []

    def record(invocation: ToolInvocation) -> ToolResult:
        recorded.append(invocation.arguments["content"])
        return ToolResult(text_result_for_llm=invocation.arguments["content"])

    tool = Tool(
        name="record_fleet_completion",
        description="Records completion of the fleet validation task.",
        parameters={"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]},
        handler=record,
    )
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all, tools=[tool])
    events = record_events(session)
    prompt = (
        "Use the record_fleet_completion tool with content 'copilot-sdk-fleet-rpc', then report that the fleet task "
        "is complete."
    )
    assert (await session.rpc.fleet.start(FleetStartRequest(prompt=prompt))).started is True
    await wait_for(
        lambda: any("fleet task complete" in (e.data.content or "").lower() for e in events.of("assistant.message")),
        60,
        "the fleet reply",
    )
    assert recorded == ["copilot-sdk-fleet-rpc"]
    sent = events.of("user.message")[0].data.content
    assert sent.startswith("You are now in fleet mode.") and sent.endswith(f"User request: {prompt}")


async def test_discovery_without_a_session(ctx: Ctx, client):
    project = ctx.work_dir
    skills_dir = ctx.root / "more-skills"
    (skills_dir / "extra").mkdir(parents=True)
    (skills_dir / "extra" / "SKILL.md").write_text("---\nname: extra\ndescription: An extra skill\n---\nBody\n")
    (project / ".github" / "skills" / "local").mkdir(parents=True)
    (project / ".github" / "skills" / "local" / "SKILL.md").write_text("---\ndescription: Local one\n---\nB\n")
    (ctx.copilot_home / "skills" / "mine").mkdir(parents=True)
    (ctx.copilot_home / "skills" / "mine" / "SKILL.md").write_text("---\ndescription: Mine\n---\nB\n")
    (project / ".github" / "agents").mkdir(parents=True)
    (project / ".github" / "agents" / "fixer.agent.md").write_text("---\ndescription: Fixes\n---\nFix it.\n")
    (project / "AGENTS.md").write_text("Be brief.\n")

    found = await client.rpc.skills.discover(
        SkillsDiscoverRequest(project_paths=[str(project)], skill_directories=[str(skills_dir)], exclude_host_skills=True)
    )
    by_name = {s.name: s for s in found.skills}
    assert set(by_name) == {"extra", "local"}
    assert by_name["extra"].description == "An extra skill" and by_name["extra"].enabled is True
    assert by_name["extra"].path == str(skills_dir / "extra" / "SKILL.md")
    assert by_name["local"].source.value == "project" and by_name["local"].project_path == str(project)

    # Skills turned off in the user's configuration are found, and reported off.
    await client.rpc.skills.config.set_disabled_skills(SkillsConfigSetDisabledSkillsRequest(disabled_skills=["extra"]))
    again = await client.rpc.skills.discover(SkillsDiscoverRequest(skill_directories=[str(skills_dir)]))
    assert {s.name: s.enabled for s in again.skills} == {"extra": False, "mine": True}
    await client.rpc.skills.config.set_disabled_skills(SkillsConfigSetDisabledSkillsRequest(disabled_skills=[]))

    paths = await client.rpc.skills.get_discovery_paths(
        SkillsGetDiscoveryPathsRequest(project_paths=[str(project)], exclude_host_skills=True)
    )
    preferred = [p for p in paths.paths if p.preferred_for_creation]
    assert [(p.path, p.project_path) for p in preferred] == [(str(project / ".github" / "skills"), str(project))]

    agents = await client.rpc.agents.discover(AgentsDiscoverRequest(project_paths=[str(project)], exclude_host_agents=True))
    assert [(a.name, a.description) for a in agents.agents] == [("fixer", "Fixes")]
    agent_paths = await client.rpc.agents.get_discovery_paths(
        AgentsGetDiscoveryPathsRequest(project_paths=[str(project)], exclude_host_agents=True)
    )
    assert [p.path for p in agent_paths.paths] == [str(project / ".github" / "agents")]

    sources = await client.rpc.instructions.discover(
        InstructionsDiscoverRequest(project_paths=[str(project)], exclude_host_instructions=True)
    )
    assert [(s.label, s.content) for s in sources.sources] == [("AGENTS.md", "Be brief.\n")]
    targets = await client.rpc.instructions.get_discovery_paths(
        InstructionsGetDiscoveryPathsRequest(project_paths=[str(project)], exclude_host_instructions=True)
    )
    assert str(project / ".github" / "copilot-instructions.md") in [p.path for p in targets.paths]
    assert all(p.project_path == str(project) for p in targets.paths)


async def test_background_agents_message_their_siblings(ctx: Ctx, client):
    """Agents the session started are peers: one's ``write_agent {scope: "siblings"}`` reaches
    the other's conversation (waking it from idle), ``list_agents {scope: "siblings"}`` lists
    the others but not itself, and a message to itself is refused. The session keeps its view:
    its agents are its children."""
    ctx.fake.replies({"text": "B READY"}, {"text": "NOTED B"})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    events = record_events(session)
    await session.rpc.tasks.start_agent(
        TasksStartAgentRequest(agent_type="general-purpose", prompt="Wait for your sibling.", name="b", description="B")
    )
    await wait_for(lambda: any(e.data.content == "NOTED B" for e in events.of("assistant.message")), 30, "b idle")

    ctx.fake.replies(
        {
            "tool_calls": [
                {"name": "list_agents", "arguments": {"scope": "siblings"}},
                {"name": "write_agent", "arguments": {"scope": "siblings", "message": "Hello from a."}},
                {"name": "write_agent", "arguments": {"agent_id": "a", "message": "Talking to myself."}},
            ]
        },
        *({"text": f"DONE {n}"} for n in range(4)),
    )
    await session.rpc.tasks.start_agent(
        TasksStartAgentRequest(agent_type="general-purpose", prompt="Greet your siblings.", name="a", description="A")
    )

    def of_agent(prompt: str) -> list[dict]:
        return [r for r in ctx.fake.requests() if _after_datetime(user_texts(r)[0]) == prompt]

    await wait_for(
        lambda: len(of_agent("Greet your siblings.")) == 2 and len(of_agent("Wait for your sibling.")) == 2,
        30,
        "a's second call and b's resumed call",
    )
    a_first, a_second = of_agent("Greet your siblings.")
    names = tool_names(a_first)
    assert "write_agent" in names and "list_agents" in names, names
    assert "read_agent" not in names and "task" not in names, names

    listed, delivered, to_self = (r["content"] for r in tool_results(a_second))
    assert listed.startswith("Background agents:\n- b (general-purpose): B [") and "- a (" not in listed, listed
    assert delivered == "Message delivered to agent b. Use read_agent to check the agent's response.", delivered
    assert "cannot send a message to itself" in to_self, to_self

    # B was idle: the message is its next turn, after its first answer.
    b_resumed = of_agent("Wait for your sibling.")[1]
    assert user_texts(b_resumed)[-1] == "Hello from a.", user_texts(b_resumed)
    assert [m.get("content") for m in request_messages(b_resumed) if m["role"] == "assistant"] == ["B READY"]

    # The session itself still offers read_agent, and its agents are its children, not siblings.
    main = [r for r in ctx.fake.requests() if "task" in tool_names(r)]
    assert main and all("read_agent" in tool_names(r) for r in main)
    await session.disconnect()


def _holding_tool(calls: list, release: asyncio.Event) -> Tool:
    """An SDK tool whose handler waits until the test releases it."""

    async def hold(invocation: ToolInvocation) -> ToolResult:
        calls.append(invocation)
        await release.wait()
        return ToolResult(text_result_for_llm="released")

    return Tool(
        name="hold", description="Holds.", parameters={"type": "object", "properties": {"n": {"type": "string"}}},
        handler=hold, skip_permission=True,
    )


async def test_waiting_sdk_tool_calls_are_listed_with_their_agent_and_background_agents_cancel_at_once(
    ctx: Ctx, client
):
    """Issue 34: `session.tools.listPendingRequests` and `session.cancelAllBackgroundAgents`, as
    1.0.102 answers them: the main turn's waiting call, then two background agents' (each named
    by its agent), all of them stopped by one call while the main loop goes on."""
    calls: list = []
    release = asyncio.Event()
    ctx.fake.replies({"tool_calls": [{"name": "hold", "arguments": {"n": "main"}}]}, {"text": "MAIN DONE"})
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all,
                                          tools=[_holding_tool(calls, release)])
    events = record_events(session)
    assert (await session.rpc.tools.list_pending_requests()).items == []
    assert await session.rpc.cancel_all_background_agents() == 0

    await session.send("start")
    await wait_for(lambda: len(calls) == 1, 30, "the main turn's call")
    [waiting] = (await session.rpc.tools.list_pending_requests()).items
    assert (waiting.tool_name, waiting.arguments, waiting.agent_id) == ("hold", {"n": "main"}, None)
    assert waiting.tool_call_id == calls[0].tool_call_id and waiting.request_id
    release.set()
    await wait_for(lambda: any(e.data.content == "MAIN DONE" for e in events.of("assistant.message")), 30,
                   "the main turn's end")
    assert (await session.rpc.tools.list_pending_requests()).items == []

    # Two background agents, each held in the same tool.
    release.clear()
    ctx.fake.replies({"tool_calls": [{"name": "hold", "arguments": {"n": "agent"}}]},
                     {"tool_calls": [{"name": "hold", "arguments": {"n": "agent"}}]})
    for name in ("a1", "a2"):
        await session.rpc.tasks.start_agent(
            TasksStartAgentRequest(agent_type="general-purpose", prompt="Hold.", name=name, description=name))
    await wait_for(lambda: len(calls) == 3, 30, "both agents' calls")
    listed = (await session.rpc.tools.list_pending_requests()).items
    assert sorted(i.agent_id for i in listed) == ["a1", "a2"], listed
    assert {c.tool_call_id for c in calls[1:]} == {i.tool_call_id for i in listed}

    assert await session.rpc.cancel_all_background_agents() == 2
    statuses = {t.id: t.status.value for t in (await session.rpc.tasks.list()).tasks}
    assert statuses == {"a1": "cancelled", "a2": "cancelled"}, statuses
    for _ in range(100):
        if (await session.rpc.tools.list_pending_requests()).items == []:
            break
        await asyncio.sleep(0.05)
    assert (await session.rpc.tools.list_pending_requests()).items == []
    assert await session.rpc.cancel_all_background_agents() == 0
    release.set()

    # The main loop was not interrupted: it still answers.
    ctx.fake.replies({"text": "STILL HERE"})
    answer = await session.send_and_wait("still there?", timeout=30)
    assert answer is not None and answer.data.content == "STILL HERE"
