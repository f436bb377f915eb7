// Issue 2, "Robustness from day one": malformed input straight into the real binary over
// Content-Length framing (no SDK — the point is bytes an SDK would never send).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";

import { setup, frame, RawPeer, withTimeout, delay, SKIPPER_BIN } from "../lib/harness.mjs";

const T = { timeout: 30_000 };

/** A Skipper over raw stdio, after a successful `connect`. */
async function connected(t) {
    const ctx = await setup(t);
    const peer = await ctx.raw();
    const hello = await peer.call("connect", { supportedTaskKinds: ["agent", "client", "shell"] });
    assert.ok(hello.result, `connect succeeds: ${JSON.stringify(hello)}`);
    assert.equal(hello.result.protocolVersion, 3);
    assert.equal(hello.result.ok, true);
    assert.deepEqual(
        [...(hello.result.taskKinds ?? [])].sort(),
        ["agent", "client", "shell"],
        "taskKinds echoes the supported subset"
    );
    return { ctx, peer };
}

async function assertAlive(peer, note) {
    const pong = await peer.call("ping", { message: "alive" });
    assert.equal(pong.result?.message, "pong: alive", `connection still works ${note}: ${JSON.stringify(pong)}`);
    assert.equal(peer.proc.exitCode, null, `process still running ${note}`);
}

function assertOnlyFrames(peer) {
    assert.deepEqual(peer.reader.errors, [], "stdout carries nothing but well-formed frames");
    assert.equal(peer.reader.pending, 0, "no stray trailing bytes on stdout");
}

test("malformed JSON → -32700 with id null, and the connection keeps working", T, async (t) => {
    const { peer } = await connected(t);
    const from = peer.messages.length;
    await peer.write(frame('{"jsonrpc":"2.0","id":7,"method":"ping",'));
    const err = await peer.waitFor((m) => "error" in m, { from, what: "parse error response" });
    assert.equal(err.error.code, -32700, `parse error code: ${JSON.stringify(err)}`);
    assert.equal(err.id, null, "parse errors answer with id null");
    assert.equal(typeof err.error.message, "string");
    await assertAlive(peer, "after invalid JSON");

    // Non-UTF-8 garbage and a non-object body too.
    await peer.write(frame(Buffer.from([0xff, 0xfe, 0x00, 0x7b])));
    await peer.write(frame("42"));
    await peer.write(frame('"just a string"'));
    await assertAlive(peer, "after garbage bodies");
    assertOnlyFrames(peer);
});

test("unknown method → -32601 'Unhandled method <name>'", T, async (t) => {
    const { peer } = await connected(t);
    const res = await peer.call("x", {});
    assert.deepEqual(res.error && { code: res.error.code, message: res.error.message }, {
        code: -32601,
        message: "Unhandled method x",
    });
    const res2 = await peer.call("session.doesNotExist", { sessionId: "abc" });
    assert.equal(res2.error?.code, -32601);
    assert.equal(res2.error.message, "Unhandled method session.doesNotExist");
    // An unknown notification (no id) gets no answer and breaks nothing.
    await peer.send({ jsonrpc: "2.0", method: "some.notification", params: {} });
    await peer.send({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id: 424242 } });
    await assertAlive(peer, "after unknown method/notification");
    assert.ok(!peer.messages.some((m) => m.id === null && "error" in m), "notifications get no error response");
    assertOnlyFrames(peer);
});

test("wrong param type → an error naming the field", T, async (t) => {
    const { peer } = await connected(t);
    const res = await peer.call("session.create", { model: 123 });
    assert.ok(res.error, `session.create {model:123} must fail: ${JSON.stringify(res)}`);
    assert.ok([-32602, -32603].includes(res.error.code), `invalid params code: ${res.error.code}`);
    assert.match(res.error.message, /model/, "the message names the offending field");
    const res2 = await peer.call("session.send", { sessionId: 5, prompt: "x" });
    assert.ok(res2.error, "session.send {sessionId: 5} must fail");
    assert.match(res2.error.message, /sessionId/, `names sessionId: ${res2.error.message}`);
    const res3 = await peer.call("session.getMessages", {});
    assert.ok(res3.error, "a missing required param is an error");
    assert.match(res3.error.message, /sessionId/, `names sessionId: ${res3.error.message}`);
    await assertAlive(peer, "after invalid params");
    assertOnlyFrames(peer);
});

