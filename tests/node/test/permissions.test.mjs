// Issue 4, "Permissions", through the SDK's onPermissionRequest: approve-all, explicit
// rejection (with feedback), user-not-available, a throwing handler, concurrent requests from
// parallel tools, toolCallId on every request, slow async handlers, the server-side approve-all
// short circuit (session.rpc.permissions.setApproveAll), shell and write request payloads (a
// real unified diff), and a handler given on resume. Replays the permissions recordings.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";

import { approveAll, defineTool } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, typesOf, waitForEvent, nextEvent, delay } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

async function replaySetup(t, snapshot, prepare) {
    const ctx = await setup(t);
    if (prepare) await prepare(ctx.workDir);
    await ctx.fake.load(`permissions/${snapshot}.yaml`, ctx.workDir);
    return ctx;
}

function completions(events) {
    return events.filter((e) => e.type === "tool.execution_complete");
}

test("approve-all handler (should_work_with_approve_all_permission_handler)", T, async (t) => {
    const ctx = await replaySetup(t, "should_work_with_approve_all_permission_handler");
    const session = await ctx.client().createSession({ onPermissionRequest: approveAll });
    const answer = await sendAndWait(ctx, session, "What is 2+2?");
    assert.equal(answer?.data.content, "2+2 = 4");
    await assertAllMatched(ctx);
});

test("shell request: toolCallId, kind shell, command fields; approved → completed (should_receive_toolcallid_in_permission_requests)", T, async (t) => {
    const ctx = await replaySetup(t, "should_receive_toolcallid_in_permission_requests");
    const requests = [];
    const events = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: (req, invocation) => {
            requests.push({ req, sessionId: invocation.sessionId });
            return { kind: "approve-once" };
        },
        onEvent: (e) => events.push(e),
    });
    const answer = await sendAndWait(ctx, session, "Run 'echo test'");
    assert.equal(answer?.data.content, "✓ Command output: `test`");
    await assertAllMatched(ctx);

    assert.equal(requests.length, 1, "one permission request (unknown tools need none)");
    const { req, sessionId } = requests[0];
    assert.equal(sessionId, session.sessionId, "invocation.sessionId");
    assert.equal(typeof req.toolCallId, "string");
    assert.ok(req.toolCallId.length > 0);
    const bashStart = events.find((e) => e.type === "tool.execution_start" && e.data.toolName === "bash");
    assert.equal(req.toolCallId, bashStart.data.toolCallId, "permission toolCallId == tool.execution_start toolCallId");
    assert.equal(req.kind, "shell");
    assert.equal(req.fullCommandText, "echo test");
    assert.equal(typeof req.intention, "string");
    assert.ok(Array.isArray(req.commands) && req.commands.some((c) => c.identifier === "echo"), `commands[] names echo: ${JSON.stringify(req.commands)}`);
    assert.ok(Array.isArray(req.possiblePaths), "possiblePaths[] present");

    const requested = events.find((e) => e.type === "permission.requested");
    const completed = events.find((e) => e.type === "permission.completed");
    assert.ok(requested && completed, `permission events: ${typesOf(events)}`);
    assert.equal(completed.data.requestId, requested.data.requestId);
    assert.equal(completed.data.toolCallId, req.toolCallId);
    assert.equal(completed.data.result?.kind, "approved", "approve-once is recorded as approved");
    const iReq = events.indexOf(requested);
    assert.ok(events.indexOf(bashStart) < iReq, "tool.execution_start before permission.requested");
    const bashDone = completions(events).find((e) => e.data.toolCallId === req.toolCallId);
    assert.ok(events.indexOf(completed) < events.indexOf(bashDone), "permission.completed before the tool completes");
    assert.equal(bashDone.data.success, true);
});

