// Issue 3, "Streaming": assistant.message_start before the deltas (same messageId), deltas that
// concatenate exactly to assistant.message.content, all ephemeral and never persisted; none at
// all with streaming off — also after a resume that turns streaming off. Replays the
// streaming_fidelity snapshots, plus scripted multi-turn / tool-call streams.

import { test } from "node:test";
import assert from "node:assert/strict";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, typesOf } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

/**
 * Checks the streaming shape of every model call in `events`: for each assistant.message, its
 * deltas (same messageId) precede it, follow a message_start with that messageId, and add up
 * to its content. Returns the number of deltas seen.
 */
function assertStreamedMessages(events, { requireDeltas = true } = {}) {
    const types = typesOf(events).join(", ");
    const messages = events.filter((e) => e.type === "assistant.message");
    const deltas = events.filter((e) => e.type === "assistant.message_delta");
    const starts = events.filter((e) => e.type === "assistant.message_start");
    for (const msg of messages) {
        const id = msg.data.messageId;
        const mine = deltas.filter((d) => d.data.messageId === id);
        const iMsg = events.indexOf(msg);
        if (msg.data.content.length === 0) {
            assert.equal(mine.length, 0, `no deltas for an empty message (${id})`);
            continue;
        }
        if (requireDeltas) assert.ok(mine.length >= 1, `message ${id} was streamed: ${types}`);
        assert.equal(mine.map((d) => d.data.deltaContent).join(""), msg.data.content, `deltas of ${id} concatenate to content`);
        for (const d of mine) {
            assert.equal(typeof d.data.deltaContent, "string");
            assert.ok(events.indexOf(d) < iMsg, `delta precedes its assistant.message (${id})`);
            assert.equal(d.ephemeral, true, "message_delta is ephemeral");
        }
        const start = starts.filter((s) => s.data.messageId === id);
        assert.equal(start.length, 1, `exactly one assistant.message_start for ${id}: ${types}`);
        assert.equal(start[0].ephemeral, true, "message_start is ephemeral");
        if (mine.length > 0) {
            assert.ok(events.indexOf(start[0]) < events.indexOf(mine[0]), `message_start before the first delta (${id}): ${types}`);
        }
        assert.ok(events.indexOf(start[0]) < iMsg, "message_start before assistant.message");
    }
    const orphan = deltas.filter((d) => !messages.some((m) => m.data.messageId === d.data.messageId));
    assert.deepEqual(orphan, [], "every delta belongs to an assistant.message");
    return deltas.length;
}

async function assertNothingEphemeralPersisted(session) {
    const persisted = await session.getEvents();
    const bad = persisted.filter((e) =>
        ["assistant.message_delta", "assistant.message_start", "assistant.streaming_delta", "assistant.reasoning_delta"].includes(e.type)
    );
    assert.deepEqual(bad.map((e) => e.type), [], "streaming events are never persisted");
}

test("streaming: message_start before deltas with matching messageId (replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("streaming_fidelity/should_emit_assistantmessagestart_before_deltas_with_matching_messageid.yaml", ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, streaming: true, onEvent: (e) => events.push(e) });
    const final = await sendAndWait(ctx, session, "Count from 1 to 5, separated by commas.");
    assert.equal(final?.data.content, "1, 2, 3, 4, 5");
    const n = assertStreamedMessages(events);
    assert.ok(n >= 1);
    const start = events.find((e) => e.type === "assistant.message_start");
    assert.equal(start.data.messageId, final.data.messageId, "message_start.messageId == assistant.message.messageId");
    const firstDelta = events.findIndex((e) => e.type === "assistant.message_delta");
    assert.ok(events.indexOf(start) < firstDelta, "message_start comes before the first delta");
    assert.equal((await ctx.fake.requests())[0].body.stream, true, "streaming on → streamed model call");
    await assertNothingEphemeralPersisted(session);
    await assertAllMatched(ctx);
});

test("streaming: delta events when streaming is enabled (replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("streaming_fidelity/should_produce_delta_events_when_streaming_is_enabled.yaml", ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, streaming: true, onEvent: (e) => events.push(e) });
    const final = await sendAndWait(ctx, session, "Count from 1 to 5, separated by commas.");
    assert.equal(final?.data.content, "1, 2, 3, 4, 5");
    const types = typesOf(events);
    assert.ok(types.indexOf("assistant.message_delta") < types.lastIndexOf("assistant.message"));
    assertStreamedMessages(events);
    // Optional byte progress: if present, ephemeral and non-decreasing.
    const progress = events.filter((e) => e.type === "assistant.streaming_delta").map((e) => e.data.totalResponseSizeBytes);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i] >= progress[i - 1], "streaming_delta byte counter grows");
    await assertAllMatched(ctx);
});

test("streaming: no deltas when streaming is disabled (replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("streaming_fidelity/should_not_produce_deltas_when_streaming_is_disabled.yaml", ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, streaming: false, onEvent: (e) => events.push(e) });
    const final = await sendAndWait(ctx, session, "Say 'hello world'.");
    assert.equal(final?.data.content, "Hello world.");
    for (const type of ["assistant.message_delta", "assistant.message_start", "assistant.reasoning_delta", "assistant.streaming_delta"]) {
        assert.equal(events.filter((e) => e.type === type).length, 0, `no ${type} with streaming off`);
    }
    assert.equal(events.filter((e) => e.type === "assistant.message").length, 1, "still one final assistant.message");
    await assertAllMatched(ctx);
});

