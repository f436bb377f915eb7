"""Issue 34: a session's client-owned metadata through the official Python SDK
(`session.rpc.metadata.get_client_metadata` / `update_client_metadata`,
`client.rpc.sessions.get_client_metadata`), kept as the original 1.0.102 keeps it: the same
answers, the same limits and texts, the same file in the session's directory, and never shown
to the model."""

from __future__ import annotations

import json

import pytest

from copilot.generated.rpc import MetadataUpdateClientMetadataRequest as Patch
from copilot.generated.rpc import SessionsGetClientMetadataRequest as Many
from copilot.session import PermissionHandler

import serve_support
from conftest import Ctx

APPROVE = PermissionHandler.approve_all


def _statuses(entries: list) -> list[tuple]:
    return [(e["sessionId"], e["status"], e.get("metadata")) for e in entries]


async def test_metadata_is_patched_kept_on_disk_and_read_without_opening_the_session(ctx: Ctx, make_client):
    client = make_client()
    await client.start()
    session = await client.create_session(on_permission_request=APPROVE)
    sid = session.session_id
    meta = session.rpc.metadata
    assert await meta.get_client_metadata() == {}
    assert await meta.update_client_metadata(Patch(set={"b": "2", "a": "1"})) == {"a": "1", "b": "2"}
    # clear, then remove, then set: set wins over remove.
    assert await meta.update_client_metadata(Patch(remove=["a", "zz"], set={"c": "3", "zz": "4"})) == {
        "b": "2", "c": "3", "zz": "4"}
    assert await meta.update_client_metadata(Patch(clear=True, set={"owner/ticket": "T-42"})) == {
        "owner/ticket": "T-42"}
    assert await meta.get_client_metadata() == {"owner/ticket": "T-42"}

    path = ctx.copilot_home / "session-state" / sid / "client-metadata.json"
    assert path.read_text() == '{"version":1,"metadata":{"owner/ticket":"T-42"}}'
    assert path.stat().st_mode & 0o777 == 0o600

    # The model never sees it, and no event carries it.
    ctx.fake.replies({"text": "ok"})
    await session.send_and_wait("hello", timeout=30)
    assert "T-42" not in json.dumps(ctx.fake.requests())
    assert "T-42" not in (ctx.copilot_home / "session-state" / sid / "events.jsonl").read_text()
    await client.stop()

    # Another process reads it from disk without opening the session, beside ids it does not know.
    other = make_client()
    await other.start()
    unknown = "0e0e0e0e-0000-4000-8000-000000000000"
    found = await other.rpc.sessions.get_client_metadata(Many(session_ids=[sid, unknown, "not-a-uuid"]))
    assert _statuses(found) == [(sid, "ok", {"owner/ticket": "T-42"}), (unknown, "notFound", None),
                                ("not-a-uuid", "notFound", None)]
    projected = await other.rpc.sessions.get_client_metadata(Many(session_ids=[sid], keys=["nope"]))
    assert _statuses(projected) == [(sid, "ok", {})]
    with pytest.raises(Exception) as escaped:
        await other.rpc.sessions.get_client_metadata(Many(session_ids=["../x"]))
    assert 'Invalid sessionId: "../x"' in str(escaped.value)

    # A file this runtime cannot read is reported as such, not overwritten.
    path.write_text("{nope")
    [corrupt] = await other.rpc.sessions.get_client_metadata(Many(session_ids=[sid]))
    assert corrupt == {"sessionId": sid, "status": "corrupt"}
    path.write_text('{"version":2,"metadata":{}}')
    [newer] = await other.rpc.sessions.get_client_metadata(Many(session_ids=[sid]))
    assert newer == {"sessionId": sid, "status": "unsupportedVersion"}
    resumed = await other.resume_session(sid, on_permission_request=APPROVE)
    with pytest.raises(Exception):
        await resumed.rpc.metadata.update_client_metadata(Patch(set={"x": "y"}))
    assert path.read_text() == '{"version":2,"metadata":{}}'


async def test_limits_are_refused_with_the_originals_texts_and_change_nothing(client):
    session = await client.create_session(on_permission_request=APPROVE)
    meta = session.rpc.metadata
    await meta.update_client_metadata(Patch(set={"keep": "me"}))
    refused = [
        (Patch(set={"copilot/x": "1"}), "key 'copilot/x' uses a reserved prefix"),
        (Patch(remove=["github/x"]), "key 'github/x' uses a reserved prefix"),
        (Patch(set={"": "x"}), "keys must not be empty"),
        (Patch(set={"k" * 257: "x"}), "key exceeds 256 bytes"),
        (Patch(set={"k": "x" * 16385}), "value for key 'k' exceeds 16384 bytes"),
        (Patch(set={f"k{i}": "v" for i in range(129)}), "set exceeds 128 entries"),
        (Patch(clear=True, set={f"k{i}": "x" * 16000 for i in range(10)}), "serialized document exceeds 65536 bytes"),
    ]
    for patch, text in refused:
        with pytest.raises(Exception) as e:
            await meta.update_client_metadata(patch)
        assert f"client metadata is invalid: {text}" in str(e.value), (text, str(e.value))
    await meta.update_client_metadata(Patch(set={f"m{i}": "v" for i in range(100)}))
    with pytest.raises(Exception) as e:
        await meta.update_client_metadata(Patch(set={f"n{i}": "v" for i in range(40)}))
    assert "client metadata is invalid: bag exceeds 128 entries" in str(e.value)
    bag = await meta.get_client_metadata()
    assert len(bag) == 101 and bag["keep"] == "me"


async def test_a_tenant_cannot_read_another_tenants_metadata(ctx: Ctx, make_client):
    config = serve_support.tenant("alpha", "alpha-token") + serve_support.tenant("beta", "beta-token")
    served = serve_support.start(ctx, config, home=ctx.copilot_home, state_dir=ctx.root)
    try:
        alpha = make_client(uri=served.sdk, connection_token="alpha-token")
        await alpha.start()
        session = await alpha.create_session(on_permission_request=APPROVE)
        await session.rpc.metadata.update_client_metadata(Patch(set={"secret": "alpha-only"}))
        beta = make_client(uri=served.sdk, connection_token="beta-token")
        await beta.start()
        [seen] = await beta.rpc.sessions.get_client_metadata(Many(session_ids=[session.session_id]))
        assert seen == {"sessionId": session.session_id, "status": "notFound"}
        [own] = await alpha.rpc.sessions.get_client_metadata(Many(session_ids=[session.session_id]))
        assert own["metadata"] == {"secret": "alpha-only"}
        await alpha.stop()
        await beta.stop()
    finally:
        serve_support.stop(served)