test(
    "explicit reject: tool does not run, 'user rejected', the loop stops (should_deny_permission_when_handler_returns_denied)",
    T,
    async (t) => {
        const ctx = await replaySetup(t, "should_deny_permission_when_handler_returns_denied", (dir) =>
            writeFile(join(dir, "protected.txt"), "protected content")
        );
        const events = [];
        const session = await ctx.client().createSession({ onPermissionRequest: () => ({ kind: "reject" }), onEvent: (e) => events.push(e) });
        await sendAndWait(ctx, session, "Edit protected.txt and replace 'protected' with 'hacked'.");
        await assertAllMatched(ctx);
        assert.equal(await readFile(join(ctx.workDir, "protected.txt"), "utf8"), "protected content");
        const rejected = completions(events).find((e) => !e.data.success && /user rejected/i.test(e.data.error?.message ?? ""));
        assert.ok(rejected, `a tool completion says the user rejected it: ${JSON.stringify(completions(events).map((e) => e.data))}`);
        const completed = events.find((e) => e.type === "permission.completed");
        assert.equal(completed?.data.result?.kind, "denied-interactively-by-user");
        assert.equal((await ctx.fake.requests()).length, 1, "no model call after the user rejected a tool (as recorded)");
        assert.equal(events.at(-1).type, "session.idle");
    }
);

test("reject with feedback: the model sees 'The user rejected this tool call. User feedback: …' and the turn goes on", T, async (t) => {
    const ctx = await setup(t);
    const marker = join(ctx.workDir, "never.txt");
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command: `echo x > ${marker}`, description: "write marker" } }] },
        { text: "Understood." },
    ]);
    const events = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: () => ({ kind: "reject", feedback: "no way" }),
        onEvent: (e) => events.push(e),
    });
    const answer = await sendAndWait(ctx, session, "Write the marker.");
    // As the original 1.0.102: the user's reasons go to the model in the same turn.
    assert.equal((await ctx.fake.requests()).length, 2, "the turn went on after the rejection");
    assert.equal(answer?.data.content, "Understood.");
    assert.ok(!existsSync(marker), "the rejected command never ran");
    const done = completions(events)[0];
    assert.equal(done.data.success, false);
    assert.equal(done.data.error?.code, "denied", `error.code (${JSON.stringify(done.data.error)})`);
    const completed = events.find((e) => e.type === "permission.completed");
    assert.equal(completed?.data.result?.kind, "denied-interactively-by-user");
    assert.equal(completed.data.result.feedback, "no way");
    const reqs = await ctx.fake.requests();
    const tool = reqs[1].body.messages.find((m) => m.role === "tool");
    assert.equal(tool?.content, "The user rejected this tool call. User feedback: no way");
});

