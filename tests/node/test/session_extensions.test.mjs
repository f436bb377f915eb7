// Issue 11: session extensions (`requestExtensions`). A program in the repository's
// `.github/extensions/<name>/extension.mjs` is started for the session with the SDK build
// given as `extensionSdkPath`, joins the session over its stdio (`joinSession`), and the tool
// it brings is offered to the model and answered by the extension.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, toolNamesOf, waitUntil } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

// The installed SDK's build directory (where `extension.js` lives).
const SDK_DIST = dirname(createRequire(import.meta.url).resolve("@github/copilot-sdk"));

// The extension answers the permission for its own tool: a joining client that leaves
// `onPermissionRequest` out sends `requestPermission: false`, which Skipper still applies to the
// whole session (per-client permission handling is not merged yet).
const EXTENSION = `
import { writeFileSync } from "node:fs";
import { joinSession } from "@github/copilot-sdk/extension";
await joinSession({
    onPermissionRequest: () => ({ kind: "approve-once" }),
    tools: [{
        name: "ext_greeter",
        description: "Greets someone",
        parameters: { type: "object", properties: { name: { type: "string" } } },
        handler: async (args) => "Hello from the extension, " + (args.name || "World") + "!",
    }],
});
writeFileSync(process.env.JOINED_FILE ?? "joined", "joined:" + process.env.SESSION_ID);
`;

test("an extension in .github/extensions joins the session and its tool is offered and answered", T, async (t) => {
    const ctx = await setup(t);
    const dir = join(ctx.workDir, ".github", "extensions", "greeter");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "extension.mjs"), EXTENSION);
    execFileSync("git", ["init", "--quiet"], { cwd: ctx.workDir });
    const joined = join(dir, "joined");

    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        requestExtensions: true,
        extensionSdkPath: SDK_DIST,
    });
    const written = () => existsSync(joined) && readFileSync(joined, "utf8").length > 0;
    await waitUntil(written, { timeout: 30_000, message: "the extension never joined" });
    assert.equal(readFileSync(joined, "utf8"), `joined:${session.sessionId}`);

    await ctx.fake.replies([
        { tool_calls: [{ name: "ext_greeter", arguments: { name: "Ada" } }] },
        { text: "greeted" },
    ]);
    const reply = await sendAndWait(ctx, session, "greet Ada");
    assert.equal(reply?.data.content, "greeted");
    const requests = await ctx.fake.requests();
    assert.ok(toolNamesOf(requests[0].body).includes("ext_greeter"), "the extension's tool is offered");
    const toolMessage = requests[1].body.messages.find((m) => m.role === "tool");
    assert.equal(toolMessage.content, "Hello from the extension, Ada!");
});

test("without requestExtensions nothing is started", T, async (t) => {
    const ctx = await setup(t);
    const dir = join(ctx.workDir, ".github", "extensions", "greeter");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "extension.mjs"), EXTENSION);
    execFileSync("git", ["init", "--quiet"], { cwd: ctx.workDir });
    await ctx.client().createSession({ onPermissionRequest: approveAll, extensionSdkPath: SDK_DIST });
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(existsSync(join(dir, "joined")), false);
});
