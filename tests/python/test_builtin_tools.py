"""Item 4 of issue 2: the tool loop, replayed from recorded conversations.

Each test prepares the files the recording expects, loads the snapshot with the test's working
directory, sends the recorded prompt and checks the final answer. The fake model only answers a
request whose (normalised) messages equal the recording, so every tool result Skipper sends
back must match the original CLI's text byte for byte: that is the real check. A mismatch shows
up as a failed turn here and as a diagnosis in the fake model's stderr (printed on failure).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from copilot.session import PermissionHandler

from conftest import Ctx, snapshot_final_reply, snapshot_first_prompt, tap_raw_events


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def _nothing(work: Path) -> None:
    pass


def _lines(work: Path) -> None:
    _write(work / "lines.txt", "line1\nline2\nline3\nline4\nline5\n")


def _edit_me(work: Path) -> None:
    _write(work / "edit_me.txt", "Hello World\nGoodbye World\n")


def _data(work: Path) -> None:
    _write(work / "data.txt", "apple\nbanana\napricot\ncherry\n")


def _ts_tree(work: Path) -> None:
    _write(work / "src" / "index.ts", "export const index = 1;")
    _write(work / "README.md", "# Readme")


CASES: list[tuple[str, Callable[[Path], None]]] = [
    ("should_capture_exit_code_in_output", _nothing),
    ("should_capture_stderr_output", _nothing),
    ("should_read_file_with_line_range", _lines),
    ("should_handle_nonexistent_file_gracefully", _nothing),
    ("should_edit_a_file_successfully", _edit_me),
    ("should_create_a_new_file", _nothing),
    ("should_search_for_patterns_in_files", _data),
    ("should_find_files_by_pattern", _ts_tree),
]


@pytest.mark.parametrize("name,setup", CASES, ids=[c[0] for c in CASES])
async def test_builtin_tool_snapshot(ctx: Ctx, client, name: str, setup):
    snapshot = f"builtin_tools/{name}.yaml"
    setup(ctx.work_dir)
    ctx.load(snapshot)
    raw = tap_raw_events(client)
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    try:
        message = await session.send_and_wait(snapshot_first_prompt(snapshot), timeout=30)
    finally:
        raw.assert_parseable()
    assert message is not None, "no assistant message"
    expected = snapshot_final_reply(snapshot, ctx.work_dir)
    assert message.data.content == expected, (
        "final answer differs from the recording: a tool result probably did not match; "
        "see the fake-model diagnosis below"
    )


async def test_edit_and_create_change_the_files(ctx: Ctx, client):
    """Side effects of the replayed edit/create conversations are real."""
    _edit_me(ctx.work_dir)
    ctx.load("builtin_tools/should_edit_a_file_successfully.yaml")
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await session.send_and_wait(
        snapshot_first_prompt("builtin_tools/should_edit_a_file_successfully.yaml"), timeout=30
    )
    assert (ctx.work_dir / "edit_me.txt").read_text() == "Hi Universe\nGoodbye World\n"

    ctx.load("builtin_tools/should_create_a_new_file.yaml")
    session2 = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    await session2.send_and_wait(
        snapshot_first_prompt("builtin_tools/should_create_a_new_file.yaml"), timeout=30
    )
    assert (ctx.work_dir / "new_file.txt").read_text() == "Created by test"
