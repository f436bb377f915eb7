"""Fixtures for the Python SDK conformance suite.

The official Python SDK (``github-copilot-sdk``, import name ``copilot``) is the client and is
never mocked: it spawns ``target/release/skipper`` exactly as it would spawn the original
``copilot`` CLI. The only fake is the model: ``target/release/fake-model`` (crates/fake-model),
one process per test, driven through its ``/_fake/`` HTTP control API.

Environment knobs:

* ``SKIPPER_BIN``      path of the server under test (default ``<repo>/target/release/skipper``)
* ``FAKE_MODEL_BIN``   path of the fake model (default ``<repo>/target/release/fake-model``)
* ``SKIPPER_SNAPSHOTS_DIR``  recorded conversations (default: ``tests/python/snapshots``, a
  verbatim copy of the ones these tests replay from the official SDK repository's
  ``test/snapshots``)

Nothing here builds anything; run ``cargo build --release -p skipper -p fake-model`` first.
"""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import subprocess
import time
import traceback
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
import pytest_asyncio
import yaml

from copilot import CopilotClient, RuntimeConnection
from copilot.generated.session_events import session_event_from_dict

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]

SKIPPER_BIN = Path(
    os.environ.get("SKIPPER_BIN", REPO_ROOT / "target" / "release" / "skipper")
).absolute()
FAKE_MODEL_BIN = Path(
    os.environ.get("FAKE_MODEL_BIN", REPO_ROOT / "target" / "release" / "fake-model")
).absolute()
SNAPSHOTS_DIR = Path(os.environ.get("SKIPPER_SNAPSHOTS_DIR", HERE / "snapshots")).absolute()

# Any non-empty string: the fake model accepts every token.
GITHUB_TOKEN = "fake-token-for-e2e-tests"

# Environment variables of the developer's machine that must not leak into the server under
# test (credentials, proxies, user config locations, SDK overrides).
_LEAKY_PREFIXES = ("COPILOT_", "GH_", "GITHUB_", "XDG_", "OTEL_", "CAPI_")
_LEAKY_NAMES = {
    "HOME",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "RUST_LOG",
}


def pytest_report_header(config):
    return [
        f"skipper: {SKIPPER_BIN}",
        f"fake-model: {FAKE_MODEL_BIN}",
        f"snapshots: {SNAPSHOTS_DIR}",
    ]


def pytest_collection_modifyitems(config, items):
    missing = [p for p in (SKIPPER_BIN, FAKE_MODEL_BIN) if not p.is_file()]
    if missing:
        names = ", ".join(str(p) for p in missing)
        raise pytest.UsageError(
            f"missing binaries: {names}; run `cargo build --release -p skipper -p fake-model`"
        )


# --------------------------------------------------------------------------------------------
# The fake model
# --------------------------------------------------------------------------------------------


