"""Bring-your-own-key providers (issue 9) through the Python SDK: its snake_case provider
settings, named providers with bearer-token callbacks, and the errors a bad key gives."""

from __future__ import annotations

from copilot.generated.rpc import ModelSwitchToRequest
from copilot.session import PermissionHandler

from conftest import Ctx

APPROVE = PermissionHandler.approve_all


def _sent_to(ctx: Ctx, path: str) -> list[dict]:
    return [r for r in ctx.fake.requests() if r["path"] == path]


async def test_anthropic_provider_from_python(ctx: Ctx, client):
    ctx.fake.replies({"text": "hello from claude"})
    session = await client.create_session(
        on_permission_request=APPROVE,
        provider={"type": "anthropic", "base_url": ctx.fake.url, "api_key": "sk-ant-py", "wire_model": "claude-x"},
    )
    reply = await session.send_and_wait("hi", timeout=30)
    assert reply is not None and reply.data.content == "hello from claude"
    sent = _sent_to(ctx, "/v1/messages")
    assert len(sent) == 1, [r["path"] for r in ctx.fake.requests()]
    assert sent[0]["headers"]["x-api-key"] == "sk-ant-py"
    assert sent[0]["headers"]["anthropic-version"] == "2023-06-01"
    assert sent[0]["body"]["model"] == "claude-x"
    await session.disconnect()


async def test_named_providers_with_token_callbacks(ctx: Ctx, client):
    asked: list[dict] = []

    def token_for(name: str):
        async def provide(args) -> str:
            asked.append(dict(args))
            return f"{name}-token-{len(asked)}"

        return provide

    ctx.fake.replies({"text": "one"}, {"text": "two"})
    base = f"{ctx.fake.url}/v1"
    session = await client.create_session(
        on_permission_request=APPROVE,
        model="alpha/fast",
        providers=[
            {"name": "alpha", "type": "openai", "base_url": base, "bearer_token_provider": token_for("alpha")},
            {"name": "beta", "type": "openai", "wire_api": "responses", "base_url": base, "api_key": "beta-key"},
        ],
        models=[
            {"id": "fast", "provider": "alpha", "wire_model": "alpha-wire"},
            {"id": "deep", "provider": "beta", "wire_model": "beta-wire"},
        ],
    )
    await session.send_and_wait("first", timeout=30)
    await session.rpc.model.switch_to(ModelSwitchToRequest(model_id="beta/deep"))
    await session.send_and_wait("second", timeout=30)
    chat = _sent_to(ctx, "/v1/chat/completions")
    responses = _sent_to(ctx, "/v1/responses")
    assert [r["body"]["model"] for r in chat] == ["alpha-wire"]
    assert chat[0]["headers"]["authorization"] == "Bearer alpha-token-1"
    assert [r["body"]["model"] for r in responses] == ["beta-wire"]
    assert responses[0]["headers"]["authorization"] == "Bearer beta-key"
    assert [a["provider_name"] for a in asked] == ["alpha"]
    assert asked[0]["session_id"] == session.session_id
    await session.disconnect()


async def test_rejected_key_is_an_authentication_error(ctx: Ctx, client):
    ctx.fake.replies(*[{"error": {"status": 401, "message": "bad key sk-py-secret"}}] * 3)
    session = await client.create_session(
        on_permission_request=APPROVE,
        provider={"type": "openai", "base_url": f"{ctx.fake.url}/v1", "api_key": "sk-py-secret"},
    )
    errors = []
    session.on(lambda e: errors.append(e) if e.type.value == "session.error" else None)
    try:
        await session.send_and_wait("hi", timeout=30)
    except Exception:  # noqa: BLE001 - the SDK raises on session.error; the event is what we check
        pass
    assert errors, "a session.error event"
    data = errors[0].data
    assert data.error_type == "authentication"
    assert data.status_code == 401
    assert f"{ctx.fake.url}/v1" in data.message
    assert "sk-py-secret" not in data.message
    assert len(_sent_to(ctx, "/v1/chat/completions")) == 3
    await session.disconnect()
