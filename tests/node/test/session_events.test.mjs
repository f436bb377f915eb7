// Issue 2, item 3–4: createSession → send/sendAndWait, the turn's events (order, envelope,
// ephemeral flags), messageId correlation, streaming deltas, and a scripted tool round.

import { test } from "node:test";
import assert from "node:assert/strict";

import { approveAll } from "@github/copilot-sdk";
import { setup, nextEvent, sendAndWait, delay, UUID_RE, ISO_TS_RE } from "../lib/harness.mjs";

const T = { timeout: 60_000 };

const PERSISTED_TYPES = new Set([
    "session.start",
    "user.message",
    "assistant.turn_start",
    "assistant.message",
    "assistant.turn_end",
    "tool.execution_start",
    "tool.execution_complete",
]);

/** The events of one user message: from its user.message to the session.idle after it. */
function turnSlice(events, messageId) {
    const start = events.findIndex((e) => e.type === "user.message" && e.data.messageId === messageId);
    assert.ok(start >= 0, `user.message with messageId ${messageId} was delivered`);
    const end = events.findIndex((e, i) => i > start && e.type === "session.idle");
    assert.ok(end > start, "a session.idle follows the user.message");
    return events.slice(start, end + 1);
}

function indexOfType(slice, type) {
    return slice.findIndex((e) => e.type === type);
}

function assertEnvelopes(events) {
    const seen = new Set();
    for (const [i, e] of events.entries()) {
        const where = `event #${i} ${e.type}`;
        assert.match(e.id, UUID_RE, `${where}: id is a UUID v4`);
        assert.ok(!seen.has(e.id), `${where}: id is unique`);
        seen.add(e.id);
        assert.equal(typeof e.timestamp, "string", `${where}: timestamp is a string`);
        assert.match(e.timestamp, ISO_TS_RE, `${where}: ISO-8601 UTC timestamp`);
        assert.equal(typeof e.data, "object", `${where}: has data`);
        if (i === 0) {
            assert.equal(e.type, "session.start", "the first event of a session is session.start");
            assert.equal(e.parentId, null, "session.start has parentId null");
        } else {
            const parent = events.slice(0, i).findLast((p) => p.ephemeral !== true);
            // A parent this client never saw is a usage record: in the log, never sent.
            const unseen = e.parentId && !events.some((x) => x.id === e.parentId);
            assert.equal(
                unseen ? parent.id : e.parentId,
                parent.id,
                `${where}: parentId is the latest persisted event before it (${parent.type})`
            );
        }
        if (PERSISTED_TYPES.has(e.type)) {
            assert.equal(e.ephemeral, undefined, `${where}: persisted events carry no ephemeral flag`);
        }
    }
    for (const e of events.filter((x) => x.type === "session.idle" || x.type === "assistant.usage")) {
        assert.equal(e.ephemeral, true, `${e.type} is ephemeral`);
    }
    for (let i = 1; i < events.length; i++) {
        assert.ok(
            Date.parse(events[i].timestamp) >= Date.parse(events[i - 1].timestamp),
            `timestamps do not go backwards (#${i} ${events[i].type})`
        );
    }
}