test("streaming: deltas after resume with streaming enabled (replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("streaming_fidelity/should_produce_deltas_after_session_resume.yaml", ctx.workDir);
    const client1 = ctx.client();
    const events1 = [];
    const s1 = await client1.createSession({ onPermissionRequest: approveAll, streaming: false, onEvent: (e) => events1.push(e) });
    const a1 = await sendAndWait(ctx, s1, "What is 3 + 6?");
    assert.equal(a1?.data.content, "3 + 6 = 9");
    assert.equal(events1.filter((e) => e.type === "assistant.message_delta").length, 0, "no deltas before the resume");
    await s1.disconnect();

    const client2 = ctx.client();
    const events2 = [];
    const s2 = await client2.resumeSession(s1.sessionId, { onPermissionRequest: approveAll, streaming: true, onEvent: (e) => events2.push(e) });
    const a2 = await sendAndWait(ctx, s2, "Now if you double that, what do you get?");
    assert.equal(a2?.data.content, "9 × 2 = 18");
    assert.ok(assertStreamedMessages(events2.filter((e) => e.type !== "session.resume")) >= 1, "deltas after the resume");
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.at(-1).body.stream, true, "the resumed session streams");
    await assertAllMatched(ctx);
});

test("streaming: no deltas after resume with streaming disabled (replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("streaming_fidelity/should_not_produce_deltas_after_session_resume_with_streaming_disabled.yaml", ctx.workDir);
    const client1 = ctx.client();
    const events1 = [];
    const s1 = await client1.createSession({ onPermissionRequest: approveAll, streaming: true, onEvent: (e) => events1.push(e) });
    const a1 = await sendAndWait(ctx, s1, "What is 3 + 6?");
    assert.equal(a1?.data.content, "3 + 6 = 9");
    assertStreamedMessages(events1);
    await s1.disconnect();

    const client2 = ctx.client();
    const events2 = [];
    const s2 = await client2.resumeSession(s1.sessionId, { onPermissionRequest: approveAll, streaming: false, onEvent: (e) => events2.push(e) });
    const a2 = await sendAndWait(ctx, s2, "Now if you double that, what do you get?");
    assert.equal(a2?.data.content, "9 × 2 = 18");
    for (const type of ["assistant.message_delta", "assistant.message_start", "assistant.streaming_delta"]) {
        assert.equal(events2.filter((e) => e.type === type).length, 0, `no ${type} after resuming with streaming off`);
    }
    assert.ok(events2.some((e) => e.type === "assistant.message"));
    const reqs = await ctx.fake.requests();
    assert.notEqual(reqs.at(-1).body.stream, true, "the resumed session does not stream");
    await assertAllMatched(ctx);
});

test("streaming: deltas with reasoningEffort configured (replayed, gpt-5.4)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("streaming_fidelity/should_emit_streaming_deltas_with_reasoning_effort_configured.yaml", ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        streaming: true,
        model: "gpt-5.4",
        reasoningEffort: "high",
        onEvent: (e) => events.push(e),
    });
    const final = await sendAndWait(ctx, session, "What is 15 * 17?");
    assert.equal(final?.data.content, "15 × 17 = 255");
    assert.ok(assertStreamedMessages(events) >= 1);
    const start = (await session.getEvents()).find((e) => e.type === "session.start");
    assert.equal(start?.data.reasoningEffort, "high", "session.start records the reasoning effort");
    await assertAllMatched(ctx);
});

test("streaming: every model call of a tool loop streams its own message (scripted)", T, async (t) => {
    const ctx = await setup(t);
    const long = "Here is a fairly long final answer, long enough to arrive in several separate chunks over the stream.";
    await ctx.fake.replies([
        { content: "Let me check that for you first.", tool_calls: [{ name: "bash", arguments: { command: "echo x", description: "x" } }] },
        { tool_calls: [{ name: "bash", arguments: { command: "echo y", description: "y" } }] },
        { text: long },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, streaming: true, onEvent: (e) => events.push(e) });
    const final = await sendAndWait(ctx, session, "Check.");
    assert.equal(final?.data.content, long);
    const messages = events.filter((e) => e.type === "assistant.message");
    assert.equal(messages.length, 3);
    assert.equal(new Set(messages.map((m) => m.data.messageId)).size, 3, "each model call has its own messageId");
    assertStreamedMessages(events);
    // Deltas of one call never appear after that call's assistant.message or in another turn.
    for (const m of messages) {
        const turnStart = events.findLastIndex((e, i) => i < events.indexOf(m) && e.type === "assistant.turn_start");
        for (const d of events.filter((e) => e.type === "assistant.message_delta" && e.data.messageId === m.data.messageId)) {
            assert.ok(events.indexOf(d) > turnStart, "a delta belongs to its own turn");
        }
    }
    await assertNothingEphemeralPersisted(session);
});
