#!/usr/bin/env python3
"""Skipper benchmark harness (stdlib only, Python 3.11+).

Measures startup latency, memory, per-turn overhead, event throughput, long-run decay,
per-session memory and grep/glob speed of ``target/release/skipper`` against
``target/release/fake-model``; optionally the same figures for the original Copilot CLI
(``COPILOT_REFERENCE_CLI``). Prints a table and writes ``target/bench.json``.

This is a measurement, not a test: nothing here asserts a timing. The exit status is non-zero
only when a figure could not be measured at all (a server died, a wait timed out, ...).

Environment knobs (see tests/bench/README.md for what every figure means):

  BENCH_QUICK=1            ~30 s smoke run (fewer iterations everywhere)
  BENCH_ONLY=1,2,6         run only these figures (1-14, 13b; 12-14: `skipper serve`)
  BENCH_JSON=path          where to write the JSON (default <repo>/target/bench.json)
  BENCH_TREE=dir           tree for the grep/glob figure (default ~/.cargo/registry/src,
                           else <repo>/target)
  SKIPPER_BIN, FAKE_MODEL_BIN   binaries (default <repo>/target/release/...; `just bench`
                           measures target/dist/skipper, the shipped LTO build)
  RG_BIN                   ripgrep binary (default: `rg` on PATH)
  COPILOT_REFERENCE_CLI    the original CLI (a binary, or a .js entry point run with node)
"""

from __future__ import annotations

import atexit
import datetime as _dt
import json
import os
import platform
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0", "false")
SKIPPER_BIN = Path(os.environ.get("SKIPPER_BIN", REPO / "target" / "release" / "skipper")).absolute()
FAKE_MODEL_BIN = Path(os.environ.get("FAKE_MODEL_BIN", REPO / "target" / "release" / "fake-model")).absolute()
JSON_OUT = Path(os.environ.get("BENCH_JSON", REPO / "target" / "bench.json"))
REFERENCE = os.environ.get("COPILOT_REFERENCE_CLI", "").strip()

SERVER_FLAGS = ["--headless", "--stdio", "--no-auto-update", "--auth-token-env", "COPILOT_SDK_AUTH_TOKEN"]


def q(full: int, quick: int) -> int:
    """An iteration count: `full` normally, `quick` under BENCH_QUICK."""
    return quick if QUICK else full


# Iteration counts. Defaults keep the whole run near 2-3 minutes on a 2-core machine.
N_STARTUP = q(20, 5)  # spawns per startup variant
N_TEXT_TURNS = q(500, 40)  # figure 2a
N_STREAM_TURNS = q(100, 20)  # figure 2a, streaming variant
N_TOOL_CONVS = q(50, 10)  # figure 2b
N_THROUGHPUT_TURNS = q(40, 8)  # figure 3
THROUGHPUT_TEXT_CHARS = 16_000  # figure 3: 80 deltas of 200 chars per reply
STALL_S = 0.010  # figure 3: a gap this long between two events of one turn counts as a stall
N_DECAY_TURNS = q(1000, 200)  # figure 4
DECAY_WINDOW = q(100, 20)
N_DECAY_SESSIONS = 10
# A model that answers 10 ms after each request arrives, however big: the fake's own parse time
# (which grows with the history) then no longer changes how long the server waits, so the
# per-turn figures show what the server's own work costs as the history grows.
STEADY_MODEL = {"latency_ms": 10, "then": {"text": "ok"}}
N_IDLE_SESSIONS = q(10_000, 300)  # figure 5
N_SEARCH_REPEATS = q(5, 1)  # figure 6 (after one warm-up run each)
REF_STARTUP = q(10, 3)  # figure 7
REF_TEXT_TURNS = q(100, 20)
REF_DECAY_TURNS = q(200, 60)
REF_DECAY_WINDOW = q(20, 10)
N_BURST_SESSIONS = q(200, 50)  # figure 8
N_BURSTS = q(5, 2)
REPO_FILES = q(20_000, 2_000)  # figure 9: generated repository
REPO_FILE_KB = 11  # ~224 MB at 20,000 files
N_REPO_REPEATS = q(5, 1)
N_PROMPT_RUNS = q(20, 5)  # figure 10
N_FANOUT_DELTAS = q(100_000, 60_000)  # figure 11 (the stalled client must be sent well over the limit)
N_FANOUT_CLIENTS = 10
# SKIPPER_MAX_QUEUED_EVENT_BYTES for figure 11: well below what the stalled client is sent,
# well above what a reading client lags behind by.
FANOUT_QUEUE_LIMIT = 8 * 1024 * 1024
REF_IDLE_SESSIONS = q(300, 50)  # figure 7: the original needs ~0.5 MB and ~20 ms a session
REF_BURST_SESSIONS = q(50, 10)
REF_PROMPT_RUNS = q(5, 2)

# Environment of the developer's machine that must not leak into servers under test.
_LEAKY_PREFIXES = ("COPILOT_", "GH_", "GITHUB_", "XDG_", "OTEL_", "CAPI_")
_LEAKY_NAMES = {"HOME", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "NODE_EXTRA_CA_CERTS",
                "SSL_CERT_FILE", "RUST_LOG", "SKIPPER_LOG"}


class BenchError(RuntimeError):
    """A figure could not be measured (not a slow result: a broken run)."""


# ------------------------------------------------------------------------------------------
# Child processes: every one is started in its own process group and killed at exit.
# ------------------------------------------------------------------------------------------

_CHILDREN: list[subprocess.Popen] = []


def spawn(cmd: list[str], **kw: Any) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, start_new_session=True, **kw)
    _CHILDREN.append(proc)
    return proc


