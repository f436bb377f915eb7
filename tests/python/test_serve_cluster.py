"""Issue 10, several nodes: two `skipper serve` processes on one PostgreSQL (a throwaway cluster
on loopback, started here for each test), with the official Python SDK as the client. Each node
has its own home; both mount one shared directory (`[cluster] shared_root`, here the same
directory on one machine) for workspaces and session directories."""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from copilot._jsonrpc import JsonRpcError
from copilot.session import PermissionHandler

import serve_support
from conftest import Ctx, raw_request, wait_for, wait_until

TOKEN = "cluster-tenant-token"


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def _as_postgres_user(cmd: list[str]) -> list[str]:
    # initdb refuses to run as root: the throwaway cluster then belongs to `nobody`.
    return ["runuser", "-u", "nobody", "--", *cmd] if os.geteuid() == 0 else cmd


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres():
    bin_dir = _pg_bin()
    if bin_dir is None:
        if os.environ.get("SKIPPER_REQUIRE_POSTGRES") == "1":
            pytest.fail("SKIPPER_REQUIRE_POSTGRES=1 but initdb was not found")
        pytest.skip("PostgreSQL is not installed")
    root = Path(tempfile.mkdtemp(prefix="skipper-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, user="nobody")
    data = root / "data"
    subprocess.run(
        _as_postgres_user([str(bin_dir / "initdb"), "-A", "trust", "-U", "postgres", "-N", "-D", str(data)]),
        check=True, stdout=subprocess.DEVNULL,
    )
    port = _free_port()
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        _as_postgres_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", opts, "-w", "-l", str(root / "log"), "start"]),
        check=True, stdout=subprocess.DEVNULL,
    )
    try:
        yield f"postgres://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            stdout=subprocess.DEVNULL,
        )
        shutil.rmtree(root, ignore_errors=True)


def _shared_root(ctx: Ctx) -> Path:
    shared = ctx.root / "shared"
    shared.mkdir(exist_ok=True)
    return shared


def _start_node(ctx: Ctx, name: str, database_url: str, tenants: str = "") -> serve_support.Served:
    node_dir = ctx.root / f"node-{name}"
    home = node_dir / "home"
    home.mkdir(parents=True)
    config = serve_support.tenant("team", TOKEN) + tenants + (
        f'[cluster]\nnode_id = "{name}"\nlease_ttl_s = 2\nshared_root = "{_shared_root(ctx)}"\n'
    )
    return serve_support.start(
        ctx, config, home=home, state_dir=node_dir, args=["--database-url", database_url], wait_s=20
    )


@pytest.fixture
def nodes(ctx: Ctx, postgres: str) -> list[tuple[subprocess.Popen, str]]:
    started = [_start_node(ctx, "a", postgres), _start_node(ctx, "b", postgres)]
    yield [(served.proc, served.sdk) for served in started]
    for served in started:
        serve_support.stop(served, kill=True, label=served.stderr_path.parent.name)


async def test_created_on_one_node_resumed_and_followed_on_another(ctx: Ctx, nodes: list[str], make_client):
    ctx.fake.replies(
        {"text": "first answer"},
        {"text": "second answer, streamed in several deltas to the other node"},
        {"text": "answer to node b"},
    )
    a = make_client(uri=node_a_of(nodes), connection_token=TOKEN)
    await a.start()
    session = await a.create_session(on_permission_request=PermissionHandler.approve_all, streaming=True)
    await session.send_and_wait("first question", timeout=30)

    b = make_client(uri=node_b_of(nodes), connection_token=TOKEN)
    await b.start()
    assert [s.session_id for s in await b.list_sessions()] == [session.session_id]
    followed = await b.resume_session(session.session_id, on_permission_request=PermissionHandler.approve_all)
    history = [e.data.content for e in await followed.get_events() if e.type.value == "assistant.message"]
    assert history == ["first answer"]

    seen_a: list = []
    seen_b: list = []
    idle_b = asyncio.Event()

    def on_b(event) -> None:
        seen_b.append(event)
        if event.type.value == "session.idle":
            idle_b.set()

    session.on(seen_a.append)
    followed.on(on_b)

    # What node a's turn produces reaches the client on node b as it streams, idle included,
    # each ephemeral event after the persisted events before it.
    await session.send_and_wait("second question", timeout=30)
    await asyncio.wait_for(idle_b.wait(), timeout=20)
    deltas = "".join(e.data.delta_content for e in seen_b if e.type.value == "assistant.message_delta")
    assert deltas == "second answer, streamed in several deltas to the other node"
    _assert_ephemeral_after_their_persisted(seen_a, seen_b)

    # A send on node b goes to node a, which runs it: send_and_wait on b ends with a's answer,
    # and both clients see the same turn.
    start_a, start_b = len(seen_a), len(seen_b)
    reply = await followed.send_and_wait("from node b", timeout=30)
    assert reply is not None and reply.data.content == "answer to node b"
    deadline = time.monotonic() + 20
    while not any(e.type.value == "session.idle" for e in seen_a[start_a:]):
        assert time.monotonic() < deadline, "node a's client never saw the turn end"
        await asyncio.sleep(0.05)
    turn_a = {e.id for e in seen_a[start_a:]}
    turn_b = {e.id for e in seen_b[start_b:]}
    assert turn_a == turn_b
    prompts = [e.data.content for e in seen_a[start_a:] if e.type.value == "user.message"]
    assert prompts == ["from node b"]


