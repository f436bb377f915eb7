// Issue 9, "Providers": the official SDK's bring-your-own-key settings drive Skipper exactly as
// they drive the original: a whole-session `provider` of each family and wire API, named
// `providers` + `models` with per-model routing, bearer tokens from SDK callbacks
// (`providerToken.getToken`, asked per request), runtime `provider.add`, and the opt-in
// `provider.getEndpoint`. The fake model serves every wire API on loopback.

import { test } from "node:test";
import assert from "node:assert/strict";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, recordEvents } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

const header = (req, name) => req.headers?.[name.toLowerCase()];

async function requestsTo(fake, path) {
    return (await fake.requests()).filter((r) => r.path === path);
}

test("a session provider of each family and wire API answers through the SDK", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    const cases = [
        { provider: { type: "openai", baseUrl: `${ctx.fake.url}/v1`, apiKey: "sk-openai" }, path: "/v1/chat/completions" },
        {
            provider: { type: "openai", wireApi: "responses", baseUrl: `${ctx.fake.url}/v1`, apiKey: "sk-resp" },
            path: "/v1/responses",
        },
        { provider: { type: "anthropic", baseUrl: ctx.fake.url, apiKey: "sk-ant" }, path: "/v1/messages" },
        {
            provider: {
                type: "azure",
                baseUrl: ctx.fake.url,
                apiKey: "sk-azure",
                wireModel: "dep-1",
                azure: { apiVersion: "2024-10-21" },
            },
            path: "/openai/deployments/dep-1/chat/completions?api-version=2024-10-21",
        },
    ];
    for (const [i, c] of cases.entries()) {
        await ctx.fake.replies([{ text: `answer ${i}` }]);
        const session = await client.createSession({ onPermissionRequest: approveAll, streaming: true, provider: c.provider });
        const events = recordEvents(session);
        const reply = await sendAndWait(ctx, session, `question ${i}`);
        assert.equal(reply?.data.content, `answer ${i}`, c.path);
        const deltas = events.filter((e) => e.type === "assistant.message_delta").map((e) => e.data.deltaContent);
        assert.equal(deltas.join(""), `answer ${i}`, `${c.path}: deltas add up to the message`);
        const sent = await requestsTo(ctx.fake, c.path);
        assert.equal(sent.length, 1, `${c.path}: ${JSON.stringify((await ctx.fake.requests()).map((r) => r.path))}`);
        const key = c.provider.apiKey;
        const credential =
            c.provider.type === "azure"
                ? header(sent[0], "api-key")
                : c.provider.type === "anthropic"
                  ? header(sent[0], "x-api-key")
                  : header(sent[0], "authorization");
        assert.ok(credential?.endsWith(key), `${c.path}: the key is sent where the family expects it`);
        await session.disconnect();
    }
});

test("named providers route each model to its provider, with SDK bearer-token callbacks per request", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    const asked = [];
    const tokenFor = (name) => async (args) => {
        asked.push(args);
        return `token-${name}-${asked.length}`;
    };
    await ctx.fake.replies([{ text: "red one" }, { text: "red two" }, { text: "blue one" }]);
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        model: "red/default",
        providers: [
            { name: "red", type: "openai", baseUrl: `${ctx.fake.url}/v1`, bearerTokenProvider: tokenFor("red"), headers: { "X-Provider": "red" } },
            { name: "blue", type: "openai", baseUrl: `${ctx.fake.url}/v1`, bearerTokenProvider: tokenFor("blue"), headers: { "X-Provider": "blue" } },
        ],
        models: [
            { id: "default", provider: "red", wireModel: "red-wire" },
            { id: "default", provider: "blue", wireModel: "blue-wire" },
        ],
    });
    await sendAndWait(ctx, session, "first");
    await sendAndWait(ctx, session, "second");
    await session.rpc.model.switchTo({ modelId: "blue/default" });
    await sendAndWait(ctx, session, "third");

    const sent = await requestsTo(ctx.fake, "/v1/chat/completions");
    assert.deepEqual(
        sent.map((r) => [r.body.model, header(r, "x-provider"), header(r, "authorization")]),
        [
            ["red-wire", "red", "Bearer token-red-1"],
            ["red-wire", "red", "Bearer token-red-2"],
            ["blue-wire", "blue", "Bearer token-blue-3"],
        ]
    );
    assert.deepEqual(
        asked.map((a) => a.providerName),
        ["red", "red", "blue"]
    );
    assert.ok(asked.every((a) => a.sessionId === session.sessionId));
    await session.disconnect();
});

