"""A rate limit the model service keeps answering: a client that handles
``autoModeSwitch.request`` is asked whether to go on with the ``auto`` model; on yes the
session switches (``session.model_change`` with cause ``rate_limit_auto_switch``) and the same
turn is answered, on no the turn fails with the rate-limit error."""

from __future__ import annotations

from copilot.session import PermissionHandler

from conftest import Ctx, record_events, wait_for

SNAPSHOT = "mode_handlers/should_invoke_auto_mode_switch_handler_when_rate_limited.yaml"
PROMPT = "Explain that auto mode recovered from a rate limit in one short sentence."
ANSWER = "Auto mode recovered from the rate limit and the session can continue."


async def test_yes_switches_to_auto_and_the_turn_is_answered(ctx: Ctx, client):
    ctx.load(SNAPSHOT)
    asked = []

    def on_switch(request, invocation):
        asked.append((dict(request), invocation["session_id"]))
        return "yes"

    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all, on_auto_mode_switch_request=on_switch
    )
    events = record_events(session)
    reply = await session.send_and_wait(PROMPT, timeout=60)

    assert reply is not None and reply.data.content == ANSWER
    assert asked == [({"errorCode": "user_weekly_rate_limited", "retryAfterSeconds": 1}, session.session_id)]
    requested = events.of("auto_mode_switch.requested")
    assert len(requested) == 1
    assert requested[0].data.error_code == "user_weekly_rate_limited"
    assert requested[0].data.retry_after_seconds == 1
    completed = events.of("auto_mode_switch.completed")
    assert len(completed) == 1 and completed[0].data.request_id == requested[0].data.request_id
    assert str(getattr(completed[0].data.response, "value", completed[0].data.response)) == "yes"
    change = events.of("session.model_change")[-1]
    assert (change.data.previous_model, change.data.new_model) == ("claude-sonnet-4.5", "auto")
    assert change.data.cause == "rate_limit_auto_switch"
    assert not events.has("session.error")
    models = [r["body"]["model"] for r in ctx.fake.requests()]
    assert models[-1] == "auto" and set(models[:-1]) == {"claude-sonnet-4.5"}, models
    assert (await session.rpc.model.get_current()).model_id == "auto"


async def test_no_keeps_the_model_and_the_turn_fails_with_the_rate_limit(ctx: Ctx, client):
    ctx.load(SNAPSHOT)
    session = await client.create_session(
        on_permission_request=PermissionHandler.approve_all,
        on_auto_mode_switch_request=lambda request, invocation: "no",
    )
    events = record_events(session)
    await session.send(PROMPT)
    await wait_for(lambda: events.has("session.idle"), timeout=60)

    errors = events.of("session.error")
    assert len(errors) == 1 and errors[0].data.error_type == "rate_limit", events.types()
    assert "weekly rate limit" in errors[0].data.message
    assert [e.data.response for e in events.of("auto_mode_switch.completed")] != []
    assert not [e for e in events.of("session.model_change") if e.data.cause == "rate_limit_auto_switch"]
    assert {r["body"]["model"] for r in ctx.fake.requests()} == {"claude-sonnet-4.5"}


async def test_a_client_without_a_handler_is_not_asked(ctx: Ctx, client):
    ctx.load(SNAPSHOT)
    session = await client.create_session(on_permission_request=PermissionHandler.approve_all)
    events = record_events(session)
    await session.send(PROMPT)
    await wait_for(lambda: events.has("session.idle"), timeout=60)

    assert not events.has("auto_mode_switch.requested")
    assert [e.data.error_type for e in events.of("session.error")] == ["rate_limit"]
