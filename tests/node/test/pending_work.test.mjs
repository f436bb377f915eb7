// Pending client work across a reconnect (the SDKs' continuePendingWork flow).
//
// A server is started by one SDK client over TCP (RuntimeConnection.forTcp); other clients join
// it with RuntimeConnection.forUri. When the last client of a session goes away (forceStop), the
// session stays loaded and whatever client work is pending — a permission.requested or an
// external_tool.requested not yet answered — stays answerable by request id for a grace period
// (SKIPPER_PENDING_GRACE_MS, default 30 s). A new client resumes with continuePendingWork and
// answers it; the turn continues with that answer. After the grace period with no client, the
// pending work is answered as "no one available" and the run ends.
//
// Replays the pending_work_resume recordings (the fake only answers a request that matches the
// recording after normalisation). Skipper does not implement sessions.checkInUse nor unload a
// session when its last client disconnects, so the upstream "cold" variant is adapted: a cold
// resume is a resume from a NEW server process on the same COPILOT_HOME.

import { test } from "node:test";
import assert from "node:assert/strict";

import { approveAll, CopilotClient, defineTool, RuntimeConnection } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, waitForEvent, waitUntil, withTimeout, typesOf, delay } from "../lib/harness.mjs";

const T = { timeout: 30_000 };
const SHARED_TOKEN = "pending-work-shared-connection-token";

const VALUE_SCHEMA = {
    type: "object",
    properties: { value: { type: "string" } },
    required: ["value"],
};

/** A promise with its resolver and a settled flag. */
function deferred() {
    let resolve;
    let settled = false;
    const promise = new Promise((r) => {
        resolve = (v) => {
            settled = true;
            r(v);
        };
    });
    return { promise, resolve, settled: () => settled };
}

async function replaySetup(t, snapshot) {
    const ctx = await setup(t);
    await ctx.fake.load(`pending_work_resume/${snapshot}.yaml`, ctx.workDir);
    return ctx;
}

/** Starts a Skipper TCP server through an SDK client (forTcp) with the shared token. */
async function startServer(ctx, env) {
    const server = ctx.client({ transport: "tcp", connectionToken: SHARED_TOKEN, env });
    await server.start();
    assert.ok(server.runtimePort > 0, "the server listens on a TCP port");
    return server;
}

/** An SDK client joining the server over TCP (forUri); force-stopped at teardown. */
function joinClient(t, server) {
    const client = new CopilotClient({
        connection: RuntimeConnection.forUri(`127.0.0.1:${server.runtimePort}`, { connectionToken: SHARED_TOKEN }),
        logLevel: "error",
    });
    t.after(() => client.forceStop().catch(() => {}));
    return client;
}

/** Records every event of a session from creation/resume on (use as `onEvent`). */
function recorder() {
    const events = [];
    return { events, onEvent: (e) => events.push(e) };
}

function lastResumeEvent(events) {
    return events.filter((e) => e.type === "session.resume").at(-1);
}

/** The `role: tool` messages of the `n`th captured model request. */
async function toolMessagesOf(ctx, n) {
    const reqs = await ctx.fake.requests();
    assert.ok(reqs.length > n, `model request #${n + 1} was made (${reqs.length} so far)`);
    return reqs[n].body.messages.filter((m) => m.role === "tool");
}

async function waitIdle(ctx, events, what) {
    await waitForEvent(events, "session.idle", {
        timeout: 15_000,
        message: `${what}: no session.idle within 15 s; events: ${typesOf(events).join(", ")}`,
    }).catch((e) => {
        throw ctx.explain(e);
    });
}

// ---------------------------------------------------------------------------------------------

