"""Issue 11: the Copilot API endpoint a model is called on comes from the model catalogue's
`supported_endpoints`, as the original picks it: a model that lists only the Responses API is
called on `/responses` in that wire format; one that lists chat completions (or nothing) on
`/chat/completions`."""

from __future__ import annotations

from copilot.session import PermissionHandler

from conftest import Ctx, tool_names

APPROVE = PermissionHandler.approve_all


def _catalogue(ctx: Ctx) -> None:
    ctx.fake._call(
        "POST",
        "/_fake/models",
        {
            "models": ["claude-sonnet-4.5", "responses-only", "both-apis"],
            "supportedEndpoints": {
                "responses-only": ["/responses", "ws:/responses"],
                "both-apis": ["/chat/completions", "/responses"],
            },
        },
    )


async def test_a_responses_only_model_is_called_on_responses(ctx: Ctx, client):
    _catalogue(ctx)
    ctx.fake.replies(
        {"tool_calls": [{"name": "view", "arguments": {"path": str(ctx.work_dir)}}]},
        {"text": "Listed it through the Responses API."},
    )
    session = await client.create_session(on_permission_request=APPROVE, model="responses-only")
    answer = await session.send_and_wait("List the directory.", timeout=30)
    assert answer.data.content == "Listed it through the Responses API."

    first, second = ctx.fake.requests()
    assert [first["path"], second["path"]] == ["/responses", "/responses"]
    body = first["body"]
    assert body["model"] == "responses-only" and body["store"] is False
    assert "messages" not in body and body["instructions"], "Responses wire format: instructions + input"
    assert body["input"][-1]["role"] == "user" and "List the directory." in str(body["input"][-1]["content"])
    assert "view" in [t.get("name") for t in body["tools"]]
    # The tool call went back as Responses items: the call and its output, same call id.
    items = second["body"]["input"]
    call = next(i for i in items if i.get("type") == "function_call")
    output = next(i for i in items if i.get("type") == "function_call_output")
    assert call["name"] == "view" and output["call_id"] == call["call_id"]
    assert first["headers"].get("authorization", "").startswith("Bearer ")


async def test_models_listing_chat_completions_or_nothing_stay_on_chat_completions(ctx: Ctx, client):
    _catalogue(ctx)
    ctx.fake.replies({"text": "one"}, {"text": "two"})
    both = await client.create_session(on_permission_request=APPROVE, model="both-apis")
    await both.send_and_wait("hi", timeout=30)
    plain = await client.create_session(on_permission_request=APPROVE, model="claude-sonnet-4.5")
    await plain.send_and_wait("hi", timeout=30)
    paths = [r["path"] for r in ctx.fake.requests()]
    assert paths == ["/chat/completions", "/chat/completions"]
    assert "view" in tool_names(ctx.fake.requests()[0])
