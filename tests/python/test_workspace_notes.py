"""Issue 34: what a client keeps in a session's folder besides files, as the original 1.0.102
keeps it — summaries written as the session's checkpoints (listed, read back, truncated) and the
autopilot objective file — through the official SDK's typed RPC, checked on disk too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from copilot.generated.rpc import (
    WorkspacesAddSummaryRequest,
    WorkspacesReadCheckpointRequest,
    WorkspacesTruncateSummariesRequest,
    WorkspacesWriteAutopilotObjectiveRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx


async def test_summaries_are_checkpoints_a_client_writes_and_truncates(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    ws = session.rpc.workspaces
    first = await ws.add_summary(WorkspacesAddSummaryRequest(title="", content="# one\nbody"))
    # An untitled summary is named after the session, as the original names it.
    title = f"Session {session.session_id[:8]}"
    assert first.summary["checkpointTitle"] == title
    assert first.summary["checkpointNumber"] == 1
    assert first.workspace["summary_count"] == 1
    path = Path(first.summary["checkpointPath"])
    assert path.name == f"001-session-{session.session_id[:8]}.md" and path.read_text() == "# one\nbody"
    for name in ("A/B: ../c", "third", "fourth"):
        await ws.add_summary(WorkspacesAddSummaryRequest(title=name, content=name))
    listed = (await ws.list_checkpoints()).checkpoints
    assert [(c.number, c.filename) for c in listed] == [
        (1, path.name), (2, "002-a-b-c.md"), (3, "003-third.md"), (4, "004-fourth.md"),
    ], "a title never names a path outside the folder"
    assert (await ws.read_checkpoint(WorkspacesReadCheckpointRequest(number=2))).content == "A/B: ../c"

    kept = await ws.truncate_summaries(WorkspacesTruncateSummariesRequest(keep_count=2))
    assert kept.workspace.summary_count == 2
    assert [c.number for c in (await ws.list_checkpoints()).checkpoints] == [1, 2]
    assert not (path.parent / "003-third.md").exists() and not (path.parent / "004-fourth.md").exists()
    assert (await ws.read_checkpoint(WorkspacesReadCheckpointRequest(number=3))).content is None
    # Keeping more than there are changes nothing.
    assert (await ws.truncate_summaries(WorkspacesTruncateSummariesRequest(keep_count=9))).workspace.summary_count == 2


async def test_the_autopilot_objective_is_a_file_the_client_writes_reads_and_removes(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    ws = session.rpc.workspaces
    assert (await ws.autopilot_objective_exists()).exists is False
    assert (await ws.read_autopilot_objective()).content is None
    written = await ws.write_autopilot_objective(WorkspacesWriteAutopilotObjectiveRequest(content="# Goal\nShip it."))
    assert written.operation == "create"
    again = await ws.write_autopilot_objective(WorkspacesWriteAutopilotObjectiveRequest(content=""))
    assert again.operation == "update"
    assert (await ws.read_autopilot_objective()).content == ""
    assert (await ws.autopilot_objective_exists()).exists is True

    workspace = (await ws.get_workspace()).path
    on_disk = Path(workspace) / "autopilot-objective.json"
    assert on_disk.read_text() == ""
    assert stat.S_IMODE(os.stat(on_disk).st_mode) == 0o600, "only its owner reads it"
    # Skipper runs no objective of its own: the file starts none.
    assert (await session.rpc.autopilot_objective.get_state()).state is None

    assert (await ws.delete_autopilot_objective()).deleted is True
    assert (await ws.delete_autopilot_objective()).deleted is False
    assert not on_disk.exists()