test("continue a pending permission request after reconnect (should_continue_pending_permission_request_after_resume)", T, async (t) => {
    const ctx = await replaySetup(t, "should_continue_pending_permission_request_after_resume");
    const server = await startServer(ctx);

    const asked = deferred();
    const neverAnswered = deferred(); // the original client's decision never arrives
    let originalToolRuns = 0;
    const first = joinClient(t, server);
    const rec1 = recorder();
    const s1 = await first.createSession({
        tools: [
            defineTool("resume_permission_tool", {
                description: "Transforms a value after permission is granted",
                parameters: VALUE_SCHEMA,
                handler: ({ value }) => {
                    originalToolRuns++;
                    return `ORIGINAL_SHOULD_NOT_RUN_${value}`;
                },
            }),
        ],
        onPermissionRequest: (req) => {
            asked.resolve(req);
            return neverAnswered.promise;
        },
        onEvent: rec1.onEvent,
    });
    const sessionId = s1.sessionId;

    await s1.send({ prompt: "Use resume_permission_tool with value 'alpha', then reply with the result." });
    const req = await withTimeout(asked.promise, 15_000, "the original client was never asked for permission").catch((e) => {
        throw ctx.explain(e);
    });
    const requested = await waitForEvent(rec1.events, "permission.requested", { timeout: 5_000 });
    assert.equal(req.kind, "custom-tool");
    assert.equal(req.toolName, "resume_permission_tool");
    const requestId = requested.data.requestId;
    assert.equal(typeof requestId, "string");
    await assertAllMatched(ctx);

    await first.forceStop();
    // The recording ends at the tool call; answer the follow-up request (which must carry the
    // resumed tool's result) with a scripted reply.
    await ctx.fake.replies([{ text: "The result is PERMISSION_RESUMED_ALPHA." }]);

    const second = joinClient(t, server);
    const rec2 = recorder();
    let resumedToolRuns = 0;
    const s2 = await second.resumeSession(sessionId, {
        continuePendingWork: true,
        onPermissionRequest: () => ({ kind: "no-result" }),
        tools: [
            defineTool("resume_permission_tool", {
                description: "Transforms a value after permission is granted",
                parameters: VALUE_SCHEMA,
                handler: ({ value }) => {
                    resumedToolRuns++;
                    return `PERMISSION_RESUMED_${value.toUpperCase()}`;
                },
            }),
        ],
        onEvent: rec2.onEvent,
    });
    const resume = lastResumeEvent(await s2.getEvents());
    assert.ok(resume, "a session.resume event is recorded");
    assert.equal(resume.data.continuePendingWork, true, `session.resume: ${JSON.stringify(resume.data)}`);
    assert.equal(resume.data.sessionWasActive, true, `the run was mid-flight: ${JSON.stringify(resume.data)}`);

    const answer = await s2.rpc.permissions.handlePendingPermissionRequest({ requestId, result: { kind: "approve-once" } });
    assert.equal(answer?.success, true, `handlePendingPermissionRequest: ${JSON.stringify(answer)}`);

    await waitIdle(ctx, rec2.events, "after approving the pending permission");
    const reply = rec2.events.filter((e) => e.type === "assistant.message").at(-1);
    assert.equal(reply?.data.content, "The result is PERMISSION_RESUMED_ALPHA.");
    assert.equal(originalToolRuns, 0, "the original client's tool never ran");
    assert.equal(resumedToolRuns, 1, "the resumed client's tool ran once");

    const completed = rec2.events.find((e) => e.type === "permission.completed" && e.data.requestId === requestId);
    assert.equal(completed?.data.result?.kind, "approved", `permission.completed: ${JSON.stringify(completed?.data)}`);
    const done = rec2.events.find((e) => e.type === "tool.execution_complete" && e.data.toolCallId === req.toolCallId);
    assert.equal(done?.data.success, true, `tool.execution_complete: ${JSON.stringify(done?.data)}`);

    const tools = await toolMessagesOf(ctx, 1);
    assert.deepEqual(
        tools.map((m) => m.content),
        ["PERMISSION_RESUMED_ALPHA"],
        "the next model request carries the resumed tool's result"
    );
    assert.equal((await ctx.fake.requests()).length, 2);
    await assertAllMatched(ctx, "the recording + the scripted reply");

    const again = await s2.rpc.permissions.handlePendingPermissionRequest({ requestId, result: { kind: "approve-once" } });
    assert.equal(again?.success, false, "an answered request cannot be answered twice");
    neverAnswered.resolve({ kind: "no-result" });
});

