// Issue 3, "Sending while busy": session.send during a running loop queues the message
// (mode "enqueue", the default) — pending_messages.modified reflects the queue, each message
// gets its own user.message and reply, one session.idle once the queue drains — or steers it
// into the running loop (mode "immediate"). Replays event_fidelity's pending-messages snapshot.

import { test } from "node:test";
import assert from "node:assert/strict";

import { approveAll } from "@github/copilot-sdk";
import { setup, nextEvent, assertAllMatched, typesOf, waitForEvent, delay } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

test(
    "pending_messages.modified when the queue changes (event_fidelity, replayed)",
    T,
    async (t) => {
        const ctx = await setup(t);
        await ctx.fake.load("event_fidelity/should_emit_pending_messages_modified_event_when_message_queue_changes.yaml", ctx.workDir);
        const client = ctx.client();
        const events = [];
        const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
        const idle = nextEvent(session, "session.idle", 30_000);
        await session.send({ prompt: "What is 9+9? Reply with just the number." });
        await idle.catch((e) => {
            throw ctx.explain(e);
        });
        const answer = events.filter((e) => e.type === "assistant.message").at(-1);
        assert.equal(answer?.data.content, "18");
        await assertAllMatched(ctx);
        const pendingEvent = events.find((e) => e.type === "pending_messages.modified");
        assert.ok(pendingEvent, `pending_messages.modified emitted: ${typesOf(events).join(", ")}`);
        assert.equal(pendingEvent.ephemeral, true, "pending_messages.modified is ephemeral");
        assert.ok(
            events.indexOf(pendingEvent) < events.findIndex((e) => e.type === "session.idle"),
            "the queue event precedes idle"
        );
    }
);

test("enqueue while busy: own user.message and reply each, in order, one idle after the queue drains", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { delay_ms: 800, then: { text: "Reply one." } },
        { text: "Reply two." },
        { text: "Reply three." },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const id1 = await session.send({ prompt: "One" });
    await waitForEvent(events, "assistant.turn_start");
    const pendingBefore = events.filter((e) => e.type === "pending_messages.modified").length;
    const id2 = await session.send({ prompt: "Two", mode: "enqueue" });
    const id3 = await session.send({ prompt: "Three", mode: "enqueue" });
    assert.equal(new Set([id1, id2, id3]).size, 3, "distinct messageIds");
    await waitForEvent(
        events,
        (e) => e.type === "session.idle",
        { timeout: 30_000 }
    ).catch((e) => {
        throw ctx.explain(e);
    });
    await delay(400);
    const types = typesOf(events).join(", ");

    const pendingAfter = events.filter((e) => e.type === "pending_messages.modified").length;
    assert.ok(pendingAfter - pendingBefore >= 1, `pending_messages.modified while queueing: ${types}`);

    const users = events.filter((e) => e.type === "user.message");
    assert.deepEqual(users.map((u) => u.data.messageId), [id1, id2, id3], `one user.message per send, in order: ${types}`);
    assert.deepEqual(users.map((u) => u.data.content), ["One", "Two", "Three"]);
    assert.equal(users[0].data.delivery, "idle");
    for (const u of users.slice(1)) assert.equal(u.data.delivery, "queued", `a queued message has delivery "queued" (${JSON.stringify(u.data.delivery)})`);

    const replies = events.filter((e) => e.type === "assistant.message");
    assert.deepEqual(
        replies.map((r) => [r.data.originatingMessageId, r.data.content]),
        [
            [id1, "Reply one."],
            [id2, "Reply two."],
            [id3, "Reply three."],
        ]
    );
    // Each queued message runs after the previous reply.
    for (let i = 1; i < 3; i++) {
        assert.ok(events.indexOf(users[i]) > events.indexOf(replies[i - 1]), `user.message ${i + 1} after reply ${i}`);
    }
    assert.equal(events.filter((e) => e.type === "session.idle").length, 1, `exactly one session.idle: ${types}`);
    assert.equal(events.at(-1).type, "session.idle", "idle is last");

    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 3, "one model call per queued message");
    const convo = reqs[2].body.messages.filter((m) => m.role !== "system");
    assert.deepEqual(convo.map((m) => m.role), ["user", "assistant", "user", "assistant", "user"]);
    for (const r of reqs) assert.equal(r.headers["x-initiator"], "user", "each queued message is a user-initiated call");
});

test("sendAndWait on a queued message resolves with its own reply", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ delay_ms: 600, then: { text: "First." } }, { text: "Second." }]);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    const idleSeen = nextEvent(session, "session.idle", 30_000);
    await session.send({ prompt: "First" });
    const second = await session.sendAndWait({ prompt: "Second" }, 30_000);
    assert.equal(second?.data.content, "Second.", "sendAndWait returns the last assistant.message before idle");
    await idleSeen;
});

test("immediate while a tool runs: the message is steered into the running loop", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command: "sleep 1; echo done", description: "wait" } }] },
        { text: "Steered answer." },
        { text: "Spare reply (should not be needed)." },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const id1 = await session.send({ prompt: "Start the work" });
    await waitForEvent(events, "tool.execution_start", { timeout: 20_000 });
    const id2 = await session.send({ prompt: "Also mention the weather", mode: "immediate" });
    await waitForEvent(events, "session.idle", { timeout: 30_000 }).catch((e) => {
        throw ctx.explain(e);
    });
    await delay(400);
    const types = typesOf(events).join(", ");

    const users = events.filter((e) => e.type === "user.message");
    assert.deepEqual(users.map((u) => u.data.messageId), [id1, id2], `both messages recorded: ${types}`);
    assert.equal(users[1].data.delivery, "steering", `an immediate message has delivery "steering" (${JSON.stringify(users[1].data)})`);
    assert.equal(events.filter((e) => e.type === "session.idle").length, 1, `one idle: ${types}`);

    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2, `steering joins the running loop: no extra run (${reqs.length} model calls)`);
    const msgs = reqs[1].body.messages;
    const iTool = msgs.findIndex((m) => m.role === "tool");
    const iSteer = msgs.findIndex((m) => m.role === "user" && JSON.stringify(m.content).includes("Also mention the weather"));
    assert.ok(iTool >= 0 && iSteer > iTool, "the steered message follows the tool result in the next model call");
    assert.equal(events.filter((e) => e.type === "assistant.message").at(-1).data.content, "Steered answer.");
});

test("immediate while idle behaves like a normal send", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "Plain." }]);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    const reply = await session.sendAndWait({ prompt: "Hi", mode: "immediate" }, 30_000);
    assert.equal(reply?.data.content, "Plain.");
});
