"""Issue 11, `session.name.*` (a client names a session; automatic names give way to it; the name
survives a new process and shows in the session list) and `session.suspend`."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, Field

from copilot import define_tool
from copilot.generated.rpc import NameSetAutoRequest, NameSetRequest
from copilot.rpc import PermissionDecisionApproveOnce
from copilot.session import PermissionHandler

from conftest import Ctx, wait_for

APPROVE = PermissionHandler.approve_all


def titles(events: list) -> list[str]:
    return [e.data.title for e in events if e.type.value == "session.title_changed"]


async def test_names_set_auto_and_get(ctx: Ctx, make_client):
    client = make_client()
    await client.start()
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    events: list = []
    session.on(events.append)
    assert (await session.rpc.name.get()).name is None

    for blank in ["", "   ", "\t\n  \r"]:
        with pytest.raises(Exception, match="empty"):
            await session.rpc.name.set(NameSetRequest(name=blank))

    assert (await session.rpc.name.set_auto(NameSetAutoRequest(summary="  Auto name  "))).applied is True
    assert (await session.rpc.name.get()).name == "Auto name"
    await session.rpc.name.set(NameSetRequest(name="  Chosen  "))
    assert (await session.rpc.name.get()).name == "Chosen"
    assert (await session.rpc.name.set_auto(NameSetAutoRequest(summary="Ignored"))).applied is False
    await wait_for(lambda: titles(events) == ["Auto name", "Chosen"], 5, "two title changes")

    # The first prompt no longer renames a named session.
    ctx.fake.replies({"text": "Hi."})
    await session.send_and_wait("Say hi", timeout=30)
    assert titles(events) == ["Auto name", "Chosen"]
    listed = {s.session_id: s for s in await client.list_sessions()}
    assert listed[sid].summary == "Chosen"
    await session.disconnect()
    await client.stop()

    other = make_client()
    await other.start()
    try:
        resumed = await other.resume_session(sid, on_permission_request=APPROVE)
        assert (await resumed.rpc.name.get()).name == "Chosen"
        assert (await resumed.rpc.name.set_auto(NameSetAutoRequest(summary="Later"))).applied is False
    finally:
        await other.stop()


async def test_an_unnamed_session_is_called_by_its_first_prompt(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ctx.fake.replies({"text": "Hi."})
    await session.send_and_wait("Say hi", timeout=30)
    assert (await session.rpc.name.get()).name == "Say hi"


class ValueParams(BaseModel):
    value: str = Field(description="A value")


async def test_suspend_stops_a_turn_waiting_for_permission(ctx: Ctx, client):
    ran: list[str] = []
    asked = asyncio.Event()
    release = asyncio.get_running_loop().create_future()

    @define_tool("transform_value", description="Transforms a value")
    def transform_value(params: ValueParams) -> str:
        ran.append(params.value)
        return params.value.upper()

    async def on_permission(request, _invocation):
        asked.set()
        return await release

    session = await client.create_session(on_permission_request=on_permission, tools=[transform_value])
    events: list = []
    session.on(events.append)
    ctx.fake.replies({"tool_calls": [{"name": "transform_value", "arguments": {"value": "omega"}}]}, {"text": "later"})
    await session.send("Transform omega")
    await asyncio.wait_for(asked.wait(), 10)
    await session.rpc.suspend()
    await wait_for(lambda: any(e.type.value == "session.idle" for e in events), 10, "idle after suspend")
    release.set_result(PermissionDecisionApproveOnce())
    await asyncio.sleep(0.2)
    assert ran == [], "a suspended turn must not run the tool"
    assert any(e.type.value == "abort" for e in events)
    # The session stays usable (and resumable): the next message runs normally.
    answer = await session.send_and_wait("Anything else?", timeout=30)
    assert answer.data.content == "later"
