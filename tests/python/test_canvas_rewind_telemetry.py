"""Issue 11: canvases an SDK client provides (`session.canvas.*`, routed to the providing client
as `canvas.open` / `canvas.close` / `canvas.action.invoke`), rewinds that put back the files
later turns changed (`session.history.listRewindPoints` / `previewRewind` / `rewind`), and
forwarded GitHub telemetry (`gitHubTelemetry.event`), through the official SDK."""

from __future__ import annotations

import pytest

from copilot import CanvasAction, CanvasDeclaration, CanvasHandler
from copilot.generated.rpc import (
    CanvasActionInvokeRequest,
    CanvasCloseRequest,
    CanvasOpenRequest,
    CanvasProviderOpenResult,
    HistoryPreviewRewindRequest,
    HistoryRewindMode,
    HistoryRewindRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, record_events, wait_for

APPROVE = PermissionHandler.approve_all


class CounterCanvas(CanvasHandler):
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    async def on_open(self, ctx):
        self.calls.append(("open", ctx))
        start = (ctx.input or {}).get("start", 0)
        return CanvasProviderOpenResult(url=f"https://canvas.test/counter?start={start}", title="Counter", status="ready")

    async def on_close(self, ctx) -> None:
        self.calls.append(("close", ctx))

    async def on_action(self, ctx):
        self.calls.append(("action", ctx))
        if ctx.action_name == "explode":
            raise RuntimeError("the counter exploded")
        return {"value": (ctx.input or {}).get("by", 1) + 41}


def counter_declaration(actions=("increment", "explode")) -> CanvasDeclaration:
    return CanvasDeclaration(
        id="counter",
        display_name="Counter",
        description="Counts things",
        input_schema={"type": "object", "properties": {"start": {"type": "number"}}},
        actions=[CanvasAction(name=name, description=f"{name} the counter") for name in actions],
    )


async def test_canvases_are_listed_opened_invoked_and_closed_through_their_provider(ctx: Ctx, client):
    handler = CounterCanvas()
    session = await client.create_session(
        on_permission_request=APPROVE, canvases=[counter_declaration()], canvas_handler=handler
    )
    events = record_events(session)

    listed = (await session.rpc.canvas.list()).canvases
    assert [(c.canvas_id, c.display_name, c.description) for c in listed] == [("counter", "Counter", "Counts things")]
    assert listed[0].extension_id.startswith("connection:")
    assert [a.name for a in listed[0].actions] == ["increment", "explode"]

    opened = await session.rpc.canvas.open(CanvasOpenRequest(canvas_id="counter", instance_id="c-1", input={"start": 7}))
    assert opened.url == "https://canvas.test/counter?start=7"
    assert (opened.title, opened.status, opened.instance_id) == ("Counter", "ready", "c-1")
    kind, request = handler.calls[0]
    assert kind == "open" and request.instance_id == "c-1" and request.input == {"start": 7}
    assert request.session_id == session.session_id and request.extension_id == listed[0].extension_id
    assert request.session.working_directory == str(ctx.work_dir)
    await wait_for(lambda: events.has("session.canvas.opened"), what="session.canvas.opened")
    assert [c.instance_id for c in (await session.rpc.canvas.list_open()).open_canvases] == ["c-1"]

    result = await session.rpc.canvas.action.invoke(
        CanvasActionInvokeRequest(instance_id="c-1", action_name="increment", input={"by": 1})
    )
    assert result == {"result": {"value": 42}}
    assert handler.calls[-1][1].canvas_id == "counter"

    # The provider's failure comes back as the call's error; an undeclared action never
    # reaches the provider.
    with pytest.raises(Exception, match="the counter exploded"):
        await session.rpc.canvas.action.invoke(CanvasActionInvokeRequest(instance_id="c-1", action_name="explode"))
    calls_before = len(handler.calls)
    with pytest.raises(Exception, match="Unknown action"):
        await session.rpc.canvas.action.invoke(CanvasActionInvokeRequest(instance_id="c-1", action_name="reset"))
    assert len(handler.calls) == calls_before

    await session.rpc.canvas.close(CanvasCloseRequest(instance_id="c-1"))
    assert handler.calls[-1][0] == "close" and handler.calls[-1][1].instance_id == "c-1"
    assert (await session.rpc.canvas.list_open()).open_canvases == []
    await wait_for(lambda: events.has("session.canvas.closed"), what="session.canvas.closed")

    # Closed instances and unknown canvases are refused with the reason.
    with pytest.raises(Exception, match="not open"):
        await session.rpc.canvas.close(CanvasCloseRequest(instance_id="c-1"))
    with pytest.raises(Exception, match='No canvas matches canvasId "chart"'):
        await session.rpc.canvas.open(CanvasOpenRequest(canvas_id="chart", instance_id="c-2"))


async def test_reserved_canvas_action_names_are_refused_at_create(client):
    with pytest.raises(Exception, match="reserved"):
        await client.create_session(
            on_permission_request=APPROVE,
            canvases=[counter_declaration(actions=("canvas.open",))],
            canvas_handler=CounterCanvas(),
        )


async def test_a_session_without_canvases_lists_none(client):
    session = await client.create_session(on_permission_request=APPROVE)
    assert (await session.rpc.canvas.list()).canvases == []
    assert (await session.rpc.canvas.list_open()).open_canvases == []


async def test_rewind_restores_files_and_truncates_the_conversation(ctx: Ctx, client):
    edited = ctx.work_dir / "notes.txt"
    edited.write_text("line one\nline two\n")
    created = ctx.work_dir / "fresh.txt"
    ctx.fake.replies(
        {"tool_calls": [{"name": "create", "arguments": {"path": str(created), "file_text": "brand new\n"}}]},
        {"text": "CREATED"},
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {"path": str(edited), "old_str": "line two", "new_str": "line 2\nline three"},
                }
            ]
        },
        {"text": "EDITED"},
    )
    session = await client.create_session(on_permission_request=APPROVE, enable_file_change_tracking=True)
    assert (await session.send_and_wait("create it", timeout=30)).data.content == "CREATED"
    assert (await session.send_and_wait("edit it", timeout=30)).data.content == "EDITED"
    assert created.read_text() == "brand new\n"
    assert edited.read_text() == "line one\nline 2\nline three\n"

    listed = await session.rpc.history.list_rewind_points()
    assert listed.file_change_tracking_enabled is True and listed.unavailable_reason is None
    assert [p.user_message for p in listed.points] == ["edit it", "create it"]
    latest, first = listed.points
    assert (latest.file_count, latest.lines_added, latest.lines_removed) == (1, 2, 1)
    assert first.file_count == 2 and first.can_restore_files

    preview = await session.rpc.history.preview_rewind(HistoryPreviewRewindRequest(event_id=first.event_id))
    changes = {f.path: f.change_type.value for f in preview.files}
    assert preview.available and changes == {str(created): "created", str(edited): "modified"}

    before = await session.get_events()
    rewound = await session.rpc.history.rewind(
        HistoryRewindRequest(event_id=first.event_id, mode=HistoryRewindMode.CONVERSATION_AND_FILES)
    )
    assert rewound.outcome.value == "success"
    assert sorted(rewound.restored_files) == sorted([str(created), str(edited)])
    assert not created.exists()
    assert edited.read_text() == "line one\nline two\n"
    after = await session.get_events()
    # The log also holds entries `get_events` leaves out (usage records).
    assert rewound.events_removed >= len(before) - len(after) > 0
    assert all(str(e.id) != first.event_id for e in after)
    assert (await session.rpc.history.list_rewind_points()).points == []


