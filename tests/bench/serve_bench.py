"""`skipper serve` figures for `just bench` (issue 10): sessions per GB with many idle sessions
on one node, and concurrent turns per second through one node. Loaded by bench.py, whose
helpers (the fake model, the JSON-RPC client, RSS and CPU readers) every function receives as
`b`: the same client speaks Content-Length frames over the node's `--sdk-listen` TCP port.

A measurement, not a test: nothing here asserts a timing.
"""

from __future__ import annotations

import hashlib
import os
import select
import socket
import subprocess
import time
from types import ModuleType
from typing import Any

TOKEN = "bench-serve-token"
# Sessions created per round trip while filling the node (each its own lane on the server).
CREATE_BATCH = 64


class ServeNode:
    """A running `skipper serve` (SQLite, one tenant) and its addresses."""

    def __init__(self, b: ModuleType, env: Any, extra_env: dict[str, str] | None = None, tenant_extra: str = ""):
        self.home = env.fresh_dir("serve-home")
        (self.home / ".copilot").mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(TOKEN.encode()).hexdigest()
        config = self.home / "server.toml"
        config.write_text(f'[[tenants]]\nname = "bench"\ntoken_sha256 = "{digest}"\n{tenant_extra}')
        self.stderr_path = env.logs / f"{self.home.name}-serve.stderr"
        server_env = env.server_env(self.home)
        server_env["GH_TOKEN"] = "bench"  # the model credential `serve` reads (the fake takes any)
        server_env.update(extra_env or {})
        argv = [str(b.SKIPPER_BIN), "serve", "--listen", "127.0.0.1:0", "--sdk-listen", "127.0.0.1:0",
                "--config", str(config)]
        with open(self.stderr_path, "wb") as err:
            self.t0 = time.perf_counter()
            self.proc = b.spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                env=server_env, cwd=str(env.work))
        line = self._listening_line(b)
        self.sdk = line.split("tcp://", 1)[1].split()[0]
        self.http = line.split("http://", 1)[1].split()[0]

    def _listening_line(self, b: ModuleType) -> str:
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        buf = b""
        while True:
            for line in buf.decode(errors="replace").splitlines():
                if "listening" in line and "tcp://" in line:
                    return line
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise b.BenchError(f"skipper serve printed no `listening` line: {self.stderr_tail()}")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise b.BenchError(f"skipper serve exited: {self.stderr_tail()}")
            buf += chunk

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def client(self, b: ModuleType) -> Any:
        """A connected, authenticated SDK client (bench.Server over a TCP socket)."""
        sock = socket.create_connection(tuple(self.sdk.rsplit(":", 1)), timeout=30)  # type: ignore[arg-type]
        sock.setblocking(True)
        c = _tcp_client_class(b)(label="skipper-serve", proc=self.proc, stderr_path=self.stderr_path,
                                 t_spawn=self.t0, home=self.home)
        c.sock = sock
        c.call("connect", {"token": TOKEN}, timeout=60)
        return c

    def stop(self, b: ModuleType) -> None:
        b.stop_process(self.proc)


_CLASSES: dict[int, type] = {}


def _tcp_client_class(b: ModuleType) -> type:
    """bench.Server with its pipe I/O replaced by a socket (same framing, same dispatch)."""
    if id(b) in _CLASSES:
        return _CLASSES[id(b)]

    class TcpClient(b.Server):  # type: ignore[name-defined, misc]
        sock: socket.socket | None = None

        def _write(self, obj: dict) -> None:
            import json

            body = json.dumps(obj, separators=(",", ":")).encode()
            try:
                self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)  # type: ignore[union-attr]
            except OSError as e:
                raise b.BenchError(f"skipper serve connection: {e}: {self.stderr_tail()}")

        def pump(self, deadline: float) -> bool:
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
                return False
            chunk = self.sock.recv(1 << 20)  # type: ignore[union-attr]
            now = time.perf_counter()
            if not chunk:
                raise b.BenchError(f"skipper serve closed the connection: {self.stderr_tail()}")
            self.buf += chunk
            self._parse(now)
            return True

        def close(self, timeout: float = 10) -> float | None:
            if self.sock is not None:
                self.sock.close()
            return None

    _CLASSES[id(b)] = TcpClient
    return TcpClient