test("provider.add registers models that model.list shows and switchTo selects", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    const added = await session.rpc.provider.add({
        providers: [{ name: "rt", type: "openai", baseUrl: `${ctx.fake.url}/v1`, apiKey: "runtime-secret" }],
        models: [{ provider: "rt", id: "m1", name: "Runtime Model", wireModel: "wire-m1", maxPromptTokens: 3072 }],
    });
    assert.equal(added.models.length, 1);
    assert.match(JSON.stringify(added.models[0]), /rt\/m1/);
    assert.match(JSON.stringify(added.models[0]), /Runtime Model/);
    const listed = await session.rpc.model.list();
    assert.ok(listed.list.some((m) => m.id === "rt/m1"), JSON.stringify(listed.list.map((m) => m.id)));
    const switched = await session.rpc.model.switchTo({ modelId: "rt/m1" });
    assert.equal(switched.modelId, "rt/m1");
    await ctx.fake.replies([{ text: "from the runtime provider" }]);
    const reply = await sendAndWait(ctx, session, "hello");
    assert.equal(reply?.data.content, "from the runtime provider");
    const sent = await requestsTo(ctx.fake, "/v1/chat/completions");
    assert.equal(sent[0].body.model, "wire-m1");
    await assert.rejects(
        session.rpc.provider.add({ models: [{ provider: "nobody", id: "x" }] }),
        /not registered/,
        "a model naming an unknown provider is refused"
    );
    await session.disconnect();
});

test("provider.getEndpoint is opt-in and returns the session's provider", T, async (t) => {
    const ctx = await setup(t);
    const provider = {
        type: "openai",
        wireApi: "completions",
        baseUrl: "https://api.example.test/v1",
        apiKey: "byok-secret",
        headers: { "X-Custom-Header": "byok-yes" },
    };
    const closed = await ctx.client().createSession({ onPermissionRequest: approveAll, provider });
    await assert.rejects(closed.rpc.provider.getEndpoint({}), /COPILOT_ALLOW_GET_PROVIDER_ENDPOINT/);

    const open = ctx.client({ env: { COPILOT_ALLOW_GET_PROVIDER_ENDPOINT: "true" } });
    const session = await open.createSession({ onPermissionRequest: approveAll, provider });
    const endpoint = await session.rpc.provider.getEndpoint({});
    assert.equal(endpoint.type, "openai");
    assert.equal(endpoint.wireApi, "completions");
    assert.equal(endpoint.baseUrl, "https://api.example.test/v1");
    assert.equal(endpoint.apiKey, "byok-secret");
    assert.equal(endpoint.headers["X-Custom-Header"], "byok-yes");
    assert.equal(endpoint.sessionToken, undefined);
});

test("a provider that rejects the key ends the turn with an authentication error naming it", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    await ctx.fake.replies([0, 1, 2].map(() => ({ error: { status: 401, message: "bad key sk-wrong-123" } })));
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        provider: { type: "openai", baseUrl: `${ctx.fake.url}/v1`, apiKey: "sk-wrong-123" },
    });
    const events = recordEvents(session);
    await assert.rejects(session.sendAndWait({ prompt: "hi" }, 30_000));
    const error = events.find((e) => e.type === "session.error");
    assert.equal(error?.data.errorType, "authentication", JSON.stringify(error));
    assert.equal(error.data.statusCode, 401);
    assert.ok(error.data.message.includes(`${ctx.fake.url}/v1`), error.data.message);
    assert.ok(!JSON.stringify(events).includes("sk-wrong-123"), "the key appears in no event");
    assert.equal((await requestsTo(ctx.fake, "/v1/chat/completions")).length, 3, "two retries");
});
