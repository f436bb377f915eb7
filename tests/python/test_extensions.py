"""Issue 12: an OpenAI client library (the `openai` package) against `skipper serve`'s
`/v1/chat/completions`, where `model` names an agent and the API key is its tenant's token."""

from __future__ import annotations

import hashlib
import os
import selectors
import subprocess
import time
from pathlib import Path

import openai
import pytest

from conftest import SKIPPER_BIN, Ctx

TOKEN = "python-openai-tenant-token"


def _start_serve(ctx: Ctx) -> tuple[subprocess.Popen, str, Path]:
    config = ctx.root / "server.toml"
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    config.write_text(
        f'[[tenants]]\nname = "py"\ntoken_sha256 = "{digest}"\n\n'
        '[[agents]]\nname = "pilot"\ntenant = "py"\ninstructions = "Keep answers short."\n'
        'allow_tools = ["view"]\n\n[extensions]\nverify_signatures = false\n',
        encoding="utf-8",
    )
    stderr_path = ctx.root / "serve.stderr"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [
                str(SKIPPER_BIN), "serve",
                "--listen", "127.0.0.1:0", "--sdk-listen", "127.0.0.1:0",
                "--config", str(config), "--home", str(ctx.copilot_home),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=ctx.env(GH_TOKEN="fake-token-for-e2e-tests"),
            cwd=ctx.work_dir,
        )
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 15
    buf = b""
    try:
        while b"listening" not in buf or not buf.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(timeout=remaining):
                raise RuntimeError("skipper serve printed no `listening` line within 15 s")
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError("skipper serve exited: " + stderr_path.read_text(errors="replace"))
            buf += chunk
    finally:
        sel.close()
    line = next(l for l in buf.decode().splitlines() if "listening" in l)
    http = line.split("http://", 1)[1].split()[0]
    return proc, http, stderr_path


@pytest.fixture
def base_url(ctx: Ctx):
    proc, http, stderr_path = _start_serve(ctx)
    yield f"http://{http}/v1"
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    if proc.stdout:
        proc.stdout.close()
    print("----- skipper serve stderr -----")
    print(stderr_path.read_text(errors="replace")[-20000:])


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
