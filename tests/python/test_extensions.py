"""Issue 12: an OpenAI client library (the `openai` package) against `skipper serve`'s
`/v1/chat/completions`, where `model` names an agent and the API key is its tenant's token."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

import serve_support
from conftest import Ctx

TOKEN = "python-openai-tenant-token"


@pytest.fixture
def base_url(ctx: Ctx):
    config = serve_support.tenant("py", TOKEN) + (
        '[[agents]]\nname = "pilot"\ntenant = "py"\ninstructions = "Keep answers short."\n'
        'allow_tools = ["view"]\n\n[extensions]\nverify_signatures = false\n'
    )
    served = serve_support.start(ctx, config, home=ctx.copilot_home, state_dir=ctx.root)
    yield f"http://{served.http}/v1"
    serve_support.stop(served)


def _client(base_url: str, token: str = TOKEN) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=token, max_retries=0, timeout=30)


def test_a_completion_answers_with_the_agent(ctx: Ctx, base_url: str):
    ctx.fake.replies({"text": "Steady as she goes."})
    reply = _client(base_url).chat.completions.create(
        model="pilot",
        messages=[
            {"role": "user", "content": "Earlier question"},
            {"role": "assistant", "content": "Earlier answer"},
            {"role": "user", "content": "How is the course?"},
        ],
    )
    assert reply.choices[0].message.content == "Steady as she goes."
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == "pilot"
    chat = [r for r in ctx.fake.requests() if r["path"].endswith("/chat/completions")]
    messages = chat[-1]["body"]["messages"]
    assert "Keep answers short." in messages[0]["content"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    assert len(users) == 1 and "Earlier answer" in users[0] and users[0].endswith("How is the course?")


def test_a_streamed_completion_arrives_in_chunks(ctx: Ctx, base_url: str, tmp_path: Path):
    ws = ctx.copilot_home / "workspaces" / "py"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "log.md").write_text("calm seas\n", encoding="utf-8")
    ctx.fake.replies(
        {"tool_calls": [{"name": "view", "arguments": {"path": str(ws / "log.md")}}]},
        {"text": "The log says calm seas — ☀"},
    )
    stream = _client(base_url).chat.completions.create(
        model="pilot", messages=[{"role": "user", "content": "Read the log"}], stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "The log says calm seas — ☀"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.model == "pilot" and c.object == "chat.completion.chunk" for c in chunks)
    # The allowed tool ran: its result reached the second model request.
    chat = [r for r in ctx.fake.requests() if r["path"].endswith("/chat/completions")]
    tool_results = [m for m in chat[-1]["body"]["messages"] if m["role"] == "tool"]
    assert tool_results and "calm seas" in str(tool_results[0]["content"])


def test_wrong_tokens_and_unknown_models_are_refused(ctx: Ctx, base_url: str):
    with pytest.raises(openai.AuthenticationError):
        _client(base_url, "not-a-tenant-token").chat.completions.create(
            model="pilot", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.NotFoundError):
        _client(base_url).chat.completions.create(model="nobody", messages=[{"role": "user", "content": "hi"}])
    assert not [r for r in ctx.fake.requests() if r["path"].endswith("/chat/completions")]
