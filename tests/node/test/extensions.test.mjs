// The Copilot Extensions agent endpoint of `skipper serve` against the platform's own preview
// SDK: every event of a real answer (text chunks, references, a confirmation, errors, the end)
// must be byte for byte what the SDK's create*Event functions write for the same content.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import {
    createTextEvent,
    createReferencesEvent,
    createConfirmationEvent,
    createErrorsEvent,
    createDoneEvent,
} from "@copilot-extensions/preview-sdk";

import { SKIPPER_BIN, setup, withTimeout } from "../lib/harness.mjs";

const TOKEN = "node-extensions-tenant-token";

/** Starts `skipper serve` with agent `helper` (signatures off: gh-debug-cli's mode). */
async function startServe(t, ctx) {
    const config = join(ctx.home, "server.toml");
    const digest = createHash("sha256").update(TOKEN).digest("hex");
    writeFileSync(
        config,
        `[[tenants]]\nname = "alpha"\ntoken_sha256 = "${digest}"\n\n` +
            `[[agents]]\nname = "helper"\ntenant = "alpha"\nallow_tools = ["view"]\n\n` +
            `[extensions]\nverify_signatures = false\n`
    );
    const proc = spawn(
        SKIPPER_BIN,
        ["serve", "--listen", "127.0.0.1:0", "--sdk-listen", "127.0.0.1:0", "--config", config, "--home", ctx.copilotHome],
        { env: { ...ctx.env, GH_TOKEN: "fake-token-for-e2e-tests" }, cwd: ctx.workDir, stdio: ["ignore", "pipe", "pipe"] }
    );
    let stderr = "";
    proc.stderr.on("data", (d) => (stderr += d.toString()));
    t.after(async () => {
        if (proc.exitCode === null) {
            const exited = once(proc, "exit");
            proc.kill("SIGTERM");
            await withTimeout(exited, 5_000).catch(() => proc.kill("SIGKILL"));
        }
    });
    let out = "";
    const http = await withTimeout(
        new Promise((resolve, reject) => {
            proc.stdout.on("data", (d) => {
                out += d.toString();
                const m = /listening on http:\/\/(\S+)/.exec(out);
                if (m) resolve(m[1]);
            });
            proc.on("exit", (code) => reject(new Error(`skipper serve exited (${code}): ${stderr}`)));
        }),
        15_000,
        "no `listening` line"
    );
    mkdirSync(join(ctx.copilotHome, "workspaces", "alpha"), { recursive: true });
    return { http, workspace: join(ctx.copilotHome, "workspaces", "alpha") };
}

/** POSTs a thread's messages; the answer's raw text. */
async function ask(http, threadId, messages) {
    const res = await fetch(`http://${http}/agents/helper`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-github-token": "gho_unused" },
        body: JSON.stringify({ copilot_thread_id: threadId, messages, copilot_skills: null, agent: "" }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/event-stream/);
    return await res.text();
}

/** Splits a stream into its events, each with its exact bytes. */
function split(raw) {
    assert.ok(raw.endsWith("\n\n"));
    const blocks = raw.slice(0, -2).split("\n\n");
    return blocks.map((block) => {
        const named = /^event: (\S+)\n/.exec(block);
        const data = block.slice(named ? named[0].length : 0);
        assert.ok(data.startsWith("data: "), block);
        return { name: named?.[1] ?? null, data: data.slice("data: ".length), bytes: `${block}\n\n` };
    });
}

/**
 * The same answer as the SDK writes it: each event rebuilt from the content parsed out of
 * Skipper's stream, joined, must equal the raw stream.
 */
function rebuild(events) {
    let out = "";
    const tail = events.slice(-2);
    assert.equal(tail[1].data, "[DONE]");
    for (const e of events.slice(0, -2)) {
        const value = JSON.parse(e.data);
        switch (e.name) {
            case null:
                out += createTextEvent(value.choices[0].delta.content);
                break;
            case "copilot_references":
                out += createReferencesEvent(value);
                break;
            case "copilot_confirmation": {
                const { id, ...metadata } = value.confirmation;
                const meta = Object.keys(metadata).length ? metadata : undefined;
                out += createConfirmationEvent({ id, title: value.title, message: value.message, metadata: meta });
                break;
            }
            case "copilot_errors":
                out += createErrorsEvent(value);
                break;
            default:
                assert.fail(`unknown event ${e.name}`);
        }
    }
    return out + createDoneEvent();
}

/** The answer's text: the content of the text chunks (the done chunk's is null). */
function textOf(events) {
    return events
        .filter((e) => e.name === null && e.data !== "[DONE]")
        .map((e) => JSON.parse(e.data).choices[0].delta.content ?? "")
        .join("");
}

test("an agent's answers are byte for byte what the preview SDK writes", async (t) => {
    const ctx = await setup(t);
    const { http, workspace } = await startServe(t, ctx);
    const notes = join(workspace, "chart.md");
    writeFileSync(notes, "# Chart\n");

    // Text streamed with non-ASCII and escapes, then the files read as references.
    await ctx.fake.replies([
        { tool_calls: [{ name: "view", arguments: { path: notes } }] },
        { text: 'Chart says: "deep" — ü\\ 🚢\n\tdone\u0007' },
    ]);
    const first = await ask(http, "n1", [{ role: "user", content: "Read the chart" }]);
    const events = split(first);
    assert.equal(rebuild(events), first);
    assert.equal(textOf(events), 'Chart says: "deep" — ü\\ 🚢\n\tdone\u0007');
    const refs = events.find((e) => e.name === "copilot_references");
    assert.ok(refs, first);
    assert.equal(JSON.parse(refs.data)[0].id, "chart.md");

    // A tool outside allow_tools: a confirmation, then the stream ends.
    await ctx.fake.replies([{ tool_calls: [{ name: "create", arguments: { path: join(workspace, "x.txt"), file_text: "x" } }] }]);
    const asking = await ask(http, "n2", [{ role: "user", content: "Make x" }]);
    const confirmEvents = split(asking);
    assert.equal(rebuild(confirmEvents), asking);
    const confirm = confirmEvents.find((e) => e.name === "copilot_confirmation");
    assert.ok(confirm, asking);
    const id = JSON.parse(confirm.data).confirmation.id;

    // Accepted: the tool runs and the answer goes on in this stream.
    await ctx.fake.replies([{ text: "Made it." }]);
    const accepted = await ask(http, "n2", [
        { role: "user", content: "Make x" },
        { role: "user", content: "", copilot_confirmations: [{ state: "accepted", confirmation: { id } }] },
    ]);
    assert.equal(rebuild(split(accepted)), accepted);
    assert.equal(textOf(split(accepted)), "Made it.");

    // The model is down: copilot_errors.
    await ctx.fake.replies(Array.from({ length: 8 }, () => ({ error: { status: 503, retry_after: 0, message: "down" } })));
    const failed = await ask(http, "n3", [{ role: "user", content: "Hello?" }]);
    const failedEvents = split(failed);
    assert.equal(rebuild(failedEvents), failed);
    assert.ok(failedEvents.some((e) => e.name === "copilot_errors"), failed);
});
