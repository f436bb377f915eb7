// The event_fidelity recordings (the pending-messages one lives in queueing.test.mjs): event
// order in a tool-using conversation, envelope fields on every event, tool execution fields,
// assistant.message ids, assistant.usage and session.usage_info after a model call, and the
// order getMessages returns after tool use. Replayed, so every model request Skipper makes must
// match the recording.

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, typesOf, UUID_RE, ISO_TS_RE } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

async function replay(t, snapshot, prompt, prepare) {
    const ctx = await setup(t);
    if (prepare) await prepare(ctx.workDir);
    await ctx.fake.load(`event_fidelity/${snapshot}.yaml`, ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const final = await sendAndWait(ctx, session, prompt, 60_000);
    await assertAllMatched(ctx, snapshot);
    return { ctx, session, events, final };
}

test("events in the correct order for a tool-using conversation", T, async (t) => {
    const { events, final } = await replay(
        t,
        "should_emit_events_in_correct_order_for_tool_using_conversation",
        "Read the file 'hello.txt' and tell me its contents.",
        (dir) => writeFile(join(dir, "hello.txt"), "Hello World")
    );
    assert.equal(final?.data.content, "The file 'hello.txt' contains:\n\n```\nHello World\n```");
    const types = typesOf(events);
    const all = types.join(", ");
    assert.ok(types.indexOf("user.message") < types.lastIndexOf("assistant.message"), all);
    assert.equal(types.lastIndexOf("session.idle"), types.length - 1, `session.idle is last: ${all}`);
    // The loop in detail: turn 0 with two tool calls (one unknown), turn 1 with the answer.
    const expectOrder = [
        "session.start",
        "user.message",
        "assistant.turn_start",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.turn_end",
        "assistant.turn_start",
        "assistant.message",
        "assistant.turn_end",
        "session.idle",
    ];
    let k = 0;
    for (const type of types) if (type === expectOrder[k]) k++;
    assert.equal(k, expectOrder.length, `events follow ${expectOrder.join(" → ")}: ${all}`);
    const firstMsg = events.find((e) => e.type === "assistant.message");
    assert.deepEqual(
        firstMsg.data.toolRequests.map((r) => r.name),
        ["report_intent", "view"],
        "the first assistant.message lists both tool requests"
    );
    const starts = events.filter((e) => e.type === "tool.execution_start");
    assert.deepEqual(
        starts.map((s) => s.data.toolCallId),
        firstMsg.data.toolRequests.map((r) => r.toolCallId),
        "tool.execution_start per request, in call order, with the request's toolCallId"
    );
    const turnEnd0 = events.findIndex((e) => e.type === "assistant.turn_end");
    for (const c of events.filter((e) => e.type === "tool.execution_complete")) {
        assert.ok(events.indexOf(c) < turnEnd0, "all tool completions precede their turn's end");
    }
});

test("valid fields on all events", T, async (t) => {
    const { events, final } = await replay(t, "should_include_valid_fields_on_all_events", "What is 5+5? Reply with just the number.");
    assert.equal(final?.data.content, "10");
    const ids = new Set();
    let lastPersisted = null;
    for (const [i, e] of events.entries()) {
        assert.match(e.id, UUID_RE, `#${i} ${e.type}: id`);
        assert.ok(!ids.has(e.id), "ids are unique");
        ids.add(e.id);
        assert.match(e.timestamp, ISO_TS_RE, `#${i} ${e.type}: timestamp`);
        assert.equal(typeof e.data, "object");
        assert.ok(e.ephemeral === undefined || e.ephemeral === true, `#${i} ${e.type}: ephemeral is true or absent`);
        // A parent this client never saw is a usage record: in the log, never sent.
        if (e.parentId && e.parentId !== lastPersisted && !events.some((x) => x.id === e.parentId)) lastPersisted = e.parentId;
        assert.equal(e.parentId, lastPersisted, `#${i} ${e.type}: parentId is the latest persisted event`);
        if (e.ephemeral !== true) lastPersisted = e.id;
    }
    const user = events.find((e) => e.type === "user.message");
    assert.equal(user?.data.content, "What is 5+5? Reply with just the number.");
    const msg = events.find((e) => e.type === "assistant.message");
    assert.equal(typeof msg?.data.messageId, "string");
    assert.ok(msg.data.messageId.length > 0);
    assert.equal(msg.data.content, "10");
});

test("tool execution events carry the right fields", T, async (t) => {
    const { events, final, ctx } = await replay(
        t,
        "should_emit_tool_execution_events_with_correct_fields",
        "Read the file 'data.txt'.",
        (dir) => writeFile(join(dir, "data.txt"), "test data")
    );
    assert.equal(final?.data.content, "The file `data.txt` contains:\n```\ntest data\n```");
    const starts = events.filter((e) => e.type === "tool.execution_start");
    const completes = events.filter((e) => e.type === "tool.execution_complete");
    assert.equal(starts.length, 2);
    assert.equal(completes.length, 2);
    const view = starts.find((s) => s.data.toolName === "view");
    assert.ok(view, "a view tool.execution_start");
    assert.equal(typeof view.data.toolCallId, "string");
    assert.deepEqual(view.data.arguments, { path: join(ctx.workDir, "data.txt") }, "arguments as parsed JSON");
    assert.equal(view.data.turnId, "0", "tool.execution_start carries its turnId");
    const done = completes.find((c) => c.data.toolCallId === view.data.toolCallId);
    assert.ok(done, "the view completion has the start's toolCallId");
    assert.equal(done.data.success, true);
    assert.equal(done.data.result?.content, "1. test data");
    assert.equal(typeof done.data.result?.detailedContent, "string");
    const unknown = completes.find((c) => c.data.toolCallId !== view.data.toolCallId);
    assert.equal(unknown.data.success, false);
    assert.equal(unknown.data.error?.message, "Tool 'report_intent' does not exist.");
    for (const e of [...starts, ...completes]) assert.equal(e.ephemeral, undefined, `${e.type} is persisted`);
});

test("assistant.message carries a messageId", T, async (t) => {
    const { events, final } = await replay(t, "should_emit_assistant_message_with_messageid", "Say 'pong'.");
    const msgs = events.filter((e) => e.type === "assistant.message");
    assert.equal(msgs.length, 1);
    assert.equal(typeof msgs[0].data.messageId, "string");
    assert.ok(msgs[0].data.messageId.length > 0);
    assert.equal(msgs[0].data.content, "pong");
    assert.equal(final.data.messageId, msgs[0].data.messageId);
    const user = events.find((e) => e.type === "user.message");
    assert.notEqual(msgs[0].data.messageId, user.data.messageId, "assistant and user messageIds differ");
    assert.equal(msgs[0].data.originatingMessageId, user.data.messageId);
});

test("assistant.usage after a model call", T, async (t) => {
    const { events } = await replay(t, "should_emit_assistant_usage_event_after_model_call", "What is 5+5? Reply with just the number.");
    const usage = [...events].reverse().find((e) => e.type === "assistant.usage");
    assert.ok(usage, "assistant.usage emitted");
    assert.equal(usage.ephemeral, true);
    assert.equal(typeof usage.data.model, "string");
    assert.ok(usage.data.model.length > 0);
    assert.match(usage.id, UUID_RE);
    assert.match(usage.timestamp, ISO_TS_RE);
    for (const k of ["inputTokens", "outputTokens", "duration"]) {
        assert.equal(typeof usage.data[k], "number", `assistant.usage.${k} is a number (${JSON.stringify(usage.data)})`);
    }
    assert.equal(typeof usage.data.apiCallId, "string", "apiCallId present");
    assert.ok(events.indexOf(usage) < events.findIndex((e) => e.type === "assistant.turn_end"), "usage inside the turn");
});

test("session.usage_info after a model call", T, async (t) => {
    const { events } = await replay(t, "should_emit_session_usage_info_event_after_model_call", "What is 5+5? Reply with just the number.");
    const info = [...events].reverse().find((e) => e.type === "session.usage_info");
    assert.ok(info, "session.usage_info emitted");
    assert.equal(info.ephemeral, true);
    assert.ok(info.data.currentTokens > 0, "currentTokens > 0");
    assert.ok(info.data.messagesLength > 0, "messagesLength > 0");
    assert.ok(info.data.tokenLimit > 0, "tokenLimit > 0");
});

test("getMessages keeps the order after tool use", T, async (t) => {
    const { session, final } = await replay(
        t,
        "should_preserve_message_order_in_getmessages_after_tool_use",
        "Read the file 'order.txt' and tell me what the number is.",
        (dir) => writeFile(join(dir, "order.txt"), "ORDER_CONTENT_42")
    );
    assert.equal(final?.data.content, "The number in 'order.txt' is **42**.");
    const messages = await session.getEvents(); // getMessages in older SDKs
    const types = typesOf(messages);
    const iStart = types.indexOf("session.start");
    const iUser = types.indexOf("user.message");
    const iToolStart = types.indexOf("tool.execution_start");
    const iToolDone = types.indexOf("tool.execution_complete");
    const iLast = types.lastIndexOf("assistant.message");
    assert.ok(iStart === 0 && iStart < iUser && iUser < iToolStart && iToolStart < iToolDone && iToolDone < iLast, types.join(", "));
    assert.match(messages[iUser].data.content, /order\.txt/);
    assert.match(messages[iLast].data.content, /42/);
    assert.ok(!messages.some((m) => m.ephemeral), "getEvents returns persisted events only");
});
