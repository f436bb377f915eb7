// Issue 2, item 5: list / last id / metadata / messages / log / delete / disconnect, and
// resuming a session from a brand-new client process that continues the conversation.

import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, waitUntil, unmatchedExchanges, delay, UUID_RE } from "../lib/harness.mjs";

const T = { timeout: 90_000 };
const MISSING_ID = "00000000-0000-4000-8000-000000000000";

test("listSessions, getLastSessionId and getSessionMetadata", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("session/should_list_sessions.yaml", ctx.workDir);
    const client = ctx.client();

    const lifecycle = [];
    client.onLifecycle((e) => lifecycle.push(e));
    const s1 = await client.createSession({ onPermissionRequest: approveAll });
    await waitUntil(() => lifecycle.some((e) => e.type === "session.created" && e.sessionId === s1.sessionId), {
        message: `session.lifecycle session.created for ${s1.sessionId}: ${JSON.stringify(lifecycle)}`,
    });
    const created = lifecycle.find((e) => e.sessionId === s1.sessionId);
    assert.ok(created.metadata?.startTime instanceof Date, "session.created carries metadata.startTime");
    assert.equal(
        await client.getSessionMetadata(s1.sessionId),
        undefined,
        "a session without messages has no metadata yet (like the CLI)"
    );
    // Only sessions with at least one user message are listed.
    const early = await client.listSessions();
    assert.ok(!early.some((s) => s.sessionId === s1.sessionId), "a session without messages is not listed");
    assert.equal(await client.getLastSessionId(), undefined, "no listed session yet → no last id");

    const hello = await sendAndWait(ctx, s1, "Say hello");
    assert.equal(
        hello?.data.content,
        "Hello! I'm GitHub Copilot CLI, ready to help you with your software engineering tasks. What can I assist you with today?"
    );
    await delay(50);
    const s2 = await client.createSession({ onPermissionRequest: approveAll });
    const bye = await sendAndWait(ctx, s2, "Say goodbye");
    assert.equal(bye?.data.content, "Goodbye! Feel free to return anytime you need help. 👋");

    const list = await client.listSessions();
    for (const [s, prompt] of [
        [s1, "Say hello"],
        [s2, "Say goodbye"],
    ]) {
        const entry = list.find((x) => x.sessionId === s.sessionId);
        assert.ok(entry, `session ${s.sessionId} is listed: ${JSON.stringify(list)}`);
        assert.ok(!Number.isNaN(entry.startTime.getTime()), "startTime is a date");
        assert.ok(!Number.isNaN(entry.modifiedTime.getTime()), "modifiedTime is a date");
        assert.ok(entry.modifiedTime >= entry.startTime, "modifiedTime >= startTime");
        assert.equal(entry.isRemote, false);
        assert.equal(entry.summary, prompt, "summary is the first prompt");
        assert.equal(entry.context?.workingDirectory, ctx.workDir, "context.cwd is the session's cwd");
    }
    assert.equal(await client.getLastSessionId(), s2.sessionId, "last id = most recently modified session");

    const filtered = await client.listSessions({ workingDirectory: ctx.workDir });
    assert.equal(filtered.filter((x) => [s1.sessionId, s2.sessionId].includes(x.sessionId)).length, 2);
    const none = await client.listSessions({ workingDirectory: join(ctx.root, "elsewhere") });
    assert.equal(none.filter((x) => [s1.sessionId, s2.sessionId].includes(x.sessionId)).length, 0, "cwd filter");

    const meta = await client.getSessionMetadata(s1.sessionId);
    assert.ok(meta, "metadata of an existing session");
    assert.equal(meta.sessionId, s1.sessionId);
    assert.ok(meta.startTime instanceof Date && !Number.isNaN(meta.startTime.getTime()));
    assert.ok(meta.modifiedTime instanceof Date && !Number.isNaN(meta.modifiedTime.getTime()));
    assert.equal(typeof meta.isRemote, "boolean");
    assert.equal(meta.summary, "Say hello");
    assert.equal(await client.getSessionMetadata(MISSING_ID), undefined, "unknown id → undefined");
    assert.equal(await client.getSessionMetadata("non-existent-session-id"), undefined);
});

