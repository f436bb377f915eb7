// Issue 3, "Abort" (and issue 4, "kill the process group on abort"): session.abort during a
// streaming reply, a model that never answers, a long bash, an external tool and a pending
// permission request. Each time: an `abort` event with a reason, the open turn closed,
// session.idle {aborted: true} soon after (asserted within a generous 5 s), nothing of the
// interrupted reply in the history, and the next send works. Replays the abort snapshots and
// session/should_abort_a_session.yaml for the follow-up requests.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

import { approveAll, defineTool } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, typesOf, waitForEvent, waitUntil, delay } from "../lib/harness.mjs";

const T = { timeout: 90_000 };
const IDLE_BOUND_MS = 5_000;

/**
 * Calls session.abort() and checks what follows: abort event (reason), the open turn ended,
 * session.idle {aborted:true} as the last event, within IDLE_BOUND_MS. Returns the events
 * from the abort call on.
 */
async function abortAndCheck(session, events, what, t) {
    const from = events.length;
    const t0 = Date.now();
    await session.abort();
    const idle = await waitForEvent(events, (e) => e.type === "session.idle" && events.indexOf(e) >= from, {
        timeout: 20_000,
        message: `${what}: no session.idle after abort; events: ${typesOf(events.slice(from)).join(", ")}`,
    });
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < IDLE_BOUND_MS, `${what}: session.idle ${elapsed} ms after abort (bound ${IDLE_BOUND_MS} ms)`);
    t?.diagnostic(`${what}: session.idle ${elapsed} ms after session.abort() was called`);
    await delay(150); // anything that would follow idle
    const after = events.slice(from);
    const types = typesOf(after).join(", ");
    assert.equal(idle.data.aborted, true, `${what}: session.idle carries aborted:true (${JSON.stringify(idle.data)})`);
    assert.equal(after.at(-1), idle, `${what}: session.idle is the last event: ${types}`);
    assert.equal(after.filter((e) => e.type === "session.idle").length, 1, `${what}: exactly one idle: ${types}`);
    const abort = after.find((e) => e.type === "abort");
    assert.ok(abort, `${what}: an abort event: ${types}`);
    assert.equal(typeof abort.data.reason, "string", "abort.reason is a string");
    assert.ok(abort.data.reason.length > 0);
    assert.equal(abort.ephemeral, undefined, "abort is persisted");
    // The turn that was open is closed.
    const starts = events.filter((e) => e.type === "assistant.turn_start").length;
    const ends = events.filter((e) => e.type === "assistant.turn_end").length;
    assert.equal(ends, starts, `${what}: every turn_start has its turn_end after the abort: ${typesOf(events).join(", ")}`);
    const iAbort = after.indexOf(abort);
    const iEnd = after.findIndex((e) => e.type === "assistant.turn_end");
    assert.ok(iEnd > iAbort, `${what}: the open turn ends after the abort event: ${types}`);
    assert.ok(!after.slice(iAbort).some((e) => e.type === "assistant.message"), `${what}: no assistant.message after the abort: ${types}`);
    return after;
}

function essayChunks() {
    const chunks = ["# The History of Computing\n\n", "## The 1940s\n\n"];
    for (let i = 0; i < 60; i++) chunks.push(`Paragraph ${i} about vacuum tubes and stored programs. `);
    return chunks;
}

const ESSAY = "Write a very long essay about the history of computing, covering every decade from the 1940s to the 2020s in great detail.";

test("abort during a streaming reply: idle fast, partial text not in history, next send works", T, async (t) => {
    const ctx = await setup(t);
    // The recovery request is answered from the recording; the aborted one is a slow scripted stream.
    await ctx.fake.load("abort/should_abort_during_active_streaming.yaml", ctx.workDir);
    await ctx.fake.replies([{ slow_text: essayChunks(), delay_ms: 200 }]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, streaming: true, onEvent: (e) => events.push(e) });
    await session.send({ prompt: ESSAY });
    await waitForEvent(events, "assistant.message_delta", { timeout: 20_000 });
    const after = await abortAndCheck(session, events, "streaming abort", t);
    assert.ok(!after.some((e) => e.type === "assistant.message_delta" && after.indexOf(e) > after.findIndex((x) => x.type === "abort")), "no deltas after the abort");
    const persisted = await session.getEvents();
    assert.ok(persisted.some((e) => e.type === "abort"), "abort is in getEvents()");
    assert.ok(
        !persisted.some((e) => e.type === "assistant.message" && e.data.content.includes("vacuum tubes")),
        "the interrupted partial reply is not persisted"
    );

    const reply = await sendAndWait(ctx, session, "Say 'abort_recovery_ok'.");
    assert.equal(reply?.data.content, "abort_recovery_ok");
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2);
    const convo = reqs[1].body.messages.filter((m) => m.role !== "system");
    assert.match(JSON.stringify(convo[0].content), /Write a very long essay/, "the interrupted prompt stays in the history");
    assert.ok(!JSON.stringify(convo).includes("vacuum tubes"), "no partial assistant text in the next request");
    await assertAllMatched(ctx);
});

test("abort while the model has not answered at all (hang): idle fast, next send works", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ hang: true }, { text: "Back again." }]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    await session.send({ prompt: "Think forever." });
    await waitForEvent(events, "assistant.turn_start", { timeout: 20_000 });
    await waitUntil(async () => (await ctx.fake.requests()).length === 1, { message: "the model request was made" });
    await abortAndCheck(session, events, "hang abort", t);
    const reply = await sendAndWait(ctx, session, "Are you there?");
    assert.equal(reply?.data.content, "Back again.");
    const reqs = await ctx.fake.requests();
    const convo = reqs[1].body.messages.filter((m) => m.role !== "system");
    assert.deepEqual(convo.map((m) => m.role), ["user", "user"], "the interrupted prompt stays, no assistant entry");
    assert.match(JSON.stringify(convo[0].content), /Think forever\./);
});

