// Issue 9, "Compaction": infinite sessions compact in the background as the Node SDK configures
// them, and the SDK's history / workspaces RPCs compact, list and read checkpoints.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, recordEvents, waitForEvent, REPO_ROOT } from "../lib/harness.mjs";

const T = { timeout: 90_000 };
const SUMMARY = "<overview>Arithmetic.</overview>\n<history>1. 2+2</history>\n<checkpoint_title>Adding numbers</checkpoint_title>";

const isSummaryCall = (r) => r.headers?.["x-interaction-type"] === "conversation-compaction";

// The recorded conversation of the SDK's own compaction test: the fake answers only what the
// original sent, whichever of the turn and the summary call reaches it first.
const RECORDED = join(REPO_ROOT, "tests/python/snapshots/compaction/should_trigger_compaction_with_low_threshold_and_emit_events.yaml");

test("a low threshold compacts in the background while turns go on", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load(RECORDED, ctx.workDir);
    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        infiniteSessions: { enabled: true, backgroundCompactionThreshold: 0.005, bufferExhaustionThreshold: 0.01 },
    });
    const events = recordEvents(session);
    await session.sendAndWait({ prompt: "Tell me a story about a dragon. Be detailed." });
    await session.sendAndWait({ prompt: "Continue the story with more details about the dragon's castle." });
    const done = await waitForEvent(events, (e) => e.type === "session.compaction_complete" && e.data.success);
    assert.match(done.data.summaryContent, /<checkpoint_title>Dragon storytelling creative writing<\/checkpoint_title>/);
    assert.equal(done.data.checkpointNumber, 1);
    const start = events.find((e) => e.type === "session.compaction_start");
    assert.equal(start.data.trigger, "threshold");
    assert.ok(start.data.conversationTokens > 0);

    await session.sendAndWait({ prompt: "Now describe the dragon's treasure in great detail." });
    const answer = await session.sendAndWait({ prompt: "What was the story about?" });
    assert.match(answer.data.content, /Kaedrith/);
    const requests = await ctx.fake.requests();
    const summaryCall = requests.find(isSummaryCall);
    assert.equal(summaryCall.body.tool_choice, "none");
    const last = requests[requests.length - 1].body.messages;
    // The summary stands for the first exchange and the second prompt; the reply to the second
    // prompt came while the summary was being written and stays after it.
    assert.match(last[1].content, /^Some of the conversation history has been summarized/);
    assert.match(last[2].content, /^# The Sanctuary of Scales/);

    const { checkpoints } = await session.rpc.workspaces.listCheckpoints();
    assert.deepEqual(checkpoints, [
        { number: 1, title: "Dragon storytelling creative writing", filename: "001-dragon-storytelling-creative-w.md" },
    ]);
    const { content } = await session.rpc.workspaces.readCheckpoint({ number: 1 });
    assert.match(content, /^<overview>/);
    assert.doesNotMatch(content, /checkpoint_title/);
});

test("history.compact summarizes everything and reports what it removed", T, async (t) => {
    const ctx = await setup(t);
    const session = await ctx.client().createSession({ onPermissionRequest: approveAll });
    await assert.rejects(session.rpc.history.compact(), /Nothing to compact\./);
    await ctx.fake.replies([{ text: "4" }, { text: SUMMARY }]);
    await session.sendAndWait({ prompt: "What is 2+2?" });
    const result = await session.rpc.history.compact({ customInstructions: "Focus on math" });
    assert.equal(result.success, true);
    assert.equal(result.messagesRemoved, 1);
    assert.equal(result.summaryContent, SUMMARY);
    assert.equal(result.contextWindow.messagesLength, 1);
    const summaryCall = (await ctx.fake.requests()).find(isSummaryCall);
    const request = summaryCall.body.messages.at(-1).content;
    assert.match(request, /<user_focus_instructions>\nFocus on math\n<\/user_focus_instructions>/);
    assert.equal((await session.rpc.history.cancelBackgroundCompaction()).cancelled, false);
    assert.equal((await session.rpc.history.abortManualCompaction()).aborted, false);
});
