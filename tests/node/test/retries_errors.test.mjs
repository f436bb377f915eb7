// Issue 3, "Retries" and "Errors": 429/5xx retried (retry-after honoured, bounded attempts,
// each retry visible as assistant.turn_retry within the same turn); a stream that dies before
// anything was committed is retried, one that dies after deltas were shown surfaces as
// session.error; every failure is session.error {errorType, message, statusCode} followed by
// session.idle, and the session stays usable.

import { test } from "node:test";
import assert from "node:assert/strict";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, typesOf, waitForEvent, delay } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

async function newSession(ctx, opts = {}) {
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e), ...opts });
    return { session, events };
}

/** send() and wait for the idle that ends it; returns the events of that run. */
async function runToIdle(ctx, session, events, prompt, timeout = 45_000) {
    const from = events.length;
    await session.send({ prompt });
    await waitForEvent(events, (e) => e.type === "session.idle" && events.indexOf(e) >= from, { timeout }).catch((e) => {
        throw ctx.explain(e);
    });
    await delay(100);
    return events.slice(from);
}

function assertErrorThenIdle(run, { statusCode, errorType }, what) {
    const types = typesOf(run).join(", ");
    const errs = run.filter((e) => e.type === "session.error");
    assert.equal(errs.length, 1, `${what}: one session.error: ${types}`);
    const err = errs[0];
    assert.equal(typeof err.data.errorType, "string", `${what}: errorType is a string`);
    if (errorType) assert.equal(err.data.errorType, errorType, `${what}: errorType (${JSON.stringify(err.data)})`);
    assert.equal(typeof err.data.message, "string");
    assert.ok(err.data.message.length > 0, `${what}: session.error has a message`);
    if (statusCode !== undefined) assert.equal(err.data.statusCode, statusCode, `${what}: statusCode (${JSON.stringify(err.data)})`);
    assert.equal(err.ephemeral, undefined, `${what}: session.error is persisted`);
    const iErr = run.indexOf(err);
    assert.equal(run.at(-1).type, "session.idle", `${what}: session.idle is last: ${types}`);
    assert.ok(run.length - 1 > iErr, `${what}: session.idle after session.error`);
    assert.equal(run.filter((e) => e.type === "session.idle").length, 1, `${what}: one idle: ${types}`);
    const starts = run.filter((e) => e.type === "assistant.turn_start").length;
    const ends = run.filter((e) => e.type === "assistant.turn_end").length;
    assert.equal(ends, starts, `${what}: the failed turn is closed: ${types}`);
    return err;
}

test("429 (retry-after 0) then success: assistant.turn_retry, same turn, normal final message", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { error: { status: 429, retry_after: 0, message: "rate limited" } },
        { text: "Worked after a retry." },
    ]);
    const { session, events } = await newSession(ctx);
    const final = await sendAndWait(ctx, session, "Try");
    assert.equal(final?.data.content, "Worked after a retry.");
    await delay(100);
    const types = typesOf(events).join(", ");
    const retries = events.filter((e) => e.type === "assistant.turn_retry");
    assert.equal(retries.length, 1, `one assistant.turn_retry: ${types}`);
    assert.equal(retries[0].ephemeral, true, "turn_retry is ephemeral");
    assert.equal(retries[0].data.turnId, "0", "turn_retry names the running turn");
    assert.equal(retries[0].data.reason, "rate_limit", `turn_retry reason (${JSON.stringify(retries[0].data)})`);
    const iRetry = events.indexOf(retries[0]);
    assert.ok(events.findIndex((e) => e.type === "assistant.turn_start") < iRetry, "retry inside the turn");
    assert.ok(iRetry < events.findIndex((e) => e.type === "assistant.message"), "retry before the final message");
    assert.equal(events.filter((e) => e.type === "assistant.turn_start").length, 1, "a retry is not a new turn");
    assert.equal(events.filter((e) => e.type === "session.error").length, 0);
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2);
    assert.deepEqual(reqs[1].body.messages, reqs[0].body.messages, "the same request is re-sent");
    assert.ok(!(await session.getEvents()).some((e) => e.type === "assistant.turn_retry"), "turn_retry is not persisted");
});