def stop_process(proc: subprocess.Popen, grace: float = 3.0) -> None:
    """SIGTERM the child's own process group, then SIGKILL after `grace` seconds."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                try:
                    proc.send_signal(sig)
                except ProcessLookupError:
                    pass
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    # Once the leader is reaped its id may be reused: never signal the group after that.
    for f in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if f:
                f.close()
        except OSError:
            pass
    if proc in _CHILDREN:
        _CHILDREN.remove(proc)


def _kill_all_children() -> None:
    for proc in list(_CHILDREN):
        stop_process(proc, grace=1.0)


atexit.register(_kill_all_children)


def _on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGHUP, _on_signal)


# ------------------------------------------------------------------------------------------
# /proc helpers
# ------------------------------------------------------------------------------------------

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        children[int(fields[1])].append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def rss_kb(pid: int) -> int:
    """VmRSS of `pid` plus all its descendants, in KiB (0 for processes already gone)."""
    total = 0
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def cpu_seconds(pid: int) -> float:
    """user+system CPU time of `pid` (threads included, children not), in seconds."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return float("nan")
    fields = stat[stat.rfind(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def cpu_ns(pid: int) -> int:
    """On-CPU nanoseconds of `pid`'s live threads (`/proc/<pid>/task/*/schedstat`): the
    scheduler's own accounting, fine enough to compare windows of a few hundred turns, where
    `cpu_seconds` has the clock tick's 10 ms resolution. Threads that ended are not counted."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


# ------------------------------------------------------------------------------------------
# Statistics
# ------------------------------------------------------------------------------------------


def pct(xs: list[float], p: float) -> float:
    """Percentile `p` (0-100) with linear interpolation."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summary_ms(xs_s: list[float]) -> dict[str, float]:
    """Seconds in, a summary in milliseconds out."""
    ms = [x * 1000 for x in xs_s]
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 3),
        "p90_ms": round(pct(ms, 90), 3),
        "p99_ms": round(pct(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "min_ms": round(min(ms), 3),
        "max_ms": round(max(ms), 3),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or a != a or b != b:
        return None
    return round(a / b, 3)


# ------------------------------------------------------------------------------------------
# The fake model
# ------------------------------------------------------------------------------------------


class FakeModel:
    def __init__(self, log_dir: Path):
        self.stderr_path = log_dir / "fake-model.stderr"
        env = {k: v for k, v in os.environ.items() if k not in ("RUST_LOG",)}
        env["RUST_LOG"] = "warn"
        with open(self.stderr_path, "wb") as err:
            self.proc = spawn([str(FAKE_MODEL_BIN), "--port", "0"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=err, env=env)
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + 15
        buf = b""
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise BenchError("fake-model did not print FAKE_MODEL_URL within 15 s")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise BenchError(f"fake-model exited early: {self.stderr_path.read_text(errors='replace')}")
            buf += chunk
        line = buf.split(b"\n", 1)[0].decode().strip()
        if not line.startswith("FAKE_MODEL_URL="):
            raise BenchError(f"unexpected first line from fake-model: {line!r}")
        self.url = line.split("=", 1)[1]
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _call(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"content-type": "application/json"} if data else {})
        try:
            with self._opener.open(req, timeout=timeout) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            raise BenchError(f"fake-model {method} {path} -> {e.code}: {e.read().decode(errors='replace')}")
        return json.loads(raw) if raw else None

    def replies(self, replies: list[dict]) -> int:
        return self._call("POST", "/_fake/replies", {"replies": replies})["queued"]

    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        return self.replies([])

    def clear_requests(self) -> None:
        self._call("DELETE", "/_fake/requests")

    def requests(self) -> list[dict]:
        return self._call("GET", "/_fake/requests")

    def reset(self) -> None:
        self._call("POST", "/_fake/reset", {})

    def stop(self) -> None:
        stop_process(self.proc)


# ------------------------------------------------------------------------------------------
# A JSON-RPC 2.0 client over the server's stdio (Content-Length framing), single-threaded:
# every wait pumps the pipe with select(), so receive times are taken right at os.read().
# ------------------------------------------------------------------------------------------


class RpcError(BenchError):
    pass


@dataclass
class Server:
    """A running server under test (skipper or the reference CLI) and its client."""

    label: str
    proc: subprocess.Popen
    stderr_path: Path
    t_spawn: float
    home: Path
    buf: bytearray = field(default_factory=bytearray)
    next_id: int = 1
    responses: dict = field(default_factory=dict)
    event_count: int = 0
    other_notifications: int = 0
    server_requests: list = field(default_factory=list)
    idle_count: dict = field(default_factory=lambda: defaultdict(int))
    last_idle_t: dict = field(default_factory=dict)
    session_errors: list = field(default_factory=list)
    capture: list | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    # -- wire ------------------------------------------------------------------------------

    def _write(self, obj: dict) -> None:
        body = json.dumps(obj, separators=(",", ":")).encode()
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        fd = self.proc.stdin.fileno()  # type: ignore[union-attr]
        view = memoryview(data)
        try:
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except BrokenPipeError:
            raise BenchError(f"{self.label} closed its stdin (exit {self.proc.poll()}): {self.stderr_tail()}")

    def send(self, method: str, params: dict) -> int:
        rid = self.next_id
        self.next_id += 1
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def pump(self, deadline: float) -> bool:
        """Reads and dispatches whatever arrives before `deadline`; False on timeout."""
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        remaining = deadline - time.perf_counter()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return False
        chunk = os.read(fd, 1 << 20)
        now = time.perf_counter()
        if not chunk:
            code = self.proc.wait(timeout=5) if self.proc.poll() is None else self.proc.returncode
            raise BenchError(f"{self.label} closed stdout (exit {code}); stderr tail:\n{self.stderr_tail()}")
        self.buf += chunk
        self._parse(now)
        return True

    def _parse(self, now: float) -> None:
        buf = self.buf
        pos = 0
        while True:
            hdr_end = buf.find(b"\r\n\r\n", pos)
            if hdr_end < 0:
                break
            length = None
            for line in bytes(buf[pos:hdr_end]).split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                raise BenchError(f"{self.label}: frame without Content-Length: {bytes(buf[pos:hdr_end])!r}")
            start = hdr_end + 4
            if len(buf) < start + length:
                break
            msg = json.loads(buf[start:start + length])
            pos = start + length
            self._dispatch(msg, now)
        if pos:
            del buf[:pos]

    def _dispatch(self, msg: dict, now: float) -> None:
        method = msg.get("method")
        if method is None:
            self.responses[msg.get("id")] = msg
            return
        if "id" in msg:
            # A server → client request (permission, external tool, ...): the bench handles
            # none of them; answer so the server is never left waiting.
            self.server_requests.append(method)
            self._write({"jsonrpc": "2.0", "id": msg["id"],
                         "error": {"code": -32601, "message": f"bench client does not handle {method}"}})
            return
        if method != "session.event":
            self.other_notifications += 1
            return
        self.event_count += 1
        params = msg.get("params") or {}
        kind = (params.get("event") or {}).get("type")
        if kind == "session.idle":
            sid = params.get("sessionId")
            self.idle_count[sid] += 1
            self.last_idle_t[sid] = now
        elif kind == "session.error":
            self.session_errors.append(params)
        if self.capture is not None:
            self.capture.append((now, params))

    # -- calls -----------------------------------------------------------------------------

    def wait_response(self, rid: int, what: str, timeout: float) -> Any:
        deadline = time.perf_counter() + timeout
        while rid not in self.responses:
            if not self.pump(deadline):
                raise BenchError(f"{self.label}: no answer to {what} within {timeout:g} s")
        msg = self.responses.pop(rid)
        if "error" in msg:
            raise RpcError(f"{self.label}: {what} failed: {json.dumps(msg['error'])[:500]}")
        return msg.get("result")

    def call(self, method: str, params: dict | None = None, timeout: float = 30) -> Any:
        return self.wait_response(self.send(method, params or {}), method, timeout)

    def close(self, timeout: float = 10) -> float | None:
        """Closes stdin (the SDK's way of ending a stdio server); seconds until exit, or None
        when it had to be killed."""
        t0 = time.perf_counter()
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout)
            took: float | None = time.perf_counter() - t0
        except subprocess.TimeoutExpired:
            took = None
        stop_process(self.proc)
        return took


@dataclass
class Target:
    """How to start one kind of server: skipper, or the reference CLI."""

    label: str
    argv: list[str]


def skipper_target() -> Target:
    return Target("skipper", [str(SKIPPER_BIN)])


def reference_target() -> Target | None:
    if not REFERENCE:
        return None
    path = Path(REFERENCE)
    if path.suffix in (".js", ".mjs", ".cjs"):
        node = shutil.which("node")
        if not node:
            raise BenchError(f"COPILOT_REFERENCE_CLI={REFERENCE} is a script but `node` is not on PATH")
        return Target("reference", [node, str(path)])
    resolved = shutil.which(REFERENCE) or REFERENCE
    return Target("reference", [resolved])


class Env:
    """The bench's scratch space and the shared fake model."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="skipper-bench-"))
        self.logs = self.root / "logs"
        self.logs.mkdir()
        self.work = self.root / "work"
        self.work.mkdir()
        self.fake = FakeModel(self.logs)
        self._n = 0

    def fresh_dir(self, name: str) -> Path:
        self._n += 1
        d = self.root / f"{self._n:04d}-{name}"
        d.mkdir()
        return d

    def server_env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k.upper() not in _LEAKY_NAMES and not k.upper().startswith(_LEAKY_PREFIXES)}
        env.update({
            "HOME": str(home),
            "COPILOT_HOME": str(home / ".copilot"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "COPILOT_API_URL": self.fake.url,
            "COPILOT_DEBUG_GITHUB_API_URL": self.fake.url,
            "COPILOT_SDK_AUTH_TOKEN": "x",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        })
        return env

    def start(self, target: Target, home: Path | None = None, extra: list[str] | None = None,
              cwd: Path | None = None) -> Server:
        home = home or self.fresh_dir(f"{target.label}-home")
        (home / ".copilot").mkdir(parents=True, exist_ok=True)
        self._n += 1
        stderr_path = self.logs / f"{self._n:04d}-{target.label}.stderr"
        with open(stderr_path, "wb") as err:
            t0 = time.perf_counter()
            proc = spawn(target.argv + SERVER_FLAGS + (extra or []), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=err, env=self.server_env(home),
                         cwd=str(cwd or self.work), bufsize=0)
        return Server(target.label, proc, stderr_path, t0, home)

    def cleanup(self) -> None:
        self.fake.stop()
        if os.environ.get("BENCH_KEEP_TMP"):
            print(f"(scratch kept in {self.root})")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


# ------------------------------------------------------------------------------------------
# Session helpers
# ------------------------------------------------------------------------------------------


def handshake(s: Server) -> None:
    try:
        s.call("connect", {}, timeout=60)
    except RpcError:
        pass  # an older server without `connect`: ping is enough
    s.call("ping", {}, timeout=60)


def create_session(s: Server, streaming: bool = False, timeout: float = 60, extra: dict | None = None) -> str:
    sid = str(uuid.uuid4())
    s.call("session.create", {"sessionId": sid, "requestPermission": False, "streaming": streaming, **(extra or {})},
           timeout=timeout)
    return sid


@dataclass
class Turn:
    seconds: float
    events: list | None
    errors: list


def turn(s: Server, sid: str, prompt: str = "hi", timeout: float = 60, capture: bool = False) -> Turn:
    """session.send → session.idle of that session, timed on the client's clock."""
    idles = s.idle_count[sid]
    errors = len(s.session_errors)
    s.capture = [] if capture else None
    t0 = time.perf_counter()
    rid = s.send("session.send", {"sessionId": sid, "prompt": prompt})
    deadline = t0 + timeout
    while s.idle_count[sid] == idles or rid not in s.responses:
        if not s.pump(deadline):
            raise BenchError(f"{s.label}: no session.idle within {timeout:g} s after session.send")
    msg = s.responses.pop(rid)
    if "error" in msg:
        raise RpcError(f"{s.label}: session.send failed: {json.dumps(msg['error'])[:500]}")
    events, s.capture = s.capture, None
    return Turn(s.last_idle_t[sid] - t0, events, s.session_errors[errors:])


class ReplyFeeder:
    """Queues scripted replies in blocks (between turns, outside the timed span) and forgets
    the fake's captured requests now and then so its memory stays flat over long runs."""

    def __init__(self, fake: FakeModel, per_turn: list[dict], block: int = 100):
        self.fake, self.per_turn, self.block = fake, per_turn, block
        self.left = 0

    def before_turn(self, remaining_turns: int) -> None:
        if self.left == 0:
            self.fake.clear_requests()
            n = min(self.block, remaining_turns)
            self.fake.replies(self.per_turn * n)
            self.left = n
        self.left -= 1


def run_text_turns(env: Env, s: Server, sids: list[str], n: int, reply: dict,
                   on_turn: Callable[[int], None] | None = None) -> tuple[list[float], int]:
    """`n` one-reply turns, round-robin over `sids`; returns (seconds per turn, error count)."""
    feeder = ReplyFeeder(env.fake, [reply])
    times: list[float] = []
    errors = 0
    for i in range(n):
        feeder.before_turn(n - i)
        t = turn(s, sids[i % len(sids)])
        times.append(t.seconds)
        errors += len(t.errors)
        if on_turn:
            on_turn(i + 1)
    return times, errors


def leftover_replies(env: Env) -> int:
    left = env.fake.pending()
    env.fake.reset()
    return left


# ------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------


def fig_startup(env: Env, target: Target, n: int) -> dict:
    """Figure 1: spawn → first `ping` answered; RSS right after; exit after stdin EOF."""
    out: dict[str, Any] = {}
    shared_home = env.fresh_dir(f"{target.label}-startup-home")
    for variant in ("fresh_home", "existing_home"):
        times, rss, exits = [], [], []
        for i in range(n + 1):  # run 0 warms the page cache and is discarded
            home = env.fresh_dir(f"{target.label}-startup") if variant == "fresh_home" else shared_home
            s = env.start(target, home=home)
            rid = s.send("ping", {})
            s.wait_response(rid, "ping", timeout=60)
            t = time.perf_counter() - s.t_spawn
            r = rss_kb(s.pid)
            took = s.close()
            if i == 0:
                continue
            times.append(t)
            rss.append(r)
            if took is not None:
                exits.append(took)
        out[variant] = {
            "spawn_to_ping": summary_ms(times),
            "rss_after_ping_kb_median": int(statistics.median(rss)),
            "exit_after_stdin_eof": summary_ms(exits),
            "killed_after_eof": n - len(exits),
        }
    return out


def fig_text_turns(env: Env, target: Target, n: int, streaming: bool) -> dict:
    """Figure 2a: send → idle for a one-reply text turn, `n` turns in one session."""
    s = env.start(target)
    try:
        handshake(s)
        sid = create_session(s, streaming=streaming)
        run_text_turns(env, s, [sid], 5, {"text": "ok"})  # warm-up: first model call, caches
        cpu0 = cpu_seconds(s.pid)
        t0 = time.perf_counter()
        times, errors = run_text_turns(env, s, [sid], n, {"text": "ok"})
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(s.pid) - cpu0
        return {
            "send_to_idle": summary_ms(times),
            "server_cpu_ms_per_turn": round(cpu * 1000 / n, 3),
            "turns_per_second": round(n / wall, 1),
            "session_errors": errors,
            "leftover_replies": leftover_replies(env),
            "rss_end_kb": rss_kb(s.pid),
        }
    finally:
        s.close()


SANDBOX_CONFIGS = {
    "plain": None,
    "sandboxed": {"sandboxConfig": {"enabled": True}},
    # Host rules: each command starts behind the network bridge, its proxy made per session.
    "filtered": {"sandboxConfig": {"enabled": True, "userPolicy": {"network": {"allowedHosts": ["github.com"]}}}},
}


def fig_tool_turns(env: Env, target: Target, n: int, sandbox: str = "plain") -> dict:
    """Figure 2b: send → idle for [bash `true` tool call, then text]; tool span from events.
    Figure 2c: the same with the session's commands in the bubblewrap sandbox
    (`sandboxConfig: {enabled: true}`), and what that does to `session.create`.
    Figure 2d: the same with host rules, so each command reaches the network only through the
    sandbox's filtering proxy (the bridge starts first inside the sandbox)."""
    s = env.start(target, extra=["--allow-all-tools"])
    try:
        handshake(s)
        extra = SANDBOX_CONFIGS[sandbox]
        creates = []
        for _ in range(q(20, 5)):
            t0 = time.perf_counter()
            create_session(s, extra=extra)
            creates.append(time.perf_counter() - t0)
        sid = create_session(s, extra=extra)
        per_conv = [{"tool_calls": [{"name": "bash", "arguments": {"command": "true", "description": "bench"}}]},
                    {"text": "done"}]
        totals, tool_wall, tool_stamp, failures, errors = [], [], [], 0, 0
        for i in range(n + 2):  # 2 warm-up conversations (the first starts the shell)
            env.fake.replies(per_conv)
            t = turn(s, sid, capture=True, timeout=60)
            start = complete = None
            for now, params in t.events or []:
                ev = params.get("event", {})
                if ev.get("type") == "tool.execution_start" and start is None:
                    start = (now, ev)
                elif ev.get("type") == "tool.execution_complete" and complete is None:
                    complete = (now, ev)
                    if not ev.get("data", {}).get("success"):
                        failures += 1
            if start is None or complete is None:
                raise BenchError(f"{s.label}: tool turn without tool.execution_start/complete events")
            if i < 2:
                continue
            errors += len(t.errors)
            totals.append(t.seconds)
            tool_wall.append(complete[0] - start[0])
            tool_stamp.append((_ts(complete[1]) - _ts(start[1])))
            if i % 50 == 0:
                env.fake.clear_requests()
        return {
            "session_create": summary_ms(creates),
            "send_to_idle": summary_ms(totals),
            "tool_span_wall": summary_ms(tool_wall),
            "tool_span_event_timestamps": summary_ms(tool_stamp),
            "send_to_idle_minus_tool_median_ms": round((statistics.median(totals)
                                                        - statistics.median(tool_wall)) * 1000, 3),
            "tool_failures": failures,
            "session_errors": errors,
            "leftover_replies": leftover_replies(env),
        }
    finally:
        s.close()


def _ts(ev: dict) -> float:
    return _dt.datetime.fromisoformat(ev["timestamp"].replace("Z", "+00:00")).timestamp()


def fig_throughput(env: Env, target: Target, n: int) -> dict:
    """Figure 3: every session.event received / elapsed, streaming long replies."""
    s = env.start(target)
    try:
        handshake(s)
        sid = create_session(s, streaming=True)
        words = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor " * 400)
        text = words[:THROUGHPUT_TEXT_CHARS]
        reply = {"text": text}
        env.fake.replies([reply])
        turn(s, sid)  # warm-up
        env.fake.clear_requests()
        feeder = ReplyFeeder(env.fake, [reply], block=20)
        c0, cpu0, pcpu0 = s.event_count, cpu_seconds(s.pid), time.process_time()
        kinds: dict[str, int] = defaultdict(int)
        t0 = time.perf_counter()
        errors = 0
        max_gaps: list[float] = []
        stalled = 0.0  # time spent in gaps > STALL_S between consecutive events of a turn
        for i in range(n):
            feeder.before_turn(n - i)
            t_send = time.perf_counter()
            t = turn(s, sid, capture=True)
            errors += len(t.errors)
            prev = t_send
            gaps = []
            for now, params in t.events or []:
                kinds[params.get("event", {}).get("type", "?")] += 1
                gaps.append(now - prev)
                prev = now
            max_gaps.append(max(gaps, default=0.0))
            stalled += sum(g for g in gaps if g > STALL_S)
        elapsed = time.perf_counter() - t0
        events = s.event_count - c0
        return {
            "largest_gap_in_turn": summary_ms(max_gaps),
            "turns_with_gap_over_stall": sum(1 for g in max_gaps if g > STALL_S),
            "stall_threshold_ms": STALL_S * 1000,
            "events_per_second_without_stalls": round(events / max(elapsed - stalled, 1e-9), 1),
            "turns": n,
            "reply_chars": len(text),
            "events": events,
            "events_per_turn": round(events / n, 1),
            "elapsed_s": round(elapsed, 3),
            "events_per_second": round(events / elapsed, 1),
            "deltas_per_second": round(kinds.get("assistant.message_delta", 0) / elapsed, 1),
            "server_cpu_s": round(cpu_seconds(s.pid) - cpu0, 3),
            "client_cpu_s": round(time.process_time() - pcpu0, 3),
            "event_kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
            "session_errors": errors,
            "leftover_replies": leftover_replies(env),
        }
    finally:
        s.close()


def fig_decay(env: Env, target: Target, n: int, window: int, sessions: int,
              reply: dict | None = None) -> dict:
    """Figure 4: `n` text turns in one long-lived server, round-robin over `sessions`
    sessions; first `window` turns vs last `window` turns, RSS along the way. `reply` is what
    the fake answers (default: `ok` at once)."""
    reply = reply or {"text": "ok"}
    s = env.start(target)
    try:
        handshake(s)
        sids = [create_session(s) for _ in range(sessions)]
        rss_marks: dict[str, int] = {"after_create": rss_kb(s.pid)}
        fake_pid = env.fake.proc.pid
        cpu_marks: dict[int, tuple[float, float]] = {}

        ns_marks: dict[int, int] = {}
        first_body: list[int] = []

        def mark(i: int) -> None:
            if i == 1:
                reqs = env.fake.requests()
                if reqs:
                    first_body.append(len(json.dumps(reqs[-1]["body"])))
            if i == window:
                rss_marks[f"after_turn_{i}"] = rss_kb(s.pid)
            if i in (window, n - window):
                cpu_marks[i] = (cpu_seconds(s.pid), cpu_seconds(fake_pid))
                ns_marks[i] = cpu_ns(s.pid)
            if i == n - 1 or (1 < i < n - 1 and i % 50 == 0):
                # Keep only the last request captured: its size shows how big histories got.
                # Dropped along the way too: a fake holding a thousand growing bodies spends
                # more CPU on its own memory than on answering, on the cores the server shares.
                env.fake.clear_requests()

        cpu0 = cpu_seconds(s.pid)
        cpu_marks[0] = (cpu0, cpu_seconds(fake_pid))
        ns_marks[0] = cpu_ns(s.pid)
        times, errors = run_text_turns(env, s, sids, n, reply, on_turn=mark)
        cpu = cpu_seconds(s.pid) - cpu0
        cpu_marks[n] = (cpu_seconds(s.pid), cpu_seconds(fake_pid))
        ns_marks[n] = cpu_ns(s.pid)

        def ns_ms_per_turn(a: int, b: int) -> float:
            return round((ns_marks[b] - ns_marks[a]) / 1e6 / (b - a), 3)

        def cpu_ms_per_turn(a: int, b: int, which: int) -> float:
            return round((cpu_marks[b][which] - cpu_marks[a][which]) * 1000 / (b - a), 3)
        rss_marks[f"after_turn_{n}"] = rss_kb(s.pid)
        last = env.fake.requests()
        body = last[-1]["body"] if last else {}
        first, final = times[:window], times[-window:]
        control: dict[str, Any] = {}
        if sessions == 1 and first_body:
            # Control: a fresh session whose first message makes its requests as large as the
            # last window's, from a short history. What the last window costs beyond this is
            # what the history's length (not the bytes on the wire) costs.
            pad = max(0, len(json.dumps(body)) - first_body[0])
            csid = create_session(s)
            env.fake.replies([reply])
            turn(s, csid, prompt="x" * pad)
            a = cpu_ns(s.pid)
            ctimes, cerr = run_text_turns(env, s, [csid], window, reply)
            control = {
                "padding_bytes": pad,
                "server_cpu_ms_per_turn": round((cpu_ns(s.pid) - a) / 1e6 / window, 3),
                "send_to_idle": summary_ms(ctimes),
                "session_errors": cerr,
            }
        return {
            "turns": n,
            "sessions": sessions,
            "first_window": summary_ms(first),
            "last_window": summary_ms(final),
            "last_over_first_median": ratio(statistics.median(final), statistics.median(first)),
            "rss_kb": rss_marks,
            "rss_growth_kb": rss_marks[f"after_turn_{n}"] - rss_marks["after_create"],
            "server_cpu_ms_per_turn": round(cpu * 1000 / n, 3),
            "server_cpu_ms_per_turn_first_window": cpu_ms_per_turn(0, window, 0),
            "server_cpu_ms_per_turn_last_window": cpu_ms_per_turn(n - window, n, 0),
            "fake_cpu_ms_per_turn_first_window": cpu_ms_per_turn(0, window, 1),
            "fake_cpu_ms_per_turn_last_window": cpu_ms_per_turn(n - window, n, 1),
            "server_cpu_ns_ms_per_turn_first_window": ns_ms_per_turn(0, window),
            "server_cpu_ns_ms_per_turn_last_window": ns_ms_per_turn(n - window, n),
            "same_size_requests_control": control,
            "last_request_messages": len(body.get("messages", [])),
            "last_request_kb": round(len(json.dumps(body)) / 1024, 1),
            "session_errors": errors,
            "leftover_replies": leftover_replies(env),
            "all_turns_ms": [round(t * 1000, 3) for t in times],
        }
    finally:
        s.close()


def fig_idle_sessions(env: Env, target: Target, n: int) -> dict:
    """Figure 5: RSS before/after creating `n` sessions (no messages)."""
    s = env.start(target)
    try:
        handshake(s)
        create_session(s)  # warm-up: lazy initialisation is not a per-session cost
        time.sleep(0.2)
        before = rss_kb(s.pid)
        disk_before = _tree_bytes(s.home / ".copilot")
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            create_session(s)
            times.append(time.perf_counter() - t0)
        time.sleep(0.2)
        after = rss_kb(s.pid)
        return {
            "sessions": n,
            "rss_before_kb": before,
            "rss_after_kb": after,
            "per_session_kb": round((after - before) / n, 2),
            "session_create": summary_ms(times),
            "disk_per_session_kb": round((_tree_bytes(s.home / ".copilot") - disk_before) / 1024 / n, 2),
            "session_errors": len(s.session_errors),
        }
    finally:
        s.close()


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def search_tree() -> Path:
    given = os.environ.get("BENCH_TREE")
    if given:
        return Path(given).expanduser().absolute()
    reg = Path.home() / ".cargo" / "registry" / "src"
    if reg.is_dir():
        return reg
    return REPO / "target"


def _tool_once(env: Env, s: Server, sid: str, tool: str, args: dict, timeout: float) -> dict:
    env.fake.clear_requests()
    env.fake.replies([{"tool_calls": [{"name": tool, "arguments": args}]}, {"text": "done"}])
    t = turn(s, sid, capture=True, timeout=timeout)
    start = complete = None
    for now, params in t.events or []:
        ev = params.get("event", {})
        if ev.get("type") == "tool.execution_start" and start is None:
            start = (now, ev)
        elif ev.get("type") == "tool.execution_complete" and complete is None:
            complete = (now, ev)
    if start is None or complete is None:
        raise BenchError(f"{s.label}: {tool} turn without tool.execution_start/complete events")
    data = complete[1].get("data", {})
    result = data.get("result") or {}
    detail = result.get("detailedContent") or result.get("content") or ""
    lines = [ln for ln in detail.splitlines() if ln.strip()]
    return {
        "wall_s": complete[0] - start[0],
        "stamp_s": _ts(complete[1]) - _ts(start[1]),
        "success": bool(data.get("success")),
        "lines": len(lines),
        "spilled": "Output too large" in (result.get("content") or ""),
        "result_lines": lines,
        "turn_s": t.seconds,
    }


def _external(cmd: list[str], timeout: float) -> tuple[float, int]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=timeout)
    took = time.perf_counter() - t0
    return took, sum(1 for ln in p.stdout.splitlines() if ln.strip())


def fig_search(env: Env, repeats: int) -> dict:
    """Figure 6: our grep/glob tools (driven through a session) vs ripgrep."""
    tree = search_tree()
    rg = os.environ.get("RG_BIN") or shutil.which("rg")
    out: dict[str, Any] = {"tree": str(tree), "rg": rg}
    if not tree.is_dir():
        out["skipped"] = f"tree {tree} does not exist"
        return out
    if rg:
        refs = {"grep": [rg, "-l", "fn main", str(tree)], "glob": [rg, "--files", "-g", "*.rs", str(tree)]}
        out["reference"] = "ripgrep"
    else:
        # Not the same semantics (no ignore files, hidden files included) but a sense of scale.
        refs = {"grep": ["grep", "-rlI", "fn main", str(tree)],
                "glob": ["find", str(tree), "-type", "f", "-name", "*.rs"]}
        out["reference"] = "GNU grep -rlI / find (rg not installed)"
    s = env.start(skipper_target(), extra=["--allow-all-tools"])
    try:
        handshake(s)
        sid = create_session(s)
        cases = {
            "grep": ("grep", {"pattern": "fn main", "paths": str(tree), "output_mode": "files_with_matches"}),
            "glob": ("glob", {"pattern": "**/*.rs", "paths": str(tree)}),
        }
        for name, (tool, args) in cases.items():
            ours, theirs, rounds = [], [], []
            for i in range(repeats + 1):  # round 0 warms the page cache for both
                o = _tool_once(env, s, sid, tool, args, timeout=600)
                r = _external(refs[name], timeout=600)
                if i == 0:
                    continue
                ours.append(o)
                theirs.append(r)
            med_ours = statistics.median(o["wall_s"] for o in ours)
            med_ref = statistics.median(r[0] for r in theirs)
            out[name] = {
                "ours_wall": summary_ms([o["wall_s"] for o in ours]),
                "ours_event_timestamps": summary_ms([o["stamp_s"] for o in ours]),
                "ours_turn_send_to_idle": summary_ms([o["turn_s"] for o in ours]),
                "ours_success": all(o["success"] for o in ours),
                "ours_result_lines": ours[-1]["lines"],
                "ours_output_spilled_to_file": ours[-1]["spilled"],
                "reference_cmd": shlex.join(refs[name]),
                "reference_cmd_short": shlex.join([Path(refs[name][0]).name]
                                                  + ["TREE" if a == str(tree) else a for a in refs[name][1:]]),
                "reference_wall": summary_ms([r[0] for r in theirs]),
                "reference_result_lines": theirs[-1][1],
                "ours_over_reference": ratio(med_ours, med_ref),
            }
        out["session_errors"] = len(s.session_errors)
        env.fake.reset()
        return out
    finally:
        s.close()


# ------------------------------------------------------------------------------------------
# Issue 14 figures: scale (burst, generated repository, -p, fan-out)
# ------------------------------------------------------------------------------------------


def fig_burst(env: Env, target: Target, sessions: int, bursts: int) -> dict:
    """Figure 8: `sessions` sessions each get a `session.send` written back to back (one
    burst), `bursts` times; send → idle per session, server CPU per turn in the bursts."""
    s = env.start(target)
    try:
        handshake(s)
        sids = [create_session(s) for _ in range(sessions)]
        env.fake.replies([{"text": "ok"}] * sessions)
        for sid in sids:  # warm-up: every session has made one model call
            turn(s, sid)
        latencies: list[float] = []
        worst_per_burst: list[float] = []
        cpu_ns_total = 0
        starved = 0
        errors0 = len(s.session_errors)
        for _ in range(bursts):
            env.fake.clear_requests()
            env.fake.replies([{"text": "ok"}] * sessions)
            idles = {sid: s.idle_count[sid] for sid in sids}
            a = cpu_ns(s.pid)
            sent: dict[str, float] = {}
            rids = []
            for sid in sids:
                sent[sid] = time.perf_counter()
                rids.append(s.send("session.send", {"sessionId": sid, "prompt": "hi"}))
            deadline = time.perf_counter() + 120
            waiting = set(sids)
            while waiting and time.perf_counter() < deadline:
                s.pump(deadline)
                waiting = {sid for sid in waiting if s.idle_count[sid] == idles[sid]}
            cpu_ns_total += cpu_ns(s.pid) - a
            starved += len(waiting)
            done = [s.last_idle_t[sid] - sent[sid] for sid in sids if sid not in waiting]
            latencies += done
            worst_per_burst.append(max(done, default=0.0))
            for rid in rids:
                s.responses.pop(rid, None)
        lat_ms = sorted(x * 1000 for x in latencies)
        return {
            "sessions": sessions,
            "bursts": bursts,
            "send_to_idle": summary_ms(latencies),
            "p99_ms": round(pct(lat_ms, 99), 3) if lat_ms else None,
            "server_cpu_ms_per_turn": round(cpu_ns_total / 1e6 / max(1, sessions * bursts), 3),
            "starved_sessions": starved,
            "worst_in_burst": summary_ms(worst_per_burst),
            "session_errors": len(s.session_errors) - errors0,
            "leftover_replies": leftover_replies(env),
        }
    finally:
        s.close()


REPO_NEEDLE = "fn main"  # in one file of REPO_NEEDLE_EVERY
REPO_NEEDLE_EVERY = 100
REPO_RARE = "needle_[0-9]+_rare"  # content-mode case, one file of 1000


def generated_repo(n_files: int, file_kb: int) -> Path:
    """A deterministic git-like tree of `n_files` source files of ~`file_kb` KiB, with a
    `.gitignore`d build directory and hidden files holding the needle too (they must stay out
    of both tools' results). Cached under target/ between runs."""
    root = REPO / "target" / f"bench-repo-{n_files}x{file_kb}k"
    marker = root / ".complete"
    if marker.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n*.log\n")
    words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
             "rho sigma tau upsilon phi chi psi omega").split()
    lines = [f"    let {words[i % len(words)]}_{i} = {words[(i * 7) % len(words)]}({i}); // {words[(i * 3) % len(words)]}"
             for i in range(400)]
    block = "\n".join(lines) + "\n"
    body = (block * (file_kb * 1024 // len(block) + 1))[: file_kb * 1024]
    for i in range(n_files):
        d = root / f"pkg{i % 40:02d}" / f"mod{(i // 40) % 25:02d}"
        if i % 40 == 0 or not d.is_dir():
            d.mkdir(parents=True, exist_ok=True)
        text = body
        if i % REPO_NEEDLE_EVERY == 0:
            text = text[: len(text) // 2] + f"{REPO_NEEDLE}() {{}}\n" + text[len(text) // 2:]
        if i % 1000 == 7:
            text = f"// needle_{i}_rare here\n" + text + f"// and needle_{i}_rare again\n"
        (d / f"file{i:05d}.rs").write_text(text)
    ignored = root / "build"
    ignored.mkdir()
    for i in range(20):
        (ignored / f"gen{i}.rs").write_text(f"{REPO_NEEDLE}() {{}} needle_{i}_rare\n")
        (root / f".hidden{i}.rs").write_text(f"{REPO_NEEDLE}() {{}} needle_{i}_rare\n")
    marker.write_text("ok\n")
    return root


def _tool_lines(env: Env, s: Server, sid: str, tool: str, args: dict, timeout: float) -> tuple[dict, list[str]]:
    """Runs a tool once; returns its timing and its full result lines."""
    o = _tool_once(env, s, sid, tool, args, timeout)
    return o, o.pop("all_lines", [])


def fig_repo_search(env: Env, repeats: int) -> dict:
    """Figure 9: grep over a generated repository (REPO_FILES files) vs ripgrep, with the
    result lists compared."""
    rg = os.environ.get("RG_BIN") or shutil.which("rg")
    if not rg:
        return {"skipped": "ripgrep (rg) is not installed"}
    t0 = time.perf_counter()
    tree = generated_repo(REPO_FILES, REPO_FILE_KB)
    gen_s = time.perf_counter() - t0
    out: dict[str, Any] = {"tree": str(tree), "files": REPO_FILES, "mib": round(_tree_bytes(tree) / 2**20, 1),
                           "generated_in_s": round(gen_s, 2)}
    cases = {
        "files_with_matches": ({"pattern": REPO_NEEDLE, "paths": str(tree), "output_mode": "files_with_matches"},
                               [rg, "-l", REPO_NEEDLE, str(tree)]),
        "content": ({"pattern": REPO_RARE, "paths": str(tree), "output_mode": "content", "-n": True},
                    [rg, "-n", REPO_RARE, str(tree)]),
    }
    s = env.start(skipper_target(), extra=["--allow-all-tools"])
    try:
        handshake(s)
        sid = create_session(s)
        for name, (args, ref) in cases.items():
            ours, theirs = [], []
            same = True
            for i in range(repeats + 1):
                o = _tool_once(env, s, sid, "grep", args, timeout=600)
                t1 = time.perf_counter()
                p = subprocess.run(ref, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=600)
                r_s = time.perf_counter() - t1
                ref_lines = [ln for ln in p.stdout.decode(errors="replace").splitlines() if ln.strip()]
                same = same and sorted(o["result_lines"]) == sorted(ref_lines) \
                    and o["result_lines"] == sorted(o["result_lines"], key=_path_key)
                if i == 0:
                    continue
                ours.append(o)
                theirs.append((r_s, len(ref_lines)))
            med_o = statistics.median(o["wall_s"] for o in ours)
            med_r = statistics.median(r[0] for r in theirs)
            out[name] = {
                "ours_wall": summary_ms([o["wall_s"] for o in ours]),
                "reference_wall": summary_ms([r[0] for r in theirs]),
                "ours_result_lines": ours[-1]["lines"],
                "reference_result_lines": theirs[-1][1],
                "same_matches": same,
                "reference_cmd_short": shlex.join(["rg"] + ["TREE" if a == str(tree) else a for a in ref[1:]]),
                "ours_over_reference": ratio(med_o, med_r),
            }
        out["session_errors"] = len(s.session_errors)
        env.fake.reset()
        return out
    finally:
        s.close()


def _path_key(line: str) -> tuple:
    # Our results are sorted by path components (directory entries by name, depth first).
    path = line.split(":", 1)[0]
    return tuple(path.split("/"))


def fig_prompt_mode(env: Env, target: Target, n: int) -> dict:
    """Figure 10: `-p` run of two model calls (a `view` tool call, then text), spawn → exit."""
    work = env.fresh_dir(f"{target.label}-p-work")
    (work / "hello.txt").write_text("hello\n")
    home = env.fresh_dir(f"{target.label}-p-home")
    (home / ".copilot").mkdir(parents=True, exist_ok=True)
    times = []
    failures = 0
    for i in range(n + 1):
        env.fake.clear_requests()
        env.fake.replies([{"tool_calls": [{"name": "view", "arguments": {"path": str(work / "hello.txt")}}]},
                          {"text": "done"}])
        t0 = time.perf_counter()
        p = subprocess.run(target.argv + ["-p", "read hello.txt", "--allow-all-tools", "--no-auto-update",
                                          # the original refuses -p without a model the fake lists
                                          "--model", "claude-sonnet-4.5"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={**env.server_env(home), "COPILOT_GITHUB_TOKEN": "x", "GH_TOKEN": "x"}, cwd=str(work), timeout=120)
        took = time.perf_counter() - t0
        ok = p.returncode == 0 and b"done" in p.stdout and env.fake.pending() == 0
        if not ok:
            failures += 1
            if failures > 2:
                raise BenchError(f"{target.label} -p failed (exit {p.returncode}): "
                                 f"{p.stderr.decode(errors='replace')[-500:]}")
            env.fake.reset()
            continue
        if i > 0:
            times.append(took)
    env.fake.reset()
    return {"start_to_exit": summary_ms(times), "failures": failures}


class _Conn:
    """A bare JSON-RPC client over TCP. Event frames are only scanned (not parsed) so ten of
    them keep up with one server."""

    def __init__(self, port: int):
        import socket
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setblocking(False)
        self.buf = bytearray()
        self.next_id = 1
        self.responses: dict[int, dict] = {}
        self.seqs: list[int] = []
        self.reorders = 0
        self.idle = 0
        self.closed = False

    def send(self, method: str, params: dict) -> int:
        rid = self.next_id
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        self.sock.setblocking(True)
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.sock.setblocking(False)
        return rid

    def read(self) -> None:
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.closed = True
            return
        self.buf += chunk
        buf, pos = self.buf, 0
        while True:
            h = buf.find(b"\r\n\r\n", pos)
            if h < 0:
                break
            n = int(bytes(buf[pos:h]).split(b":", 1)[1])
            start = h + 4
            if len(buf) < start + n:
                break
            body = bytes(buf[start:start + n])
            pos = start + n
            i = body.find(b'"deltaContent":"')
            if i >= 0 and b"assistant.message_delta" in body:
                j = i + 16
                k = body.index(b" ", j)
                seq = int(body[j:k])
                if self.seqs and seq != self.seqs[-1] + 1:
                    self.reorders += 1
                self.seqs.append(seq)
            elif b'"session.idle"' in body:
                self.idle += 1
            elif b'"method"' not in body[:40] or b'"result"' in body or b'"error"' in body:
                msg = json.loads(body)
                if "id" in msg and "method" not in msg:
                    self.responses[msg["id"]] = msg
        del buf[:pos]

    def call(self, method: str, params: dict, timeout: float = 30) -> Any:
        import select as _select
        rid = self.send(method, params)
        deadline = time.perf_counter() + timeout
        while rid not in self.responses:
            if time.perf_counter() > deadline or self.closed:
                raise BenchError(f"no answer to {method}")
            _select.select([self.sock], [], [], 0.1)
            self.read()
        msg = self.responses.pop(rid)
        if "error" in msg:
            raise RpcError(f"{method} failed: {json.dumps(msg['error'])[:300]}")
        return msg.get("result")


def fig_fanout(env: Env, deltas: int, clients: int, queue_limit: int) -> dict:
    """Figure 11: one session streams `deltas` deltas (numbered) to `clients` TCP clients that
    all subscribed to it; one more client subscribes and never reads. Order per client, every
    delta delivered, server RSS along the way, and the stalled client disconnected."""
    home = env.fresh_dir("fanout-home")
    (home / ".copilot").mkdir(parents=True, exist_ok=True)
    e = env.server_env(home)
    e["SKIPPER_MAX_QUEUED_EVENT_BYTES"] = str(queue_limit)
    err = open(env.logs / "fanout.stderr", "wb")
    proc = spawn([str(SKIPPER_BIN), "--headless", "--no-auto-update", "--auth-token-env", "COPILOT_SDK_AUTH_TOKEN",
                  "--port", "0"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=e,
                 cwd=str(env.work))
    import select as _select
    try:
        line = b""
        deadline = time.perf_counter() + 30
        while b"listening on port" not in line:
            if time.perf_counter() > deadline or not _select.select([proc.stdout], [], [], 1)[0]:
                if time.perf_counter() > deadline:
                    raise BenchError("skipper --port did not announce its port")
                continue
            line = proc.stdout.readline()  # type: ignore[union-attr]
        port = int(line.split()[-1])
        conns = [_Conn(port) for _ in range(clients)]
        stalled = _Conn(port)
        owner = conns[0]
        sid = str(uuid.uuid4())
        owner.call("session.create", {"sessionId": sid, "requestPermission": False, "streaming": True})
        for c in conns[1:] + [stalled]:
            c.call("session.resume", {"sessionId": sid, "streaming": True})
        # A resume may replay an idle of its own: count the turns' idles from here.
        time.sleep(0.2)
        for c in conns:
            c.read()
        base = {id(c): c.idle for c in conns}
        per_turn = min(deltas, 10_000)
        turns = (deltas + per_turn - 1) // per_turn
        rss_before = rss_kb(proc.pid)
        rss_peak = rss_before
        cpu0 = cpu_ns(proc.pid)
        t0 = time.perf_counter()
        seq = 0
        for t in range(turns):
            k = min(per_turn, deltas - seq)
            env.fake.clear_requests()
            env.fake.replies([{"slow_text": [f"{seq + i} " for i in range(k)], "delay_ms": 0}])
            seq += k
            owner.send("session.send", {"sessionId": sid, "prompt": f"turn {t}"})
            deadline = time.perf_counter() + 300
            while any(c.idle - base[id(c)] <= t for c in conns):
                if time.perf_counter() > deadline:
                    raise BenchError(f"fan-out: turn {t} not idle on every client within 300 s")
                if any(c.closed for c in conns):
                    raise BenchError(f"fan-out: a reading client was disconnected in turn {t} "
                                     f"(it fell more than {queue_limit} bytes behind)")
                ready = _select.select([c.sock for c in conns if not c.closed], [], [], 0.5)[0]
                for c in conns:
                    if c.sock in ready:
                        c.read()
                rss_peak = max(rss_peak, rss_kb(proc.pid)) if random_tick() else rss_peak
        elapsed = time.perf_counter() - t0
        cpu = cpu_ns(proc.pid) - cpu0
        rss_peak = max(rss_peak, rss_kb(proc.pid))
        # The stalled client: was it disconnected? (reading now drains what the kernel held,
        # then sees end of stream)
        stalled_closed = False
        end = time.perf_counter() + 10
        while time.perf_counter() < end and not stalled.closed:
            _select.select([stalled.sock], [], [], 0.2)
            stalled.read()
        stalled_closed = stalled.closed
        return {
            "deltas": deltas,
            "clients_reading": clients,
            "queue_limit_bytes": queue_limit,
            "elapsed_s": round(elapsed, 3),
            "deltas_per_second_per_client": round(deltas / elapsed, 1),
            "every_client_got_all": all(len(c.seqs) == deltas for c in conns),
            "received_min": min(len(c.seqs) for c in conns),
            "first_seen": max((c.seqs[0] for c in conns if c.seqs), default=None),
            "reorders": sum(c.reorders for c in conns),
            "in_order": all(c.seqs == list(range(deltas)) for c in conns),
            "stalled_client_disconnected": stalled_closed,
            "stalled_client_received": len(stalled.seqs),
            "rss_before_kb": rss_before,
            "rss_peak_kb": rss_peak,
            "rss_end_kb": rss_kb(proc.pid),
            "server_cpu_ms": round(cpu / 1e6, 1),
            "server_cpu_us_per_delta_per_client": round(cpu / 1e3 / deltas / clients, 3),
            "leftover_replies": leftover_replies(env),
        }
    finally:
        stop_process(proc)
        err.close()


_tick = [0]


def random_tick() -> bool:
    """Samples RSS every 50th wake-up (reading /proc is not free)."""
    _tick[0] += 1
    return _tick[0] % 50 == 0


def fig_reference(env: Env) -> dict:
    """Figure 7: figures 1, 2a and a shortened 4 against the original CLI."""
    ref = reference_target()
    if ref is None:
        return {"skipped": "COPILOT_REFERENCE_CLI is not set"}
    sk = skipper_target()
    out: dict[str, Any] = {"cli": " ".join(ref.argv)}

    def both(name: str, fn: Callable[[Target], dict]) -> None:
        res = {}
        for t in (sk, ref):
            try:
                res[t.label] = fn(t)
            except BenchError as e:
                res[t.label] = {"error": str(e)}
        out[name] = res

    both("startup", lambda t: fig_startup(env, t, REF_STARTUP))
    both("text_turn", lambda t: fig_text_turns(env, t, REF_TEXT_TURNS, streaming=False))
    both("decay", lambda t: fig_decay(env, t, REF_DECAY_TURNS, REF_DECAY_WINDOW, 1))
    both("idle", lambda t: fig_idle_sessions(env, t, REF_IDLE_SESSIONS))
    both("burst", lambda t: fig_burst(env, t, REF_BURST_SESSIONS, 1))
    both("prompt", lambda t: fig_prompt_mode(env, t, REF_PROMPT_RUNS))
    r, get = out, _get
    out["ratios_reference_over_skipper"] = {
        key: ratio(get(r, path.format(who="reference")), get(r, path.format(who="skipper")))
        for key, _label, path, _unit, _scale in REFERENCE_ROWS
    }
    return out


# (key, label, path in figure 7's results with {who}, unit, divisor for display)
REFERENCE_ROWS = [
    ("startup_median", "spawn → ping (existing home), median",
     "startup.{who}.existing_home.spawn_to_ping.median_ms", " ms", 1),
    ("startup_fresh_median", "spawn → ping (fresh home), median",
     "startup.{who}.fresh_home.spawn_to_ping.median_ms", " ms", 1),
    ("startup_rss", "RSS after first ping", "startup.{who}.existing_home.rss_after_ping_kb_median",
     " MiB", 1024),
    ("text_turn_median", "text turn send → idle, median", "text_turn.{who}.send_to_idle.median_ms", " ms", 1),
    ("decay_first_window_median", f"decay: turns 1–{REF_DECAY_WINDOW}, median",
     "decay.{who}.first_window.median_ms", " ms", 1),
    ("decay_last_window_median", f"decay: last {REF_DECAY_WINDOW} of {REF_DECAY_TURNS} turns, median",
     "decay.{who}.last_window.median_ms", " ms", 1),
    ("decay_rss_end", f"decay: RSS after {REF_DECAY_TURNS} turns",
     f"decay.{{who}}.rss_kb.after_turn_{REF_DECAY_TURNS}", " MiB", 1024),
]


def _get(d: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        v = f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return f"{v}{unit}"


def _ms(d: dict | None) -> str:
    if not d or not d.get("n"):
        return "-"
    return f"median {d['median_ms']:.2f} ms, p90 {d['p90_ms']:.2f} ms (n={d['n']})"


def _ms99(d: dict | None) -> str:
    if not d or not d.get("n"):
        return "-"
    return f"median {d['median_ms']:.2f} ms, p99 {d['p99_ms']:.2f} ms (n={d['n']})"


def report(results: dict) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []

    def row(fig: str, what: str, value: str) -> None:
        rows.append((fig, what, value))

    f = results.get("figures", {})
    if "1_startup" in f:
        for variant, d in f["1_startup"].items():
            if not isinstance(d, dict) or "spawn_to_ping" not in d:
                continue
            row("1", f"spawn → ping answered ({variant})", _ms(d["spawn_to_ping"]))
            row("1", f"RSS after first ping ({variant})", f"{d['rss_after_ping_kb_median'] / 1024:.1f} MiB")
            row("1", f"exit after stdin EOF ({variant})", _ms(d["exit_after_stdin_eof"]))
    if "2a_text_turn" in f:
        d = f["2a_text_turn"]
        row("2a", "send → idle, text turn, streaming off", _ms(d.get("send_to_idle")))
        row("2a", "  server CPU per turn", _fmt(d.get("server_cpu_ms_per_turn"), " ms"))
    if "2a_text_turn_streaming" in f:
        d = f["2a_text_turn_streaming"]
        row("2a", "send → idle, text turn, streaming on", _ms(d.get("send_to_idle")))
    if "2b_tool_turn" in f:
        d = f["2b_tool_turn"]
        row("2b", "send → idle, bash `true` + text", _ms(d.get("send_to_idle")))
        row("2b", "  tool span (start→complete, wall)", _ms99(d.get("tool_span_wall")))
        row("2b", "  send → idle minus tool span", _fmt(d.get("send_to_idle_minus_tool_median_ms"), " ms"))
        row("2b", "  session.create", _ms(d.get("session_create")))
    if "2c_tool_turn_sandboxed" in f:
        d = f["2c_tool_turn_sandboxed"]
        row("2c", "send → idle, bash `true` + text, sandboxed", _ms(d.get("send_to_idle")))
        row("2c", "  tool span (start→complete, wall)", _ms99(d.get("tool_span_wall")))
        row("2c", "  session.create with sandboxConfig", _ms(d.get("session_create")))
    if "2d_tool_turn_filtered" in f:
        d = f["2d_tool_turn_filtered"]
        row("2d", "send → idle, bash `true` + text, sandboxed, host rules", _ms(d.get("send_to_idle")))
        row("2d", "  tool span (start→complete, wall)", _ms99(d.get("tool_span_wall")))
        row("2d", "  session.create with host rules", _ms(d.get("session_create")))
    if "3_throughput" in f:
        d = f["3_throughput"]
        row("3", "session.event per second (streaming)",
            f"{d['events_per_second']:.0f} ev/s ({d['events']} events, {d['events_per_turn']} per turn)")
        row("3", "  message deltas per second", f"{d['deltas_per_second']:.0f}")
        row("3", "  largest gap between events of a turn", _ms(d.get("largest_gap_in_turn")))
        row("3", f"  turns with a gap > {d['stall_threshold_ms']:.0f} ms",
            f"{d['turns_with_gap_over_stall']} of {d['turns']}")
        row("3", "  ev/s with those gaps left out", f"{d['events_per_second_without_stalls']:.0f}")
        row("3", "  CPU server / client", f"{d['server_cpu_s']:.2f} s / {d['client_cpu_s']:.2f} s "
                                          f"over {d['elapsed_s']:.2f} s")
    for key, label in (("4_decay_one_session", "1 session"), ("4_decay_steady_model", "1 session, 10 ms model"),
                       ("4_decay_10_sessions", "10 sessions")):
        if key in f:
            d = f[key]
            w = d["first_window"]["n"]
            row("4", f"{label}: turns 1–{w} send → idle", _ms(d["first_window"]))
            row("4", f"{label}: turns {d['turns'] - w + 1}–{d['turns']} send → idle", _ms(d["last_window"]))
            row("4", f"{label}: last/first median", _fmt(d.get("last_over_first_median"), "×"))
            rk = d["rss_kb"]
            marks = ", ".join(f"{k.replace('after_', '')} {v / 1024:.1f}" for k, v in rk.items())
            row("4", f"{label}: RSS MiB", marks)
            row("4", f"{label}: CPU ms/turn first → last window",
                f"server {d['server_cpu_ms_per_turn_first_window']:.2f} → "
                f"{d['server_cpu_ms_per_turn_last_window']:.2f}, fake model "
                f"{d['fake_cpu_ms_per_turn_first_window']:.2f} → {d['fake_cpu_ms_per_turn_last_window']:.2f}")
            row("4", f"{label}: last request size", f"{d['last_request_messages']} messages, "
                                                     f"{d['last_request_kb']} KiB")
            a, b = d.get("server_cpu_ns_ms_per_turn_first_window"), d.get("server_cpu_ns_ms_per_turn_last_window")
            if a and b:
                row("4", f"{label}: server on-CPU ms/turn (schedstat)", f"{a:.3f} → {b:.3f} ({b / a:.2f}×)")
            c = d.get("same_size_requests_control") or {}
            if c.get("server_cpu_ms_per_turn"):
                cc = c["server_cpu_ms_per_turn"]
                row("4", f"{label}: same-size requests, short history",
                    f"{cc:.3f} ms/turn; last window / this = {b / cc:.2f}×")
    if "5_idle_sessions" in f:
        d = f["5_idle_sessions"]
        row("5", f"{d['sessions']} idle sessions: RSS", f"{d['rss_before_kb'] / 1024:.1f} → "
                                                         f"{d['rss_after_kb'] / 1024:.1f} MiB")
        row("5", "  per session", f"{d['per_session_kb']:.1f} KiB")
        row("5", "  session.create", _ms(d["session_create"]))
        row("5", "  disk per session ($COPILOT_HOME)", f"{d['disk_per_session_kb']:.1f} KiB")
    if "6_search" in f:
        d = f["6_search"]
        if "skipped" in d:
            row("6", "grep/glob", f"skipped: {d['skipped']}")
        else:
            row("6", "tree", d["tree"])
            if not d.get("rg"):
                row("6", "ripgrep", "not installed: compared with GNU grep/find instead")
            for name in ("grep", "glob"):
                if name not in d:
                    continue
                g = d[name]
                row("6", f"our {name} tool (event wall span)",
                    _ms(g["ours_wall"]) + f", {g['ours_result_lines']} results"
                    + (" (spilled to a file)" if g.get("ours_output_spilled_to_file") else ""))
                row("6", f"  reference `{g['reference_cmd_short']}`",
                    _ms(g["reference_wall"]) + f", {g['reference_result_lines']} results")
                row("6", "  ours / reference", _fmt(g.get("ours_over_reference"), "×"))
    if "7_reference" in f:
        d = f["7_reference"]
        if "skipped" in d:
            row("7", "reference CLI", f"skipped: {d['skipped']}")
        else:
            row("7", "reference CLI", d.get("cli", "?"))
            ratios = d.get("ratios_reference_over_skipper") or {}
            for key, label, path, unit, scale in REFERENCE_ROWS:
                a = _get(d, path.format(who="skipper"))
                b = _get(d, path.format(who="reference"))
                a_s = "-" if a is None else f"{a / scale:.2f}{unit}"
                b_s = "-" if b is None else f"{b / scale:.2f}{unit}"
                row("7", label, f"skipper {a_s}, reference {b_s}, reference/skipper "
                                f"{_fmt(ratios.get(key), '×')}")
            for name in ("startup", "text_turn", "decay", "idle", "burst", "prompt"):
                for label in ("skipper", "reference"):
                    e = _get(d, f"{name}.{label}.error")
                    if e:
                        row("7", f"{name} ({label})", f"error: {e[:100]}")
    for key, label in (("8_burst", "burst"),):
        if key in f:
            d = f[key]
            row("8", f"{d['sessions']} sessions sending at once ×{d['bursts']}: send → idle",
                _ms(d.get("send_to_idle")) + f", p99 {_fmt(d.get('p99_ms'), ' ms')}")
            row("8", "  server CPU per turn in the bursts", _fmt(d.get("server_cpu_ms_per_turn"), " ms"))
            row("8", "  starved sessions (no idle within 120 s)", str(d.get("starved_sessions")))
    if "9_repo_search" in f:
        d = f["9_repo_search"]
        if "skipped" in d:
            row("9", "grep on a generated repository", f"skipped: {d['skipped']}")
        else:
            row("9", "generated repository", f"{d['files']} files, {d['mib']} MiB ({d['tree']})")
            for name in ("files_with_matches", "content"):
                if name in d:
                    g = d[name]
                    row("9", f"grep tool, {name}", _ms(g["ours_wall"]) + f", {g['ours_result_lines']} results")
                    row("9", f"  `{g['reference_cmd_short']}`", _ms(g["reference_wall"])
                        + f", {g['reference_result_lines']} results")
                    row("9", "  ours / rg; same matches", f"{_fmt(g.get('ours_over_reference'), '×')}; "
                                                         f"{'yes' if g.get('same_matches') else 'NO'}")
    if "10_prompt_mode" in f:
        d = f["10_prompt_mode"]
        row("10", "-p two model calls (view + text), start → exit", _ms(d.get("start_to_exit")))
    if "11_fanout" in f:
        d = f["11_fanout"]
        row("11", f"fan-out: {d['deltas']} deltas to {d['clients_reading']} clients",
            f"{d['elapsed_s']:.2f} s, {d['deltas_per_second_per_client']:.0f} deltas/s per client")
        row("11", "  every client got every delta, in order",
            f"{'yes' if d['every_client_got_all'] and d['in_order'] else 'NO'} (reorders {d['reorders']})")
        row("11", "  a client that stops reading is disconnected",
            f"{'yes' if d['stalled_client_disconnected'] else 'NO'} (limit {d['queue_limit_bytes'] // 1024} KiB)")
        row("11", "  server RSS before / peak / end", f"{d['rss_before_kb'] / 1024:.1f} / "
                                                    f"{d['rss_peak_kb'] / 1024:.1f} / {d['rss_end_kb'] / 1024:.1f} MiB")
        row("11", "  server CPU per delta per client", _fmt(d.get("server_cpu_us_per_delta_per_client"), " µs"))
    for name, err in results.get("errors", {}).items():
        row("!", f"{name} failed", err.splitlines()[0][:120] if err else "?")
    return rows


def issue14_rows(results: dict) -> list[tuple[str, str, str, str, str]]:
    """Issue 14's table: (figure, skipper, original, original / skipper, target)."""
    f = results.get("figures", {})
    ref = f.get("7_reference") or {}
    have_ref = "skipped" not in ref and bool(ref)
    g = _get
    rows = []

    def r(v: Any, unit: str, digits: int = 2) -> str:
        return "-" if v is None else f"{v:.{digits}f}{unit}"

    def orig(path: str, unit: str, digits: int = 2, suffix: str = "") -> str:
        if not have_ref:
            return "not run"
        e = g(ref, path.split(".")[0] + ".reference.error")
        if e:
            return "error"
        v = g(ref, path)
        return "-" if v is None else f"{v:.{digits}f}{unit}{suffix}"

    def rat(a: Any, b: Any) -> str:
        x = ratio(b, a) if have_ref else None
        return "-" if x is None else f"{x:.1f}×"

    d = f.get("5_idle_sessions") or {}
    rv = g(ref, "idle.reference.per_session_kb")
    rows.append((f"RSS per idle session ({d.get('sessions', '?')} sessions); create median",
                 f"{r(d.get('per_session_kb'), ' KiB', 1)}; {r(g(d, 'session_create.median_ms'), ' ms')}",
                 orig("idle.reference.per_session_kb", " KiB", 0, f" ({REF_IDLE_SESSIONS} sessions); "
                      f"{r(g(ref, 'idle.reference.session_create.median_ms'), ' ms')}"),
                 rat(d.get("per_session_kb"), rv), "≤ 10 KB; create ≤ 1 ms"))
    d = f.get("4_decay_one_session") or {}
    a, b = d.get("server_cpu_ns_ms_per_turn_first_window"), d.get("server_cpu_ns_ms_per_turn_last_window")
    growth = None
    rk = d.get("rss_kb") or {}
    w = g(d, "first_window.n")
    if rk and w and d.get("turns"):
        n = d["turns"]
        growth = (rk.get(f"after_turn_{n}", 0) - rk.get(f"after_turn_{w}", 0)) / (n - w)
    hist = d.get("last_request_kb") and d["last_request_kb"] / d["turns"]
    ra = g(ref, "decay.reference.server_cpu_ms_per_turn_first_window")
    rb = g(ref, "decay.reference.server_cpu_ms_per_turn_last_window")
    rows.append((f"server CPU/turn, turns 1–{w} → last {w} of {d.get('turns', '?')}; RSS growth/turn",
                 f"{r(a, '')} → {r(b, ' ms')} ({r(b / a if a and b else None, '×')}); "
                 f"{r(growth, ' KiB', 2)} (history {r(hist, ' KiB', 2)})",
                 "not run" if not have_ref else
                 f"{r(ra, '')} → {r(rb, ' ms')} over {REF_DECAY_TURNS} turns", rat(b, rb),
                 "≤ 1.3×; ≤ 1 KB/turn beyond the history"))
    d = f.get("2a_text_turn") or {}
    rows.append(("server CPU per text turn", r(d.get("server_cpu_ms_per_turn"), " ms", 3),
                 orig("text_turn.reference.server_cpu_ms_per_turn", " ms"),
                 rat(d.get("server_cpu_ms_per_turn"), g(ref, "text_turn.reference.server_cpu_ms_per_turn")),
                 "< 0.5 ms"))
    d = f.get("8_burst") or {}
    rows.append((f"{d.get('sessions', '?')} sessions at once: p99; server CPU/turn; starved",
                 f"{r(d.get('p99_ms'), ' ms', 1)}; {r(d.get('server_cpu_ms_per_turn'), ' ms')}; "
                 f"{d.get('starved_sessions', '-')}",
                 orig("burst.reference.p99_ms", " ms", 0, f" ({REF_BURST_SESSIONS} sessions); "
                      f"{r(g(ref, 'burst.reference.server_cpu_ms_per_turn'), ' ms')}"),
                 rat(d.get("p99_ms"), g(ref, "burst.reference.p99_ms")),
                 "p99 < 120 ms; < 0.5 ms/turn; none starved"))
    d = f.get("9_repo_search") or {}
    gm = d.get("files_with_matches") or {}
    gc = d.get("content") or {}
    rows.append((f"grep tool / rg, {d.get('files', '?')} files {d.get('mib', '?')} MiB (-l; content)",
                 f"{r(gm.get('ours_over_reference'), '×')}; {r(gc.get('ours_over_reference'), '×')}; same matches: "
                 f"{'yes' if gm.get('same_matches') and gc.get('same_matches') else 'NO'}",
                 "not run (tool names differ)", "-", "≤ 1.0× rg, same matches"))
    d = f.get("10_prompt_mode") or {}
    rows.append(("-p two model calls, start → exit", r(g(d, "start_to_exit.median_ms"), " ms", 1),
                 orig("prompt.reference.start_to_exit.median_ms", " ms", 0),
                 rat(g(d, "start_to_exit.median_ms"), g(ref, "prompt.reference.start_to_exit.median_ms")),
                 "< 8 ms"))
    d = f.get("11_fanout") or {}
    if d:
        ok = d.get("every_client_got_all") and d.get("in_order")
        rows.append((f"fan-out {d['deltas']} deltas → {d['clients_reading']} clients",
                     f"in order: {'yes' if ok else 'NO'}; stalled client cut: "
                     f"{'yes' if d.get('stalled_client_disconnected') else 'NO'}; RSS peak +"
                     f"{(d['rss_peak_kb'] - d['rss_before_kb']) / 1024:.1f} MiB",
                     "not run", "-", "no reorder; bounded memory"))
    return rows


def print_issue14(rows: list[tuple[str, str, str, str, str]]) -> None:
    head = ("issue 14 figure", "skipper", "original 1.0.102", "orig/skipper", "target")
    widths = [max(len(x[i]) for x in rows + [head]) for i in range(5)]
    print(" | ".join(h.ljust(widths[i]) for i, h in enumerate(head)))
    print("-|-".join("-" * wd for wd in widths))
    for row in rows:
        print(" | ".join(c.ljust(widths[i]) for i, c in enumerate(row)))
    print()


def print_table(rows: list[tuple[str, str, str]]) -> None:
    w1 = max((len(r[1]) for r in rows), default=10)
    print()
    print(f"{'fig':<4} {'measurement':<{w1}}  value")
    print(f"{'-' * 4} {'-' * w1}  {'-' * 40}")
    for fig, what, value in rows:
        print(f"{fig:<4} {what:<{w1}}  {value}")
    print()


# ------------------------------------------------------------------------------------------
# Main
# ------------------------------------------------------------------------------------------


def git_rev() -> str | None:
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


# ------------------------------------------------------------------------------------------
# `skipper serve` (issue 10): figures 12 and 13 live in serve_bench.py.
# ------------------------------------------------------------------------------------------


def _serve_bench() -> Any:
    sys.path.insert(0, str(HERE))
    import serve_bench

    return serve_bench


def _serve_figures(env: Env) -> list[tuple[str, str, Callable[[], dict]]]:
    return _serve_bench().figures(sys.modules[__name__], env)


def _serve_rows(results: dict) -> list[tuple[str, str, str]]:
    return _serve_bench().report_rows(results.get("figures", {}))


def main() -> int:
    missing = [str(p) for p in (SKIPPER_BIN, FAKE_MODEL_BIN) if not p.is_file()]
    if missing:
        print(f"bench: missing binaries: {', '.join(missing)}\n"
              f"       run `cargo build --release --workspace --bins` (or `just bench`)", file=sys.stderr)
        return 2
    only = {x.strip() for x in os.environ.get("BENCH_ONLY", "").split(",") if x.strip()}

    def wanted(fig: str) -> bool:
        return not only or fig in only

    results: dict[str, Any] = {
        "meta": {
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "quick": QUICK,
            "git": git_rev(),
            "skipper": str(SKIPPER_BIN),
            "fake_model": str(FAKE_MODEL_BIN),
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                        "python": platform.python_version()},
            "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        },
        "figures": {},
        "errors": {},
    }
    t_all = time.perf_counter()
    env = Env()
    sk = skipper_target()
    plan: list[tuple[str, str, Callable[[], dict]]] = [
        ("1", "1_startup", lambda: fig_startup(env, sk, N_STARTUP)),
        ("2", "2a_text_turn", lambda: fig_text_turns(env, sk, N_TEXT_TURNS, streaming=False)),
        ("2", "2a_text_turn_streaming", lambda: fig_text_turns(env, sk, N_STREAM_TURNS, streaming=True)),
        ("2", "2b_tool_turn", lambda: fig_tool_turns(env, sk, N_TOOL_CONVS)),
        ("2", "2c_tool_turn_sandboxed", lambda: fig_tool_turns(env, sk, N_TOOL_CONVS, "sandboxed")),
        ("2", "2d_tool_turn_filtered", lambda: fig_tool_turns(env, sk, N_TOOL_CONVS, "filtered")),
        ("3", "3_throughput", lambda: fig_throughput(env, sk, N_THROUGHPUT_TURNS)),
        ("4", "4_decay_one_session", lambda: fig_decay(env, sk, N_DECAY_TURNS, DECAY_WINDOW, 1)),
        ("4", "4_decay_steady_model", lambda: fig_decay(env, sk, N_DECAY_TURNS, DECAY_WINDOW, 1, STEADY_MODEL)),
        ("4", "4_decay_10_sessions", lambda: fig_decay(env, sk, N_DECAY_TURNS, DECAY_WINDOW, N_DECAY_SESSIONS)),
        ("5", "5_idle_sessions", lambda: fig_idle_sessions(env, sk, N_IDLE_SESSIONS)),
        ("6", "6_search", lambda: fig_search(env, N_SEARCH_REPEATS)),
        ("8", "8_burst", lambda: fig_burst(env, sk, N_BURST_SESSIONS, N_BURSTS)),
        ("9", "9_repo_search", lambda: fig_repo_search(env, N_REPO_REPEATS)),
        ("10", "10_prompt_mode", lambda: fig_prompt_mode(env, sk, N_PROMPT_RUNS)),
        ("11", "11_fanout", lambda: fig_fanout(env, N_FANOUT_DELTAS, N_FANOUT_CLIENTS, FANOUT_QUEUE_LIMIT)),
        ("7", "7_reference", lambda: fig_reference(env)),
    ]
    plan += _serve_figures(env)
    try:
        for fig, name, fn in plan:
            if not wanted(fig):
                continue
            t0 = time.perf_counter()
            print(f"bench: {name} ...", end="", flush=True)
            try:
                results["figures"][name] = fn()
                print(f" {time.perf_counter() - t0:.1f} s", flush=True)
            except Exception as e:  # noqa: BLE001 — one broken figure must not hide the others
                results["errors"][name] = f"{e}\n{traceback.format_exc()}"
                print(f" FAILED: {e}", flush=True)
                try:
                    env.fake.reset()
                except BenchError:
                    pass
    finally:
        env.cleanup()
    results["meta"]["elapsed_s"] = round(time.perf_counter() - t_all, 1)
    results["meta"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    rows = report(results) + _serve_rows(results)
    m = results["meta"]
    print(f"\nskipper {m['git'] or '?'} · {m['machine']['cpus']} CPUs · load average "
          f"{m['loadavg_start'][0]} → {m['loadavg_end'][0]}{' · QUICK' if QUICK else ''}")
    print_table(rows)
    if not REFERENCE:
        print("original CLI: not run (set COPILOT_REFERENCE_CLI to its binary, e.g. from "
              "`npm install @github/copilot-linux-x64@1.0.102`)")
    print_issue14(issue14_rows(results))
    JSON_OUT.parent.mkdir(parents=True, exist_ok=True)
    JSON_OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"bench: wrote {JSON_OUT} ({results['meta']['elapsed_s']} s total"
          f"{', quick mode' if QUICK else ''})")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