test("user-not-available → 'Permission denied and could not request permission from user' (replayed)", T, async (t) => {
    const ctx = await replaySetup(t, "should_deny_tool_operations_when_handler_explicitly_denies");
    const events = [];
    const session = await ctx.client().createSession({ onPermissionRequest: () => ({ kind: "user-not-available" }), onEvent: (e) => events.push(e) });
    const answer = await sendAndWait(ctx, session, "Run 'node --version'");
    assert.match(answer?.data.content ?? "", /^I don't have permission to execute commands/);
    await assertAllMatched(ctx);
    const denied = completions(events).find((e) => !e.data.success && e.data.error?.message.includes("Permission denied"));
    assert.ok(denied, "tool completion carries the denial");
    assert.equal(
        events.find((e) => e.type === "permission.completed")?.data.result?.kind,
        "denied-no-approval-rule-and-could-not-request-from-user"
    );
});

test("user-not-available handler given on resume (…_explicitly_denies_after_resume, replayed)", T, async (t) => {
    const ctx = await replaySetup(t, "should_deny_tool_operations_when_handler_explicitly_denies_after_resume");
    const client = ctx.client();
    const s1 = await client.createSession({ onPermissionRequest: approveAll });
    assert.equal((await sendAndWait(ctx, s1, "What is 1+1?"))?.data.content, "1+1 equals 2.");
    const events = [];
    const s2 = await client.resumeSession(s1.sessionId, { onPermissionRequest: () => ({ kind: "user-not-available" }), onEvent: (e) => events.push(e) });
    const answer = await sendAndWait(ctx, s2, "Run 'node --version'");
    assert.match(answer?.data.content ?? "", /^I don't have permission to run commands/);
    assert.ok(completions(events).some((e) => !e.data.success && e.data.error?.message.includes("Permission denied")));
    await assertAllMatched(ctx);
});

test("a throwing handler denies the request (should_handle_permission_handler_errors_gracefully)", T, async (t) => {
    const ctx = await replaySetup(t, "should_handle_permission_handler_errors_gracefully");
    const events = [];
    const origError = console.error;
    console.error = () => {}; // the SDK logs the handler error
    t.after(() => (console.error = origError));
    const session = await ctx.client().createSession({
        onPermissionRequest: () => {
            throw new Error("Handler error");
        },
        onEvent: (e) => events.push(e),
    });
    const answer = await sendAndWait(ctx, session, "Run 'echo test'. If you can't, say 'failed'.");
    assert.equal(answer?.data.content, "failed");
    await assertAllMatched(ctx);
    const reqs = await ctx.fake.requests();
    const tools = reqs.at(-1).body.messages.filter((m) => m.role === "tool");
    assert.ok(tools.some((m) => m.content === "Permission denied and could not request permission from user"), JSON.stringify(tools));
});

test("concurrent permission requests from parallel tools resolve independently (replayed)", T, async (t) => {
    const ctx = await replaySetup(t, "should_handle_concurrent_permission_requests_from_parallel_tools");
    let resolveFirst;
    let resolveSecond;
    const firstArrived = new Promise((r) => (resolveFirst = r));
    const secondArrived = new Promise((r) => (resolveSecond = r));
    const requests = [];
    const called = { first: false, second: false };
    const errors = [];
    const tool = (name, key) =>
        defineTool(name, {
            description: `${key === "first" ? "First" : "Second"} concurrent permission test tool`,
            parameters: { type: "object", properties: {} },
            handler: async () => {
                called[key] = true;
                return { textResultForLlm: `${name} completed after permission approval`, resultType: "rejected" };
            },
        });
    const events = [];
    const session = await ctx.client().createSession({
        tools: [tool("first_permission_tool", "first"), tool("second_permission_tool", "second")],
        availableTools: ["first_permission_tool", "second_permission_tool"],
        onPermissionRequest: async (req) => {
            requests.push(req);
            if (requests.length === 1) resolveFirst();
            if (requests.length === 2) resolveSecond();
            await Promise.all([firstArrived, secondArrived]); // both outstanding at once
            return { kind: "approve-once" };
        },
        onEvent: (e) => {
            events.push(e);
            if (e.type === "tool.execution_complete" && e.data.error?.message) errors.push(e.data.error.message);
        },
    });
    const idle = nextEvent(session, "session.idle", 30_000);
    await session.send({ prompt: "Call both first_permission_tool and second_permission_tool in the same turn. Do not call any other tools." });
    await Promise.race([Promise.all([firstArrived, secondArrived]), delay(20_000).then(() => assert.fail(`both requests outstanding at once (${requests.length})`))]);
    await idle.catch((e) => {
        throw ctx.explain(e);
    });
    await assertAllMatched(ctx);
    assert.equal(requests.length, 2);
    assert.deepEqual(requests.map((r) => r.kind), ["custom-tool", "custom-tool"]);
    assert.deepEqual(requests.map((r) => r.toolName).sort(), ["first_permission_tool", "second_permission_tool"]);
    assert.notEqual(requests[0].toolCallId, requests[1].toolCallId);
    assert.ok(called.first && called.second, "both tools ran");
    assert.ok(errors.some((m) => m.includes("first_permission_tool completed after permission approval")));
    assert.ok(errors.some((m) => m.includes("second_permission_tool completed after permission approval")));
    assert.equal((await ctx.fake.requests()).length, 1, "a rejected tool result stops the loop");
    const reqTools = (await ctx.fake.requests())[0].body.tools.map((x) => x.function.name).sort();
    assert.deepEqual(reqTools, ["first_permission_tool", "second_permission_tool"], "availableTools limits the tool list");
});

test("slow async handler: the tool waits for the decision (should_wait_for_slow_permission_handler)", T, async (t) => {
    const ctx = await replaySetup(t, "should_wait_for_slow_permission_handler");
    let started;
    const handlerStarted = new Promise((r) => (started = r));
    let release;
    const gate = new Promise((r) => (release = r));
    const lifecycle = [];
    let count = 0;
    const session = await ctx.client().createSession({
        onPermissionRequest: async (req) => {
            count++;
            lifecycle.push(["permission-start", req.toolCallId]);
            started();
            await gate;
            lifecycle.push(["permission-complete", req.toolCallId]);
            return { kind: "approve-once" };
        },
        onEvent: (e) => {
            if (e.type === "tool.execution_start") lifecycle.push(["tool-start", e.data.toolCallId]);
            if (e.type === "tool.execution_complete") lifecycle.push(["tool-complete", e.data.toolCallId]);
        },
    });
    const idle = nextEvent(session, "session.idle", 30_000);
    await session.send({ prompt: "Run 'echo slow_handler_test'" });
    await handlerStarted;
    await delay(700);
    assert.ok(!lifecycle.some(([p]) => p === "tool-complete"), "no tool completes while the handler is pending");
    release();
    await idle.catch((e) => {
        throw ctx.explain(e);
    });
    await assertAllMatched(ctx);
    assert.equal(count, 1);
    const pc = lifecycle.findIndex(([p]) => p === "permission-complete");
    const tc = lifecycle.findIndex(([p]) => p === "tool-complete");
    assert.ok(pc >= 0 && tc > pc, `permission completes before the tool: ${JSON.stringify(lifecycle)}`);
});

test("async handler (should_handle_async_permission_handler)", T, async (t) => {
    const ctx = await replaySetup(t, "should_handle_async_permission_handler");
    const requests = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: async (req) => {
            requests.push(req);
            await Promise.resolve();
            return { kind: "approve-once" };
        },
    });
    const answer = await sendAndWait(ctx, session, "Run 'echo test' and tell me what happens");
    assert.match(answer?.data.content ?? "", /^The command ran successfully/);
    assert.ok(requests.length > 0);
    await assertAllMatched(ctx);
});