test("unknown session id → 'Session not found'", T, async (t) => {
    const { peer } = await connected(t);
    const id = "11111111-2222-4333-8444-555555555555";
    const send = await peer.call("session.send", { sessionId: id, prompt: "hello" });
    assert.ok(send.error, `send to an unknown session fails: ${JSON.stringify(send)}`);
    assert.match(send.error.message, /Session not found/);
    for (const method of ["session.getMessages", "session.abort", "session.resume"]) {
        const res = await peer.call(method, { sessionId: id });
        assert.ok(res.error, `${method} on an unknown session fails: ${JSON.stringify(res)}`);
        assert.match(res.error.message, /Session not found/, `${method}: ${res.error.message}`);
    }
    await assertAlive(peer, "after unknown-session errors");
    assertOnlyFrames(peer);
});

test("a JSON array (batch) body → an error response", T, async (t) => {
    const { peer } = await connected(t);
    const from = peer.messages.length;
    await peer.write(frame([{ jsonrpc: "2.0", id: 99, method: "ping", params: {} }]));
    const res = await peer.waitFor((m) => !Array.isArray(m) && "error" in m, { from, what: "error for a batch" });
    assert.equal(typeof res.error.code, "number");
    assert.ok(!peer.messages.slice(from).some((m) => m.result !== undefined && m.id === 99), "the batch is not executed");
    const from2 = peer.messages.length;
    await peer.write(frame([]));
    await peer.waitFor((m) => "error" in m, { from: from2, what: "error for an empty batch" });
    await assertAlive(peer, "after batches");
    assertOnlyFrames(peer);
});

test("framing: split writes, coalesced frames, header variants", T, async (t) => {
    const { peer } = await connected(t);
    // One frame delivered a few bytes at a time.
    const bytes = frame({ jsonrpc: "2.0", id: "split-1", method: "ping", params: { message: "split" } });
    for (let i = 0; i < bytes.length; i += 7) {
        await peer.write(bytes.subarray(i, i + 7));
        await delay(2);
    }
    const split = await peer.waitFor((m) => m.id === "split-1", { what: "response to a split frame" });
    assert.equal(split.result?.message, "pong: split", "string ids are echoed verbatim");

    // Three frames in one write.
    await peer.write(
        Buffer.concat([1, 2, 3].map((n) => frame({ jsonrpc: "2.0", id: 100 + n, method: "ping", params: {} })))
    );
    for (const n of [1, 2, 3]) {
        const r = await peer.waitFor((m) => m.id === 100 + n, { what: `coalesced response ${n}` });
        assert.equal(r.result?.protocolVersion, 3);
    }

    // Lower-case header name plus a Content-Type header.
    const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", id: 200, method: "ping", params: {} }));
    await peer.write(
        Buffer.concat([
            Buffer.from(
                `content-length: ${body.length}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n`
            ),
            body,
        ])
    );
    const variant = await peer.waitFor((m) => m.id === 200, { what: "response to header variants" });
    assert.equal(variant.result?.protocolVersion, 3);

    // Multi-byte UTF-8: Content-Length counts bytes.
    const utf = await peer.call("ping", { message: "héllo ✓ 👋" });
    assert.equal(utf.result?.message, "pong: héllo ✓ 👋");
    assertOnlyFrames(peer);
});

test("a bad header block does not kill the process", T, async (t) => {
    const { peer } = await connected(t);
    await peer.write(Buffer.from("Content-Length: abc\r\n\r\n"));
    await peer.write(Buffer.from("X-Nonsense: 1\r\n\r\n"));
    await delay(100);
    assert.equal(peer.proc.exitCode, null, "the process survives a malformed header");
    // The reader resynchronises on the next well-formed frame.
    await assertAlive(peer, "after malformed header blocks");
    assertOnlyFrames(peer);
});

test(
    "junk between frames does not desynchronise the connection",
    T,
    async (t) => {
        // A malformed header block followed by stray body bytes, and bytes that are not a frame at
        // all: the reader must skip to the next `Content-Length:` header, not glue the junk onto it
        // (which would swallow every later frame while the process stays up).
        for (const junk of ["Content-Length: abc\r\n\r\n{}", "garbage without a header"]) {
            const ctx = await setup(t);
            const peer = await ctx.raw();
            assert.equal((await peer.call("connect", {})).result?.protocolVersion, 3);
            await peer.write(Buffer.from(junk));
            await delay(100);
            for (let i = 0; i < 3; i++) {
                const pong = await peer.call("ping", { message: `p${i}` }, { timeout: 3_000 }).catch((e) => ({ timeout: e.message }));
                assert.equal(
                    pong.result?.message,
                    `pong: p${i}`,
                    `ping #${i} after ${JSON.stringify(junk)} must be answered: ${JSON.stringify(pong).slice(0, 300)}`
                );
            }
            assertOnlyFrames(peer);
        }
    }
);