class FakeModel:
    """A running ``fake-model`` process and a thin client for its control API."""

    def __init__(self, proc: subprocess.Popen, url: str, stderr_path: Path):
        self.proc = proc
        self.url = url
        self.stderr_path = stderr_path

    # -- control API ------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"content-type": "application/json"} if data is not None else {},
        )
        # Loopback only: bypass any proxy configuration of the test runner.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=10) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            raise AssertionError(f"fake-model {method} {path} -> {e.code}: {detail}") from None
        return json.loads(raw) if raw else None

    def load(self, snapshot: str | Path, workdir: str | Path) -> dict:
        """Replay a snapshot (path relative to SNAPSHOTS_DIR, or absolute)."""
        path = Path(snapshot)
        if not path.is_absolute():
            path = SNAPSHOTS_DIR / path
        assert path.is_file(), f"snapshot not found: {path}"
        return self._call("POST", "/_fake/load", {"snapshot": str(path), "workdir": str(workdir)})

    def replies(self, *replies: dict) -> dict:
        """Queue scripted replies (FIFO, one per chat-completions request)."""
        return self._call("POST", "/_fake/replies", {"replies": list(replies)})

    def requests(self) -> list[dict]:
        """Captured chat-completions requests: ``[{"path","headers","body"}]``."""
        return self._call("GET", "/_fake/requests")

    def exchanges(self) -> list[dict]:
        return self._call("GET", "/_fake/exchanges")

    def set_models(self, models: list[str] | None) -> None:
        self._call("POST", "/_fake/models", {"models": models})

    def reset(self) -> None:
        self._call("POST", "/_fake/reset", {})

    # -- process ----------------------------------------------------------------------------

    def stderr_text(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stdout:
            self.proc.stdout.close()


def start_fake_model(log_dir: Path) -> FakeModel:
    stderr_path = log_dir / "fake-model.stderr"
    stderr = open(stderr_path, "wb")
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_NAMES}
    proc = subprocess.Popen(
        [str(FAKE_MODEL_BIN), "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
    )
    stderr.close()
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 15
    buf = b""
    try:
        while b"\n" not in buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(timeout=remaining):
                raise RuntimeError("fake-model did not print FAKE_MODEL_URL within 15 s")
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError(
                    f"fake-model exited early (code {proc.wait()}): "
                    + stderr_path.read_text(errors="replace")
                )
            buf += chunk
    finally:
        sel.close()
    line = buf.split(b"\n", 1)[0].decode().strip()
    assert line.startswith("FAKE_MODEL_URL="), f"unexpected first line from fake-model: {line!r}"
    return FakeModel(proc, line.split("=", 1)[1], stderr_path)


# --------------------------------------------------------------------------------------------
# Per-test context
# --------------------------------------------------------------------------------------------


@dataclass
class Ctx:
    """Temp directories, the fake model and the environment for one test."""

    root: Path
    fake: FakeModel
    work_dir: Path = field(init=False)
    home_dir: Path = field(init=False)
    copilot_home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.work_dir = self.root / "work"
        self.home_dir = self.root / "home"
        self.copilot_home = self.root / "copilot-home"
        for d in (self.work_dir, self.home_dir, self.copilot_home):
            d.mkdir(parents=True, exist_ok=True)

    def env(self, **extra: str) -> dict[str, str]:
        """The child's environment: isolated HOME/XDG dirs, model URLs on the fake."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k.upper() not in _LEAKY_NAMES and not k.upper().startswith(_LEAKY_PREFIXES)
        }
        home = str(self.home_dir)
        env.update(
            {
                "HOME": home,
                "XDG_CONFIG_HOME": str(self.home_dir / ".config"),
                "XDG_STATE_HOME": str(self.home_dir / ".local" / "state"),
                "XDG_CACHE_HOME": str(self.home_dir / ".cache"),
                "XDG_DATA_HOME": str(self.home_dir / ".local" / "share"),
                "GH_CONFIG_DIR": str(self.home_dir / ".config" / "gh"),
                "COPILOT_API_URL": self.fake.url,
                "COPILOT_DEBUG_GITHUB_API_URL": self.fake.url,
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        env.update(extra)
        return env

    def load(self, snapshot: str | Path) -> dict:
        return self.fake.load(snapshot, self.work_dir)


@pytest.fixture
def ctx(tmp_path: Path, request):
    fake = start_fake_model(tmp_path)
    context = Ctx(root=tmp_path, fake=fake)
    yield context
    fake.stop()
    # Shown by pytest only when the test fails: the fake's diagnosis of unmatched requests.
    text = context.fake.stderr_text()
    if text.strip():
        print("----- fake-model stderr -----")
        print(text[-20000:])


# --------------------------------------------------------------------------------------------
# SDK clients against skipper
# --------------------------------------------------------------------------------------------

ClientFactory = Callable[..., CopilotClient]


async def _shutdown(client: CopilotClient) -> None:
    try:
        await asyncio.wait_for(client.stop(), timeout=20)
    except BaseException:  # noqa: BLE001 - teardown must not mask the test's own outcome
        try:
            await asyncio.wait_for(client.force_stop(), timeout=10)
        except BaseException:  # noqa: BLE001
            pass


@pytest_asyncio.fixture
async def make_client(ctx: Ctx):
    """Factory for CopilotClients that spawn skipper (stdio by default); stops them after.

    ``make_client(transport="tcp", port=0, connection_token=None, args=(), github_token=...,
    env_extra={...}, **CopilotClient kwargs)``; ``make_client(uri="127.0.0.1:PORT",
    connection_token=...)`` connects to an already running server instead.
    """
    clients: list[CopilotClient] = []

    def factory(
        transport: str = "stdio",
        *,
        uri: str | None = None,
        port: int = 0,
        connection_token: str | None = None,
        args: tuple[str, ...] | list[str] = (),
        github_token: str | None = GITHUB_TOKEN,
        env_extra: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> CopilotClient:
        if uri is not None:
            client = CopilotClient(
                connection=RuntimeConnection.for_uri(uri, connection_token=connection_token),
                **kwargs,
            )
        else:
            if transport == "stdio":
                connection = RuntimeConnection.for_stdio(path=str(SKIPPER_BIN), args=list(args))
            elif transport == "tcp":
                connection = RuntimeConnection.for_tcp(
                    path=str(SKIPPER_BIN),
                    port=port,
                    connection_token=connection_token,
                    args=list(args),
                )
            else:
                raise ValueError(transport)
            kwargs.setdefault("working_directory", str(ctx.work_dir))
            kwargs.setdefault("base_directory", str(ctx.copilot_home))
            client = CopilotClient(
                connection=connection,
                env=ctx.env(**(env_extra or {})),
                github_token=github_token,
                **kwargs,
            )
        clients.append(client)
        return client

    yield factory
    for client in reversed(clients):
        await _shutdown(client)


@pytest_asyncio.fixture
async def client(make_client: ClientFactory) -> CopilotClient:
    """A started stdio client with a token."""
    c = make_client()
    await c.start()
    return c


# --------------------------------------------------------------------------------------------
# Helpers shared by test modules
# --------------------------------------------------------------------------------------------


class RawEvents(list):
    """Raw ``session.event`` notifications; ``parse_errors`` lists events the SDK rejected."""

    def __init__(self) -> None:
        super().__init__()
        self.parse_errors: list[str] = []

    def of(self, session_id: str) -> list[dict]:
        return [p["event"] for p in self if p.get("sessionId") == session_id]

    def assert_parseable(self) -> None:
        if self.parse_errors:
            raise AssertionError(
                "the SDK could not parse these events (it drops them, so its handlers never "
                "see them):\n" + "\n".join(self.parse_errors)
            )


def tap_raw_events(client: CopilotClient) -> RawEvents:
    """Record every raw ``session.event`` notification (wire JSON, before the SDK parses it).

    Wraps the SDK's own notification handler: the SDK keeps working unchanged, we only look
    at the frames it receives (for wire formats the typed objects hide, e.g. the exact
    timestamp string or an absent ``ephemeral`` key). Events the SDK's generated parser
    rejects are listed in ``parse_errors``.
    """
    rpc = client._client  # the SDK's JsonRpcClient
    assert rpc is not None, "client not started"
    original = rpc.notification_handler
    raw = RawEvents()

    def handler(method: str, params: dict) -> None:
        if method == "session.event":
            raw.append(json.loads(json.dumps(params)))
            try:
                session_event_from_dict(params["event"])
            except Exception as e:  # noqa: BLE001
                event = json.dumps(params.get("event"))
                frames = traceback.extract_tb(e.__traceback__)
                where = " / ".join((f.line or "").strip() for f in frames[-3:-1])
                raw.parse_errors.append(
                    f"{type(e).__name__}: {e!s} at [{where}] in {event[:2000]}"
                )
        if original is not None:
            original(method, params)

    rpc.set_notification_handler(handler)
    return raw


async def raw_request(client: CopilotClient, method: str, params: dict) -> Any:
    """Send a JSON-RPC request through the SDK's own low-level connection."""
    rpc = client._client
    assert rpc is not None, "client not started"
    return await rpc.request(method, params)


async def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        await asyncio.sleep(0.02)


async def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    """Polls an async ``predicate`` until it returns something truthy, which is returned."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        result = await predicate()
        if result:
            return result
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def snapshot_doc(snapshot: str) -> dict:
    return yaml.safe_load((SNAPSHOTS_DIR / snapshot).read_text(encoding="utf-8"))


def snapshot_first_prompt(snapshot: str) -> str:
    doc = snapshot_doc(snapshot)
    for msg in doc["conversations"][0]["messages"]:
        if msg["role"] == "user":
            return msg["content"]
    raise AssertionError(f"no user message in {snapshot}")


def snapshot_final_reply(snapshot: str, workdir: Path | None = None) -> str:
    """Content of the last assistant message of the longest conversation."""
    doc = snapshot_doc(snapshot)
    longest = max(doc["conversations"], key=lambda c: len(c["messages"]))
    last = [m for m in longest["messages"] if m["role"] == "assistant" and m.get("content")][-1]
    text = last["content"]
    if workdir is not None:
        text = text.replace("${workdir}", str(workdir))
    return text


# --------------------------------------------------------------------------------------------
# Helpers for captured model requests (added for the hooks / permissions / tools / system
# message / autopilot modules)
# --------------------------------------------------------------------------------------------


def message_text(message: dict) -> str:
    """The text of a chat message whose ``content`` is a string or a list of parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def request_messages(request: dict) -> list[dict]:
    """``messages`` of a captured request (``{"path","headers","body"}`` or a bare body)."""
    body = request.get("body", request)
    return list(body.get("messages") or [])


def system_prompt(request: dict) -> str:
    """Concatenated text of every system (or developer) message of a captured request."""
    return "\n".join(
        message_text(m)
        for m in request_messages(request)
        if m.get("role") in ("system", "developer")
    )


def user_texts(request: dict) -> list[str]:
    return [message_text(m) for m in request_messages(request) if m.get("role") == "user"]


def tool_names(request: dict) -> list[str]:
    """Names of the function tools offered to the model in a captured request."""
    body = request.get("body", request)
    names = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        names.append((fn or tool).get("name"))
    return names


def tool_results(request: dict) -> list[dict]:
    """``tool`` messages of a captured request: ``[{"tool_call_id", "content"}]``."""
    return [
        {"tool_call_id": m.get("tool_call_id"), "content": message_text(m)}
        for m in request_messages(request)
        if m.get("role") == "tool"
    ]


def tool_calls(request: dict) -> list[dict]:
    """Every assistant tool call in a captured request: ``[{"id","name","arguments"}]``."""
    calls = []
    for m in request_messages(request):
        if m.get("role") != "assistant":
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            calls.append(
                {"id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")}
            )
    return calls