def node_a_of(nodes) -> str:
    return nodes[0][1]


def node_b_of(nodes) -> str:
    return nodes[1][1]


def _assert_ephemeral_after_their_persisted(seen_a: list, seen_b: list) -> None:
    """Each ephemeral event node b's client got came after every persisted event node a's
    client got before it."""
    order_a = [e.id for e in seen_a]
    persisted_a = [e.id for e in seen_a if not getattr(e, "ephemeral", False)]
    for i, event in enumerate(seen_b):
        if not getattr(event, "ephemeral", False) or event.id not in order_a:
            continue
        before_a = set(order_a[: order_a.index(event.id)]) & set(persisted_a)
        before_b = {e.id for e in seen_b[:i]}
        assert before_a <= before_b, f"{event.type.value} overtook persisted events on node b"


async def test_when_a_node_dies_mid_turn_another_takes_its_session_over(ctx: Ctx, nodes, make_client):
    (proc_a, node_a), (_, node_b) = nodes
    ctx.fake.replies({"text": "first answer"}, {"hang": True}, {"text": "after the takeover"})
    a = make_client(uri=node_a, connection_token=TOKEN)
    await a.start()
    session = await a.create_session(on_permission_request=PermissionHandler.approve_all)
    await session.send_and_wait("first question", timeout=30)

    b = make_client(uri=node_b, connection_token=TOKEN)
    await b.start()
    followed = await b.resume_session(session.session_id, on_permission_request=PermissionHandler.approve_all)
    seen = []
    prompts_seen: list[str] = []
    replied = asyncio.Event()

    def on_event(event) -> None:
        seen.append(event)
        if event.type.value == "user.message":
            prompts_seen.append(event.data.content)
        if event.type.value == "assistant.message" and event.data.content == "after the takeover":
            replied.set()

    followed.on(on_event)
    # Node a starts a turn whose model call never answers; node b's client sees it begin.
    await session.send("second question")
    deadline = time.monotonic() + 20
    while "second question" not in prompts_seen:
        assert time.monotonic() < deadline, "node a's prompt never reached node b's client"
        await asyncio.sleep(0.05)
    # ... and node a's model call has taken the reply that never answers (on a busy machine the
    # prompt can reach node b before node a has made the call, which would leave that reply to
    # node b).
    await wait_for(lambda: len(ctx.fake.requests()) >= 2, timeout=20, what="node a's second model call")

    proc_a.kill()  # kill -9, mid-turn
    proc_a.wait(timeout=10)
    # Node b takes the session over within lease_ttl_s (2) + 5 s: a send there is accepted.
    deadline = time.monotonic() + 2 + 5
    while True:
        try:
            await followed.send("third question")
            break
        except Exception as refused:  # noqa: BLE001 - refused while node a's lease runs
            # For the moment node b swaps its follower for the loaded session, the session is
            # briefly unknown there (a known gap of the takeover).
            assert "running on node a" in str(refused) or "Session not found" in str(refused), refused
            assert time.monotonic() < deadline, "node b did not take the session over in time"
            await asyncio.sleep(0.25)
    await asyncio.wait_for(replied.wait(), timeout=20)

    history = await followed.get_events()
    ids = [e.id for e in history]
    assert len(ids) == len(set(ids)), "no duplicate event ids"
    persisted_seen = [e.id for e in seen if not getattr(e, "ephemeral", False)]
    assert set(persisted_seen) <= set(ids), "every persisted event a client saw is in the history"
    prompts = [e.data.content for e in history if e.type.value == "user.message"]
    assert prompts == ["first question", "second question", "third question"]