test("429 honours retry-after (1 s) before re-sending", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ error: { status: 429, retry_after: 1, message: "slow down" } }, { text: "Patience pays." }]);
    const { session } = await newSession(ctx);
    const t0 = Date.now();
    const final = await sendAndWait(ctx, session, "Try");
    assert.equal(final?.data.content, "Patience pays.");
    assert.ok(Date.now() - t0 >= 900, `the retry waited for retry-after (${Date.now() - t0} ms)`);
});

test("502 without retry-after is retried with backoff, then succeeds", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ error: { status: 502, message: "bad gateway" } }, { text: "Gateway fine now." }]);
    const { session, events } = await newSession(ctx);
    const final = await sendAndWait(ctx, session, "Try");
    assert.equal(final?.data.content, "Gateway fine now.");
    assert.equal((await ctx.fake.requests()).length, 2);
    assert.equal(events.filter((e) => e.type === "assistant.turn_retry").length, 1);
    assert.equal(events.filter((e) => e.type === "session.error").length, 0);
});

test("500 until retries are exhausted → session.error (statusCode 500) then idle; session usable", T, async (t) => {
    const ctx = await setup(t);
    const failures = Array.from({ length: 12 }, () => ({ error: { status: 500, retry_after: 0, message: "internal boom" } }));
    await ctx.fake.replies(failures);
    const { session, events } = await newSession(ctx);
    await assert.rejects(() => session.sendAndWait({ prompt: "Fail" }, 45_000), (err) => {
        assert.ok(!/Timeout after/.test(err.message), `sendAndWait rejects with the error, not a timeout: ${err.message}`);
        return true;
    });
    await waitForEvent(events, "session.idle");
    await delay(100);
    const err = assertErrorThenIdle(events.slice(events.findIndex((e) => e.type === "user.message")), { statusCode: 500, errorType: "query" }, "500 exhausted");
    const attempts = (await ctx.fake.requests()).length;
    assert.ok(attempts >= 2 && attempts <= 10, `bounded attempts (${attempts})`);
    assert.equal(events.filter((e) => e.type === "assistant.turn_retry").length, attempts - 1, "one turn_retry per retry");
    assert.equal(events.filter((e) => e.type === "assistant.turn_start").length, 1, "all attempts inside one turn");
    assert.ok((await session.getEvents()).some((e) => e.id === err.id), "session.error persisted");

    // Drain the unused failures, then the session answers again.
    await ctx.fake.reset();
    await ctx.fake.replies([{ text: "Recovered." }]);
    const ok = await sendAndWait(ctx, session, "Again");
    assert.equal(ok?.data.content, "Recovered.");
});

test("errorType per HTTP status: 401, 403, 402, 400, 429 exhausted; each followed by idle", T, async (t) => {
    const ctx = await setup(t);
    const { session, events } = await newSession(ctx);
    const cases = [
        { status: 401, errorType: "authentication" },
        { status: 403, errorType: "authorization" },
        { status: 402, errorType: "quota" },
        { status: 400, errorType: "query" },
        { status: 429, errorType: "rate_limit", repeat: 12 },
    ];
    for (const c of cases) {
        await ctx.fake.reset();
        const replies = Array.from({ length: c.repeat ?? 1 }, () => ({ error: { status: c.status, retry_after: 0, message: `fake ${c.status}` } }));
        await ctx.fake.replies(replies);
        const run = await runToIdle(ctx, session, events, `Trigger ${c.status}`);
        assertErrorThenIdle(run, { statusCode: c.status, errorType: c.errorType }, `HTTP ${c.status}`);
        const n = (await ctx.fake.requests()).length;
        if (c.status !== 429) assert.equal(n, 1, `HTTP ${c.status} is not retried`);
    }
    await ctx.fake.reset();
    await ctx.fake.replies([{ text: "Still here." }]);
    const ok = await sendAndWait(ctx, session, "Hello?");
    assert.equal(ok?.data.content, "Still here.");
});