/** Checks the order of one text-only turn. */
function assertSimpleTurn(slice, { prompt, content, messageId }) {
    const types = slice.map((e) => e.type);
    const iUser = 0;
    const iStart = indexOfType(slice, "assistant.turn_start");
    const iMsg = indexOfType(slice, "assistant.message");
    const iUsage = indexOfType(slice, "assistant.usage");
    const iEnd = indexOfType(slice, "assistant.turn_end");
    const iIdle = slice.length - 1;
    assert.ok(iStart > iUser, `user.message before assistant.turn_start: ${types}`);
    assert.ok(iMsg > iStart, `assistant.message after assistant.turn_start: ${types}`);
    assert.ok(iUsage > iStart, `assistant.usage after assistant.turn_start: ${types}`);
    assert.ok(iEnd > iMsg && iEnd > iUsage, `assistant.turn_end after message and usage: ${types}`);
    assert.equal(slice[iIdle].type, "session.idle", "session.idle is last");
    assert.ok(iIdle > iEnd, `session.idle after assistant.turn_end: ${types}`);
    assert.equal(types.filter((x) => x === "assistant.turn_start").length, 1, "one model call = one turn");
    assert.equal(types.filter((x) => x === "assistant.turn_end").length, 1);
    assert.equal(types.filter((x) => x === "assistant.message").length, 1);

    const user = slice[iUser];
    assert.equal(user.data.content, prompt);
    const msg = slice[iMsg];
    assert.equal(msg.data.content, content);
    assert.equal(typeof msg.data.messageId, "string");
    assert.ok(msg.data.messageId.length > 0, "assistant.message has a messageId");
    if (messageId !== undefined) {
        assert.equal(user.data.messageId, messageId, "user.message.data.messageId == send() result");
        assert.equal(
            msg.data.originatingMessageId,
            messageId,
            "assistant.message.data.originatingMessageId == send() result"
        );
    }
    assert.equal(slice[iStart].data.turnId, "0", "turnId restarts at 0 for each user message");
    assert.equal(slice[iEnd].data.turnId, "0");
    assert.equal(typeof user.data.interactionId, "string", "user.message has an interactionId");
    assert.equal(slice[iStart].data.interactionId, user.data.interactionId, "turn_start shares the interactionId");
    assert.equal(msg.data.interactionId, user.data.interactionId, "assistant.message shares the interactionId");
    assert.equal(msg.data.turnId, "0", "assistant.message carries its turnId");
    assert.equal(user.data.delivery, "idle", "a message sent to an idle session has delivery idle");
    assert.equal(typeof user.data.transformedContent, "string");
    assert.ok(user.data.transformedContent.includes(prompt), "transformedContent contains the prompt");
    assert.equal(slice[iIdle].data.mode, "interactive", "session.idle reports the mode");
    const usage = slice[iUsage];
    assert.equal(typeof usage.data.model, "string");
    assert.ok(usage.data.model.length > 0, "assistant.usage names the model");
}

test("sendAndWait returns the final message; events in order with a chained envelope", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "2 + 2 = 4" }, { text: "3 + 3 = 6" }]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        onEvent: (e) => events.push(e),
    });
    assert.match(session.sessionId, UUID_RE);

    // 1. sendAndWait resolves with the final assistant.message.
    const final = await sendAndWait(ctx, session, "What is 2+2?");
    assert.equal(final?.type, "assistant.message");
    assert.equal(final.data.content, "2 + 2 = 4");

    // 2. send() returns the messageId at once; the same id comes back on the events.
    const idle = nextEvent(session, "session.idle");
    const messageId = await session.send({ prompt: "What is 3+3?" });
    assert.equal(typeof messageId, "string");
    assert.ok(messageId.length > 0, "send() returns a messageId");
    await idle.catch((e) => {
        throw ctx.explain(e);
    });
    await delay(300); // nothing may follow session.idle

    const first = turnSlice(events, events.find((e) => e.type === "user.message").data.messageId);
    assertSimpleTurn(first, { prompt: "What is 2+2?", content: "2 + 2 = 4" });
    assert.equal(
        first.find((e) => e.type === "assistant.message").data.originatingMessageId,
        first[0].data.messageId,
        "originatingMessageId == user.message messageId (sendAndWait turn)"
    );
    const second = turnSlice(events, messageId);
    assertSimpleTurn(second, { prompt: "What is 3+3?", content: "3 + 3 = 6", messageId });
    assert.equal(events.at(-1).type, "session.idle", "session.idle is the last event delivered");
    assert.equal(events[0].type, "session.start");
    assert.equal(events[0].data.sessionId, session.sessionId);

    assertEnvelopes(events);

    // No deltas without streaming.
    assert.equal(events.filter((e) => e.type === "assistant.message_delta").length, 0);

    // The persisted log is exactly the non-ephemeral events that were streamed, in order.
    const persisted = await session.getEvents();
    assert.deepEqual(
        persisted.map((e) => `${e.type} ${e.id}`),
        events.filter((e) => !e.ephemeral).map((e) => `${e.type} ${e.id}`),
        "getMessages returns the persisted (non-ephemeral) events in emission order"
    );

    // One model call per turn, and the second carries the first exchange.
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2, "two user messages → two model calls");
    const msgs = reqs[1].body.messages.filter((m) => m.role !== "system");
    assert.deepEqual(
        msgs.map((m) => [m.role, m.content]),
        [
            ["user", msgs[0].content],
            ["assistant", "2 + 2 = 4"],
            ["user", msgs[2].content],
        ],
        "second request = user, assistant, user"
    );
    assert.match(msgs[0].content, /What is 2\+2\?/);
    assert.match(msgs[2].content, /What is 3\+3\?/);
    assert.equal(reqs[0].body.messages[0].role, "system", "the request starts with the system prompt");
    assert.equal(
        reqs[1].headers["x-interaction-id"],
        second[0].data.interactionId,
        "x-interaction-id header == the turn's interactionId"
    );
    assert.equal(reqs[0].body.stream === true, false, "streaming off → no streamed model call");
});

