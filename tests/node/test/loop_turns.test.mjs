// Issue 3, "Turns": one model call = one assistant.turn_start … assistant.turn_end pair, never a
// hidden call. Counted against the requests the fake model actually received, over recorded
// multi-tool conversations (multi_turn snapshots) and a scripted multi-round tool loop with
// parallel tool calls.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, typesOf, delay } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

/** Turn ordering for one user message (the upstream multi_turn assertions, and a bit more). */
function assertToolTurnOrdering(turnEvents, what) {
    const types = typesOf(turnEvents);
    const observed = `${what}: ${types.join(", ")}`;
    const iUser = types.indexOf("user.message");
    assert.ok(iUser >= 0, `user.message present (${observed})`);
    const starts = turnEvents.map((e, i) => [e, i]).filter(([e]) => e.type === "tool.execution_start");
    const completes = turnEvents.map((e, i) => [e, i]).filter(([e]) => e.type === "tool.execution_complete");
    assert.ok(starts.length > 0 && completes.length > 0, `tool events present (${observed})`);
    assert.ok(iUser < Math.min(...starts.map(([, i]) => i)), `user.message before the first tool start (${observed})`);
    for (const [c, ci] of completes) {
        assert.ok(
            starts.some(([s, si]) => s.data.toolCallId === c.data.toolCallId && si < ci),
            `tool.execution_complete ${c.data.toolCallId} has an earlier start (${observed})`
        );
    }
    const lastComplete = Math.max(...completes.map(([, i]) => i));
    const iFinal = types.findIndex((t, i) => i > lastComplete && t === "assistant.message");
    assert.ok(iFinal > lastComplete, `an assistant.message follows the last tool completion (${observed})`);
    const iIdle = types.findIndex((t, i) => i > iFinal && t === "session.idle");
    assert.ok(iIdle > iFinal, `session.idle follows the final assistant.message (${observed})`);
    assert.equal(iIdle, types.length - 1, `session.idle is the last event (${observed})`);
}

/** Every turn_start has a matching turn_end, in order, with turnIds "0", "1", … per message. */
function assertTurnPairs(turnEvents, what) {
    const turnEventsOnly = turnEvents.filter((e) => e.type === "assistant.turn_start" || e.type === "assistant.turn_end");
    const seq = turnEventsOnly.map((e) => `${e.type === "assistant.turn_start" ? "start" : "end"}:${e.data.turnId}`);
    const expected = [];
    const n = turnEventsOnly.filter((e) => e.type === "assistant.turn_start").length;
    for (let i = 0; i < n; i++) expected.push(`start:${i}`, `end:${i}`);
    assert.deepEqual(seq, expected, `${what}: turn_start/turn_end strictly paired, turnIds 0..${n - 1}`);
    // Every model call produced exactly one assistant.message, inside its turn.
    let inTurn = false;
    let msgs = 0;
    for (const e of turnEvents) {
        if (e.type === "assistant.turn_start") {
            inTurn = true;
            msgs = 0;
        } else if (e.type === "assistant.message") {
            assert.ok(inTurn, `${what}: assistant.message inside a turn`);
            msgs++;
        } else if (e.type === "assistant.turn_end") {
            assert.equal(msgs, 1, `${what}: one assistant.message per model call (turn ${e.data.turnId})`);
            inTurn = false;
        }
    }
}

function countType(events, type) {
    return events.filter((e) => e.type === type).length;
}

test("multi_turn: tool results from previous turns; turn_start count == model requests", T, async (t) => {
    const ctx = await setup(t);
    await writeFile(join(ctx.workDir, "secret.txt"), "The magic number is 42.");
    await ctx.fake.load("multi_turn/should_use_tool_results_from_previous_turns.yaml", ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });

    const m1 = await sendAndWait(ctx, session, "Read the file 'secret.txt' and tell me what the magic number is.");
    assert.equal(m1?.data.content, "The magic number is **42**.");
    const first = events.splice(0);
    assertToolTurnOrdering(first.slice(first.findIndex((e) => e.type === "user.message")), "file read message");
    const reqs1 = (await ctx.fake.requests()).length;
    assert.equal(reqs1, 2, "tool round + final answer = two model calls");
    assert.equal(countType(first, "assistant.turn_start"), reqs1, "turn_start count == model requests (message 1)");
    assert.equal(countType(first, "assistant.turn_end"), reqs1, "turn_end count == model requests (message 1)");
    assertTurnPairs(first, "message 1");

    const m2 = await sendAndWait(ctx, session, "What is that magic number multiplied by 2?");
    assert.equal(m2?.data.content, "The magic number (42) multiplied by 2 is **84**.");
    const second = events.splice(0);
    const reqs2 = (await ctx.fake.requests()).length - reqs1;
    assert.equal(reqs2, 1, "a text-only answer = one model call");
    assert.equal(countType(second, "assistant.turn_start"), reqs2, "turn_start count == model requests (message 2)");
    assertTurnPairs(second, "message 2");
    await assertAllMatched(ctx);
});

