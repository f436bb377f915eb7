// Issue 3, "Concurrency": many sessions in one server run fully in parallel, one slow session
// never delays another's events, and events never cross sessions. Twenty sessions in one SDK
// client, each replaying its own recorded conversation (one generated snapshot holds twenty
// conversations that differ by prompt, so the fake only answers a session with its own script).

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, assertAllMatched, typesOf, waitForEvent, UUID_RE } from "../lib/harness.mjs";

const T = { timeout: 120_000 };
const N = 20;
const SLOW = 0; // session 0 runs a slow command

function conversation(i) {
    const prompt = `Session ${i}: run the marker command.`;
    const command = i === SLOW ? `sleep 3; echo marker-${i}` : `echo marker-${i}`;
    const args = JSON.stringify({ command, description: `Marker ${i}` });
    return {
        prompt,
        final: `Session ${i} saw marker-${i}.`,
        messages: [
            { role: "system", content: "${system}" },
            { role: "user", content: prompt },
            { role: "assistant", tool_calls: [{ id: "toolcall_0", type: "function", function: { name: "${shell}", arguments: args } }] },
            { role: "tool", tool_call_id: "toolcall_0", content: `marker-${i}\n<exited with exit code 0>` },
            { role: "assistant", content: `Session ${i} saw marker-${i}.` },
        ],
    };
}

test("20 concurrent sessions in one client: all complete, own conversations, no crossed events", T, async (t) => {
    const ctx = await setup(t);
    const convos = Array.from({ length: N }, (_, i) => conversation(i));
    const file = join(ctx.root, "twenty_sessions.yaml");
    // JSON is YAML; ${system} / ${shell} are the harness placeholders.
    await writeFile(file, JSON.stringify({ models: ["claude-sonnet-4.5"], conversations: convos.map((c) => ({ messages: c.messages })) }, null, 1));
    await ctx.fake.load(file, ctx.workDir);

    const client = ctx.client();
    const perSession = convos.map(() => []);
    const sessions = await Promise.all(
        convos.map((_, i) =>
            client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => perSession[i].push({ e, at: Date.now() }) })
        )
    );
    assert.equal(new Set(sessions.map((s) => s.sessionId)).size, N, "distinct session ids");

    const t0 = Date.now();
    const finals = await Promise.all(
        sessions.map((s, i) =>
            s.sendAndWait({ prompt: convos[i].prompt }, 60_000).catch((e) => {
                throw ctx.explain(e);
            })
        )
    );
    const total = Date.now() - t0;

    for (let i = 0; i < N; i++) {
        assert.equal(finals[i]?.data.content, convos[i].final, `session ${i} got its own final answer`);
        const events = perSession[i].map((x) => x.e);
        const types = typesOf(events).join(", ");
        assert.equal(events[0].type, "session.start");
        assert.equal(events[0].data.sessionId, sessions[i].sessionId, `session ${i}: its own session.start`);
        let lastPersisted = null;
        const seen = new Set(events.map((e) => e.id));
        for (let k = 0; k < events.length; k++) {
            // A parent this client never saw is a usage record: in the log, never sent.
            if (events[k].parentId && events[k].parentId !== lastPersisted && !seen.has(events[k].parentId)) lastPersisted = events[k].parentId;
            assert.equal(events[k].parentId, lastPersisted, `session ${i}: parent is the latest persisted event at #${k} ${events[k].type}`);
            if (events[k].ephemeral !== true) lastPersisted = events[k].id;
        }
        assert.match(events[0].id, UUID_RE);
        const users = events.filter((e) => e.type === "user.message");
        assert.deepEqual(users.map((u) => u.data.content), [convos[i].prompt], `session ${i}: only its own user.message: ${types}`);
        const msgs = events.filter((e) => e.type === "assistant.message");
        assert.equal(msgs.at(-1).data.content, convos[i].final);
        const complete = events.find((e) => e.type === "tool.execution_complete");
        assert.match(complete?.data.result?.content ?? "", new RegExp(`^marker-${i}\\n`), `session ${i}: its own tool output`);
        const others = JSON.stringify(events).match(/marker-(\d+)/g) ?? [];
        assert.ok(others.every((m) => m === `marker-${i}`), `session ${i}: no other session's data in its events (${[...new Set(others)]})`);
        assert.equal(events.filter((e) => e.type === "session.idle").length, 1, `session ${i}: one idle`);
        assert.equal(events.filter((e) => e.type === "assistant.turn_start").length, 2, `session ${i}: two turns`);
    }

    // The slow session does not hold the others back: they are all idle before it is.
    const idleAt = perSession.map((evs) => evs.find((x) => x.e.type === "session.idle").at);
    const slowIdle = idleAt[SLOW];
    const fastLatest = Math.max(...idleAt.filter((_, i) => i !== SLOW));
    assert.ok(fastLatest < slowIdle, `all fast sessions finished (${fastLatest - t0} ms) before the slow one (${slowIdle - t0} ms)`);
    assert.ok(fastLatest - t0 < 2_500, `fast sessions were not serialised behind the 3 s command (${fastLatest - t0} ms)`);
    assert.ok(total < 30_000, `all 20 completed in ${total} ms`);

    // Each model request carried the x-client-session-id of the session that made it.
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2 * N, "two model calls per session");
    for (const r of reqs) {
        const user = r.body.messages.find((m) => m.role === "user");
        const i = Number(/Session (\d+):/.exec(JSON.stringify(user.content))?.[1]);
        assert.equal(r.headers["x-client-session-id"], sessions[i].sessionId, `request of session ${i} names its session`);
    }
    await assertAllMatched(ctx);
});

test("a session hanging on the model does not delay another session's turns", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ hang: true }]);
    const client = ctx.client();
    const evA = [];
    const evB = [];
    const a = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => evA.push(e) });
    const b = await client.createSession({ onPermissionRequest: approveAll, onEvent: (e) => evB.push(e) });
    await a.send({ prompt: "Hang please" });
    await waitForEvent(evA, "assistant.turn_start");
    await ctx.fake.replies([{ text: "B is fine." }, { text: "B again." }]);
    const t0 = Date.now();
    const r1 = await b.sendAndWait({ prompt: "First B" }, 20_000);
    const r2 = await b.sendAndWait({ prompt: "Second B" }, 20_000);
    assert.equal(r1?.data.content, "B is fine.");
    assert.equal(r2?.data.content, "B again.");
    assert.ok(Date.now() - t0 < 5_000, "B's turns are not blocked by A's hanging call");
    assert.ok(!evA.some((e) => e.type === "session.idle"), "A is still busy");
    assert.ok(!evA.some((e) => e.type === "user.message" && e.data.content.includes("B")), "no B events in A");
    await a.abort();
    await waitForEvent(evA, "session.idle", { timeout: 10_000 });
});
