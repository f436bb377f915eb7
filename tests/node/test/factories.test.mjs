// Issue 34: workflows ("factories" in the SDKs' names) an extension declares. The extension
// is a real program using the SDK's `defineFactory` / `joinSession({ factories })`; the client
// runs them through `session.factory.*` as an SDK user would, and the runtime sends each body to
// the extension (`factory.execute`), keeps its progress and journal, resumes failed runs under
// the same id, cancels running ones (the body's abort signal fires), runs the sub-agents a body
// asks for on the model, and tells the session when a run ends.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";

import { approveAll, FactoryResumeError } from "@github/copilot-sdk";
import { recordEvents, setup, waitForEvent, waitUntil } from "../lib/harness.mjs";

const T = { timeout: 90_000 };
const SDK_DIST = dirname(createRequire(import.meta.url).resolve("@github/copilot-sdk"));

const EXTENSION = `
import { existsSync, writeFileSync, appendFileSync } from "node:fs";
import { defineFactory, joinSession } from "@github/copilot-sdk/extension";
const marker = (name) => new URL("./" + name, import.meta.url);
const echo = defineFactory({
    meta: { name: "argument-echo", description: "Echo the arguments.", phases: [{ title: "Read" }, { title: "Write" }],
            argsSchema: { type: ["object", "array", "null"] } },
    run: async (ctx) => {
        ctx.phase("Read");
        ctx.log("reading " + JSON.stringify(ctx.args));
        await ctx.step("k", () => 1);
        ctx.phase("Write");
        return ctx.args;
    },
});
const failsOnce = defineFactory({
    meta: { name: "fails-once", description: "Fails, then succeeds.", phases: [] },
    run: async (ctx) => {
        const stepped = await ctx.step("before", () => { appendFileSync(marker("produced"), "x"); return "kept"; });
        if (!existsSync(marker("attempted"))) { writeFileSync(marker("attempted"), "1"); throw new Error("first attempt failed"); }
        return "resumed with " + stepped;
    },
});
const parked = defineFactory({
    meta: { name: "parked", description: "Waits until aborted.", phases: [] },
    run: async (ctx) => {
        writeFileSync(marker("entered"), "1");
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
        writeFileSync(marker("aborted"), "1");
        return "aborted";
    },
});
const withAgent = defineFactory({
    meta: { name: "with-agent", description: "Asks a sub-agent.", phases: [] },
    run: async (ctx) => ({ agent: await ctx.agent("Say hi to the factory.", { label: "greeter" }) }),
});
await joinSession({ factories: [echo, failsOnce, parked, withAgent] });
writeFileSync(marker("ready"), "ready");
`;

async function sessionWithFactories(t) {
    const ctx = await setup(t);
    const dir = join(ctx.workDir, ".github", "extensions", "factories");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "extension.mjs"), EXTENSION);
    execFileSync("git", ["init", "--quiet"], { cwd: ctx.workDir });
    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        requestExtensions: true,
        extensionSdkPath: SDK_DIST,
    });
    const events = recordEvents(session);
    await waitUntil(() => existsSync(join(dir, "ready")), { timeout: 30_000, message: "the extension never joined" });
    return { ctx, session, events, dir };
}