async def test_a_follower_refuses_changes_and_the_plan_travels_with_the_session(ctx: Ctx, nodes, make_client):
    from copilot.generated.rpc import ModeSetRequest, PlanUpdateRequest, SessionMode

    (proc_a, node_a), (_, node_b) = nodes
    a = make_client(uri=node_a, connection_token=TOKEN)
    await a.start()
    b = make_client(uri=node_b, connection_token=TOKEN)
    await b.start()
    told_b: list = []
    b.on_lifecycle(told_b.append)

    session = await a.create_session(on_permission_request=PermissionHandler.approve_all)
    # The client on node b hears of the session node a created.
    deadline = time.monotonic() + 20
    while not any(e.type == "session.created" and e.session_id == session.session_id for e in told_b):
        assert time.monotonic() < deadline, f"no session.created on node b: {told_b}"
        await asyncio.sleep(0.05)
    await session.rpc.plan.update(PlanUpdateRequest(content="# Plan\n\n- written on node a\n"))

    # The plan is a file in the session's directory on the shared root, which node b reads.
    # (inside the server the session's id is in its tenant's namespace: `team.<id>`)
    plan_file = _shared_root(ctx) / "session-state" / f"team.{session.session_id}" / "plan.md"
    assert Path(session.workspace_path) == plan_file.parent
    assert plan_file.read_text() == "# Plan\n\n- written on node a\n"
    followed = await b.resume_session(session.session_id, on_permission_request=PermissionHandler.approve_all)
    assert (await followed.rpc.plan.read()).content == "# Plan\n\n- written on node a\n"
    # Changes on the follower are refused, naming node a; the session keeps node a's state.
    with pytest.raises(Exception) as refused:
        await followed.rpc.plan.update(PlanUpdateRequest(content="from node b"))
    assert "running on node a" in str(refused.value)
    with pytest.raises(Exception) as refused:
        await followed.rpc.mode.set(ModeSetRequest(mode=SessionMode.PLAN))
    assert "running on node a" in str(refused.value)
    assert (await session.rpc.plan.read()).content == "# Plan\n\n- written on node a\n"
    mode = await session.rpc.mode.get()
    assert str(getattr(mode, "value", mode)) == "interactive"

    # Node a dies; node b takes over with node a's plan and may change it now.
    proc_a.kill()
    proc_a.wait(timeout=10)
    deadline = time.monotonic() + 2 + 5 + 5
    while True:
        try:
            await followed.rpc.plan.update(PlanUpdateRequest(content="# Plan\n\n- node b took over\n"))
            break
        except Exception as refused:  # noqa: BLE001 - refused while node a's lease runs
            # For the moment node b swaps its follower for the loaded session, the session is
            # briefly unknown there (a known gap of the takeover).
            taking_over = "Session not found" in str(refused)
            assert "running on node a" in str(refused) or taking_over, refused
            assert time.monotonic() < deadline, "node b did not take the session over in time"
            if not taking_over:
                assert (await followed.rpc.plan.read()).content == "# Plan\n\n- written on node a\n"
            await asyncio.sleep(0.25)
    assert (await followed.rpc.plan.read()).content == "# Plan\n\n- node b took over\n"


# Issue 36: a tenant's tokens per day and model requests per minute are counted in the database,
# so what one node's sessions used holds the tenant back on the other.
LIMITED = (
    serve_support.tenant("thrifty", "thrifty-token") + "tokens_per_day = 1\n\n"
    + serve_support.tenant("paced", "paced-token") + "model_requests_per_minute = 1\n\n"
)


async def test_a_tenants_tokens_and_model_requests_are_limited_across_nodes(ctx: Ctx, postgres: str, make_client):
    started = [_start_node(ctx, "a", postgres, LIMITED), _start_node(ctx, "b", postgres, LIMITED)]
    try:
        approve = PermissionHandler.approve_all
        clients = {}
        for node, served in zip("ab", started):
            for token in ("thrifty-token", "paced-token"):
                clients[node, token] = make_client(uri=served.sdk, connection_token=token)
                await clients[node, token].start()

        # Tokens: node a's turn uses the day's; node b learns it from the database and refuses.
        on_a = await clients["a", "thrifty-token"].create_session(on_permission_request=approve)
        on_b = await clients["b", "thrifty-token"].create_session(on_permission_request=approve)
        ctx.fake.replies({"text": "all of today's"})
        assert (await on_a.send_and_wait("hi", timeout=30)).data.content == "all of today's"
        b_thrifty = clients["b", "thrifty-token"]

        async def b_knows() -> bool:
            return (await raw_request(b_thrifty, "tenant.getUsage", {}))["tokensToday"] > 1

        await wait_until(b_knows, "node b to read node a's tokens", timeout=10)
        before = len(ctx.fake.requests())
        with pytest.raises(JsonRpcError) as refused:
            await on_b.send("more")
        assert refused.value.code == -32012 and refused.value.data == {"limit": "tokens_per_day", "max": 1}
        assert len(ctx.fake.requests()) == before

        # Requests per minute: node a's call takes the minute's one; node b's turn waits.
        await serve_support.early_in_a_minute()
        paced_a = await clients["a", "paced-token"].create_session(on_permission_request=approve)
        paced_b = await clients["b", "paced-token"].create_session(on_permission_request=approve)
        ctx.fake.replies({"text": "this minute's"})
        assert (await paced_a.send_and_wait("hi", timeout=30)).data.content == "this minute's"
        # Node b's call waits for the next minute.
        await serve_support.held_back_until_aborted(ctx, paced_b, "me too", hold_s=1.5)
    finally:
        for served in started:
            serve_support.stop(served, kill=True, label=served.stderr_path.parent.name)