test(
    "session.permissions.pendingRequests lists the permission still pending after reconnect (upstream discovers the requestId this way)",
    T,
    async (t) => {
        const ctx = await replaySetup(t, "should_continue_pending_permission_request_after_resume");
        const server = await startServer(ctx);
        const asked = deferred();
        const first = joinClient(t, server);
        const rec1 = recorder();
        const s1 = await first.createSession({
            tools: [
                defineTool("resume_permission_tool", {
                    description: "Transforms a value after permission is granted",
                    parameters: VALUE_SCHEMA,
                    handler: ({ value }) => `ORIGINAL_SHOULD_NOT_RUN_${value}`,
                }),
            ],
            onPermissionRequest: (req) => {
                asked.resolve(req);
                return new Promise(() => {});
            },
            onEvent: rec1.onEvent,
        });
        await s1.send({ prompt: "Use resume_permission_tool with value 'alpha', then reply with the result." });
        await withTimeout(asked.promise, 15_000, "the original client was never asked for permission");
        const requested = await waitForEvent(rec1.events, "permission.requested", { timeout: 5_000 });
        await first.forceStop();

        const second = joinClient(t, server);
        const s2 = await second.resumeSession(s1.sessionId, {
            continuePendingWork: true,
            onPermissionRequest: () => ({ kind: "no-result" }),
        });
        const pending = await s2.rpc.permissions.pendingRequests();
        assert.ok(Array.isArray(pending?.items), `pendingRequests → {items}: ${JSON.stringify(pending)}`);
        assert.deepEqual(
            pending.items.map((i) => i.requestId),
            [requested.data.requestId],
            `the pending permission is listed: ${JSON.stringify(pending)}`
        );
        assert.equal(pending.items[0].request?.kind, "custom-tool");
    }
);

test("continue a pending external tool request after reconnect (should_continue_pending_external_tool_request_after_resume)", T, async (t) => {
    const ctx = await replaySetup(t, "should_continue_pending_external_tool_request_after_resume");
    const server = await startServer(ctx);

    const started = deferred();
    const release = deferred();
    const first = joinClient(t, server);
    const rec1 = recorder();
    const s1 = await first.createSession({
        tools: [
            defineTool("resume_external_tool", {
                description: "Looks up a value after resumption",
                parameters: VALUE_SCHEMA,
                handler: async ({ value }) => {
                    started.resolve(value);
                    return await release.promise;
                },
            }),
        ],
        onPermissionRequest: approveAll,
        onEvent: rec1.onEvent,
    });
    const sessionId = s1.sessionId;

    await s1.send({ prompt: "Use resume_external_tool with value 'beta', then reply with the result." });
    const toolEvent = await waitForEvent(rec1.events, (e) => e.type === "external_tool.requested" && e.data.toolName === "resume_external_tool", {
        timeout: 15_000,
    }).catch((e) => {
        throw ctx.explain(e);
    });
    assert.equal(await withTimeout(started.promise, 5_000, "the original handler did not start"), "beta");

    await first.forceStop();

    const second = joinClient(t, server);
    const rec2 = recorder();
    const s2 = await second.resumeSession(sessionId, { continuePendingWork: true, onPermissionRequest: approveAll, onEvent: rec2.onEvent });
    const resume = lastResumeEvent(await s2.getEvents());
    assert.equal(resume?.data.continuePendingWork, true, `session.resume: ${JSON.stringify(resume?.data)}`);
    assert.equal(resume?.data.sessionWasActive, true, `session.resume: ${JSON.stringify(resume?.data)}`);

    const result = await s2.rpc.tools.handlePendingToolCall({ requestId: toolEvent.data.requestId, result: "EXTERNAL_RESUMED_BETA" });
    assert.equal(result?.success, true, `handlePendingToolCall: ${JSON.stringify(result)}`);

    await waitIdle(ctx, rec2.events, "after answering the pending tool call");
    const reply = rec2.events.filter((e) => e.type === "assistant.message").at(-1);
    assert.match(reply?.data.content ?? "", /\*\*EXTERNAL_RESUMED_BETA\*\*$/);
    const done = rec2.events.find((e) => e.type === "tool.execution_complete" && e.data.toolCallId === toolEvent.data.toolCallId);
    assert.equal(done?.data.success, true, `tool.execution_complete: ${JSON.stringify(done?.data)}`);
    assert.deepEqual((await toolMessagesOf(ctx, 1)).map((m) => m.content), ["EXTERNAL_RESUMED_BETA"]);
    await assertAllMatched(ctx);

    const again = await s2.rpc.tools.handlePendingToolCall({ requestId: toolEvent.data.requestId, result: "TOO_LATE" });
    assert.equal(again?.success, false, "an answered tool call cannot be answered twice");
});