test("a factory runs in its extension: result, progress, phases, and the session is told", T, async (t) => {
    const { ctx, session, events } = await sessionWithFactories(t);
    await ctx.fake.replies([{ text: "noted" }]);
    const result = await session.factory.run("argument-echo", { args: { source: "sdk", count: 11 } });
    assert.equal(result.status, "completed");
    assert.deepEqual(result.result, { source: "sdk", count: 11 });
    const arrayRun = await session.factory.run("argument-echo", { args: [1, "two", false] });
    assert.deepEqual(arrayRun.result, [1, "two", false]);

    const detail = await session.factory.getRunDetail(result.runId);
    assert.equal(detail.factoryName, "argument-echo");
    assert.deepEqual(detail.phases.map((p) => [p.title, p.status, p.entryCount]), [["Read", "completed", 1], ["Write", "completed", 1]]);
    assert.deepEqual(detail.progress.records.map((r) => [r.kind, r.text, r.phaseId]), [
        ["phase", "Read", "p0"], ["log", 'reading {"source":"sdk","count":11}', "p0"], ["phase", "Write", "p1"],
    ]);
    const runs = await session.factory.listRuns();
    assert.deepEqual(runs.map((r) => [r.runId, r.status]), [[result.runId, "completed"], [arrayRun.runId, "completed"]]);
    assert.ok(typesOfRun(events, result.runId).includes("factory.run_settled"), "the run's end is announced");

    // The session hears of the run's end as the original tells it: a notice that starts a turn.
    await waitUntil(async () => (await ctx.fake.requests()).length > 0, { message: "no turn for the notice" });
    const first = (await ctx.fake.requests())[0].body.messages.map((m) => JSON.stringify(m.content)).join("\n");
    assert.match(first, new RegExp(`Factory \\\\"argument-echo\\\\" run ${result.runId} reached terminal status completed`));
    const notice = events.find((e) => e.type === "system.notification");
    assert.equal(notice?.data.kind.type, "factory_completed");

    const unknown = await session.factory.run("no-such-factory").catch((e) => e);
    assert.match(String(unknown.message), /No factory registered with name "no-such-factory"/);
    const badArgs = await session.factory.run("argument-echo", { args: "text" }).catch((e) => e);
    assert.match(String(badArgs.message), /arguments are invalid: \$ should be object or array or null but is string/);
});

test("a failed factory resumes under its id and reuses its journal; settled ones do not resume", T, async (t) => {
    const { session, dir } = await sessionWithFactories(t);
    const failed = await session.factory.run("fails-once");
    assert.equal(failed.status, "error");
    assert.match(failed.error, /first attempt failed/);
    const resumed = await session.factory.resume(failed.runId);
    assert.deepEqual([resumed.runId, resumed.status, resumed.result], [failed.runId, "completed", "resumed with kept"]);
    assert.equal(readFileSync(join(dir, "produced"), "utf8"), "x", "the journaled step ran once");

    const again = await session.factory.resume(failed.runId).catch((e) => e);
    assert.ok(again instanceof FactoryResumeError, String(again));
    assert.equal(again.code, "non_resumable");
    const missing = await session.factory.resume("00000000-0000-0000-0000-000000000000").catch((e) => e);
    assert.ok(missing instanceof FactoryResumeError, String(missing));
    assert.equal(missing.code, "not_found");
});

test("cancelling a running factory aborts its body and the run stays cancelled", T, async (t) => {
    const { session, dir } = await sessionWithFactories(t);
    const running = session.factory.run("parked");
    await waitUntil(() => existsSync(join(dir, "entered")), { timeout: 20_000, message: "the body never started" });
    const [run] = await session.factory.listRuns();
    assert.equal(run.status, "running");
    const cancelled = await session.factory.cancel(run.runId);
    assert.equal(cancelled.status, "cancelled");
    assert.equal((await running).status, "cancelled");
    await waitUntil(() => existsSync(join(dir, "aborted")), { timeout: 10_000, message: "the body was not aborted" });
    assert.equal((await session.factory.getRun(run.runId)).status, "cancelled", "the body's late answer changes nothing");
});

test("a factory's sub-agent runs on the model and its answer is the body's", T, async (t) => {
    const { ctx, session, events } = await sessionWithFactories(t);
    await ctx.fake.replies([{ text: "Hi from the agent" }, { text: "noted" }]);
    const result = await session.factory.run("with-agent");
    assert.deepEqual([result.status, result.result], ["completed", { agent: "Hi from the agent" }]);
    const asked = (await ctx.fake.requests())[0].body.messages.map((m) => JSON.stringify(m.content)).join("\n");
    assert.match(asked, /Say hi to the factory\./);
    const started = await waitForEvent(events, (e) => e.type === "subagent.started");
    assert.equal(started.data.agentDisplayName, "greeter");
    const detail = await session.factory.getRunDetail(result.runId);
    assert.deepEqual(detail.agents.map((a) => [a.label, a.status]), [["greeter", "completed"]]);
    assert.equal(detail.totalSpawnedAgentCount, 1);
});

function typesOfRun(events, runId) {
    return events.filter((e) => e.data?.runId === runId).map((e) => e.type);
}
