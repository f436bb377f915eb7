"""Issue 11, session workspace files: `session.workspaces.*` through the official SDK client,
the seed's `session.workspace.*` names, and paths that try to leave the files directory."""

from __future__ import annotations

import os

import pytest

from copilot.generated.rpc import (
    WorkspacesCreateDirectoryRequest,
    WorkspacesCreateFileRequest,
    WorkspacesReadFileRequest,
    WorkspacesRemovePathRequest,
    WorkspacesRenamePathRequest,
    WorkspacesStatFileRequest,
)
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request, wait_for

APPROVE = PermissionHandler.approve_all


def changes(events: list) -> list[tuple[str, str]]:
    return [(e.data.path, e.data.operation.value) for e in events if e.type.value == "session.workspace_file_changed"]


async def test_create_read_list_and_update_events(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    events: list = []
    session.on(events.append)
    ws = session.rpc.workspaces

    assert (await ws.list_files()).files == []
    await ws.create_file(WorkspacesCreateFileRequest(path="notes/a.txt", content="one"))
    await ws.create_file(WorkspacesCreateFileRequest(path="notes/a.txt", content="two"))
    await ws.create_file(WorkspacesCreateFileRequest(path="top.txt", content="t"))

    assert (await ws.read_file(WorkspacesReadFileRequest(path="notes/a.txt"))).content == "two"
    assert (await ws.list_files()).files == ["notes/a.txt", "top.txt"]
    await wait_for(lambda: len(changes(events)) == 3, 10, "three workspace_file_changed events")
    assert changes(events) == [("notes/a.txt", "create"), ("notes/a.txt", "update"), ("top.txt", "create")]

    files = ctx.copilot_home / "session-state" / session.session_id / "files"
    assert (files / "notes" / "a.txt").read_text() == "two"


async def test_directories_stat_rename_and_remove(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    ws = session.rpc.workspaces

    with pytest.raises(Exception):
        await ws.create_directory(WorkspacesCreateDirectoryRequest(path="a/b"))
    await ws.create_directory(WorkspacesCreateDirectoryRequest(path="a/b", recursive=True))
    await ws.create_file(WorkspacesCreateFileRequest(path="a/b/f.txt", content="12345"))

    st = await ws.stat_file(WorkspacesStatFileRequest(path="a/b/f.txt"))
    assert st.is_file and not st.is_directory and st.size == 5 and st.mtime_ms > 0
    assert (await ws.stat_file(WorkspacesStatFileRequest(path="a"))).is_directory

    await ws.rename_path(WorkspacesRenamePathRequest(source="a/b/f.txt", destination="moved/g.txt"))
    assert (await ws.read_file(WorkspacesReadFileRequest(path="moved/g.txt"))).content == "12345"

    with pytest.raises(Exception):
        await ws.remove_path(WorkspacesRemovePathRequest(path="missing.txt"))
    await ws.remove_path(WorkspacesRemovePathRequest(path="missing.txt", force=True))
    await ws.create_file(WorkspacesCreateFileRequest(path="a/b/h.txt", content="h"))
    with pytest.raises(Exception):
        await ws.remove_path(WorkspacesRemovePathRequest(path="a"))
    await ws.remove_path(WorkspacesRemovePathRequest(path="a", recursive=True))
    assert (await ws.list_files()).files == ["moved/g.txt"]


@pytest.mark.parametrize("bad", ["../escaped.txt", "../../escaped.txt", "nested/../../../escaped.txt", "/tmp/x.txt"])
async def test_paths_outside_the_workspace_are_refused(ctx: Ctx, client, bad: str):
    session = await client.create_session(on_permission_request=APPROVE)
    ws = session.rpc.workspaces
    with pytest.raises(Exception, match="(?i)workspace files directory"):
        await ws.create_file(WorkspacesCreateFileRequest(path=bad, content="no"))
    with pytest.raises(Exception, match="(?i)workspace files directory"):
        await ws.read_file(WorkspacesReadFileRequest(path=bad))
    with pytest.raises(Exception, match="(?i)workspace files directory"):
        await ws.rename_path(WorkspacesRenamePathRequest(source="x", destination=bad))
    assert not (ctx.copilot_home / "session-state" / session.session_id / "escaped.txt").exists()


async def test_symlink_out_of_the_workspace_is_refused(ctx: Ctx, client, tmp_path):
    session = await client.create_session(on_permission_request=APPROVE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    files = ctx.copilot_home / "session-state" / session.session_id / "files"
    files.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, files / "link")
    ws = session.rpc.workspaces
    with pytest.raises(Exception, match="(?i)workspace files directory"):
        await ws.read_file(WorkspacesReadFileRequest(path="link/secret.txt"))
    with pytest.raises(Exception, match="(?i)workspace files directory"):
        await ws.create_file(WorkspacesCreateFileRequest(path="link/new.txt", content="x"))
    assert not (outside / "new.txt").exists()


async def test_get_workspace(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    result = await session.rpc.workspaces.get_workspace()
    assert result.workspace is not None and result.workspace.id == session.session_id
    assert result.path == str(ctx.copilot_home / "session-state" / session.session_id)


async def test_seed_names_are_aliases(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    await raw_request(client, "session.workspace.createFile", {"sessionId": sid, "path": "seed.txt", "content": "s"})
    listed = await raw_request(client, "session.workspace.listFiles", {"sessionId": sid})
    assert listed == {"files": ["seed.txt"]}
    read = await raw_request(client, "session.workspace.readFile", {"sessionId": sid, "path": "seed.txt"})
    assert read == {"content": "s"}