test("continue parallel pending external tool requests after reconnect (should_continue_parallel_pending_external_tool_requests_after_resume)", T, async (t) => {
    const ctx = await replaySetup(t, "should_continue_parallel_pending_external_tool_requests_after_resume");
    const server = await startServer(ctx);

    const startedA = deferred();
    const startedB = deferred();
    const never = new Promise(() => {});
    const first = joinClient(t, server);
    const rec1 = recorder();
    const tool = (name, started, description) =>
        defineTool(name, {
            description,
            parameters: VALUE_SCHEMA,
            handler: async ({ value }) => {
                started.resolve(value);
                return await never;
            },
        });
    const s1 = await first.createSession({
        tools: [
            tool("pending_lookup_a", startedA, "Looks up the first value after resumption"),
            tool("pending_lookup_b", startedB, "Looks up the second value after resumption"),
        ],
        onPermissionRequest: approveAll,
        onEvent: rec1.onEvent,
    });

    await s1.send({
        prompt: "Call pending_lookup_a with value 'alpha' and pending_lookup_b with value 'beta', then reply with both results.",
    });
    await waitUntil(() => rec1.events.filter((e) => e.type === "external_tool.requested").length >= 2, {
        timeout: 15_000,
        message: `both external tools requested; events: ${typesOf(rec1.events).join(", ")}`,
    }).catch((e) => {
        throw ctx.explain(e);
    });
    const byName = Object.fromEntries(
        rec1.events.filter((e) => e.type === "external_tool.requested").map((e) => [e.data.toolName, e])
    );
    assert.deepEqual(Object.keys(byName).sort(), ["pending_lookup_a", "pending_lookup_b"]);
    assert.equal(await withTimeout(startedA.promise, 5_000, "handler A did not start"), "alpha");
    assert.equal(await withTimeout(startedB.promise, 5_000, "handler B did not start"), "beta");

    await first.forceStop();

    const second = joinClient(t, server);
    const rec2 = recorder();
    const s2 = await second.resumeSession(s1.sessionId, { continuePendingWork: true, onPermissionRequest: approveAll, onEvent: rec2.onEvent });

    const resultB = await s2.rpc.tools.handlePendingToolCall({ requestId: byName.pending_lookup_b.data.requestId, result: "PARALLEL_B_BETA" });
    assert.equal(resultB?.success, true, `B: ${JSON.stringify(resultB)}`);
    await delay(200);
    assert.equal((await ctx.fake.requests()).length, 1, "no model request while A is still pending");
    const resultA = await s2.rpc.tools.handlePendingToolCall({ requestId: byName.pending_lookup_a.data.requestId, result: "PARALLEL_A_ALPHA" });
    assert.equal(resultA?.success, true, `A: ${JSON.stringify(resultA)}`);

    await waitIdle(ctx, rec2.events, "after answering both pending tool calls");
    const reply = rec2.events.filter((e) => e.type === "assistant.message").at(-1);
    assert.match(reply?.data.content ?? "", /^Both lookups completed successfully/);
    const tools = await toolMessagesOf(ctx, 1);
    assert.deepEqual(
        tools.map((m) => m.content),
        ["PARALLEL_A_ALPHA", "PARALLEL_B_BETA"],
        "tool results in call order, whatever order they were answered in"
    );
    await assertAllMatched(ctx);
});

