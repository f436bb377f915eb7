// Issue 2 beyond the happy path, still through the official SDK: a torn events.jsonl line on
// resume, two Skipper processes sharing one COPILOT_HOME, model HTTP errors (retry / fail and
// recover), and messages queued while a turn runs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync } from "node:fs";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, nextEvent, delay } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

test("resume skips a torn last line of events.jsonl and continues", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "First answer." }, { text: "Second answer." }]);
    const client1 = ctx.client();
    const s1 = await client1.createSession({ onPermissionRequest: approveAll });
    const id = s1.sessionId;
    await sendAndWait(ctx, s1, "First question");
    const before = await s1.getEvents();
    await client1.stop();

    const file = join(ctx.copilotHome, "session-state", id, "events.jsonl");
    assert.ok(existsSync(file));
    appendFileSync(file, '{"type":"assistant.message","data":{"content":"half a li');

    const client2 = ctx.client();
    const s2 = await client2.resumeSession(id, { onPermissionRequest: approveAll });
    const history = await s2.getEvents();
    assert.deepEqual(
        history.slice(0, before.length).map((e) => e.id),
        before.map((e) => e.id),
        "all complete events survive"
    );
    assert.ok(!history.some((e) => e.data?.content === "half a li"), "the torn line is dropped");
    const answer = await sendAndWait(ctx, s2, "Second question");
    assert.equal(answer?.data.content, "Second answer.");
    const reqs = await ctx.fake.requests();
    const convo = reqs.at(-1).body.messages.filter((m) => m.role !== "system");
    assert.deepEqual(
        convo.map((m) => m.role),
        ["user", "assistant", "user"],
        "the history sent to the model is intact"
    );
    assert.equal(convo[1].content, "First answer.");
});

test("a second client process resumes a session while the first is still running", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("session/should_resume_a_session_using_a_new_client.yaml", ctx.workDir);
    const client1 = ctx.client();
    const s1 = await client1.createSession({ onPermissionRequest: approveAll });
    const a1 = await sendAndWait(ctx, s1, "What is 1+1?");
    assert.equal(a1?.data.content, "1 + 1 = 2");

    const client2 = ctx.client();
    const s2 = await client2.resumeSession(s1.sessionId, { onPermissionRequest: approveAll });
    assert.equal(s2.sessionId, s1.sessionId);
    const types = (await s2.getEvents()).map((e) => e.type);
    assert.ok(types.includes("user.message") && types.includes("session.resume"), `${types}`);
    const a2 = await sendAndWait(ctx, s2, "Now if you double that, what do you get?");
    assert.equal(a2?.data.content, "2 doubled is 4.");

    // Both processes keep answering list/metadata against the shared store.
    for (const c of [client1, client2]) {
        const listed = await c.listSessions();
        assert.ok(listed.some((s) => s.sessionId === s1.sessionId), "listed by both processes");
    }
});

test("a 429 from the model is retried within the same turn", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { error: { status: 429, retry_after: 0, message: "rate limited" } },
        { text: "Worked after a retry." },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const final = await sendAndWait(ctx, session, "Try");
    assert.equal(final?.data.content, "Worked after a retry.");
    assert.equal((await ctx.fake.requests()).length, 2, "the same request was sent again");
    assert.equal(events.filter((e) => e.type === "assistant.turn_start").length, 1, "a retry is not a new turn");
    assert.equal(events.filter((e) => e.type === "session.error").length, 0);
});

test("a non-retryable model error → session.error then session.idle; the session recovers", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { error: { status: 400, message: "bad request from the fake" } },
        { text: "Recovered." },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const idle = nextEvent(session, "session.idle");
    await assert.rejects(() => session.sendAndWait({ prompt: "Fail please" }, 30_000), (err) => {
        assert.ok(err instanceof Error);
        assert.ok(!/Timeout after/.test(err.message), `sendAndWait rejects on session.error, not a timeout: ${err.message}`);
        return true;
    });
    await idle;
    const err = events.find((e) => e.type === "session.error");
    assert.ok(err, "session.error emitted");
    assert.equal(typeof err.data.errorType, "string");
    assert.equal(typeof err.data.message, "string");
    assert.equal(err.data.statusCode, 400);
    const iErr = events.indexOf(err);
    const iIdle = events.findIndex((e, i) => i > iErr && e.type === "session.idle");
    assert.ok(iIdle > iErr, "session.idle follows session.error");
    assert.equal((await ctx.fake.requests()).length, 1, "a 400 is not retried");
    assert.ok((await session.getEvents()).some((e) => e.type === "session.error"), "session.error is persisted");

    const ok = await sendAndWait(ctx, session, "Try again");
    assert.equal(ok?.data.content, "Recovered.");
});

test("messages sent while a turn runs are queued; idle comes once the queue drains", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ delay_ms: 700, then: { text: "First reply." } }, { text: "Second reply." }]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const id1 = await session.send({ prompt: "First" });
    await delay(150);
    const id2 = await session.send({ prompt: "Second" });
    assert.notEqual(id1, id2, "each send gets its own messageId");
    await nextEvent(session, (e) => e.type === "session.idle" && events.some((x) => x.type === "assistant.message" && x.data.originatingMessageId === id2), 30_000).catch(
        (e) => {
            throw ctx.explain(e);
        }
    );
    const users = events.filter((e) => e.type === "user.message");
    assert.deepEqual(users.map((u) => u.data.messageId), [id1, id2], "one user.message per send, in order");
    const replies = events.filter((e) => e.type === "assistant.message");
    assert.deepEqual(
        replies.map((r) => [r.data.originatingMessageId, r.data.content]),
        [
            [id1, "First reply."],
            [id2, "Second reply."],
        ]
    );
    const idles = events.filter((e) => e.type === "session.idle");
    assert.equal(idles.length, 1, `one session.idle after the queue drained: ${events.map((e) => e.type)}`);
    assert.equal(events.at(-1).type, "session.idle");
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2);
    const convo = reqs[1].body.messages.filter((m) => m.role !== "system");
    assert.deepEqual(convo.map((m) => m.role), ["user", "assistant", "user"], "the queued message follows the first exchange");
});
