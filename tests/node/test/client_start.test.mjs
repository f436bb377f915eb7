// Issue 2, item 1–2: the official Node SDK starts Skipper over stdio and over TCP, and the
// server-level methods answer (ping, status.get, auth.getStatus, models.list).

import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

import { approveAll, CopilotClient, RuntimeConnection } from "@github/copilot-sdk";

import { setup, RawPeer, ISO_TS_RE, SKIPPER_BIN, TEST_TOKEN } from "../lib/harness.mjs";

const T = { timeout: 60_000 };

async function checkServerMethods(client) {
    const pong = await client.ping("hi");
    assert.equal(pong.protocolVersion, 3, "ping.protocolVersion");
    assert.equal(pong.message, "pong: hi", "ping echoes the message like the CLI");
    assert.equal(typeof pong.timestamp, "string", "ping.timestamp is an ISO string");
    assert.ok(!Number.isNaN(Date.parse(pong.timestamp)), `ping.timestamp parses: ${pong.timestamp}`);

    const status = await client.getStatus();
    assert.equal(status.protocolVersion, 3, "status.get protocolVersion");
    assert.equal(typeof status.version, "string");
    assert.ok(status.version.length > 0, "status.get version is non-empty");

    const auth = await client.getAuthStatus();
    assert.equal(auth.isAuthenticated, true, `auth.getStatus: ${JSON.stringify(auth)}`);
    assert.equal(auth.authType, "token", "--auth-token-env → authType token");

    const models = await client.listModels();
    assert.ok(Array.isArray(models) && models.length > 0, "models.list returns models");
    const ids = models.map((m) => m.id);
    // The fake model's /models serves exactly these two by default.
    for (const id of ["claude-sonnet-4.5", "gpt-4.1"]) {
        assert.ok(ids.includes(id), `models.list includes ${id} from the model service: ${ids}`);
    }
    for (const m of models) {
        assert.equal(typeof m.id, "string");
        assert.equal(typeof m.name, "string", `model ${m.id} has a name`);
        assert.equal(typeof m.capabilities, "object");
    }
    const sonnet = models.find((m) => m.id === "claude-sonnet-4.5");
    assert.equal(
        sonnet.capabilities.limits.max_context_window_tokens,
        128000,
        "capabilities.limits carried over from /models"
    );
}

test("start over stdio: connect handshake, ping, status, auth, models; stop", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    await client.start();
    assert.equal(client.state, "connected");
    await checkServerMethods(client);

    const proc = client.cliProcess;
    const t0 = Date.now();
    const errors = await client.stop();
    assert.deepEqual(errors, [], "client.stop() reports no cleanup errors (runtime.shutdown answered)");
    assert.ok(Date.now() - t0 < 5_000, `stop() is prompt (${Date.now() - t0} ms)`);
    assert.ok(proc.exitCode !== null || proc.signalCode !== null, "the Skipper process is gone");
});

test("a flag the server does not know: start() fails with the exit code and the usage error from stderr", T, async (t) => {
    const ctx = await setup(t);
    const client = new CopilotClient({
        connection: RuntimeConnection.forStdio({
            path: SKIPPER_BIN,
            env: ctx.env,
            args: ["--nonexistent-flag-for-testing"],
        }),
        workingDirectory: ctx.workDir,
        logLevel: "error",
    });
    t.after(() => client.forceStop().catch(() => {}));
    // The SDK writes `connect` right after the spawn. Had the process exited already, that
    // write would fail with a broken pipe and the SDK would only say its connection was
    // disposed; it reports the exit with stderr once the write has landed.
    const err = await client.start().then(
        () => assert.fail("start() should fail"),
        (e) => e
    );
    assert.match(err.message, /exited with code 1/, err.message);
    assert.match(err.message, /stderr: .*--nonexistent-flag-for-testing/s, err.message);
    await assert.rejects(
        client.createSession({ onPermissionRequest: approveAll }),
        "a call after the failed start fails too (it does not hang)"
    );
});

test("after runtime.shutdown every request is refused at once (none left unanswered)", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    await client.start();
    await client.rpc.user.settings.reload();
    await client.rpc.runtime.shutdown();
    // The SDK does not fail requests still pending when the pipe closes: the server must
    // answer each one that reaches it, with an error, before it exits.
    await assert.rejects(client.rpc.user.settings.reload(), /shutting down/);
    await client.forceStop();
});