test("resume with no pending work (should_resume_successfully_when_no_pending_work_exists)", T, async (t) => {
    const ctx = await replaySetup(t, "should_resume_successfully_when_no_pending_work_exists");
    const server = await startServer(ctx);

    const first = joinClient(t, server);
    const s1 = await first.createSession({ onPermissionRequest: approveAll });
    const sessionId = s1.sessionId;
    const a1 = await sendAndWait(ctx, s1, "Reply with exactly: NO_PENDING_TURN_ONE");
    assert.equal(a1?.data.content, "NO_PENDING_TURN_ONE");
    await s1.disconnect();
    await first.forceStop();

    const second = joinClient(t, server);
    const s2 = await second.resumeSession(sessionId, { continuePendingWork: true, onPermissionRequest: approveAll });
    assert.equal(s2.sessionId, sessionId);
    const a2 = await sendAndWait(ctx, s2, "Reply with exactly: NO_PENDING_TURN_TWO");
    assert.equal(a2?.data.content, "NO_PENDING_TURN_TWO");
    await assertAllMatched(ctx);
    assert.equal((await ctx.fake.requests()).length, 2);
    await s2.disconnect();
});

test("continuePendingWork true is reported in the resume event (should_report_continuependingwork_true_in_resume_event)", T, async (t) => {
    const ctx = await replaySetup(t, "should_report_continuependingwork_true_in_resume_event");
    const server = await startServer(ctx);

    const first = joinClient(t, server);
    const s1 = await first.createSession({ onPermissionRequest: approveAll });
    const sessionId = s1.sessionId;
    assert.equal((await sendAndWait(ctx, s1, "Reply with exactly: CONTINUE_PENDING_WORK_TRUE_TURN_ONE"))?.data.content, "CONTINUE_PENDING_WORK_TRUE_TURN_ONE");
    await s1.disconnect();
    await first.forceStop();

    const second = joinClient(t, server);
    const rec2 = recorder();
    const s2 = await second.resumeSession(sessionId, { continuePendingWork: true, onPermissionRequest: approveAll, onEvent: rec2.onEvent });
    const resume = lastResumeEvent(await s2.getEvents());
    assert.ok(resume, "session.resume is in the persisted history");
    assert.equal(resume.data.continuePendingWork, true, `session.resume: ${JSON.stringify(resume.data)}`);
    assert.equal(resume.data.sessionWasActive, false, `no run was in flight: ${JSON.stringify(resume.data)}`);

    assert.equal((await sendAndWait(ctx, s2, "Reply with exactly: CONTINUE_PENDING_WORK_TRUE_TURN_TWO"))?.data.content, "CONTINUE_PENDING_WORK_TRUE_TURN_TWO");
    await assertAllMatched(ctx);
    await s2.disconnect();
});