test("getMessages returns only persisted events, starting with session.start, as on disk", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "Hello there." }]);
    const client = ctx.client();
    const streamed = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        model: "gpt-4.1",
        onEvent: (e) => streamed.push(e),
    });
    assert.equal(
        session.workspacePath,
        join(ctx.copilotHome, "session-state", session.sessionId),
        "workspacePath = $COPILOT_HOME/session-state/<id>"
    );

    const initial = await session.getEvents();
    assert.equal(initial[0]?.type, "session.start", "a new session's log starts with session.start");
    const start = initial[0];
    assert.equal(start.data.sessionId, session.sessionId);
    assert.equal(start.data.selectedModel, "gpt-4.1");
    assert.equal(start.data.version, 1);
    assert.equal(start.data.producer, "copilot-agent");
    assert.equal(typeof start.data.copilotVersion, "string");
    assert.equal(typeof start.data.startTime, "string");
    assert.equal(start.data.context?.cwd, ctx.workDir);

    const final = await sendAndWait(ctx, session, "Say hello");
    assert.equal(final.data.content, "Hello there.");
    assert.equal((await ctx.fake.requests())[0].body.model, "gpt-4.1", "the session's model is used");

    const events = await session.getEvents();
    assert.equal(events[0].type, "session.start");
    assert.equal(events[0].id, start.id);
    for (const e of events) {
        assert.notEqual(e.ephemeral, true, `getMessages returns no ephemeral events (${e.type})`);
    }
    const types = events.map((e) => e.type);
    for (const want of ["user.message", "assistant.turn_start", "assistant.message", "assistant.turn_end"]) {
        assert.ok(types.includes(want), `${want} is persisted: ${types}`);
    }
    for (const never of ["session.idle", "assistant.usage", "assistant.message_delta"]) {
        assert.ok(!types.includes(never), `${never} is never persisted`);
    }
    assert.ok(types.indexOf("user.message") < types.indexOf("assistant.message"));

    // Persisted before being sent: every persisted event we saw streamed is in the log.
    const streamedPersisted = streamed.filter((e) => !e.ephemeral).map((e) => e.id);
    assert.deepEqual(events.map((e) => e.id), streamedPersisted);

    const file = join(ctx.copilotHome, "session-state", session.sessionId, "events.jsonl");
    assert.ok(existsSync(file), `events are appended to ${file}`);
    const onDisk = readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l));
    // The log also keeps one usage record per model call, which clients never see.
    assert.equal(onDisk.filter((e) => e.type === "session.usage_record").length, 1, "one usage record per model call");
    assert.deepEqual(
        onDisk.filter((e) => e.type !== "session.usage_record").map((e) => e.id),
        events.map((e) => e.id),
        "events.jsonl holds exactly the persisted events (and the usage records)"
    );
});

