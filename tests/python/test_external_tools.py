"""External (SDK-defined) tools: definitions in the model request, invocation, results.

``session.create {tools}`` → the model's tool list; a call → ``external_tool.requested`` →
the SDK's handler → ``session.tools.handlePendingToolCall``. Replayed recordings pin the tool
result text the model sees.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel, Field

from copilot import define_tool
from copilot.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.session import PermissionHandler, PermissionNoResult
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import Ctx, record_events, snapshot_final_reply, tool_names, tool_results, wait_for


def _tool_defs(request: dict) -> dict[str, dict]:
    return {
        t["function"]["name"]: t["function"]
        for t in request["body"].get("tools") or []
        if isinstance(t, dict) and "function" in t
    }


def _error_code_and_message(data) -> tuple[str | None, str]:
    error = data.error
    if error is None:
        return None, ""
    if isinstance(error, str):
        return error, error
    return getattr(error, "code", None), getattr(error, "message", None) or ""


# Parameter models live at module level: ``define_tool`` resolves the (postponed)
# annotations of the handler against the module's globals.
class EncryptParams(BaseModel):
    input: str = Field(description="String to encrypt")


class GrepParams(BaseModel):
    query: str = Field(description="Search query")


class LookupParams(BaseModel):
    id: str = Field(description="ID to look up")


class DbQuery(BaseModel):
    table: str
    ids: list[int]
    sortAscending: bool


class DbQueryParams(BaseModel):
    query: DbQuery


class City(BaseModel):
    countryId: int
    cityName: str
    population: int


async def test_custom_tool_invoked_with_args(ctx: Ctx, client):
    snapshot = "tools/invokes_custom_tool.yaml"
    ctx.load(snapshot)
    invocations: list[ToolInvocation] = []

    @define_tool("encrypt_string", description="Encrypts a string")
    def encrypt_string(params: EncryptParams, invocation: ToolInvocation) -> str:
        invocations.append(invocation)
        return params.input.upper()

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, tools=[encrypt_string]
    )
    events = record_events(session)
    response = await session.send_and_wait(
        "Use encrypt_string to encrypt this string: Hello", timeout=30
    )
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert len(invocations) == 1
    inv = invocations[0]
    assert inv.arguments == {"input": "Hello"}
    assert inv.session_id == session.session_id
    assert inv.tool_name == "encrypt_string" and inv.tool_call_id

    first = ctx.fake.requests()[0]
    defs = _tool_defs(first)
    assert tool_names(first)[-1] == "encrypt_string", "external tools come after the built-ins"
    assert defs["encrypt_string"]["description"] == "Encrypts a string"
    params = defs["encrypt_string"]["parameters"]
    assert params["properties"]["input"]["description"] == "String to encrypt"
    assert params.get("required") == ["input"]
    assert [r["content"] for r in tool_results(ctx.fake.requests()[-1])] == ["HELLO"]

    types = events.types()
    for t in ("tool.execution_start", "external_tool.requested", "tool.execution_complete"):
        assert t in types, types
    assert types.index("external_tool.requested") < types.index("tool.execution_complete")
    requested = events.of("external_tool.requested")[0].data
    assert requested.tool_name == "encrypt_string" and requested.arguments == {"input": "Hello"}
    done = events.of("tool.execution_complete")[0].data
    assert done.success is True and done.tool_call_id == inv.tool_call_id


async def test_custom_tool_error_text(ctx: Ctx, client):
    snapshot = "tools/handles_tool_calling_errors.yaml"
    ctx.load(snapshot)

    @define_tool("get_user_location", description="Gets the user's location")
    def get_user_location() -> str:
        raise Exception("Melbourne")

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, tools=[get_user_location]
    )
    events = record_events(session)
    response = await session.send_and_wait(
        "What is my location? If you can't find out, just say 'unknown'.", timeout=30
    )
    assert response is not None and response.data.content == "Your location is unknown."
    results = tool_results(ctx.fake.requests()[-1])
    assert [r["content"] for r in results] == [
        "Failed to execute `get_user_location` tool with arguments: {} due to error: "
        "Error: Tool execution failed"
    ]
    # The exception text is kept from the model (it may reach the client in the event).
    assert "Melbourne" not in results[0]["content"]
    done = events.of("tool.execution_complete")[0].data
    assert done.success is False
    code, _ = _error_code_and_message(done)
    assert code == "failure", code


async def test_custom_tool_error_text_with_arguments(ctx: Ctx, client):
    ctx.fake.replies(
        {"tool_calls": [{"name": "explode", "arguments": {"city": "Paris", "count": 2}}]},
        {"text": "it failed"},
    )

    def explode(invocation: ToolInvocation) -> ToolResult:
        raise RuntimeError("secret detail")

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[
            Tool(
                name="explode",
                description="Always fails",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "count": {"type": "integer"}},
                },
                handler=explode,
            )
        ],
    )
    events = record_events(session)
    response = await session.send_and_wait("call explode", timeout=30)
    assert response is not None and response.data.content == "it failed"
    # Arguments as compact JSON in call order; the exception text stays out.
    results = [r["content"] for r in tool_results(ctx.fake.requests()[-1])]
    assert results == [
        'Failed to execute `explode` tool with arguments: {"city":"Paris","count":2} due to '
        "error: Error: Tool execution failed"
    ], results
    done = events.of("tool.execution_complete")
    assert len(done) == 1 and done[0].data.success is False
    code, _ = _error_code_and_message(done[0].data)
    assert code == "failure", code


async def test_custom_tool_overrides_built_in(ctx: Ctx, client):
    snapshot = "tools/overrides_built_in_tool_with_custom_tool.yaml"
    ctx.load(snapshot)

    @define_tool(
        "grep",
        description="A custom grep implementation that overrides the built-in",
        overrides_built_in_tool=True,
    )
    def custom_grep(params: GrepParams, invocation: ToolInvocation) -> str:
        return f"CUSTOM_GREP_RESULT: {params.query}"

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, tools=[custom_grep]
    )
    response = await session.send_and_wait("Use grep to search for the word 'hello'", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    first = ctx.fake.requests()[0]
    names = tool_names(first)
    assert names.count("grep") == 1, names
    grep = _tool_defs(first)["grep"]
    assert grep["description"] == "A custom grep implementation that overrides the built-in"
    assert list(grep["parameters"]["properties"]) == ["query"]
    results = [r["content"] for r in tool_results(ctx.fake.requests()[-1])]
    assert results[-1] == "CUSTOM_GREP_RESULT: hello", results


async def test_skip_permission_tool_never_asks(ctx: Ctx, client):
    snapshot = "tools/skippermission_sent_in_tool_definition.yaml"
    ctx.load(snapshot)

    @define_tool(
        "safe_lookup", description="A safe lookup that skips permission", skip_permission=True
    )
    def safe_lookup(params: LookupParams, invocation: ToolInvocation) -> str:
        return f"RESULT: {params.id}"

    asked = []

    def tracking(request, invocation):
        asked.append(request)
        return PermissionNoResult()

    session = await client.create_session(on_permission_request=tracking, tools=[safe_lookup])
    events = record_events(session)
    response = await session.send_and_wait("Use safe_lookup to look up 'test123'", timeout=30)
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert asked == []
    assert not events.has("permission.requested"), events.types()


async def test_custom_tool_permission_request(ctx: Ctx, client):
    snapshot = "tools/invokes_custom_tool_with_permission_handler.yaml"
    ctx.load(snapshot)

    @define_tool("encrypt_string", description="Encrypts a string")
    def encrypt_string(params: EncryptParams, invocation: ToolInvocation) -> str:
        return params.input.upper()

    requests = []

    def handler(request, invocation):
        requests.append(request)
        return PermissionDecisionApproveOnce()

    session = await client.create_session(on_permission_request=handler, tools=[encrypt_string])
    response = await session.send_and_wait(
        "Use encrypt_string to encrypt this string: Hello", timeout=30
    )
    assert response is not None and response.data.content == "The encrypted string is: **HELLO**"
    assert [r.kind for r in requests] == ["custom-tool"], requests
    req = requests[0]
    assert req.tool_name == "encrypt_string"
    assert req.tool_description == "Encrypts a string"
    assert req.args == {"input": "Hello"}
    assert req.tool_call_id


async def test_custom_tool_rejected_by_permission_handler(ctx: Ctx, client):
    ctx.load("tools/denies_custom_tool_when_permission_denied.yaml")
    called = []

    @define_tool("encrypt_string", description="Encrypts a string")
    def encrypt_string(params: EncryptParams, invocation: ToolInvocation) -> str:
        called.append(params.input)
        return params.input.upper()

    session = await client.create_session(
        on_permission_request=lambda req, inv: PermissionDecisionReject(), tools=[encrypt_string]
    )
    try:
        await session.send_and_wait("Use encrypt_string to encrypt this string: Hello", timeout=30)
    finally:
        assert called == [], "a rejected tool must not run"
    assert len(ctx.fake.requests()) == 1


async def test_parallel_custom_tools_in_one_turn(ctx: Ctx, client):
    snapshot = "tools/should_execute_multiple_custom_tools_in_parallel_single_turn.yaml"
    ctx.load(snapshot)
    both_running = asyncio.Event()
    running: list[str] = []

    async def wait_for_sibling(name: str) -> None:
        running.append(name)
        if len(running) == 2:
            both_running.set()
        # Each handler waits for the other one to have started: only concurrent calls finish.
        await asyncio.wait_for(both_running.wait(), timeout=15)

    async def lookup_city(invocation: ToolInvocation) -> ToolResult:
        await wait_for_sibling("city")
        return ToolResult(text_result_for_llm=f"CITY_{invocation.arguments['city'].upper()}")

    async def lookup_country(invocation: ToolInvocation) -> ToolResult:
        await wait_for_sibling("country")
        return ToolResult(text_result_for_llm=f"COUNTRY_{invocation.arguments['country'].upper()}")

    def schema(prop: str) -> dict:
        return {"type": "object", "properties": {prop: {"type": "string"}}, "required": [prop]}

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[
            Tool(
                name="lookup_city",
                description="Looks up city information",
                parameters=schema("city"),
                handler=lookup_city,
            ),
            Tool(
                name="lookup_country",
                description="Looks up country information",
                parameters=schema("country"),
                handler=lookup_country,
            ),
        ],
    )
    response = await session.send_and_wait(
        "Use lookup_city with 'Paris' and lookup_country with 'France' at the same time, then "
        "combine both results in your reply.",
        timeout=30,
    )
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert sorted(running) == ["city", "country"]
    # Results go back in the order of the original tool calls.
    results = [r["content"] for r in tool_results(ctx.fake.requests()[-1])]
    assert results == ["CITY_PARIS", "COUNTRY_FRANCE"], results


async def test_available_and_excluded_tools_filter_the_tool_list(ctx: Ctx, client):
    snapshot = "tools/should_respect_availabletools_and_excludedtools_combined.yaml"
    ctx.load(snapshot)
    excluded_called = []

    def allowed(invocation: ToolInvocation) -> ToolResult:
        return ToolResult(text_result_for_llm=f"ALLOWED_{invocation.arguments['input'].upper()}")

    def excluded(invocation: ToolInvocation) -> ToolResult:
        excluded_called.append(invocation)
        return ToolResult(text_result_for_llm="EXCLUDED")

    schema = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[
            Tool(
                name="allowed_tool",
                description="An allowed tool",
                parameters=schema,
                handler=allowed,
            ),
            Tool(
                name="excluded_tool",
                description="A tool that should be excluded",
                parameters=schema,
                handler=excluded,
            ),
        ],
        available_tools=["allowed_tool", "excluded_tool"],
        excluded_tools=["excluded_tool"],
    )
    response = await session.send_and_wait(
        "Use the allowed_tool with input 'test'. Do NOT use excluded_tool.", timeout=30
    )
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert excluded_called == []
    for req in ctx.fake.requests():
        assert tool_names(req) == ["allowed_tool"], tool_names(req)


async def test_available_tools_restricts_built_ins(ctx: Ctx, client):
    ctx.fake.replies({"text": "a"}, {"text": "b"})
    only = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, available_tools=["view", "edit"]
    )
    await only.send_and_wait("hi", timeout=30)
    without = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, excluded_tools=["bash", "view"]
    )
    await without.send_and_wait("hi", timeout=30)
    first, second = ctx.fake.requests()
    assert sorted(tool_names(first)) == ["edit", "view"], tool_names(first)
    names = tool_names(second)
    assert "bash" not in names and "view" not in names, names
    assert "edit" in names and "grep" in names, names


async def test_rejected_tool_result_ends_the_turn(ctx: Ctx, client):
    ctx.load("tool_results/should_handle_tool_result_with_rejected_resulttype.yaml")
    called = []

    @define_tool("deploy_service", description="Deploys a service")
    def deploy_service(invocation: ToolInvocation) -> ToolResult:
        called.append(True)
        return ToolResult(
            text_result_for_llm=(
                "Deployment rejected: policy violation - production deployments require approval"
            ),
            result_type="rejected",
        )

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, tools=[deploy_service]
    )
    events = record_events(session)
    await session.send(
        "Deploy the service using deploy_service. If it's rejected, tell me it was 'rejected "
        "by policy'."
    )
    await wait_for(lambda: events.has("session.idle"), timeout=30, what="session.idle")
    assert called == [True]
    done = events.of("tool.execution_complete")
    assert len(done) == 1 and done[0].data.success is False
    code, message = _error_code_and_message(done[0].data)
    assert code == "rejected" and "Deployment rejected" in message, (code, message)
    assert not events.has("session.error"), events.types()
    assert len(ctx.fake.requests()) == 1, "a rejected result must not be sent back to the model"
    types = events.types()
    assert (
        types.index("tool.execution_complete")
        < types.index("assistant.turn_end")
        < types.index("session.idle")
    ), types


@pytest.mark.parametrize(
    "snapshot,name,prompt,result,code,reply",
    [
        (
            "tool_results/should_handle_tool_result_with_failure_resulttype.yaml",
            "check_status",
            "Check the status of the service using check_status. If it fails, say 'service is "
            "down'.",
            ToolResult(
                text_result_for_llm="Service unavailable", result_type="failure", error="API timeout"
            ),
            "failure",
            "service is down",
        ),
        (
            "tool_results/should_handle_tool_result_with_denied_resulttype.yaml",
            "access_secret",
            "Use access_secret to get the API key. If access is denied, tell me it was 'access "
            "denied'.",
            ToolResult(
                text_result_for_llm="Access denied: insufficient permissions to read secrets",
                result_type="denied",
            ),
            "denied",
            "The access to the secret was **access denied**.",
        ),
    ],
    ids=["failure", "denied"],
)
async def test_failure_result_objects(
    ctx: Ctx, client, snapshot, name, prompt, result, code, reply
):
    ctx.load(snapshot)

    def handler(invocation: ToolInvocation) -> ToolResult:
        return result

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[
            Tool(
                name=name,
                description="test tool",
                parameters={"type": "object", "properties": {}},
                handler=handler,
            )
        ],
    )
    events = record_events(session)
    response = await session.send_and_wait(prompt, timeout=30)
    assert response is not None and response.data.content == reply
    results = [r["content"] for r in tool_results(ctx.fake.requests()[-1])]
    assert results == [result.text_result_for_llm], results
    done = events.of("tool.execution_complete")
    assert len(done) == 1 and done[0].data.success is False
    got_code, message = _error_code_and_message(done[0].data)
    assert got_code == code, (got_code, message)
    assert message in (result.error, result.text_result_for_llm), message


async def test_complex_argument_and_result_types(ctx: Ctx, client):
    snapshot = "tools/can_receive_and_return_complex_types.yaml"
    ctx.load(snapshot)

    received = []

    @define_tool("db_query", description="Performs a database query")
    def db_query(params: DbQueryParams, invocation: ToolInvocation) -> list[City]:
        received.append(params)
        return [
            City(countryId=19, cityName="Passos", population=135460),
            City(countryId=12, cityName="San Lorenzo", population=204356),
        ]

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, tools=[db_query]
    )
    response = await session.send_and_wait(
        "Perform a DB query for the 'cities' table using IDs 12 and 19, sorting ascending. Reply "
        "only with lines of the form: [cityname] [population]",
        timeout=30,
    )
    assert response is not None and response.data.content == snapshot_final_reply(snapshot)
    assert received[0].query.ids == [12, 19] and received[0].query.sortAscending is True
    content = tool_results(ctx.fake.requests()[-1])[0]["content"]
    assert json.loads(content)[0]["cityName"] == "Passos"