// With the original client force-stopped the resume is cold instead (the SDK e2e's "cold"
// scenario): the orphaned call is interrupted, as that e2e test asserts.
for (const variant of [{ name: "original client still connected", disconnect: false }]) {
    test(
        `warm resume with continuePendingWork false keeps the pending tool handleable (${variant.name}; should_keep_..._on_warm_resume_...)`,
        T,
        async (t) => {
            const ctx = await replaySetup(t, "should_keep_pending_external_tool_handleable_on_warm_resume_when_continuependingwork_is_false");
            const server = await startServer(ctx);

            const started = deferred();
            const release = deferred();
            let invocations = 0;
            const first = joinClient(t, server);
            const rec1 = recorder();
            const s1 = await first.createSession({
                tools: [
                    defineTool("resume_external_tool", {
                        description: "Looks up a value after resumption",
                        parameters: VALUE_SCHEMA,
                        handler: async ({ value }) => {
                            invocations++;
                            started.resolve(value);
                            return await release.promise;
                        },
                    }),
                ],
                onPermissionRequest: approveAll,
                onEvent: rec1.onEvent,
            });
            await s1.send({ prompt: "Use resume_external_tool with value 'beta', then reply with the result." });
            const toolEvent = await waitForEvent(rec1.events, "external_tool.requested", { timeout: 15_000 }).catch((e) => {
                throw ctx.explain(e);
            });
            assert.equal(await withTimeout(started.promise, 5_000, "the original handler did not start"), "beta");
            if (variant.disconnect) await first.forceStop();

            const second = joinClient(t, server);
            const rec2 = recorder();
            // Warm: the original registration still exists in the loaded session; no tools here.
            const s2 = await second.resumeSession(s1.sessionId, { continuePendingWork: false, onPermissionRequest: approveAll, onEvent: rec2.onEvent });
            const resume = lastResumeEvent(await s2.getEvents());
            assert.ok(resume, "session.resume is in the persisted history");
            assert.equal(resume.data.continuePendingWork, false, `session.resume: ${JSON.stringify(resume.data)}`);
            assert.equal(resume.data.sessionWasActive, true, `the run is mid-flight: ${JSON.stringify(resume.data)}`);

            const result = await s2.rpc.tools.handlePendingToolCall({ requestId: toolEvent.data.requestId, result: "EXTERNAL_RESUMED_BETA" });
            assert.equal(result?.success, true, `handlePendingToolCall: ${JSON.stringify(result)}`);
            await waitIdle(ctx, rec2.events, "after answering the pending tool call");
            const reply = rec2.events.filter((e) => e.type === "assistant.message").at(-1);
            assert.match(reply?.data.content ?? "", /^I tried to use `resume_external_tool`/);
            assert.deepEqual((await toolMessagesOf(ctx, 1)).map((m) => m.content), ["EXTERNAL_RESUMED_BETA"]);
            await assertAllMatched(ctx);
            assert.equal(invocations, 1, "the original handler ran exactly once");

            if (!variant.disconnect) {
                // The original client's late answer loses: the request is already answered.
                const late = await s1.rpc.tools.handlePendingToolCall({ requestId: toolEvent.data.requestId, result: "ORIGINAL_SHOULD_NOT_WIN" });
                assert.equal(late?.success, false, `late answer from the original client: ${JSON.stringify(late)}`);
                release.resolve("ORIGINAL_SHOULD_NOT_WIN");
                await delay(100);
                assert.equal((await ctx.fake.requests()).length, 2, "no extra model request");
            }
        }
    );
}