test("streaming: true yields assistant.message_delta events that add up to the message", T, async (t) => {
    const ctx = await setup(t);
    const text = "Two plus two is four, and that is the whole answer to your question.";
    await ctx.fake.replies([{ text }]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        streaming: true,
        onEvent: (e) => events.push(e),
    });
    const final = await sendAndWait(ctx, session, "What is 2+2?");
    assert.equal(final.data.content, text);

    const deltas = events.filter((e) => e.type === "assistant.message_delta");
    assert.ok(deltas.length >= 2, `several deltas were streamed (got ${deltas.length})`);
    assert.equal(deltas.map((d) => d.data.deltaContent).join(""), final.data.content);
    const iFinal = events.indexOf(events.find((e) => e.type === "assistant.message"));
    for (const d of deltas) {
        assert.equal(d.ephemeral, true, "deltas are ephemeral");
        assert.equal(d.data.messageId, final.data.messageId, "delta.messageId == assistant.message.messageId");
        assert.ok(events.indexOf(d) < iFinal, "all deltas precede the assistant.message");
    }
    assertEnvelopes(events);
    const persisted = await session.getEvents();
    assert.equal(
        persisted.filter((e) => e.type === "assistant.message_delta").length,
        0,
        "deltas are never persisted"
    );
});

test("streaming: false yields no deltas", T, async (t) => {
    const ctx = await setup(t);
    const text = "Two plus two is four, and that is the whole answer to your question.";
    await ctx.fake.replies([{ text }]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        streaming: false,
        onEvent: (e) => events.push(e),
    });
    const final = await sendAndWait(ctx, session, "What is 2+2?");
    assert.equal(final.data.content, text);
    assert.equal(events.filter((e) => e.type === "assistant.message_delta").length, 0);
    assert.equal(events.filter((e) => e.type === "assistant.reasoning_delta").length, 0);
});