async def test_rewind_without_tracking_says_so_and_conversation_only_keeps_files(ctx: Ctx, client):
    created = ctx.work_dir / "kept.txt"
    ctx.fake.replies(
        {"tool_calls": [{"name": "create", "arguments": {"path": str(created), "file_text": "x\n"}}]},
        {"text": "DONE"},
    )
    session = await client.create_session(on_permission_request=APPROVE)
    await session.send_and_wait("make a file", timeout=30)
    listed = await session.rpc.history.list_rewind_points()
    user_message = next(e for e in await session.get_events() if e.type.value == "user.message")
    # The conversation alone can still go back: its points say there is nothing to restore.
    assert listed.file_change_tracking_enabled is False and listed.unavailable_reason is None
    assert [(p.event_id, p.user_message, p.can_restore_files) for p in listed.points] == [
        (str(user_message.id), "make a file", False)
    ]
    preview = await session.rpc.history.preview_rewind(HistoryPreviewRewindRequest(event_id=str(user_message.id)))
    assert not preview.available and preview.reason.value == "file-change-tracking-disabled"
    refused = await session.rpc.history.rewind(
        HistoryRewindRequest(event_id=str(user_message.id), mode=HistoryRewindMode.CONVERSATION_AND_FILES)
    )
    assert refused.outcome.value == "file-change-tracking-disabled"
    done = await session.rpc.history.rewind(
        HistoryRewindRequest(event_id=str(user_message.id), mode=HistoryRewindMode.CONVERSATION)
    )
    assert done.outcome.value == "success" and done.events_removed > 0 and done.restored_files == []
    assert created.exists()
    assert (await session.rpc.history.list_rewind_points()).points == []