test("cold resume (new server process, same COPILOT_HOME): pending tool completed as interrupted, follow-up works (…_on_cold_resume_…)", T, async (t) => {
    const ctx = await replaySetup(t, "should_keep_pending_external_tool_handleable_on_cold_resume_when_continuependingwork_is_false");
    const server1 = await startServer(ctx);

    const started = deferred();
    let invocations = 0;
    const first = joinClient(t, server1);
    const rec1 = recorder();
    const s1 = await first.createSession({
        tools: [
            defineTool("resume_external_tool", {
                description: "Looks up a value after resumption",
                parameters: VALUE_SCHEMA,
                handler: async ({ value }) => {
                    invocations++;
                    started.resolve(value);
                    return await new Promise(() => {});
                },
            }),
        ],
        onPermissionRequest: approveAll,
        onEvent: rec1.onEvent,
    });
    const sessionId = s1.sessionId;
    await s1.send({ prompt: "Use resume_external_tool with value 'beta', then reply with the result." });
    const toolEvent = await waitForEvent(rec1.events, "external_tool.requested", { timeout: 15_000 }).catch((e) => {
        throw ctx.explain(e);
    });
    assert.equal(await withTimeout(started.promise, 5_000, "the original handler did not start"), "beta");

    // Kill the first server process (SIGKILL) and its client.
    const proc = server1.cliProcess;
    await first.forceStop();
    await server1.forceStop();
    await waitUntil(() => proc.exitCode !== null || proc.signalCode !== null, { timeout: 5_000, message: "first server did not exit" });

    const server2 = await startServer(ctx);
    const second = joinClient(t, server2);
    const rec2 = recorder();
    let resumedHandlerCalls = 0;
    const s2 = await second.resumeSession(sessionId, {
        continuePendingWork: false,
        onPermissionRequest: approveAll,
        tools: [
            defineTool("resume_external_tool", {
                description: "Looks up a value after resumption",
                parameters: VALUE_SCHEMA,
                handler: async () => {
                    resumedHandlerCalls++;
                    throw new Error("Resumed-session handler should not be invoked");
                },
            }),
        ],
        onEvent: rec2.onEvent,
    });
    const resume = lastResumeEvent(await s2.getEvents());
    assert.ok(resume, "session.resume is in the persisted history");
    assert.equal(resume.data.continuePendingWork, false, `session.resume: ${JSON.stringify(resume.data)}`);
    assert.equal(resume.data.sessionWasActive, false, `a cold resume has no run in flight: ${JSON.stringify(resume.data)}`);

    const result = await s2.rpc.tools.handlePendingToolCall({ requestId: toolEvent.data.requestId, result: "EXTERNAL_RESUMED_BETA" });
    assert.equal(result?.success, false, `the orphaned request was completed as interrupted: ${JSON.stringify(result)}`);
    await delay(100);
    assert.equal((await ctx.fake.requests()).length, 1, "orphan completion does not start a model turn on its own");

    const followUp = await sendAndWait(ctx, s2, "Reply with exactly: COLD_RESUMED_FOLLOWUP");
    assert.equal(followUp?.data.content, "COLD_RESUMED_FOLLOWUP");
    assert.deepEqual(
        (await toolMessagesOf(ctx, 1)).map((m) => m.content),
        ["The execution of this tool, or a previous tool was interrupted."],
        "the follow-up request carries the interrupted result for the orphaned call"
    );
    await assertAllMatched(ctx);
    assert.equal(invocations, 1, "the original handler ran once");
    assert.equal(resumedHandlerCalls, 0, "the resumed client's handler is never invoked");
    assert.ok(!rec2.events.some((e) => e.type === "external_tool.requested"), "no external_tool.requested after a cold resume");
});

// ---------------------------------------------------------------------------------------------
// Grace expiry: nobody comes back, the pending work is answered as "no one available".

const GRACE_MS = 300;