test("setApproveAll short-circuits the handler (replayed)", T, async (t) => {
    const ctx = await replaySetup(t, "should_short_circuit_permission_handler_when_set_approve_all_enabled");
    let handlerCalled = false;
    const events = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: () => {
            handlerCalled = true;
            return { kind: "approve-once" };
        },
        onEvent: (e) => events.push(e),
    });
    const res = await session.rpc.permissions.setApproveAll({ enabled: true });
    assert.equal(res?.success, true);
    const answer = await sendAndWait(ctx, session, "Run 'echo test' and tell me what happens");
    assert.match(answer?.data.content ?? "", /output "test"/);
    assert.equal(handlerCalled, false, "the handler is not consulted");
    assert.equal(events.filter((e) => e.type === "permission.requested").length, 0, "no permission.requested");
    await assertAllMatched(ctx);
    assert.equal((await session.rpc.permissions.setApproveAll({ enabled: false }))?.success, true);
});

test("write request carries fileName, a real unified diff and the new contents (replayed)", T, async (t) => {
    const ctx = await replaySetup(t, "should_invoke_permission_handler_for_write_operations", (dir) =>
        writeFile(join(dir, "test.txt"), "original content")
    );
    const requests = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: (req, inv) => {
            requests.push(req);
            assert.equal(inv.sessionId, session.sessionId);
            return { kind: "approve-once" };
        },
    });
    const answer = await sendAndWait(ctx, session, "Edit test.txt and replace 'original' with 'modified'");
    assert.match(answer?.data.content ?? "", /^Done!/);
    await assertAllMatched(ctx);
    assert.equal(await readFile(join(ctx.workDir, "test.txt"), "utf8"), "modified content");
    const writes = requests.filter((r) => r.kind === "write");
    assert.equal(writes.length, 1, `one write request: ${JSON.stringify(requests.map((r) => r.kind))}`);
    const w = writes[0];
    assert.equal(w.fileName, join(ctx.workDir, "test.txt"));
    assert.equal(typeof w.intention, "string");
    assert.equal(w.newFileContents, "modified content");
    assert.equal(typeof w.toolCallId, "string");
    const lines = w.diff.split("\n");
    assert.ok(lines.some((l) => /^--- /.test(l)) && lines.some((l) => /^\+\+\+ /.test(l)), `diff has file headers:\n${w.diff}`);
    assert.ok(lines.some((l) => /^@@ -\d+(,\d+)? \+\d+(,\d+)? @@/.test(l)), `diff has a hunk header:\n${w.diff}`);
    assert.ok(lines.includes("-original content"), `diff removes the old line:\n${w.diff}`);
    assert.ok(lines.includes("+modified content"), `diff adds the new line:\n${w.diff}`);
    const reads = requests.filter((r) => r.kind === "read");
    for (const r of reads) assert.equal(typeof r.path, "string");
});