test("a tool call runs the tool and calls the model again (one model call = one turn)", T, async (t) => {
    const ctx = await setup(t);
    const command = "echo hi; echo err >&2; exit 3";
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command, description: "Exit with 3" } }] },
        { text: "The command exited with code 3." },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        onEvent: (e) => events.push(e),
    });
    const idle = nextEvent(session, "session.idle");
    const messageId = await session.send({ prompt: "Run the command." });
    await idle.catch((e) => {
        throw ctx.explain(e);
    });

    const slice = turnSlice(events, messageId);
    const types = slice.map((e) => e.type);
    const of = (type) => slice.filter((e) => e.type === type);
    assert.deepEqual(of("assistant.turn_start").map((e) => e.data.turnId), ["0", "1"], `turns: ${types}`);
    assert.deepEqual(of("assistant.turn_end").map((e) => e.data.turnId), ["0", "1"]);

    const [callMsg, finalMsg] = of("assistant.message");
    assert.ok(callMsg && finalMsg, `two assistant.message events: ${types}`);
    assert.equal(callMsg.data.toolRequests?.length, 1, "first message requests one tool");
    const req = callMsg.data.toolRequests[0];
    assert.equal(req.name, "bash");
    assert.equal(typeof req.toolCallId, "string");
    assert.equal(finalMsg.data.content, "The command exited with code 3.");
    assert.deepEqual(finalMsg.data.toolRequests ?? [], []);
    for (const m of [callMsg, finalMsg]) {
        assert.equal(m.data.originatingMessageId, messageId, "every assistant.message correlates to the send");
    }

    const start = of("tool.execution_start")[0];
    const done = of("tool.execution_complete")[0];
    assert.ok(start && done, `tool events present: ${types}`);
    assert.equal(start.data.toolCallId, req.toolCallId);
    assert.equal(start.data.toolName, "bash");
    assert.equal(done.data.toolCallId, req.toolCallId);
    assert.equal(done.data.success, true, "a non-zero exit code is still a successful tool call");
    assert.match(
        done.data.result?.content ?? "",
        /^hi\nerr\n<(exited with exit code 3|shellId: \d+ completed with exit code 3)>$/,
        "bash result: merged output + exit-code marker"
    );
    const idx = (e) => slice.indexOf(e);
    const [end0] = of("assistant.turn_end");
    assert.ok(idx(callMsg) < idx(start), "assistant.message before tool.execution_start");
    assert.ok(idx(start) < idx(done), "tool start before tool complete");
    assert.ok(idx(done) < idx(end0), "tool completes before its turn ends");
    assert.ok(idx(end0) < idx(of("assistant.turn_start")[1]), "second turn starts after the first ends");
    assert.equal(slice.at(-1).type, "session.idle");
    assertEnvelopes(events);

    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2, "two model calls");
    const msgs = reqs[1].body.messages;
    const tail = msgs.slice(-2);
    assert.equal(tail[0].role, "assistant");
    assert.equal(tail[0].tool_calls?.[0]?.function?.name, "bash");
    const wireId = tail[0].tool_calls[0].id;
    assert.equal(tail[1].role, "tool");
    assert.equal(tail[1].tool_call_id, wireId, "tool result answers the model's call id");
    assert.equal(tail[1].content, done.data.result.content, "the model sees the tool result text");
    assert.equal(reqs[1].headers["x-initiator"], "agent", "tool-loop follow-up is agent-initiated");
    assert.ok(
        Array.isArray(reqs[0].body.tools) && reqs[0].body.tools.some((x) => x.function?.name === "bash"),
        "bash is offered to the model"
    );
});

test("two sessions running at once keep separate event streams and parent chains", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { delay_ms: 400, then: { text: "Reply A." } },
        { delay_ms: 400, then: { text: "Reply B." } },
    ]);
    const client = ctx.client();
    const evA = [];
    const evB = [];
    const a = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => evA.push(e) });
    const b = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => evB.push(e) });
    assert.notEqual(a.sessionId, b.sessionId);
    const [ra, rb] = await Promise.all([
        sendAndWait(ctx, a, "Question A"),
        sendAndWait(ctx, b, "Question B"),
    ]);
    assert.deepEqual(
        [ra.data.content, rb.data.content].sort(),
        ["Reply A.", "Reply B."],
        "each session got exactly one of the replies"
    );
    for (const [events, session, prompt] of [
        [evA, a, "Question A"],
        [evB, b, "Question B"],
    ]) {
        assertEnvelopes(events);
        const users = events.filter((e) => e.type === "user.message");
        assert.deepEqual(users.map((u) => u.data.content), [prompt], "no cross-delivered user messages");
        assert.equal(events[0].data.sessionId, session.sessionId);
        assert.equal(events.filter((e) => e.type === "session.idle").length, 1);
    }
    const reqs = await ctx.fake.requests();
    assert.deepEqual(
        reqs.map((r) => r.headers["x-client-session-id"]).sort(),
        [a.sessionId, b.sessionId].sort(),
        "one model call per session"
    );
});

test("send() returns the messageId at once; the turn runs in the background", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ delay_ms: 1_500, then: { text: "Late answer." } }]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const idle = nextEvent(session, "session.idle");
    const t0 = Date.now();
    const messageId = await session.send({ prompt: "Take your time" });
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 1_000, `send() returned after ${elapsed} ms, before the model answered`);
    assert.ok(!events.some((e) => e.type === "session.idle" || e.type === "assistant.message"), "turn still running");
    await idle;
    const msg = events.find((e) => e.type === "assistant.message");
    assert.equal(msg.data.content, "Late answer.");
    assert.equal(msg.data.originatingMessageId, messageId);
});