for (const kind of ["permission", "external tool"]) {
    test(`grace expiry (SKIPPER_PENDING_GRACE_MS=${GRACE_MS}): a pending ${kind} is answered as unavailable and the run ends`, T, async (t) => {
        const ctx = await setup(t);
        const toolName = kind === "permission" ? "grace_permission_tool" : "grace_external_tool";
        const args = { value: "gamma" };
        // The second reply is delayed so that a client resuming once the grace period has expired
        // (proved by the fake receiving request #2) still sees the end of the run live.
        await ctx.fake.replies([
            { tool_calls: [{ name: toolName, arguments: args }] },
            { delay_ms: 1500, then: { text: "Could not run the tool." } },
            { text: "Follow-up done." },
        ]);
        const server = await startServer(ctx, { SKIPPER_PENDING_GRACE_MS: String(GRACE_MS) });

        const waiting = deferred();
        let toolRuns = 0;
        const first = joinClient(t, server);
        const rec1 = recorder();
        const s1 = await first.createSession({
            tools: [
                defineTool(toolName, {
                    description: "A tool whose client goes away",
                    parameters: VALUE_SCHEMA,
                    handler: async () => {
                        toolRuns++;
                        waiting.resolve();
                        return await new Promise(() => {});
                    },
                }),
            ],
            onPermissionRequest:
                kind === "permission"
                    ? () => {
                          waiting.resolve();
                          return new Promise(() => {});
                      }
                    : approveAll,
            onEvent: rec1.onEvent,
        });
        const sessionId = s1.sessionId;
        await s1.send({ prompt: `Use ${toolName}.` });
        const pendingType = kind === "permission" ? "permission.requested" : "external_tool.requested";
        const pending = await waitForEvent(rec1.events, pendingType, { timeout: 15_000 }).catch((e) => {
            throw ctx.explain(e);
        });
        await withTimeout(waiting.promise, 5_000, "the original client's handler was not called");
        const toolCallId =
            kind === "permission" ? pending.data.permissionRequest?.toolCallId : pending.data.toolCallId;
        assert.equal(typeof toolCallId, "string", `toolCallId on ${pendingType}: ${JSON.stringify(pending.data)}`);

        const t0 = Date.now();
        await first.forceStop();
        await waitUntil(async () => (await ctx.fake.requests()).length >= 2, {
            timeout: 10_000,
            message: `the run did not continue after the grace period (${GRACE_MS} ms)`,
        });
        const waited = Date.now() - t0;
        assert.ok(waited >= GRACE_MS - 50, `the pending ${kind} stayed answerable for the grace period (continued after ${waited} ms)`);

        const expected =
            kind === "permission"
                ? "Permission denied and could not request permission from user"
                : `Failed to execute \`${toolName}\` tool with arguments: ${JSON.stringify(args)} due to error: Error: Tool execution failed`;
        assert.deepEqual((await toolMessagesOf(ctx, 1)).map((m) => m.content), [expected], "what the model is told");

        // Resume while the delayed model reply is still in flight: the end of the run is live.
        const second = joinClient(t, server);
        const rec2 = recorder();
        const s2 = await second.resumeSession(sessionId, { continuePendingWork: true, onPermissionRequest: approveAll, onEvent: rec2.onEvent });
        await waitIdle(ctx, rec2.events, "after the grace period expired");
        assert.equal(rec2.events.filter((e) => e.type === "assistant.message").at(-1)?.data.content, "Could not run the tool.");

        const history = await s2.getEvents();
        const done = history.find((e) => e.type === "tool.execution_complete" && e.data.toolCallId === toolCallId);
        assert.ok(done, `tool.execution_complete for ${toolCallId} in history: ${typesOf(history).join(", ")}`);
        assert.equal(done.data.success, false, JSON.stringify(done.data));
        if (kind === "permission") {
            assert.match(done.data.error?.message ?? "", /Permission denied and could not request permission from user/, JSON.stringify(done.data));
            const completed = history.find((e) => e.type === "permission.completed" && e.data.requestId === pending.data.requestId);
            assert.equal(
                completed?.data.result?.kind,
                "denied-no-approval-rule-and-could-not-request-from-user",
                `permission.completed: ${JSON.stringify(completed?.data)}`
            );
            const late = await s2.rpc.permissions.handlePendingPermissionRequest({ requestId: pending.data.requestId, result: { kind: "approve-once" } });
            assert.equal(late?.success, false, "the expired request is no longer answerable");
        } else {
            const late = await s2.rpc.tools.handlePendingToolCall({ requestId: pending.data.requestId, result: "TOO_LATE" });
            assert.equal(late?.success, false, "the expired request is no longer answerable");
        }
        assert.equal(toolRuns, kind === "permission" ? 0 : 1, "the original tool handler ran only if permission was not needed");

        const follow = await sendAndWait(ctx, s2, "Try something else.");
        assert.equal(follow?.data.content, "Follow-up done.", "the session is healthy after the expiry");
    });
}