test("handler given on resume is used (should_resume_session_with_permission_handler)", T, async (t) => {
    const ctx = await replaySetup(t, "should_resume_session_with_permission_handler");
    const client = ctx.client();
    const s1 = await client.createSession({ onPermissionRequest: approveAll });
    assert.equal((await sendAndWait(ctx, s1, "What is 1+1?"))?.data.content, "1+1 = 2");
    const requests = [];
    const s2 = await client.resumeSession(s1.sessionId, {
        onPermissionRequest: (req) => {
            requests.push(req);
            return { kind: "approve-once" };
        },
    });
    const answer = await sendAndWait(ctx, s2, "Run 'echo resumed' for me");
    assert.equal(answer?.data.content, 'Done! The command output "resumed".');
    assert.ok(requests.some((r) => r.kind === "shell"), "the resumed session's handler was asked");
    await assertAllMatched(ctx);
});

test("no-result: the handler is asked, nothing is answered, abort still ends the run", T, async (t) => {
    const ctx = await replaySetup(t, "should_deny_permission_with_noresult_kind");
    let asked;
    const askedP = new Promise((r) => (asked = r));
    const events = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: () => {
            asked();
            return { kind: "no-result" };
        },
        onEvent: (e) => events.push(e),
    });
    await session.send({ prompt: "Run 'node --version'" });
    await Promise.race([askedP, delay(20_000).then(() => assert.fail("handler not called"))]);
    await delay(300);
    assert.ok(!events.some((e) => e.type === "permission.completed"), "still pending");
    await session.abort();
    await waitForEvent(events, "session.idle", { timeout: 10_000 });
    await assertAllMatched(ctx);
});

test("legacy and current result kinds: approved runs the tool, every denial keeps it from running", T, async (t) => {
    const cases = [
        { result: { kind: "approved" }, runs: true, recorded: "approved" },
        // The recorded kind for approve-for-session was not probed; either spelling is accepted.
        { result: { kind: "approve-for-session" }, runs: true, recorded: ["approved", "approved-for-session"] },
        {
            result: { kind: "denied-interactively-by-user", feedback: "not today" },
            runs: false,
            recorded: "denied-interactively-by-user",
            text: "The user rejected this tool call. User feedback: not today",
        },
        {
            result: { kind: "denied-no-approval-rule-and-could-not-request-from-user" },
            runs: false,
            recorded: "denied-no-approval-rule-and-could-not-request-from-user",
            text: "Permission denied and could not request permission from user",
        },
        // The schema requires `rules` with this kind; a decision without it is refused (-32602).
        { result: { kind: "denied-by-rules", rules: [] }, runs: false, recorded: "denied-by-rules" },
    ];
    const ctx = await setup(t);
    for (const [i, c] of cases.entries()) {
        await ctx.fake.reset();
        const marker = join(ctx.workDir, `marker-${i}.txt`);
        await ctx.fake.replies([
            { tool_calls: [{ name: "bash", arguments: { command: `echo ran > ${marker}; echo ok${i}`, description: "marker" } }] },
            { text: `Done ${i}.` },
            { text: `Spare ${i}.` },
        ]);
        const events = [];
        const session = await ctx.client().createSession({ onPermissionRequest: () => c.result, onEvent: (e) => events.push(e) });
        await sendAndWait(ctx, session, `Case ${i}`);
        if ((await ctx.fake.requests()).length === 1) await sendAndWait(ctx, session, `Case ${i} again`);
        const what = `result ${JSON.stringify(c.result)}`;
        assert.equal(existsSync(marker), c.runs, `${what}: the tool ${c.runs ? "ran" : "did not run"}`);
        const done = completions(events)[0];
        assert.equal(done?.data.success, c.runs, `${what}: tool.execution_complete.success`);
        const completed = events.find((e) => e.type === "permission.completed");
        assert.ok(
            [c.recorded].flat().includes(completed?.data.result?.kind),
            `${what}: permission.completed kind ${JSON.stringify(completed?.data)} (expected ${c.recorded})`
        );
        const tool = (await ctx.fake.requests())[1].body.messages.find((m) => m.role === "tool");
        if (c.runs) assert.equal(tool?.content, `ok${i}\n<exited with exit code 0>`, what);
        else if (c.text) assert.equal(tool?.content, c.text, what);
        else assert.ok(tool?.content?.length > 0, `${what}: the model is told (${tool?.content})`);
    }
});
