// Issue 3, "Attachments": file, directory, selection, GitHub reference and blob attachments on
// session.send reach the model exactly as the original renders them (the replayed session
// recordings only answer when the rendered user message matches) and are kept on the
// persisted user.message.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, assertAllMatched } from "../lib/harness.mjs";

const T = { timeout: 90_000 };
const PNG_1PX =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

async function sendWith(t, { snapshot, prepare, prompt, attachments }) {
    const ctx = await setup(t);
    if (prepare) await prepare(ctx.workDir);
    await ctx.fake.load(snapshot, ctx.workDir);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll });
    let answer;
    try {
        const list = typeof attachments === "function" ? attachments(ctx.workDir) : attachments;
        answer = await session.sendAndWait({ prompt, attachments: list }, 60_000);
    } catch (e) {
        throw ctx.explain(e);
    }
    await assertAllMatched(ctx, snapshot);
    const persisted = await session.getEvents();
    const user = persisted.filter((m) => m.type === "user.message").at(0);
    assert.ok(user, "a persisted user.message");
    assert.equal(user.data.content, prompt, "content is the prompt as typed");
    return { ctx, session, answer, user };
}

test("file attachment (with lineRange) rendered as <tagged_files>, kept on user.message", T, async (t) => {
    let filePath;
    const { answer, user, ctx } = await sendWith(t, {
        snapshot: "session/should_send_with_file_attachment.yaml",
        prepare: async (dir) => {
            filePath = join(dir, "attached-file.txt");
            await writeFile(filePath, "FILE_ATTACHMENT_SENTINEL");
        },
        prompt: "Read the attached file and reply with its contents.",
        // lineRange is not in the SDK's attachment type; the SDK forwards it unchanged.
        attachments: (dir) => [{ type: "file", path: join(dir, "attached-file.txt"), displayName: "attached-file.txt", lineRange: { start: 1, end: 1 } }],
    });
    assert.equal(answer?.data.content, "The file contains:\n\n```\nFILE_ATTACHMENT_SENTINEL\n```");
    const [a] = user.data.attachments ?? [];
    assert.equal(user.data.attachments.length, 1);
    assert.equal(a.type, "file");
    assert.equal(a.displayName, "attached-file.txt");
    assert.equal(a.path, filePath);
    assert.deepEqual(a.lineRange, { start: 1, end: 1 });
    const reqs = await ctx.fake.requests();
    const text = JSON.stringify(reqs[0].body.messages.find((m) => m.role === "user").content);
    assert.ok(text.includes("<tagged_files>"), "the attachment is rendered into the user message");
});

test("file attachment without lineRange or displayName: the file's length only", T, async (t) => {
    const { user, ctx } = await sendWith(t, {
        snapshot: "session_config/should_accept_message_attachments.yaml",
        prepare: (dir) => writeFile(join(dir, "attached.txt"), "This file is attached"),
        prompt: "Summarize the attached file",
        attachments: (dir) => [{ type: "file", path: join(dir, "attached.txt") }],
    });
    assert.equal(user.data.attachments?.[0]?.displayName, undefined, "no display name was sent, none is made up");
    const reqs = await ctx.fake.requests();
    const text = JSON.stringify(reqs[0].body.messages.find((m) => m.role === "user").content);
    assert.ok(text.includes("attached.txt (1 lines)"), text);
});

test("directory attachment rendered with its item count, kept on user.message", T, async (t) => {
    let dirPath;
    const { answer, user } = await sendWith(t, {
        snapshot: "session/should_send_with_directory_attachment.yaml",
        prepare: async (dir) => {
            dirPath = join(dir, "attached-directory");
            await mkdir(dirPath, { recursive: true });
            await writeFile(join(dirPath, "readme.txt"), "DIRECTORY_ATTACHMENT_SENTINEL");
        },
        prompt: "List the attached directory.",
        attachments: (dir) => [{ type: "directory", path: join(dir, "attached-directory"), displayName: "attached-directory" }],
    });
    assert.equal(answer?.data.content, "The attached directory contains one file:\n- **readme.txt**\n\nWould you like me to view its contents?");
    assert.equal(user.data.attachments?.length, 1);
    const [a] = user.data.attachments;
    assert.equal(a.type, "directory");
    assert.equal(a.displayName, "attached-directory");
    assert.equal(a.path, dirPath);
});

test("selection attachment rendered as <ide_selection> before the prompt, kept on user.message", T, async (t) => {
    let filePath;
    const selection = { start: { line: 1, character: 10 }, end: { line: 1, character: 45 } };
    const { answer, user } = await sendWith(t, {
        snapshot: "session/should_send_with_selection_attachment.yaml",
        prepare: async (dir) => {
            filePath = join(dir, "selected-file.cs");
            await writeFile(filePath, 'class C { string Value = "SELECTION_SENTINEL"; }');
        },
        prompt: "Summarize the selected code.",
        attachments: (dir) => [{ type: "selection", filePath: join(dir, "selected-file.cs"), displayName: "selected-file.cs", text: 'string Value = "SELECTION_SENTINEL";', selection }],
    });
    assert.match(answer?.data.content ?? "", /^This is a C# variable declaration/);
    const [a] = user.data.attachments ?? [];
    assert.equal(a?.type, "selection");
    assert.equal(a.displayName, "selected-file.cs");
    assert.equal(a.filePath, filePath);
    assert.equal(a.text, 'string Value = "SELECTION_SENTINEL";');
    assert.deepEqual(a.selection, selection);
});

test("GitHub reference attachment rendered as <github_references>, kept on user.message", T, async (t) => {
    const ref = {
        type: "github_reference",
        number: 1234,
        referenceType: "issue",
        state: "open",
        title: "Add E2E attachment coverage",
        url: "https://github.com/github/copilot-sdk/issues/1234",
    };
    const { answer, user } = await sendWith(t, {
        snapshot: "session/should_send_with_github_reference_attachment.yaml",
        prompt: "Using only the GitHub reference metadata in this message, summarize the reference. Do not call any tools.",
        attachments: [ref],
    });
    assert.match(answer?.data.content ?? "", /#1234/);
    assert.equal(user.data.attachments?.length, 1);
    assert.deepEqual(user.data.attachments[0], ref);
});

test("blob (image) attachment sent as an image part; view of an image continues the loop", T, async (t) => {
    const { answer, ctx } = await sendWith(t, {
        snapshot: "session/should_accept_blob_attachments.yaml",
        prepare: (dir) => writeFile(join(dir, "test-pixel.png"), Buffer.from(PNG_1PX, "base64")),
        prompt: "Describe this image",
        attachments: [{ type: "blob", data: PNG_1PX, mimeType: "image/png", displayName: "test-pixel.png" }],
    });
    assert.match(answer?.data.content ?? "", /single yellow\/gold pixel/);
    const reqs = await ctx.fake.requests();
    const user = reqs[0].body.messages.find((m) => m.role === "user");
    assert.ok(Array.isArray(user.content), "the user message is multimodal");
    const image = user.content.find((p) => p.type === "image_url");
    assert.ok(image, `an image_url part: ${JSON.stringify(user.content).slice(0, 300)}`);
    assert.equal(image.image_url.url, `data:image/png;base64,${PNG_1PX}`, "the blob is sent as a data URL");
});