test("streaming off: a response cut mid-way is retried; the turn completes normally", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ drop_mid_stream: "This reply will be cut in half" }, { text: "Complete reply." }]);
    const { session, events } = await newSession(ctx, { streaming: false });
    const final = await sendAndWait(ctx, session, "Go");
    assert.equal(final?.data.content, "Complete reply.");
    assert.equal((await ctx.fake.requests()).length, 2, "the dropped call was re-sent");
    assert.equal(events.filter((e) => e.type === "session.error").length, 0);
    assert.equal(events.filter((e) => e.type === "assistant.turn_start").length, 1, "the retry stays in the same turn");
    assert.equal(events.filter((e) => e.type === "assistant.turn_retry").length, 1, "the retry is visible");
    assert.deepEqual(
        events.filter((e) => e.type === "assistant.message").map((m) => m.data.content),
        ["Complete reply."],
        "only the complete message is emitted"
    );
});

test("streaming on: a stream dropped before any text is retried", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ drop_mid_stream: "" }, { text: "Second try streamed fine." }]);
    const { session, events } = await newSession(ctx, { streaming: true });
    const final = await sendAndWait(ctx, session, "Go");
    assert.equal(final?.data.content, "Second try streamed fine.");
    assert.equal((await ctx.fake.requests()).length, 2, "the dropped stream was re-sent");
    assert.equal(events.filter((e) => e.type === "session.error").length, 0);
    const deltas = events.filter((e) => e.type === "assistant.message_delta");
    assert.equal(deltas.map((d) => d.data.deltaContent).join(""), "Second try streamed fine.", "no stray deltas");
});

test("streaming on: a stream dropped after deltas were shown → session.error, idle, usable", T, async (t) => {
    const ctx = await setup(t);
    const partial = "Partial answer that the user already saw on screen";
    await ctx.fake.replies([{ drop_mid_stream: partial }, { text: "Fresh answer." }]);
    const { session, events } = await newSession(ctx, { streaming: true });
    const run = await runToIdle(ctx, session, events, "Go");
    const deltas = run.filter((e) => e.type === "assistant.message_delta");
    assert.ok(deltas.length >= 1, `deltas were streamed before the drop: ${typesOf(run)}`);
    const dropErr = assertErrorThenIdle(run, {}, "dropped after deltas");
    t.diagnostic(`dropped-stream session.error: ${JSON.stringify(dropErr.data)}`);
    assert.equal((await ctx.fake.requests()).length, 1, "not retried once output was shown");
    assert.ok(!run.some((e) => e.type === "assistant.message" && e.data.content === partial), "no assistant.message for the cut reply");

    const ok = await sendAndWait(ctx, session, "Try again");
    assert.equal(ok?.data.content, "Fresh answer.");
    const reqs = await ctx.fake.requests();
    assert.ok(!JSON.stringify(reqs[1].body.messages).includes("Partial answer"), "the cut text is not in the history");
});

test("a model error in the second turn of a tool loop still ends with session.error then idle", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command: "echo one", description: "one" } }] },
        { error: { status: 400, message: "context too weird" } },
        { text: "Fine again." },
    ]);
    const { session, events } = await newSession(ctx);
    const run = await runToIdle(ctx, session, events, "Loop");
    assertErrorThenIdle(run, { statusCode: 400 }, "second-turn error");
    assert.equal(run.filter((e) => e.type === "assistant.turn_start").length, 2);
    const ok = await sendAndWait(ctx, session, "Next");
    assert.equal(ok?.data.content, "Fine again.");
    const reqs = await ctx.fake.requests();
    assert.ok(reqs[2].body.messages.some((m) => m.role === "tool"), "the completed tool round stays in the history");
});
