// Issue 9, SDK-hosted inference: a client created with a `requestHandler` (the SDK's
// CopilotRequestHandler) registers with `llmInference.setProvider` and then performs every
// model-layer HTTP request itself; the runtime threads the session id through, cancels the
// request when the turn is aborted, and keeps the turn alive across a failing callback.

import { test } from "node:test";
import assert from "node:assert/strict";

import { approveAll, CopilotRequestHandler } from "@github/copilot-sdk";
import { setup, waitUntil } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

const isInference = (url) => url.endsWith("/chat/completions");

function completion(text) {
    return new Response(
        JSON.stringify({
            id: "cmpl-handler",
            model: "claude-sonnet-4.5",
            choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
            usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        }),
        { status: 200, headers: { "content-type": "application/json" } }
    );
}

class Recording extends CopilotRequestHandler {
    constructor(answer) {
        super();
        this.answer = answer;
        this.seen = [];
    }

    async sendRequest(request, ctx) {
        const body = request.body ? await request.text() : "";
        this.seen.push({ url: request.url, sessionId: ctx.sessionId, agentId: ctx.agentId, auth: request.headers.get("authorization"), body });
        if (!isInference(request.url)) return super.sendRequest(request, ctx);
        return this.answer(request, ctx, body);
    }
}

test("a requestHandler serves the session's model calls, with the session id", T, async (t) => {
    const ctx = await setup(t);
    const handler = new Recording(async () => completion("answered in-process"));
    const client = ctx.client({ requestHandler: handler });
    await client.start();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    const reply = await session.sendAndWait({ prompt: "Say something" }, 30_000);
    assert.equal(reply?.data.content, "answered in-process");
    const calls = handler.seen.filter((s) => isInference(s.url));
    assert.equal(calls.length, 1);
    assert.equal(calls[0].sessionId, session.sessionId);
    assert.ok(calls[0].agentId, "an agent id");
    assert.match(calls[0].auth ?? "", /^Bearer /);
    assert.match(calls[0].body, /Say something/);
    const network = (await ctx.fake.requests()).filter((r) => r.path.endsWith("/chat/completions"));
    assert.equal(network.length, 0, "the fake model saw no chat request: the handler served it");
});

test("aborting the turn aborts the handler's request", T, async (t) => {
    const ctx = await setup(t);
    let entered = false;
    let aborted = false;
    const handler = new Recording(
        (_req, rctx) =>
            new Promise((_, reject) => {
                entered = true;
                rctx.signal.addEventListener("abort", () => {
                    aborted = true;
                    reject(new Error("cancelled by runtime"));
                });
            })
    );
    const client = ctx.client({ requestHandler: handler });
    await client.start();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    await session.send({ prompt: "this will be aborted" });
    await waitUntil(() => entered, { timeout: 30_000, message: "the handler was never asked" });
    await session.abort();
    await waitUntil(() => aborted, { timeout: 30_000, message: "the handler never saw the abort" });
});

test("a second client cannot take over inference while the first is connected", T, async (t) => {
    const ctx = await setup(t);
    const first = ctx.client({ transport: "tcp", connectionToken: "tok", requestHandler: new Recording(async () => completion("x")) });
    await first.start();
    // Another connection to the same server process.
    const port = first.runtimePort;
    assert.ok(port, "the first client knows its server's port");
    const { CopilotClient, RuntimeConnection } = await import("@github/copilot-sdk");
    const second = new CopilotClient({
        connection: RuntimeConnection.forUri(`localhost:${port}`, { connectionToken: "tok" }),
        requestHandler: new Recording(async () => completion("y")),
    });
    await assert.rejects(second.start(), /Another client is already the LLM inference provider/);
    await second.forceStop().catch(() => {});
});