test("stdout carries only frames through a whole conversation (with a tool run, --log-level all)", T, async (t) => {
    const ctx = await setup(t);
    const peer = await ctx.raw(
        ["--log-level", "all", "--auth-token-env", "COPILOT_SDK_AUTH_TOKEN", "--no-auto-login"],
        { RUST_LOG: "trace" }
    );
    assert.equal((await peer.call("connect", {})).result?.protocolVersion, 3);
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command: "echo to-stdout; echo to-stderr >&2", description: "noise" } }] },
        { text: "Done." },
    ]);
    const create = await peer.call("session.create", {
        sessionId: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
        workingDirectory: ctx.workDir,
        requestPermission: true,
    });
    assert.ok(create.result, `session.create: ${JSON.stringify(create)}`);
    const sessionId = create.result.sessionId;
    assert.equal(sessionId, "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "the caller's sessionId is honoured");

    // Approve whatever permission request comes (protocol v3: an event, answered by RPC).
    peer.reader.listeners.add((m) => {
        const ev = m.method === "session.event" ? m.params?.event : null;
        if (ev?.type === "permission.requested") {
            void peer.call("session.permissions.handlePendingPermissionRequest", {
                sessionId,
                requestId: ev.data.requestId,
                result: { kind: "approve-once" },
            });
        }
    });
    const send = await peer.call("session.send", { sessionId, prompt: "Run it" });
    assert.equal(typeof send.result?.messageId, "string", `send returns a messageId: ${JSON.stringify(send)}`);
    await peer.waitFor(
        (m) => m.method === "session.event" && m.params?.sessionId === sessionId && m.params.event?.type === "session.idle",
        { timeout: 20_000, what: "session.idle" }
    );
    const complete = peer.messages.find(
        (m) => m.method === "session.event" && m.params.event?.type === "tool.execution_complete"
    );
    assert.ok(complete, "the tool ran");
    assert.equal(complete.params.event.data.success, true, `tool result: ${JSON.stringify(complete.params.event.data)}`);
    assert.match(complete.params.event.data.result?.content ?? "", /to-stdout/);
    assertOnlyFrames(peer);
});

test("stdin EOF → the process exits promptly", T, async (t) => {
    const { peer } = await connected(t);
    const t0 = Date.now();
    peer.proc.stdin.end();
    const { code, signal } = await withTimeout(peer.exited, 5_000, "skipper did not exit within 5 s of stdin EOF");
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 3_000, `exited in ${elapsed} ms`);
    assert.equal(signal, null, "exited by itself, not by a signal");
    assert.equal(code, 0, "clean exit status");
    assertOnlyFrames(peer);
});

test("SIGTERM → the process exits promptly", T, async (t) => {
    const { peer } = await connected(t);
    peer.proc.kill("SIGTERM");
    const r = await withTimeout(peer.exited, 5_000, "skipper did not exit within 5 s of SIGTERM");
    assert.ok(r.code !== null || r.signal === "SIGTERM");
});

test("the original's launch flags are accepted, in any order", T, async (t) => {
    const ctx = await setup(t);
    const peer = await ctx.raw([
        "--log-level",
        "debug",
        "--auth-token-env",
        "SOME_TOKEN_VAR",
        "--no-auto-login",
        "--session-idle-timeout",
        "30",
        "--remote",
        "--add-dir",
        ctx.workDir,
        "--experimental",
    ], { SOME_TOKEN_VAR: "abc" });
    const hello = await peer.call("connect", {});
    assert.equal(hello.result?.protocolVersion, 3, `starts with the original's flags; stderr: ${peer.stderr}`);
    assert.deepEqual([...(hello.result.taskKinds ?? [])].sort(), ["agent", "shell"], "default taskKinds");
    const pong = await peer.call("ping", {});
    assert.equal(pong.result?.message, "pong", "ping without a message");
    const auth = await peer.call("auth.getStatus", {});
    assert.equal(auth.result?.isAuthenticated, true, "token read from the --auth-token-env variable");
    assertOnlyFrames(peer);
});