test("start over TCP with port 0: SDK reads the port line and authenticates with its token", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client({ transport: "tcp" });
    await client.start();
    const port = client.runtimePort;
    assert.ok(Number.isInteger(port) && port > 0, `SDK parsed a port from stdout: ${port}`);
    await checkServerMethods(client);

    // The SDK set COPILOT_CONNECTION_TOKEN (a random UUID) for the child: a second, raw
    // connection must authenticate before anything else works.
    const raw = await RawPeer.connect(port);
    try {
        const before = await raw.call("ping", {});
        assert.ok(before.error, `ping before connect must fail: ${JSON.stringify(before)}`);
        assert.equal(before.error.code, -32001);
        assert.equal(before.error.message, "AUTHENTICATION_REQUIRED");

        const wrong = await raw.call("connect", { token: "not-the-token" });
        assert.ok(wrong.error, `connect with a wrong token must fail: ${JSON.stringify(wrong)}`);
        assert.equal(wrong.error.code, -32002);
        assert.equal(wrong.error.message, "AUTHENTICATION_FAILED");

        const missing = await raw.call("connect", {});
        assert.ok(missing.error, "connect without a token must fail");
        assert.equal(missing.error.code, -32002);
    } finally {
        await raw.kill();
    }

    // The SDK's own connection keeps working meanwhile.
    assert.equal((await client.ping("again")).protocolVersion, 3);
    assert.deepEqual(await client.stop(), []);
});

test("start over TCP on an explicit port with an explicit connection token", T, async (t) => {
    const ctx = await setup(t);
    const port = await new Promise((res, rej) => {
        const srv = net.createServer();
        srv.once("error", rej);
        srv.listen(0, "127.0.0.1", () => {
            const p = srv.address().port;
            srv.close(() => res(p));
        });
    });
    const token = "conformance-connection-token";
    const client = ctx.client({ transport: "tcp", port, connectionToken: token });
    await client.start();
    assert.equal(client.runtimePort, port, "server listens on the requested --port");
    await checkServerMethods(client);

    const raw = await RawPeer.connect(port);
    try {
        const ok = await raw.call("connect", { token, supportedTaskKinds: ["agent", "client", "shell"] });
        assert.ok(ok.result, `connect with the right token: ${JSON.stringify(ok)}`);
        assert.equal(ok.result.ok, true);
        assert.equal(ok.result.protocolVersion, 3);
        assert.equal(typeof ok.result.version, "string");
        const pong = await raw.call("ping", { message: "tcp" });
        assert.equal(pong.result?.message, "pong: tcp");
        assert.match(pong.result.timestamp, ISO_TS_RE);
    } finally {
        await raw.kill();
    }
    assert.deepEqual(await client.stop(), []);
});

test("a session works end to end over TCP", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "Hello over TCP." }]);
    const client = ctx.client({ transport: "tcp" });
    const session = await client.createSession({ onPermissionRequest: approveAll });
    const msg = await session.sendAndWait({ prompt: "Say hello" }, 30_000).catch((e) => {
        throw ctx.explain(e);
    });
    assert.equal(msg?.data.content, "Hello over TCP.");
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 1, "exactly one model call");
    const h = reqs[0].headers;
    assert.equal(h.authorization, `Bearer ${TEST_TOKEN}`, "the SDK's gitHubToken authorises model calls");
    assert.equal(h["x-initiator"], "user", "first call after a user message is user-initiated");
    assert.equal(h["x-client-session-id"], session.sessionId);
    assert.ok(["claude-sonnet-4.5", "gpt-4.1"].includes(reqs[0].body.model), `model from the catalogue: ${reqs[0].body.model}`);
});

test("a second SDK client joins the TCP server with forUri + token and resumes a session", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "First." }, { text: "Second." }]);
    const token = "shared-connection-token";
    const owner = ctx.client({ transport: "tcp", connectionToken: token });
    const s1 = await owner.createSession({ onPermissionRequest: approveAll });
    assert.equal((await s1.sendAndWait({ prompt: "one" }, 30_000))?.data.content, "First.");

    const joiner = new CopilotClient({ connection: RuntimeConnection.forUri(`127.0.0.1:${owner.runtimePort}`, { connectionToken: token }) });
    t.after(() => joiner.stop().catch(() => joiner.forceStop()));
    await joiner.start();
    assert.equal((await joiner.ping("joined")).message, "pong: joined");
    const s2 = await joiner.resumeSession(s1.sessionId, { onPermissionRequest: approveAll });
    assert.equal(s2.sessionId, s1.sessionId);
    const answer = await s2.sendAndWait({ prompt: "two" }, 30_000).catch((e) => {
        throw ctx.explain(e);
    });
    assert.equal(answer?.data.content, "Second.");
    const reqs = await ctx.fake.requests();
    assert.deepEqual(
        reqs[1].body.messages.filter((m) => m.role !== "system").map((m) => m.role),
        ["user", "assistant", "user"],
        "the joined client continues the same conversation"
    );

    const stranger = new CopilotClient({ connection: RuntimeConnection.forUri(`127.0.0.1:${owner.runtimePort}`, { connectionToken: "wrong" }) });
    t.after(() => stranger.forceStop().catch(() => {}));
    await assert.rejects(() => stranger.start(), /AUTHENTICATION_FAILED/, "a wrong token is refused");
});
