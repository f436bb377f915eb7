"""`session.set_tools()` (→ `session.tools.set`): the session's SDK tools are replaced and the
model sees the new list from its next request; the new handler answers calls."""

from __future__ import annotations

from copilot.session import PermissionHandler
from copilot.tools import Tool, ToolInvocation, ToolResult

from conftest import Ctx, tool_names, tool_results

SCHEMA = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}


async def test_set_tools_replaces_the_tool_list(ctx: Ctx, client):
    ctx.fake.replies(
        {"text": "first"},
        {"tool_calls": [{"name": "new_tool", "arguments": {"input": "x"}}]},
        {"text": "second"},
    )

    def old(invocation: ToolInvocation) -> ToolResult:
        return ToolResult(text_result_for_llm="OLD")

    def new(invocation: ToolInvocation) -> ToolResult:
        return ToolResult(text_result_for_llm=f"NEW_{invocation.arguments['input']}")

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        tools=[Tool(name="old_tool", description="the old tool", parameters=SCHEMA, handler=old)],
    )
    await session.send_and_wait("hello", timeout=30)
    await session.set_tools([Tool(name="new_tool", description="the new tool", parameters=SCHEMA, handler=new)])
    reply = await session.send_and_wait("use the new tool", timeout=30)
    assert reply is not None and reply.data.content == "second"

    requests = ctx.fake.requests()
    assert len(requests) == 3
    assert "old_tool" in tool_names(requests[0]) and "new_tool" not in tool_names(requests[0])
    assert "new_tool" in tool_names(requests[1]) and "old_tool" not in tool_names(requests[1])
    results = tool_results(requests[2])
    assert [r["content"] for r in results] == ["NEW_x"], results