class EventRecorder(list):
    """Typed SDK events of one session (``session.on``), with small query helpers."""

    def types(self) -> list[str]:
        return [e.type.value for e in self]

    def of(self, event_type: str) -> list:
        return [e for e in self if e.type.value == event_type]

    def has(self, event_type: str) -> bool:
        return any(e.type.value == event_type for e in self)


def record_events(session) -> EventRecorder:
    events = EventRecorder()
    session.on(events.append)
    return events


class ServerRequests(list):
    """Server→client requests of one method as they arrived: ``[{"params", "result"}]``."""


def tap_server_requests(client: CopilotClient, method: str) -> ServerRequests:
    """Record the raw params (and the SDK's answer) of server→client requests of ``method``.

    Wraps the SDK's own handler (e.g. ``hooks.invoke``, ``userInput.request``,
    ``systemMessage.transform``): the SDK still answers, we only look at the wire JSON.
    """
    rpc = client._client
    assert rpc is not None, "client not started"
    original = rpc.request_handlers.get(method)
    assert original is not None, f"the SDK registered no handler for {method}"
    seen = ServerRequests()

    async def handler(params: dict):
        entry = {"params": json.loads(json.dumps(params)), "result": None}
        seen.append(entry)
        result = original(params)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await result
        entry["result"] = result
        return result

    rpc.request_handlers[method] = handler
    return seen
