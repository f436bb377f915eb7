"""The original's command sandbox through the official Python SDK: ``create_session`` with a
``sandbox_config`` confines the model's shell commands (bubblewrap). Off by default; skipped
where the host has no ``bwrap`` unless ``SKIPPER_REQUIRE_SANDBOX=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from copilot.client import SandboxConfig
from copilot.generated.rpc import (
    PermissionDecisionApproveOnce,
    SandboxConfigAuth,
    SandboxConfigUserPolicy,
    SandboxConfigUserPolicyNetwork,
    SandboxGrantPathForRequestRequest,
    SandboxProxyCARequest,
)
from copilot.session import PermissionHandler, PermissionNoResult

from conftest import Ctx, record_events


def _need_bwrap() -> None:
    if shutil.which("bwrap"):
        return
    assert os.environ.get("SKIPPER_REQUIRE_SANDBOX") != "1", "bwrap is required here and missing"
    pytest.skip("no bwrap on this host")


def _bash(command: str, **extra) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command, "description": "probe", **extra}}]}


async def test_a_sandboxed_sessions_commands_cannot_write_the_system_or_reach_the_network(ctx: Ctx, client):
    _need_bwrap()
    port = urlparse(ctx.fake.url).port
    probe = Path("/usr/skipper-sandbox-probe")
    reach = f"(echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo REFUSED"
    ctx.fake.replies(
        _bash("echo inside > inside.txt && cat inside.txt"),
        _bash(f"touch {probe}; echo tried"),
        _bash(reach),
        _bash("sleep 1", mode="async", detach=True),
        {"text": "done"},
    )
    no_network = SandboxConfigUserPolicy(network=SandboxConfigUserPolicyNetwork(allow_outbound=False))
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        working_directory=str(ctx.work_dir),
        sandbox_config=SandboxConfig(enabled=True, user_policy=no_network),
    )
    events = record_events(session)
    try:
        await session.send_and_wait("probe the sandbox", timeout=60)
        done = events.of("tool.execution_complete")
        texts = [(e.data.result.content if e.data.result else "") + (e.data.error.message if e.data.error else "") for e in done]
        assert len(done) == 4, texts
        assert "inside" in texts[0] and (ctx.work_dir / "inside.txt").read_text() == "inside\n"
        assert all(e.data.sandboxed for e in done[:3]), [e.data.sandboxed for e in done]
        assert not probe.exists(), "a sandboxed command wrote under /usr"
        assert "REFUSED" in texts[2], texts[2]
        assert "Detached commands cannot run inside the sandbox" in texts[3], texts[3]
    finally:
        if probe.exists():
            probe.unlink()
        await session.disconnect()


async def test_the_sdk_reads_the_hosts_and_a_sessions_sandbox(ctx: Ctx, client):
    """Issue 33 through the official SDK: the host's support, and a sandboxed session's
    enforcement status and credential suggestions (names, never values); a bypass nothing
    offered is refused."""
    _need_bwrap()
    await client.start()
    host = await client.rpc.sandbox.get_host_support()
    assert host.supported is True
    assert [c.name for c in host.capabilities][:2] == ["network", "network_filtering"]
    plain = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    assert (await plain.rpc.sandbox.get_credential_suggestions()).suggestions == []
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, sandbox_config=SandboxConfig(enabled=True)
    )
    status = await session.rpc.sandbox.get_enforcement_status()
    assert (status.required, status.blocked) == (False, False)
    names = [s.name for s in (await session.rpc.sandbox.get_credential_suggestions()).suggestions]
    assert names == sorted(names) and "PLAIN_VAR" not in names
    from copilot.generated.rpc import SandboxDisableForSessionRequest

    with pytest.raises(Exception) as refused:
        await session.rpc.sandbox.disable_for_session(SandboxDisableForSessionRequest(request_id="bogus"))
    assert "pending permission request 'bogus' was not found" in str(refused.value)


async def test_a_write_outside_the_sandbox_is_offered_and_granted_through_the_sdk(ctx: Ctx, client):
    """A session's own sandbox holds the file tools to its writable paths; with a bypass
    allowed, the write's permission request offers the folder, and the SDK's handler grants
    it (``session.rpc.sandbox.grant_path_for_request``): the write happens, and the session's
    sandboxed commands may write there afterwards."""
    _need_bwrap()
    if Path(tempfile.gettempdir()).resolve().is_relative_to("/var/tmp"):
        pytest.skip("the temporary directory is under /var/tmp, which the sandbox lets commands write")
    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        create = {"name": "create", "arguments": {"path": str(outside / "a.txt"), "file_text": "hi\n"}}
        ctx.fake.replies({"tool_calls": [create]}, _bash(f"echo b > {outside / 'b.txt'}"), {"text": "done"})
        offers = []

        async def answer(request, _invocation):
            if not getattr(request, "request_sandbox_bypass", None):
                return PermissionDecisionApproveOnce()
            offers.append(request.sandbox_path_grant)
            pending = await session.rpc.permissions.pending_requests()
            granted = await session.rpc.sandbox.grant_path_for_request(
                SandboxGrantPathForRequestRequest(request_id=pending.items[0].request_id)
            )
            assert granted.success is True
            return PermissionNoResult()

        no_network = SandboxConfigUserPolicy(network=SandboxConfigUserPolicyNetwork(allow_outbound=False))
        session = await client.create_session(
            on_permission_request=answer,
            working_directory=str(ctx.work_dir),
            sandbox_config=SandboxConfig(enabled=True, allow_bypass=True, user_policy=no_network),
        )
        events = record_events(session)
        try:
            await session.send_and_wait("write outside", timeout=60)
            assert len(offers) == 1, offers
            assert offers[0].path == str(outside.resolve()) and offers[0].denied_path == str(outside / "a.txt")
            assert (outside / "a.txt").read_text() == "hi\n"
            assert (outside / "b.txt").read_text() == "b\n", "the granted folder is the commands' too"
            assert [e.data.sandboxed for e in events.of("tool.execution_complete")] == [True, True]
        finally:
            await session.disconnect()
    finally:
        shutil.rmtree(outside, ignore_errors=True)


async def test_the_sdk_learns_there_is_no_credential_proxy_to_install(ctx: Ctx, client):
    """`sandbox.proxyCa.*` through the official SDK: Skipper's sandbox runs no credential
    proxy, so nothing can be installed and creating its certificate authority is refused; a
    config that asks for credentials through the proxy is still recognised as one that would."""
    await client.start()
    proxy_ca = client.rpc.sandbox.proxy_ca
    assert await proxy_ca.check_installation_support() is False
    status = await proxy_ca.get_status(SandboxProxyCARequest())
    assert (status.state.value, status.can_install) == ("unsupported", False)
    plain = SandboxProxyCARequest(sandbox_config=SandboxConfig(enabled=True))
    assert await proxy_ca.check_relevance(plain) is False
    signs_in = SandboxProxyCARequest(sandbox_config=SandboxConfig(enabled=True, auth=SandboxConfigAuth(git=True)))
    assert await proxy_ca.check_relevance(signs_in) is True
    with pytest.raises(Exception, match="runs no credential proxy"):
        await proxy_ca.create(signs_in)
