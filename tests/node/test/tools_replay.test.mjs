// Issue 2, item 4: the tool loop, replayed from the official SDK's recorded conversations
// (../shared/snapshots). The fake model only answers when Skipper's request — including the
// tool result strings — matches the recording, so reaching the recorded final answer proves
// the whole loop (tool names, arguments, result formats, history) is faithful.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, unmatchedExchanges } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

/**
 * Loads `snapshot` for the test's workdir, runs `prompt`, and checks the final message
 * against the recording's last assistant content. Returns {ctx, session, events, final}.
 */
async function replay(t, { snapshot, prompt, expected, prepare }) {
    const ctx = await setup(t);
    if (prepare) await prepare(ctx.workDir);
    await ctx.fake.load(snapshot, ctx.workDir);
    const client = ctx.client();
    const events = [];
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        onEvent: (e) => events.push(e),
    });
    const final = await sendAndWait(ctx, session, prompt, 60_000);
    const unmatched = await unmatchedExchanges(ctx.fake);
    assert.equal(
        unmatched.length,
        0,
        ctx.explain(new Error(`${unmatched.length} model request(s) did not match ${snapshot}`)).message
    );
    assert.equal(final?.data.content, expected, "final message == recorded last assistant content");
    return { ctx, session, events, final };
}

function toolCompletions(events, toolName) {
    const starts = new Map(
        events.filter((e) => e.type === "tool.execution_start").map((e) => [e.data.toolCallId, e.data.toolName])
    );
    return events.filter(
        (e) => e.type === "tool.execution_complete" && (toolName === undefined || starts.get(e.data.toolCallId) === toolName)
    );
}

test("session: stateful conversation across two sends (should_have_stateful_conversation)", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.load("session/should_have_stateful_conversation.yaml", ctx.workDir);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    const a1 = await sendAndWait(ctx, session, "What is 1+1?");
    assert.equal(a1?.data.content, "1+1 = 2");
    const a2 = await sendAndWait(ctx, session, "Now if you double that, what do you get?");
    assert.equal(a2?.data.content, "2 doubled is 4.");
    assert.deepEqual(await unmatchedExchanges(ctx.fake), []);
    assert.equal((await ctx.fake.requests()).length, 2, "one model call per send");
});

test("bash: output and exit code (should_capture_exit_code_in_output)", T, async (t) => {
    const { events } = await replay(t, {
        snapshot: "builtin_tools/should_capture_exit_code_in_output.yaml",
        prompt: "Run 'echo hello && echo world'. Tell me the exact output.",
        expected: "The exact output is:\n```\nhello\nworld\n```",
    });
    const [bash] = toolCompletions(events, "bash");
    assert.ok(bash, "a bash tool.execution_complete was emitted");
    assert.equal(bash.data.success, true);
    // The model called the unknown tool `report_intent` too; that call fails, the turn goes on.
    const unknown = toolCompletions(events).find((e) => e.data.success === false);
    assert.ok(unknown, "the unknown-tool call completes with success:false");
    assert.match(unknown.data.error?.message ?? "", /Tool 'report_intent' does not exist/);
});

test("bash: stderr merged with stdout (should_capture_stderr_output)", T, async (t) => {
    await replay(t, {
        snapshot: "builtin_tools/should_capture_stderr_output.yaml",
        prompt: "Run 'echo error_msg >&2; sleep 0.5; echo ok' and tell me what stderr said. Reply with just the stderr content.",
        expected: "error_msg",
    });
});

test("view: line range (should_read_file_with_line_range)", T, async (t) => {
    const { events } = await replay(t, {
        snapshot: "builtin_tools/should_read_file_with_line_range.yaml",
        prompt: "Read lines 2 through 4 of the file 'lines.txt' in this directory. Tell me what those lines contain.",
        expected: 'Lines 2 through 4 of \'lines.txt\' contain:\n- Line 2: "line2"\n- Line 3: "line3"\n- Line 4: "line4"',
        prepare: (dir) => writeFile(join(dir, "lines.txt"), "line1\nline2\nline3\nline4\nline5\n"),
    });
    const [view] = toolCompletions(events, "view");
    assert.equal(view?.data.success, true);
    assert.equal(view.data.result?.content, "2. line2\n3. line3\n4. line4");
});