test("session.log: levels map to session.info/warning/error; ephemeral is not persisted", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        onEvent: (e) => events.push(e),
    });
    assert.equal(typeof session.rpc?.log, "function", "SDK exposes session.rpc.log");

    const info = await session.rpc.log({ message: "Info message" });
    const warning = await session.rpc.log({ message: "Warning message", level: "warning" });
    const error = await session.rpc.log({ message: "Error message", level: "error" });
    const ephemeral = await session.rpc.log({ message: "Ephemeral message", ephemeral: true });
    await session.log("Plain helper message"); // the SDK's convenience wrapper

    await waitUntil(() => events.filter((e) => typeof e.data?.message === "string" && /message$/.test(e.data.message)).length >= 5, {
        message: `log events not delivered: ${JSON.stringify(events.map((e) => e.type))}`,
    });
    const byMessage = (m) => events.find((e) => e.data?.message === m);

    assert.equal(byMessage("Info message").type, "session.info");
    assert.deepEqual(byMessage("Info message").data, { infoType: "notification", message: "Info message" });
    assert.equal(byMessage("Warning message").type, "session.warning");
    assert.deepEqual(byMessage("Warning message").data, { warningType: "notification", message: "Warning message" });
    assert.equal(byMessage("Error message").type, "session.error");
    assert.deepEqual(byMessage("Error message").data, { errorType: "notification", message: "Error message" });
    assert.equal(byMessage("Ephemeral message").type, "session.info");
    assert.deepEqual(byMessage("Ephemeral message").data, { infoType: "notification", message: "Ephemeral message" });
    assert.equal(byMessage("Ephemeral message").ephemeral, true);
    assert.equal(byMessage("Plain helper message").type, "session.info");

    for (const [res, m] of [
        [info, "Info message"],
        [warning, "Warning message"],
        [error, "Error message"],
        [ephemeral, "Ephemeral message"],
    ]) {
        assert.match(res?.eventId ?? "", UUID_RE, `session.log returns the eventId (${m})`);
        assert.equal(res.eventId, byMessage(m).id, `eventId is the emitted event's id (${m})`);
    }

    const persisted = (await session.getEvents()).map((e) => e.data?.message).filter(Boolean);
    for (const m of ["Info message", "Warning message", "Error message", "Plain helper message"]) {
        assert.ok(persisted.includes(m), `${m} is persisted`);
    }
    assert.ok(!persisted.includes("Ephemeral message"), "an ephemeral log is not persisted");
});

test("disconnect: the session is released; getMessages then rejects with Session not found", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "Hi." }]);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    await sendAndWait(ctx, session, "Say hi");
    const id = session.sessionId;
    await session.disconnect();
    await assert.rejects(() => session.getEvents(), /Session not found/);
    await assert.rejects(() => session.send({ prompt: "still there?" }), /Session not found/);

    // State stays on disk: still listed, and resumable.
    const listed = await client.listSessions();
    assert.ok(listed.some((s) => s.sessionId === id), "a disconnected session stays listed");
    const again = await client.resumeSession(id, { onPermissionRequest: approveAll });
    const types = (await again.getEvents()).map((e) => e.type);
    assert.ok(types.includes("user.message") && types.includes("session.resume"), `${types}`);
});

test("deleteSession removes the session for good", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("session/should_delete_session.yaml", ctx.workDir);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    const id = session.sessionId;
    const reply = await sendAndWait(ctx, session, "Hello");
    assert.match(reply?.data.content ?? "", /^Hello! I'm GitHub Copilot CLI/);
    assert.ok((await client.listSessions()).some((s) => s.sessionId === id), "listed before delete");
    const dir = join(ctx.copilotHome, "session-state", id);
    assert.ok(existsSync(dir), "session-state dir exists before delete");

    const lifecycle = [];
    client.onLifecycle((e) => lifecycle.push(e));
    await client.deleteSession(id);
    await waitUntil(() => lifecycle.some((e) => e.type === "session.deleted" && e.sessionId === id), {
        message: `session.lifecycle session.deleted: ${JSON.stringify(lifecycle)}`,
    });

    assert.ok(!(await client.listSessions()).some((s) => s.sessionId === id), "not listed after delete");
    assert.equal(await client.getSessionMetadata(id), undefined, "no metadata after delete");
    assert.notEqual(await client.getLastSessionId(), id, "not the last session any more");
    assert.ok(!existsSync(dir), "session-state/<id> is removed");
    await assert.rejects(
        () => client.resumeSession(id, { onPermissionRequest: approveAll }),
        /Session not found/,
        "a deleted session cannot be resumed"
    );
});