test("multi_turn: file creation then reading across turns (replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("multi_turn/should_handle_file_creation_then_reading_across_turns.yaml", ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });

    const m1 = await sendAndWait(ctx, session, "Create a file called 'greeting.txt' with the content 'Hello from multi-turn test'.");
    assert.equal(m1?.data.content, 'Created `greeting.txt` with the content "Hello from multi-turn test".');
    assert.equal(await readFile(join(ctx.workDir, "greeting.txt"), "utf8"), "Hello from multi-turn test");
    const first = events.splice(0);
    assertToolTurnOrdering(first.slice(first.findIndex((e) => e.type === "user.message")), "file creation message");
    assertTurnPairs(first, "message 1");

    const m2 = await sendAndWait(ctx, session, "Read the file 'greeting.txt' and tell me its exact contents.");
    assert.equal(m2?.data.content, "The exact contents of `greeting.txt` are:\n\n```\nHello from multi-turn test\n```");
    const second = events.splice(0);
    assertToolTurnOrdering(second, "file read message");
    assertTurnPairs(second, "message 2");

    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 4, "2 model calls per message");
    assert.equal(
        countType([...first, ...second], "assistant.turn_start"),
        reqs.length,
        "turn_start count == model requests over the conversation"
    );
    await assertAllMatched(ctx);
});

test("scripted: parallel tools over several rounds; turn count == request count, results in call order", T, async (t) => {
    const ctx = await setup(t);
    await writeFile(join(ctx.workDir, "a.txt"), "alpha");
    await writeFile(join(ctx.workDir, "b.txt"), "beta");
    await ctx.fake.replies([
        // Round 1: three tools in one reply; the slow one is first so completions interleave.
        {
            tool_calls: [
                { name: "bash", arguments: { command: "sleep 0.4; echo slow", description: "slow" } },
                { name: "view", arguments: { path: join(ctx.workDir, "a.txt") } },
                { name: "bash", arguments: { command: "echo fast", description: "fast" } },
            ],
        },
        // Round 2: text plus a tool call.
        { content: "Now the second file.", tool_calls: [{ name: "view", arguments: { path: join(ctx.workDir, "b.txt") } }] },
        // Round 3: an unknown tool — still a tool round.
        { tool_calls: [{ name: "no_such_tool", arguments: {} }] },
        { text: "All done." },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    const final = await sendAndWait(ctx, session, "Do the work.");
    assert.equal(final?.data.content, "All done.");
    await delay(200);

    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 4, "four model calls");
    assert.equal(countType(events, "assistant.turn_start"), reqs.length, "turn_start count == model requests");
    assert.equal(countType(events, "assistant.turn_end"), reqs.length, "turn_end count == model requests");
    assert.equal(countType(events, "assistant.usage"), reqs.length, "one assistant.usage per model call");
    assertTurnPairs(events, "scripted loop");
    assert.equal(countType(events, "tool.execution_start"), 5);
    assert.equal(countType(events, "tool.execution_complete"), 5);
    assert.equal(countType(events, "session.idle"), 1, "one session.idle for one send");
    assert.equal(events.at(-1).type, "session.idle");

    // Parallel: the fast tools complete before the slow one although called after it.
    const starts = events.filter((e) => e.type === "tool.execution_start").slice(0, 3);
    const completes = events.filter((e) => e.type === "tool.execution_complete").slice(0, 3);
    assert.deepEqual(
        starts.map((s) => s.data.toolName),
        ["bash", "view", "bash"],
        "tool starts in call order"
    );
    assert.equal(completes.at(-1).data.toolCallId, starts[0].data.toolCallId, "the slow first tool completes last");

    // The next request carries the three results in call order.
    const tail = reqs[1].body.messages.slice(-4);
    assert.equal(tail[0].role, "assistant");
    assert.deepEqual(
        tail.slice(1).map((m) => m.tool_call_id),
        tail[0].tool_calls.map((c) => c.id),
        "tool messages follow the call order"
    );
    assert.match(tail[1].content, /^slow\n<exited with exit code 0>$/);
    assert.equal(tail[2].content, "1. alpha");
    assert.match(tail[3].content, /^fast\n<exited with exit code 0>$/);
    const unknown = reqs[3].body.messages.at(-1);
    assert.equal(unknown.role, "tool");
    assert.match(unknown.content, /^Tool 'no_such_tool' does not exist\./);
    // The text of a tool-calling reply is kept with its tool calls.
    const round2 = reqs[2].body.messages.filter((m) => m.role === "assistant").at(-1);
    assert.equal(round2.content, "Now the second file.");
    assert.equal(round2.tool_calls?.length, 1);
    for (const [i, r] of reqs.entries()) {
        assert.equal(r.headers["x-initiator"], i === 0 ? "user" : "agent", `request ${i} x-initiator`);
    }
});