/** Spawns Skipper in TCP mode; resolves once the port line was printed. */
async function spawnTcp(t, ctx, env) {
    const proc = spawn(SKIPPER_BIN, ["--headless", "--no-auto-update", "--log-level", "info"], {
        stdio: ["ignore", "pipe", "pipe"],
        env,
        cwd: ctx.workDir,
    });
    t.after(() => proc.kill("SIGKILL"));
    const out = { proc, stdout: "", stderr: "" };
    proc.stderr.on("data", (d) => (out.stderr += d));
    out.port = await withTimeout(
        new Promise((res) => {
            proc.stdout.on("data", (d) => {
                out.stdout += d;
                const m = /CLI server listening on port (\d+)\n/.exec(out.stdout);
                if (m) res(Number(m[1]));
            });
        }),
        10_000,
        "no 'CLI server listening on port N' line"
    ).catch((e) => {
        e.message += `; stdout=${JSON.stringify(out.stdout)} stderr=${out.stderr.slice(-1000)}`;
        throw e;
    });
    return out;
}

test("TCP mode without a connection token: any client may connect; stdout has only the port line", T, async (t) => {
    const ctx = await setup(t);
    const env = { ...ctx.env };
    delete env.COPILOT_CONNECTION_TOKEN;
    const srv = await spawnTcp(t, ctx, env);
    const peer = await RawPeer.connect(srv.port);
    t.after(() => peer.kill());
    const hello = await peer.call("connect", { token: "anything" });
    assert.equal(hello.result?.protocolVersion, 3, `connect without server token: ${JSON.stringify(hello)}`);
    const peer2 = await RawPeer.connect(srv.port);
    t.after(() => peer2.kill());
    const pong = await peer2.call("ping", {});
    assert.equal(pong.result?.protocolVersion, 3, "no handshake required without a token");
    await delay(200);
    assert.match(srv.stdout, /^CLI server listening on port \d+\n$/, "warnings go to stderr, not stdout");
});

test("TCP mode: port line on stdout, token enforced, raw framing works", T, async (t) => {
    const ctx = await setup(t);
    const { port, stdout } = await spawnTcp(t, ctx, { ...ctx.env, COPILOT_CONNECTION_TOKEN: "tok-123" });
    assert.ok(port > 0);
    assert.match(stdout, /^CLI server listening on port \d+\n$/, "exactly the port line on stdout");

    const peer = await RawPeer.connect(port);
    t.after(() => peer.kill());
    const early = await peer.call("ping", {});
    assert.deepEqual(early.error && [early.error.code, early.error.message], [-32001, "AUTHENTICATION_REQUIRED"]);
    const bad = await peer.call("connect", { token: "nope" });
    assert.deepEqual(bad.error && [bad.error.code, bad.error.message], [-32002, "AUTHENTICATION_FAILED"]);
    const good = await peer.call("connect", { token: "tok-123" });
    assert.equal(good.result?.protocolVersion, 3);
    await peer.write(frame("{oops"));
    const pong = await peer.call("ping", { message: "tcp" });
    assert.equal(pong.result?.message, "pong: tcp", "the TCP connection survives invalid JSON");
    assert.deepEqual(peer.reader.errors, []);

    // A second client is independent (needs its own connect).
    const peer2 = await RawPeer.connect(port);
    t.after(() => peer2.kill());
    const early2 = await peer2.call("ping", {});
    assert.equal(early2.error?.code, -32001);
});

test("session.destroy and session.detach release a session; getMessages then says Session not found", T, async (t) => {
    const { peer, ctx } = await connected(t);
    for (const method of ["session.destroy", "session.detach"]) {
        const create = await peer.call("session.create", { workingDirectory: ctx.workDir });
        const sessionId = create.result?.sessionId;
        assert.ok(sessionId, `session.create without a sessionId generates one: ${JSON.stringify(create)}`);
        assert.match(sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
        assert.equal(create.result.workspacePath, join(ctx.copilotHome, "session-state", sessionId));
        assert.equal(typeof create.result.capabilities, "object");
        const msgs = await peer.call("session.getMessages", { sessionId });
        assert.equal(msgs.result?.events?.[0]?.type, "session.start");
        const res = await peer.call(method, { sessionId });
        assert.equal(res.result?.success, true, `${method}: ${JSON.stringify(res)}`);
        const after = await peer.call("session.getMessages", { sessionId });
        assert.match(after.error?.message ?? "", /Session not found/, `${method} then getMessages: ${JSON.stringify(after)}`);
    }
    const disconnect = await peer.call("session.disconnect", { sessionId: "x" });
    assert.equal(disconnect.error?.code, -32601, "session.disconnect does not exist");
    assertOnlyFrames(peer);
});