test("resume from a new client process sees the history and continues the conversation", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("session/should_resume_a_session_using_a_new_client.yaml", ctx.workDir);

    const client1 = ctx.client();
    const s1 = await client1.createSession({ onPermissionRequest: approveAll });
    const sessionId = s1.sessionId;
    const a1 = await sendAndWait(ctx, s1, "What is 1+1?");
    assert.equal(a1?.data.content, "1 + 1 = 2");
    const before = await s1.getEvents();
    const pid1 = client1.cliProcess?.pid;
    assert.deepEqual(await client1.stop(), [], "first client stops cleanly");

    const client2 = ctx.client();
    await client2.start();
    // The new process finds the session through the persisted index.
    const listed = await client2.listSessions();
    assert.ok(listed.some((x) => x.sessionId === sessionId), "listed by a fresh process");
    assert.equal(await client2.getLastSessionId(), sessionId, "last id survives the restart");
    const resumedEvents = [];
    const s2 = await client2.resumeSession(sessionId, {
        onPermissionRequest: approveAll,
        onEvent: (e) => resumedEvents.push(e),
    });
    assert.equal(s2.sessionId, sessionId);
    assert.ok(client2.cliProcess?.pid && client2.cliProcess.pid !== pid1, "a new Skipper process");

    const history = await s2.getEvents();
    assert.deepEqual(
        history.slice(0, before.length).map((e) => e.id),
        before.map((e) => e.id),
        "the resumed log starts with the original events, unchanged"
    );
    const types = history.map((e) => e.type);
    assert.equal(types[0], "session.start");
    assert.ok(types.includes("session.resume"), `session.resume is persisted: ${types}`);
    const resume = history.find((e) => e.type === "session.resume");
    const iResume = history.indexOf(resume);
    assert.equal(
        resume.parentId,
        history[iResume - 1].id,
        "session.resume chains to the last event of the replayed log"
    );
    assert.ok(!before.some((e) => e.id === resume.id), "fresh event id");
    assert.equal(typeof resume.data.resumeTime, "string");
    // eventCount counts the log's lines, usage records (not shown by getMessages) included.
    const usageRecords = (await ctx.fake.requests()).length; // one model call so far
    assert.equal(resume.data.eventCount, iResume + usageRecords, "eventCount = lines replayed from the log");
    assert.ok(
        history.some((e) => e.type === "user.message" && e.data.content === "What is 1+1?"),
        "history has the earlier user message"
    );
    assert.ok(
        history.some((e) => e.type === "assistant.message" && e.data.content === "1 + 1 = 2"),
        "history has the earlier answer"
    );

    const requestsBefore = (await ctx.fake.requests()).length;
    assert.equal(requestsBefore, 1);
    const a2 = await sendAndWait(ctx, s2, "Now if you double that, what do you get?");
    assert.equal(a2?.data.content, "2 doubled is 4.");
    assert.deepEqual(await unmatchedExchanges(ctx.fake), []);
    assert.equal(
        resumedEvents.filter((e) => e.type === "assistant.message_delta").length,
        0,
        "no deltas after a resume without streaming"
    );
    const after = await s2.getEvents();
    assert.ok(
        after.some((e) => e.type === "assistant.message" && e.data.content === "2 doubled is 4."),
        "the continued turn is appended to the same log"
    );

    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 2, "exactly one more model call");
    const msgs = reqs[1].body.messages;
    assert.equal(msgs[0].role, "system");
    const convo = msgs.filter((m) => m.role !== "system");
    assert.deepEqual(
        convo.map((m) => m.role),
        ["user", "assistant", "user"],
        "the next model request carries the earlier exchange"
    );
    assert.match(convo[0].content, /What is 1\+1\?/);
    assert.equal(convo[1].content, "1 + 1 = 2");
    assert.match(convo[2].content, /Now if you double that, what do you get\?/);
    assert.equal(reqs[1].headers["x-client-session-id"], sessionId);
});

test("resuming an unknown session fails with Session not found", T, async (t) => {
    const ctx = await setup(t);
    const client = ctx.client();
    await client.start();
    await assert.rejects(
        () => client.resumeSession(MISSING_ID, { onPermissionRequest: approveAll }),
        /Session not found/
    );
    // The connection is still fine afterwards.
    assert.equal((await client.ping("ok")).protocolVersion, 3);
});