def _create_many(b: ModuleType, c: Any, n: int) -> list[float]:
    """Creates `n` sessions, `CREATE_BATCH` requests in flight; seconds per batch, per session."""
    import uuid

    per_session: list[float] = []
    done = 0
    while done < n:
        k = min(CREATE_BATCH, n - done)
        t0 = time.perf_counter()
        rids = [c.send("session.create", {"sessionId": str(uuid.uuid4()), "requestPermission": False})
                for _ in range(k)]
        for rid in rids:
            c.wait_response(rid, "session.create", 120)
        per_session.append((time.perf_counter() - t0) / k)
        done += k
    return per_session


def fig_serve_idle_sessions(b: ModuleType, env: Any, n: int) -> dict:
    """Figure 12: RSS of one `skipper serve` node before/after `n` idle sessions held open by a
    client (nothing unloads them: they have a subscriber), as sessions per GiB."""
    node = ServeNode(b, env)
    try:
        c = node.client(b)
        b.create_session(c)  # warm-up: lazy initialisation is not a per-session cost
        time.sleep(0.2)
        before = b.rss_kb(node.proc.pid)
        times = _create_many(b, c, n)
        time.sleep(0.5)
        after = b.rss_kb(node.proc.pid)
        per_session_kb = (after - before) / n
        return {
            "sessions": n,
            "rss_before_kb": before,
            "rss_after_kb": after,
            "per_session_kb": round(per_session_kb, 2),
            "sessions_per_gib": round((1 << 20) / per_session_kb) if per_session_kb > 0 else None,
            "session_create_ms_median": round(sorted(times)[len(times) // 2] * 1000, 3),
            "session_errors": len(c.session_errors),
        }
    finally:
        node.stop(b)


# Figure 13b: the tenant's limits set, none reached: every model call is counted in the database
# (requests per minute) and checked against the day's tokens, every message takes a turn place.
LIMITS = "max_turns = 64\nmodel_requests_per_minute = 1000000\ntokens_per_day = 1000000000\n"


def fig_serve_concurrent_turns(b: ModuleType, env: Any, sessions: int, turns: int, tenant_extra: str = "") -> dict:
    """Figure 13: `turns` one-reply text turns over `sessions` sessions of one node, every session
    always running one (the next is sent when its `session.idle` arrives): turns per second."""
    node = ServeNode(b, env, tenant_extra=tenant_extra)
    try:
        c = node.client(b)
        sids = [b.create_session(c) for _ in range(sessions)]
        env.fake.clear_requests()
        env.fake.replies([{"text": "ok"}] * turns)
        cpu0 = b.cpu_seconds(node.proc.pid)
        seen = {sid: 0 for sid in sids}
        sent = 0
        t0 = time.perf_counter()
        for sid in sids[: min(sessions, turns)]:
            c.send("session.send", {"sessionId": sid, "prompt": "hi"})
            sent += 1
        done = 0
        deadline = t0 + 60 + turns * 0.5
        while done < turns:
            if not c.pump(deadline):
                raise b.BenchError(f"{done}/{turns} turns finished before the deadline")
            for sid in sids:
                finished = c.idle_count[sid] - seen[sid]
                if finished <= 0:
                    continue
                seen[sid] += finished
                done += finished
                for _ in range(finished):
                    if sent < turns:
                        c.send("session.send", {"sessionId": sid, "prompt": "hi"})
                        sent += 1
        wall = time.perf_counter() - t0
        cpu = b.cpu_seconds(node.proc.pid) - cpu0
        if c.session_errors:
            raise b.BenchError(f"{len(c.session_errors)} turns failed: {str(c.session_errors[0])[:400]}")
        failed = sum(1 for m in c.responses.values() if "error" in m)
        return {
            "sessions": sessions,
            "turns": turns,
            "wall_s": round(wall, 3),
            "turns_per_s": round(turns / wall, 1),
            "server_cpu_ms_per_turn": round(cpu * 1000 / turns, 3),
            "rss_after_kb": b.rss_kb(node.proc.pid),
            "send_errors": failed,
            "session_errors": len(c.session_errors),
            "replies_left": b.leftover_replies(env),
        }
    finally:
        node.stop(b)


def fig_serve_sandboxed_tool(b: ModuleType, env: Any, n: int) -> dict:
    """Figure 14: a bash `true` tool call on a `skipper serve` node, where every command runs
    under the team server's floor (bubblewrap, the seccomp launcher); the tool span (median,
    p99) to set beside figures 2b (unsandboxed) and 2c (`sandboxConfig`), and `session.create`."""
    node = ServeNode(b, env)
    try:
        c = node.client(b)
        creates = []
        for _ in range(b.q(20, 5)):
            t0 = time.perf_counter()
            b.create_session(c)
            creates.append(time.perf_counter() - t0)
        sid = b.create_session(c)
        c.call("session.permissions.setApproveAll", {"sessionId": sid, "enabled": True}, timeout=30)
        per_conv = [{"tool_calls": [{"name": "bash", "arguments": {"command": "true", "description": "bench"}}]},
                    {"text": "done"}]
        spans, failures = [], 0
        for i in range(n + 2):  # 2 warm-up conversations (the first starts the shell)
            env.fake.replies(per_conv)
            t = b.turn(c, sid, capture=True, timeout=60)
            start = complete = None
            for now, params in t.events or []:
                ev = params.get("event", {})
                if ev.get("type") == "tool.execution_start" and start is None:
                    start = now
                elif ev.get("type") == "tool.execution_complete" and complete is None:
                    complete = now
                    failures += 0 if ev.get("data", {}).get("success") else 1
            if start is None or complete is None:
                raise b.BenchError("serve: tool turn without tool.execution_start/complete events")
            if i >= 2:
                spans.append(complete - start)
        return {
            "tool_span_wall": b.summary_ms(spans),
            "session_create": b.summary_ms(creates),
            "tool_failures": failures,
            "session_errors": len(c.session_errors),
        }
    finally:
        node.stop(b)


def report_rows(f: dict) -> list[tuple[str, str, str]]:
    """Rows for bench.py's table."""
    rows: list[tuple[str, str, str]] = []
    d = f.get("12_serve_idle_sessions")
    if d:
        rows.append(("12", f"serve: RSS per idle session ({d['sessions']} on one node)",
                     f"{d['per_session_kb']:.1f} KiB"))
        rows.append(("12", "serve: idle sessions per GiB", f"{d['sessions_per_gib'] or '-'}"))
    d = f.get("13_serve_concurrent_turns")
    if d:
        rows.append(("13", f"serve: turns per second, {d['sessions']} sessions at once",
                     f"{d['turns_per_s']:.1f}/s"))
        rows.append(("13", "  server CPU per turn", f"{d['server_cpu_ms_per_turn']:.2f} ms"))
    d = f.get("13b_serve_turns_with_limits")
    if d:
        rows.append(("13b", "serve: turns per second, tenant limits set (none reached)",
                     f"{d['turns_per_s']:.1f}/s"))
        rows.append(("13b", "  server CPU per turn", f"{d['server_cpu_ms_per_turn']:.2f} ms"))
    d = f.get("14_serve_sandboxed_tool")
    if d:
        rows.append(("14", "serve: bash `true` tool span under the floor", b_ms99(d["tool_span_wall"])))
        rows.append(("14", "  session.create", b_ms99(d["session_create"])))
        rows.append(("14", "  tool calls that failed", str(d["tool_failures"])))
    return rows


def b_ms99(d: dict) -> str:
    if not d or not d.get("n"):
        return "-"
    return f"median {d['median_ms']:.2f} ms, p99 {d['p99_ms']:.2f} ms (n={d['n']})"


def figures(b: ModuleType, env: Any) -> list[tuple[str, str, Any]]:
    """(figure, name, thunk) entries for bench.py's plan."""
    n_idle = b.q(10_000, 300)
    n_turns = b.q(2_000, 200)
    return [
        ("12", "12_serve_idle_sessions", lambda: fig_serve_idle_sessions(b, env, n_idle)),
        ("13", "13_serve_concurrent_turns", lambda: fig_serve_concurrent_turns(b, env, 32, n_turns)),
        ("13b", "13b_serve_turns_with_limits",
         lambda: fig_serve_concurrent_turns(b, env, 32, n_turns, tenant_extra=LIMITS)),
        ("14", "14_serve_sandboxed_tool", lambda: fig_serve_sandboxed_tool(b, env, b.q(50, 10))),
    ]