test("view: nonexistent file (should_handle_nonexistent_file_gracefully)", T, async (t) => {
    const { events, ctx } = await replay(t, {
        snapshot: "builtin_tools/should_handle_nonexistent_file_gracefully.yaml",
        prompt: "Try to read the file 'does_not_exist.txt'. If it doesn't exist, say 'FILE_NOT_FOUND'.",
        expected: "FILE_NOT_FOUND",
    });
    const [view] = toolCompletions(events, "view");
    assert.ok(view, "a view tool.execution_complete was emitted");
    assert.equal(view.data.success, false, "viewing a missing path fails");
    const reqs = await ctx.fake.requests();
    const toolMsgs = reqs.at(-1).body.messages.filter((m) => m.role === "tool");
    assert.ok(
        toolMsgs.some(
            (m) => m.content === `Path ${join(ctx.workDir, "does_not_exist.txt")} does not exist. Please provide a valid path.`
        ),
        `the model is told the path does not exist: ${JSON.stringify(toolMsgs)}`
    );
});

test("edit: replace a string (should_edit_a_file_successfully)", T, async (t) => {
    const { ctx, events } = await replay(t, {
        snapshot: "builtin_tools/should_edit_a_file_successfully.yaml",
        prompt: "Edit the file 'edit_me.txt': replace 'Hello World' with 'Hi Universe'. Then read it back and tell me its contents.",
        expected: "Done! The file now contains:\n```\nHi Universe\nGoodbye World\n```",
        prepare: (dir) => writeFile(join(dir, "edit_me.txt"), "Hello World\nGoodbye World\n"),
    });
    assert.equal(await readFile(join(ctx.workDir, "edit_me.txt"), "utf8"), "Hi Universe\nGoodbye World\n");
    const [edit] = toolCompletions(events, "edit");
    assert.equal(edit?.data.success, true);
});

test("create: new file (should_create_a_new_file)", T, async (t) => {
    const { ctx, events } = await replay(t, {
        snapshot: "builtin_tools/should_create_a_new_file.yaml",
        prompt: "Create a file called 'new_file.txt' with the content 'Created by test'. Then read it back to confirm.",
        expected: '✓ Done! Created `new_file.txt` with content "Created by test" and confirmed the content matches.',
    });
    assert.equal(await readFile(join(ctx.workDir, "new_file.txt"), "utf8"), "Created by test");
    const [create] = toolCompletions(events, "create");
    assert.equal(create?.data.success, true);
});

test("grep: content mode with line numbers (should_search_for_patterns_in_files)", T, async (t) => {
    const { events } = await replay(t, {
        snapshot: "builtin_tools/should_search_for_patterns_in_files.yaml",
        prompt: "Search for lines starting with 'ap' in the file 'data.txt'. Tell me which lines matched.",
        expected: "Two lines start with 'ap':\n- **Line 1:** apple\n- **Line 3:** apricot",
        prepare: (dir) => writeFile(join(dir, "data.txt"), "apple\nbanana\napricot\ncherry\n"),
    });
    const [grep] = toolCompletions(events, "grep");
    assert.equal(grep?.data.success, true, "grep completed successfully");
});

test("glob: recursive pattern (should_find_files_by_pattern)", T, async (t) => {
    const { events } = await replay(t, {
        snapshot: "builtin_tools/should_find_files_by_pattern.yaml",
        prompt: "Find all .ts files in this directory (recursively). List the filenames you found.",
        expected: "I found **1 TypeScript file** in this directory:\n\n- `src/index.ts`",
        prepare: async (dir) => {
            await mkdir(join(dir, "src"), { recursive: true });
            await writeFile(join(dir, "src", "index.ts"), "export const index = 1;");
            await writeFile(join(dir, "README.md"), "# Readme");
        },
    });
    const [glob] = toolCompletions(events, "glob");
    assert.equal(glob?.data.success, true);
    assert.equal(glob.data.result?.content, "./src/index.ts");
});