async def test_rewind_points_and_kept_files_survive_a_resume(ctx: Ctx, client, make_client):
    target = ctx.work_dir / "resumed.txt"
    target.write_text("original\n")
    ctx.fake.replies(
        {"tool_calls": [{"name": "edit", "arguments": {"path": str(target), "old_str": "original", "new_str": "edited"}}]},
        {"text": "EDITED"},
    )
    session = await client.create_session(on_permission_request=APPROVE, enable_file_change_tracking=True)
    await session.send_and_wait("edit the file", timeout=30)
    assert target.read_text() == "edited\n"
    session_id = session.session_id
    await session.disconnect()

    other = make_client()
    await other.start()
    resumed = await other.resume_session(
        session_id, on_permission_request=APPROVE, enable_file_change_tracking=True
    )
    listed = await resumed.rpc.history.list_rewind_points()
    assert [p.user_message for p in listed.points] == ["edit the file"]
    point = listed.points[0]
    assert point.can_restore_files and point.file_count == 1 and point.turn_changed_files
    wrong = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(Exception, match="is not a current root user turn"):
        await resumed.rpc.history.preview_rewind(HistoryPreviewRewindRequest(event_id=wrong))
    rewound = await resumed.rpc.history.rewind(
        HistoryRewindRequest(event_id=point.event_id, mode=HistoryRewindMode.CONVERSATION_AND_FILES)
    )
    assert rewound.outcome.value == "success" and rewound.restored_files == [str(target)]
    assert target.read_text() == "original\n"
    assert (await resumed.rpc.history.list_rewind_points()).points == []


async def test_opted_in_clients_get_session_start_telemetry(make_client):
    received = []
    client = make_client(on_github_telemetry=received.append)
    await client.start()
    session = await client.create_session(on_permission_request=APPROVE)
    await wait_for(lambda: received, what="gitHubTelemetry.event")
    note = received[0]
    assert note.session_id == session.session_id and note.restricted is False
    assert note.event.kind == "session_start" and note.event.session_id == session.session_id
    assert note.event.client.os_platform and note.event.client.cli_version

    # Each new session on an opted-in connection is announced.
    second = await client.create_session(on_permission_request=APPROVE)
    await wait_for(lambda: len(received) == 2, what="a second gitHubTelemetry.event")
    assert received[1].session_id == second.session_id
