"""Starting and stopping `skipper serve` for the tests of the team server (test_serve.py,
test_serve_cluster.py, test_extensions.py)."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import os
import selectors
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import SKIPPER_BIN, Ctx


def digest(token: str) -> str:
    """What server.toml holds of a token: its SHA-256, in lowercase hex."""
    return hashlib.sha256(token.encode()).hexdigest()


def tenant(name: str, token: str) -> str:
    """A `[[tenants]]` table of server.toml (the token's SHA-256, never the token)."""
    return f'[[tenants]]\nname = "{name}"\ntoken_sha256 = "{digest(token)}"\n\n'


@dataclass
class Served:
    proc: subprocess.Popen
    sdk: str
    http: str
    stderr_path: Path


def start(ctx: Ctx, config: str, *, home: Path, state_dir: Path, args: list[str] | None = None,
          wait_s: float = 15, **env: str) -> Served:
    """`skipper serve` on free loopback ports with `config` (server.toml's text) and `home`;
    its config and stderr go in `state_dir`. Returns once it printed its `listening` line."""
    state_dir.mkdir(parents=True, exist_ok=True)
    config_path = state_dir / "server.toml"
    config_path.write_text(config, encoding="utf-8")
    stderr_path = state_dir / "serve.stderr"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [
                str(SKIPPER_BIN), "serve",
                "--listen", "127.0.0.1:0", "--sdk-listen", "127.0.0.1:0",
                "--config", str(config_path), "--home", str(home), *(args or []),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=ctx.env(GH_TOKEN="fake-token-for-e2e-tests", **env),
            cwd=ctx.work_dir,
        )
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + wait_s
    buf = b""
    try:
        # The readiness line, not a sleep: it is printed once both ports accept connections.
        while b"listening" not in buf or not buf.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(timeout=remaining):
                proc.kill()
                raise RuntimeError(
                    f"skipper serve printed no `listening` line within {wait_s} s: "
                    + stderr_path.read_text(errors="replace")
                )
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError("skipper serve exited: " + stderr_path.read_text(errors="replace"))
            buf += chunk
    finally:
        sel.close()
    line = next(l for l in buf.decode().splitlines() if "listening" in l)
    sdk = line.split("tcp://", 1)[1].split()[0]
    http = line.split("http://", 1)[1].split()[0]
    return Served(proc, sdk, http, stderr_path)


def stop(served: Served, *, kill: bool = False, label: str = "skipper serve") -> None:
    """Ends the process (SIGTERM, SIGKILL after 10 s; or SIGKILL at once) and prints the tail of
    its stderr for the test's report."""
    proc = served.proc
    if proc.poll() is None:
        if kill:
            proc.kill()
        else:
            proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    if proc.stdout:
        proc.stdout.close()
    print(f"----- {label} stderr -----")
    print(served.stderr_path.read_text(errors="replace")[-20000:])


async def early_in_a_minute() -> None:
    """Waits, past second 45 of a UTC minute, for the next: what follows then happens inside one
    minute (a per-minute limit counts by the clock's minutes)."""
    second = datetime.datetime.now(datetime.timezone.utc).second
    if second >= 45:
        await asyncio.sleep(61 - second)


async def held_back_until_aborted(ctx: Ctx, session, prompt: str, hold_s: float) -> None:
    """Sends `prompt`; its turn must reach neither the model nor its end within `hold_s`, and
    once aborted must end having sent nothing."""
    before = len(ctx.fake.requests())
    idle = asyncio.Event()
    session.on(lambda e: idle.set() if e.type.value == "session.idle" else None)
    await session.send(prompt)
    await asyncio.sleep(hold_s)
    assert len(ctx.fake.requests()) == before and not idle.is_set(), "the turn waits"
    await session.abort()
    await asyncio.wait_for(idle.wait(), 10)
    assert len(ctx.fake.requests()) == before, "an aborted wait sends nothing"