test("abort during a long bash (sleep 30): process group killed, interrupted result, next send works", T, async (t) => {
    const ctx = await setup(t);
    const marker = join(ctx.workDir, "should-not-exist.txt");
    const command = `sleep 30.25; echo finished > ${marker}`;
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command, description: "Wait a long time" } }] },
        { text: "Understood, the command was interrupted." },
    ]);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    await session.send({ prompt: "Run the long command." });
    const start = await waitForEvent(events, (e) => e.type === "tool.execution_start" && e.data.toolName === "bash", { timeout: 20_000 });
    const sleeping = () => execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").some((l) => l.startsWith("sleep 30.25"));
    await waitUntil(sleeping, { timeout: 10_000, message: "the sleep process is running" });

    const after = await abortAndCheck(session, events, "bash abort", t);
    assert.ok(
        !after.some((e) => e.type === "tool.execution_complete" && e.data.success === true),
        `the interrupted bash does not complete successfully: ${JSON.stringify(after.filter((e) => e.type === "tool.execution_complete"))}`
    );
    await waitUntil(() => !sleeping(), { timeout: 3_000, message: "the sleep process (its process group) was killed" });
    await delay(200);
    assert.ok(!existsSync(marker), "the rest of the command never ran");

    const reply = await sendAndWait(ctx, session, "What happened?");
    assert.equal(reply?.data.content, "Understood, the command was interrupted.");
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2);
    const msgs = reqs[1].body.messages;
    const call = msgs.find((m) => m.role === "assistant" && m.tool_calls?.length);
    assert.ok(call, "the interrupted tool call stays in the history");
    const result = msgs.find((m) => m.role === "tool");
    assert.equal(result?.tool_call_id, call.tool_calls[0].id);
    assert.equal(result?.content, "The execution of this tool, or a previous tool was interrupted.");
    assert.equal(msgs.at(-1).role, "user");
    assert.match(JSON.stringify(msgs.at(-1).content), /What happened\?/);
    assert.ok(start.data.toolCallId);
});

test("abort a running bash, then continue (session/should_abort_a_session, replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("session/should_abort_a_session.yaml", ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => events.push(e) });
    await session.send({ prompt: "run the shell command 'sleep 100' (note this works on both bash and PowerShell)" });
    await waitForEvent(events, (e) => e.type === "tool.execution_start" && e.data.toolName === "bash", { timeout: 20_000 }).catch((e) => {
        throw ctx.explain(e);
    });
    await delay(100);
    await abortAndCheck(session, events, "should_abort_a_session", t);
    const persisted = await session.getEvents();
    assert.ok(persisted.some((m) => m.type === "abort"), "abort persisted");
    const answer = await sendAndWait(ctx, session, "What is 2+2?");
    assert.equal(answer?.data.content, "2 + 2 = 4");
    await assertAllMatched(ctx);
});

test("abort while an external tool runs (abort/should_abort_during_active_tool_execution, replayed)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("abort/should_abort_during_active_tool_execution.yaml", ctx.workDir);
    let started;
    const toolStarted = new Promise((r) => (started = r));
    let release;
    const released = new Promise((r) => (release = r));
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        onEvent: (e) => events.push(e),
        tools: [
            defineTool("slow_analysis", {
                description: "A slow analysis tool that blocks until released",
                parameters: { type: "object", properties: { value: { type: "string", description: "Value to analyze" } }, required: ["value"] },
                handler: async ({ value }) => {
                    started(value);
                    return await released;
                },
            }),
        ],
    });
    await session.send({ prompt: "Use slow_analysis with value 'test_abort'. Wait for the result." });
    assert.equal(await Promise.race([toolStarted, delay(20_000).then(() => "timeout")]), "test_abort");
    await abortAndCheck(session, events, "external tool abort", t);
    release("RELEASED_AFTER_ABORT");
    await delay(200);
    const answer = await sendAndWait(ctx, session, "Say 'tool_abort_recovery_ok'.");
    assert.equal(answer?.data.content, "tool_abort_recovery_ok");
    const reqs = await ctx.fake.requests();
    assert.ok(!JSON.stringify(reqs.at(-1).body.messages).includes("RELEASED_AFTER_ABORT"), "a late tool answer never reaches the history");
    await assertAllMatched(ctx);
});

test("abort while a permission request is pending: idle arrives, tool never runs", T, async (t) => {
    const ctx = await setup(t);
    const marker = join(ctx.workDir, "ran.txt");
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command: `echo ran > ${marker}`, description: "write" } }] },
        { text: "OK." },
    ]);
    let asked;
    const askedP = new Promise((r) => (asked = r));
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: (req) => {
            asked(req);
            return new Promise(() => {}); // never answers
        },
        onEvent: (e) => events.push(e),
    });
    await session.send({ prompt: "Write the marker." });
    await Promise.race([askedP, delay(20_000)]);
    await waitForEvent(events, "permission.requested");
    await abortAndCheck(session, events, "pending permission abort", t);
    await delay(300);
    assert.ok(!existsSync(marker), "the tool did not run");
    const reply = await sendAndWait(ctx, session, "Never mind.");
    assert.equal(reply?.data.content, "OK.");
    const reqs = await ctx.fake.requests();
    const result = reqs[1].body.messages.find((m) => m.role === "tool");
    assert.ok(result, "the cancelled call has a tool message in the next request");
    assert.equal(result.content, "The execution of this tool, or a previous tool was interrupted.");
});
