"""Issue 11: what several clients bring to one session (their tools, slash commands and
elicitation handlers, each removed with its client), slash commands (`session.commands.*`),
UI requests a client answers (`session.ui.*`), the user's shell (`session.shell.*`) and the
`session.updated` lifecycle notification, through the official SDK."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel, Field

from copilot import define_tool
from copilot.generated.rpc import (
    CommandsHandlePendingCommandRequest,
    CommandsInvokeRequest,
    CommandsRespondToQueuedCommandRequest,
    ModeSetRequest,
    QueuedCommandHandled,
    QueuedCommandNotHandled,
    SessionMode,
    ExecuteCommandParams,
    SessionCommandsListRequest,
    ShellCancelUserRequestedRequest,
    ShellExecRequest,
    ShellExecuteUserRequestedRequest,
    ShellKillRequest,
    UIElicitationResponse,
    UIElicitationResponseAction,
    UIEphemeralQueryRequest,
    UIHandlePendingElicitationRequest,
    UIUnregisterDirectAutoModeSwitchHandlerRequest,
)
from copilot.session import CommandDefinition, PermissionHandler

from conftest import Ctx, raw_request, record_events, tool_names, user_texts, wait_for

APPROVE = PermissionHandler.approve_all


class EchoParams(BaseModel):
    input: str = Field(description="Text to echo")


async def test_each_client_brings_its_own_tools_commands_and_elicitation(ctx: Ctx, make_client):
    owner = make_client("tcp", connection_token="tok")
    await owner.start()
    session1 = await owner.create_session(on_permission_request=APPROVE, tools=[_tool("stable_tool", "STABLE")])
    assert session1.capabilities["ui"]["elicitation"] is False
    events = record_events(session1)

    executed = []

    async def deploy(context):
        executed.append(context)

    joiner = make_client(uri=f"127.0.0.1:{owner.runtime_port}", connection_token="tok")
    await joiner.start()
    session2 = await joiner.resume_session(
        session1.session_id,
        on_permission_request=APPROVE,
        tools=[_tool("ephemeral_tool", "EPHEMERAL")],
        commands=[CommandDefinition(name="deploy", description="Deploy the app", handler=deploy)],
        on_elicitation_request=lambda _ctx: {"action": "accept", "content": {"answer": "yes"}},
    )
    assert session2.capabilities["ui"]["elicitation"] is True
    await wait_for(lambda: events.has("commands.changed") and events.has("capabilities.changed"), what="changes")
    assert [c.name for c in events.of("commands.changed")[-1].data.commands] == ["deploy"]
    assert session1.capabilities["ui"]["elicitation"] is True

    # Both clients' tools are offered; each call is answered by the client that registered it.
    ctx.fake.replies(
        {"tool_calls": [{"name": "ephemeral_tool", "arguments": {"input": "a"}}]},
        {"text": "done"},
    )
    reply = await session1.send_and_wait("use both", timeout=30)
    assert reply is not None
    first = ctx.fake.requests()[0]
    assert {"stable_tool", "ephemeral_tool"} <= set(tool_names(first))
    results = [m for m in ctx.fake.requests()[1]["body"]["messages"] if m.get("role") == "tool"]
    assert results and "EPHEMERAL_a" in str(results[-1]["content"])

    # A command the joiner registered runs in the joiner.
    listed = await session1.rpc.commands.list(
        SessionCommandsListRequest(include_builtins=False, include_client_commands=True, include_skills=False)
    )
    assert [(c.name, c.kind.value) for c in listed.commands] == [("deploy", "client")]
    result = await session1.rpc.commands.execute(ExecuteCommandParams(command_name="deploy", args="prod"))
    assert result.error is None
    assert [(c.command, c.command_name, c.args) for c in executed] == [("/deploy prod", "deploy", "prod")]
    unknown = await session1.rpc.commands.execute(ExecuteCommandParams(command_name="nope", args=""))
    assert unknown.error and "nope" in unknown.error

    # An elicitation asked through the owner is answered by the joiner's handler.
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    params = {"sessionId": session1.session_id, "message": "Ready?", "requestedSchema": schema}
    answer = await raw_request(owner, "session.ui.elicitation", params)
    assert answer == {"action": "accept", "content": {"answer": "yes"}}

    # The joiner leaves: its tool, command and elicitation go with it, and the model is told.
    await joiner.force_stop()
    await wait_for(
        lambda: any(e.data.ui and e.data.ui.elicitation is False for e in events.of("capabilities.changed")),
        what="elicitation to go away",
    )
    assert session1.capabilities["ui"]["elicitation"] is False
    ctx.fake.replies({"text": "only stable now"})
    await session1.send_and_wait("what is left?", timeout=30)
    last = ctx.fake.requests()[-1]
    assert "ephemeral_tool" not in tool_names(last) and "stable_tool" in tool_names(last)
    assert "Tools no longer available: ephemeral_tool" in user_texts(last)[-1]
    listed = await session1.rpc.commands.list(SessionCommandsListRequest(include_builtins=False))
    assert listed.commands == []


def _tool(name: str, prefix: str):
    @define_tool(name, description=f"Returns {prefix}_<input>")
    def handler(params: EchoParams) -> str:
        return f"{prefix}_{params.input}"

    return handler


async def test_builtin_slash_commands_change_the_session_as_the_original_does(ctx: Ctx, client):
    sub = ctx.work_dir / "sub"
    sub.mkdir()
    session = await client.create_session(on_permission_request=APPROVE, working_directory=str(ctx.work_dir))
    builtins = await session.rpc.commands.list(SessionCommandsListRequest(include_client_commands=False))
    by_name = {c.name: c for c in builtins.commands}
    assert all(c.kind.value == "builtin" for c in builtins.commands)
    assert {"allow-all", "permissions", "autopilot", "cwd", "model", "plan", "rename", "review"} <= set(by_name)
    assert by_name["allow-all"].aliases == ["yolo"] and by_name["cwd"].aliases == ["cd"]

    async def invoke(name: str, input: str | None = None):
        return await session.rpc.commands.invoke(CommandsInvokeRequest(name=name, input=input))

    assert (await invoke("permissions", "show")).text.startswith("Permission policy: Manual Approval")
    assert "now enabled" in (await invoke("yolo", "on")).text
    assert (await invoke("/permissions")).text.startswith("Permission policy: Allow All")
    assert "disabled" in (await invoke("permissions", "default")).text
    with pytest.raises(Exception, match='Invalid argument "maybe". Usage: /allow-all \\[on\\|off\\|show\\]'):
        await invoke("allow-all", "maybe")

    assert (await invoke("autopilot", "on")).message == "Switched to autopilot mode."
    assert (await session.rpc.mode.get()).value == "autopilot"
    assert (await invoke("goal", "off")).message == "Switched to interactive mode."
    assert (await session.rpc.mode.get()).value == "interactive"
    objective = await invoke("autopilot", "make the tests pass")
    assert objective.kind == "agent-prompt" and objective.mode.value == "autopilot"
    assert objective.display_prompt == "Autopilot objective: make the tests pass"
    assert "make the tests pass" in objective.prompt
    plan = await invoke("plan", "add a cache")
    assert plan.mode.value == "plan" and plan.prompt.endswith("My request: add a cache")
    review = await invoke("review")
    assert review.display_prompt == "Review: my code changes" and "code-review" in review.prompt

    assert (await invoke("cwd")).text == f"Current working directory: {ctx.work_dir}"
    moved = await invoke("cd", "sub")
    assert moved.message == f"Changed working directory to: {sub}"
    assert (await invoke("cwd")).text == f"Current working directory: {sub}"
    with pytest.raises(Exception, match="Directory does not exist or cannot be accessed: nowhere"):
        await invoke("cd", "nowhere")

    assert (await invoke("rename", "Cache work")).text == "Session renamed to: Cache work"
    assert (await session.rpc.name.get()).name == "Cache work"
    with pytest.raises(Exception, match="Usage: /rename <name>"):
        await invoke("rename")
    assert (await invoke("model", "no-such-model")).text.startswith('Model "no-such-model" is unsupported.')
    with pytest.raises(Exception, match="Unknown slash command: /help"):
        await invoke("help")


async def test_commands_queue_and_pending_answers(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    events = record_events(session)

    # Queued commands run one at a time: the first is offered at once, the rest wait.
    # (Raw: this SDK version expects a `queueId` the schema Skipper serves does not have.)
    enqueue = {"sessionId": session.session_id, "command": "/first"}
    assert (await raw_request(client, "session.commands.enqueue", enqueue))["queued"] is True
    await wait_for(lambda: events.has("command.queued"), what="command.queued")
    first = events.of("command.queued")[0].data
    assert first.command == "/first"
    await raw_request(client, "session.commands.enqueue", {**enqueue, "command": "/second"})
    pending = await session.rpc.queue.pending_items()
    assert [(i.kind.value, i.display_text) for i in pending.items] == [("command", "/second")]
    unknown = CommandsRespondToQueuedCommandRequest(request_id="missing", result=QueuedCommandNotHandled())
    assert (await session.rpc.commands.respond_to_queued_command(unknown)).success is False
    done = CommandsRespondToQueuedCommandRequest(request_id=first.request_id, result=QueuedCommandHandled())
    assert (await session.rpc.commands.respond_to_queued_command(done)).success is True
    await wait_for(lambda: len(events.of("command.queued")) == 2, what="the second command")
    assert events.of("command.queued")[1].data.command == "/second"
    assert (await session.rpc.queue.pending_items()).items == []

    # Answers for requests nobody is waiting for.
    missing = CommandsHandlePendingCommandRequest(request_id="missing", error="x")
    assert (await session.rpc.commands.handle_pending_command(missing)).success is True
    elicitation = UIHandlePendingElicitationRequest(request_id="missing", result=UIElicitationResponse(action=UIElicitationResponseAction.CANCEL))
    assert (await session.rpc.ui.handle_pending_elicitation(elicitation)).success is False
    handle = (await session.rpc.ui.register_direct_auto_mode_switch_handler()).handle
    unregister = UIUnregisterDirectAutoModeSwitchHandlerRequest(handle=handle)
    assert (await session.rpc.ui.unregister_direct_auto_mode_switch_handler(unregister)).unregistered is True
    assert (await session.rpc.ui.unregister_direct_auto_mode_switch_handler(unregister)).unregistered is False


async def test_ephemeral_query_leaves_the_conversation_alone(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "Blue."})
    result = await session.rpc.ui.ephemeral_query(UIEphemeralQueryRequest(question="Sky colour?"))
    assert result.answer == "Blue."
    assert user_texts(ctx.fake.requests()[0])[-1] == "Sky colour?"
    assert [e for e in await session.get_events() if e.type.value == "user.message"] == []


async def test_user_shell_commands_run_and_stop(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    marker = ctx.work_dir / "marker.txt"
    started = await session.rpc.shell.exec(ShellExecRequest(command=f"echo hi > {marker}; sleep 30"))
    await wait_for(marker.exists, what="the command to start")
    assert (await session.rpc.shell.kill(ShellKillRequest(process_id=started.process_id))).killed is True

    ran = await session.rpc.shell.execute_user_requested(
        ShellExecuteUserRequestedRequest(request_id="r1", command="echo out; exit 4")
    )
    assert (ran.success, ran.exit_code, ran.output.strip()) == (False, 4, "out")
    assert ran.tool_call_id

    missing = ShellCancelUserRequestedRequest(request_id="missing")
    assert (await session.rpc.shell.cancel_user_requested(missing)).cancelled is False
    running = asyncio.ensure_future(
        session.rpc.shell.execute_user_requested(ShellExecuteUserRequestedRequest(request_id="r2", command="sleep 30"))
    )

    async def cancelled() -> bool:
        return (await session.rpc.shell.cancel_user_requested(ShellCancelUserRequestedRequest(request_id="r2"))).cancelled

    deadline = asyncio.get_running_loop().time() + 10
    while not await cancelled():
        assert asyncio.get_running_loop().time() < deadline, "never cancellable"
        await asyncio.sleep(0.05)
    assert (await asyncio.wait_for(running, 20)).success is False


async def test_session_updated_follows_persisted_activity(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    seen = []
    client.on_lifecycle(seen.append)
    await session.rpc.mode.set(ModeSetRequest(mode=SessionMode.PLAN))
    await wait_for(
        lambda: any(e.type == "session.updated" and e.session_id == session.session_id for e in seen),
        what="session.updated",
    )


async def test_compact_and_context_commands_work_on_the_conversation(ctx: Ctx, client):
    """`/context` shows what fills the context window; `/compact` summarizes the conversation
    (with the user's focus), and says so when there is nothing to compact."""
    ctx.fake.replies({"text": "hello"}, {"text": "<summary>we said hello</summary>"})
    session = await client.create_session(on_permission_request=APPROVE, working_directory=str(ctx.work_dir))
    names = [c.name for c in (await session.rpc.commands.list(SessionCommandsListRequest(include_client_commands=False))).commands]
    assert names.index("compact") < names.index("context") < names.index("cwd"), names

    async def invoke(name: str, input: str | None = None):
        return await session.rpc.commands.invoke(CommandsInvokeRequest(name=name, input=input))

    assert "Send a message first" in (await invoke("context")).text
    with pytest.raises(Exception, match="Nothing to compact."):
        await invoke("compact")
    await session.send_and_wait("hi", timeout=30)
    shown = (await invoke("/context")).text
    assert shown.startswith("Context usage: ") and "System prompt" in shown and "Messages" in shown, shown
    compacted = await invoke("compact", "keep the greeting")
    assert compacted.text.startswith("Compacted conversation history and removed "), compacted.text
    summary_request = ctx.fake.requests()[-1]
    assert "keep the greeting" in json.dumps(summary_request), "the focus reaches the summary"
