"""Issue 11, pluggable session storage and the `sql` tool through the official SDK:
`sessionFs.setProvider` (state files kept by the client), the `sql` tool on the session's
own database with `session.todos_changed` and `session.plan.readSqlTodos*`, and
`session.workspaces.diff` / `saveLargePaste`."""

from __future__ import annotations

import errno
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import BaseModel

from copilot import define_tool

from copilot.generated.rpc import (
    PlanUpdateRequest,
    WorkspaceDiffMode,
    WorkspacesDiffRequest,
    WorkspacesReadFileRequest,
    WorkspacesSaveLargePasteRequest,
)
from copilot.session import PermissionHandler
from copilot.session_fs_provider import SessionFsFileInfo, SessionFsProvider

from conftest import Ctx, raw_request, tool_names, tool_results, wait_for

APPROVE = PermissionHandler.approve_all


class MemoryFs(SessionFsProvider):
    """Files in a dict: what the server keeps through sessionFs lands here."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.dirs: set[str] = set()

    async def read_file(self, path: str) -> str:
        if path not in self.files:
            raise FileNotFoundError(errno.ENOENT, "missing", path)
        return self.files[path]

    async def write_file(self, path: str, content: str, mode: int | None = None) -> None:
        self.files[path] = content

    async def append_file(self, path: str, content: str, mode: int | None = None) -> None:
        self.files[path] = self.files.get(path, "") + content

    async def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    async def stat(self, path: str) -> SessionFsFileInfo:
        if path not in self.files and path not in self.dirs:
            raise FileNotFoundError(errno.ENOENT, "missing", path)
        now = datetime.now(UTC)
        return SessionFsFileInfo(path in self.files, path in self.dirs, len(self.files.get(path, "")), now, now)

    async def mkdir(self, path: str, recursive: bool, mode: int | None = None) -> None:
        self.dirs.add(path)

    async def readdir(self, path: str) -> list[str]:
        return sorted({p[len(path) + 1 :].split("/")[0] for p in self.files if p.startswith(path + "/")})

    async def readdir_with_types(self, path: str):
        return []

    async def rm(self, path: str, recursive: bool, force: bool) -> None:
        self.files.pop(path, None)

    async def rename(self, src: str, dest: str) -> None:
        self.files[dest] = self.files.pop(src)


def _fs_client(make_client, state: str):
    return make_client(
        session_fs={"initial_working_directory": "/", "session_state_path": state, "conventions": "posix"}
    )


async def test_state_files_are_kept_by_the_provider_and_read_back_on_resume(ctx: Ctx, make_client):
    state = "/client-state/session-state"
    fs = MemoryFs()
    client = _fs_client(make_client, state)
    await client.start()
    ctx.fake.replies({"text": "It is 300."}, {"text": "That makes 900."})
    session = await client.create_session(
        on_permission_request=APPROVE, create_session_fs_handler=lambda _session: fs
    )
    sid = session.session_id
    reply = await session.send_and_wait("What is 100 + 200?", timeout=30)
    assert reply is not None and reply.data.content == "It is 300."
    await session.rpc.plan.update(PlanUpdateRequest(content="# Plan\n\nstep one"))
    await session.disconnect()

    log = fs.files[f"{state}/events.jsonl"]
    assert '"type":"session.start"' in log and "It is 300." in log
    assert "id:" in fs.files[f"{state}/workspace.yaml"]
    assert fs.files[f"{state}/checkpoints/index.md"].startswith("# Checkpoint History")
    assert fs.files[f"{state}/plan.md"] == "# Plan\n\nstep one"
    # Nothing of it went to the server's own state directory.
    assert not (ctx.copilot_home / "session-state" / sid / "events.jsonl").exists()

    resumed = await client.resume_session(sid, on_permission_request=APPROVE, create_session_fs_handler=lambda _s: fs)
    reply = await resumed.send_and_wait("Times 3?", timeout=30)
    assert reply is not None and reply.data.content == "That makes 900."
    # The resumed conversation was read back from the provider's log.
    last = ctx.fake.requests()[-1]
    assert "It is 300." in str(last["body"]["messages"])


async def test_set_provider_is_refused_once_sessions_exist(ctx: Ctx, client):
    await client.create_session(on_permission_request=APPROVE)
    with pytest.raises(Exception, match="sessions already exist"):
        await raw_request(
            client,
            "sessionFs.setProvider",
            {"initialCwd": "/", "sessionStatePath": "/s", "conventions": "posix"},
        )


class NoArgs(BaseModel):
    pass


async def test_large_results_are_saved_in_the_provider(ctx: Ctx, make_client):
    state = "/client-state/large"
    fs = MemoryFs()
    client = _fs_client(make_client, state)
    await client.start()
    big = "x" * 100_000

    @define_tool("get_big_string", description="Returns a large string")
    def get_big_string(params: NoArgs) -> str:
        return big

    ctx.fake.replies({"tool_calls": [{"name": "get_big_string", "arguments": {}}]}, {"text": "DONE"})
    session = await client.create_session(
        on_permission_request=APPROVE, create_session_fs_handler=lambda _s: fs, tools=[get_big_string]
    )
    await session.send_and_wait("call get_big_string", timeout=30)
    result = tool_results(ctx.fake.requests()[-1])[0]["content"]
    assert f"Saved to: {state}/temp/" in result
    saved = result.split("Saved to: ")[1].split("\n")[0]
    assert fs.files[saved] == big


async def test_sql_tool_keeps_todos_and_announces_changes(ctx: Ctx, client):
    query = (
        "INSERT INTO todos (id, title, status) VALUES ('alpha', 'First todo', 'pending');\n"
        "INSERT INTO todos (id, title, status) VALUES ('beta', 'Second todo', 'done');\n"
        "INSERT INTO todo_deps (todo_id, depends_on) VALUES ('beta', 'alpha');"
    )
    ctx.fake.replies(
        {"tool_calls": [{"name": "sql", "arguments": {"description": "Insert todos", "query": query}}]},
        {"tool_calls": [{"name": "sql", "arguments": {"description": "Bad", "query": "SELECT * FROM nope"}}]},
        {"text": "done"},
    )
    session = await client.create_session(on_permission_request=APPROVE)
    events: list = []
    session.on(events.append)
    await session.send_and_wait("track two todos", timeout=30)

    first, second, third = ctx.fake.requests()
    assert "sql" in tool_names(first)
    assert tool_results(second)[0]["content"] == (
        "Executed 3 statement(s):\n\n1. INSERT\n   1 row(s) inserted. Last inserted row ID: 1.\n\n"
        "2. INSERT\n   1 row(s) inserted. Last inserted row ID: 2.\n\n"
        "3. INSERT\n   1 row(s) inserted. Last inserted row ID: 1."
    )
    assert tool_results(third)[-1]["content"].startswith("SQL Error: no such table: nope")
    await wait_for(lambda: any(e.type.value == "session.todos_changed" for e in events), 10, "todos_changed")

    todos = await session.rpc.plan.read_sql_todos_with_dependencies()
    assert sorted(r.id for r in todos.rows) == ["alpha", "beta"]
    assert [(d.todo_id, d.depends_on) for d in todos.dependencies] == [("beta", "alpha")]
    plain = await session.rpc.plan.read_sql_todos()
    assert {r.id: r.status for r in plain.rows} == {"alpha": "pending", "beta": "done"}


async def test_workspace_diff_lists_git_changes_and_pastes_are_saved(ctx: Ctx, client):
    repo: Path = ctx.work_dir
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (repo / "kept.txt").write_text("one\n")
    git("add", "kept.txt")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    (repo / "kept.txt").write_text("two\n")
    (repo / "new.txt").write_text("fresh\n")

    session = await client.create_session(on_permission_request=APPROVE, working_directory=str(repo))
    diff = await session.rpc.workspaces.diff(WorkspacesDiffRequest(mode=WorkspaceDiffMode.UNSTAGED))
    assert diff.requested_mode == WorkspaceDiffMode.UNSTAGED and diff.mode == WorkspaceDiffMode.UNSTAGED
    by_path = {c.path: c for c in diff.changes}
    assert by_path["kept.txt"].change_type.value == "modified" and "+two" in by_path["kept.txt"].diff
    assert by_path["new.txt"].change_type.value == "added" and "+fresh" in by_path["new.txt"].diff

    content = "Large paste payload \U0001f680\n" * 512
    saved = (await session.rpc.workspaces.save_large_paste(WorkspacesSaveLargePasteRequest(content=content))).saved
    assert saved is not None and saved.size_bytes == len(content.encode())
    assert Path(saved.file_path).read_text() == content
    read = await session.rpc.workspaces.read_file(WorkspacesReadFileRequest(path=saved.filename))
    assert read.content == content
