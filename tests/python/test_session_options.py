"""Issue 11, `session.options.update`: the SDK patches a live session's options (its empty mode
does so right after every create) and the next model call follows them."""

from __future__ import annotations

from copilot.generated.rpc import SessionUpdateOptionsParams
from copilot.session import PermissionHandler

from conftest import Ctx, raw_request

APPROVE = PermissionHandler.approve_all


async def test_options_update_reaches_the_next_model_call(ctx: Ctx, client):
    session = await client.create_session(on_permission_request=APPROVE)
    events: list = []
    session.on(events.append)
    other = ctx.work_dir / "elsewhere"
    other.mkdir()
    result = await session.rpc.options.update(
        SessionUpdateOptionsParams(
            model="gpt-4.1",
            working_directory=str(other),
            enable_streaming=True,
            excluded_tools=["bash"],
            # Accepted, and nothing Skipper does depends on them.
            coauthor_enabled=False,
            skip_custom_instructions=True,
            feature_flags={"some-flag": True},
        )
    )
    assert result.success is True
    ctx.fake.replies({"text": "done"})
    await session.send_and_wait("go", timeout=30)
    body = ctx.fake.requests()[-1]["body"]
    assert body["model"] == "gpt-4.1"
    assert body.get("stream") is True
    names = [t["function"]["name"] for t in body.get("tools", [])]
    assert "bash" not in names and "view" in names
    assert str(other) in body["messages"][0]["content"]
    types = [e.type.value for e in events]
    assert "session.model_change" in types and "session.context_changed" in types
    changed = next(e for e in events if e.type.value == "session.context_changed")
    assert changed.data.cwd == str(other)


async def test_options_update_on_an_unknown_session_is_refused(client):
    try:
        await raw_request(client, "session.options.update", {"sessionId": "nope", "enableStreaming": True})
    except Exception as e:
        assert "Session not found" in str(e)
    else:
        raise AssertionError("an unknown session must be refused")
