// Issue 3, "System message": the default prompt comes from prompts/system/ (our own words), and
// systemMessage on create applies append / replace / customize (per-section replace, remove,
// append, prepend, transform). Checked on the system message the fake model received; the
// system_message_sections and session/should_create_a_session_with_*_systemmessage_config
// recordings are replayed for the answers.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { approveAll } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, systemMessageOf, REPO_ROOT, waitUntil } from "../lib/harness.mjs";

const T = { timeout: 90_000 };
const BOTANICA = "You are a helpful gardening assistant called Botanica. You only answer questions about plants and gardening.";

/** A default prompt section as Skipper renders it (trimmed, placeholders filled). */
function section(name, cwd) {
    return readFileSync(join(REPO_ROOT, "prompts/system", `${name}.md`), "utf8")
        .trim()
        .replaceAll("{{cwd}}", cwd)
        .replaceAll("{{os}}", process.platform);
}

async function firstSystemMessage(ctx) {
    const reqs = await waitUntil(async () => {
        const r = await ctx.fake.requests();
        return r.length > 0 && r;
    });
    const sys = systemMessageOf(reqs[0].body);
    assert.equal(typeof sys, "string", "the request has a system message");
    assert.equal(reqs[0].body.messages[0].role, "system", "the system message comes first");
    return sys;
}

async function run(t, { snapshot, prompt, systemMessage, expected }) {
    const ctx = await setup(t);
    await ctx.fake.load(snapshot, ctx.workDir);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll, systemMessage });
    const answer = await sendAndWait(ctx, session, prompt);
    if (expected !== undefined) assert.equal(answer?.data.content, expected);
    await assertAllMatched(ctx, snapshot);
    return { ctx, session, system: await firstSystemMessage(ctx) };
}

test("default system prompt: every section from prompts/system, in order", T, async (t) => {
    const { ctx, system } = await run(t, {
        snapshot: "session/should_create_a_session_with_availabletools.yaml",
        prompt: "What is 1+1?",
        expected: "1 + 1 = 2",
    });
    const order = ["preamble", "identity", "tone", "tool_efficiency", "environment_context", "code_change_rules", "guidelines", "safety", "last_instructions"];
    let last = -1;
    for (const name of order) {
        const at = system.indexOf(section(name, ctx.workDir));
        assert.ok(at > last, `section ${name} present after the previous one`);
        last = at;
    }
    assert.ok(system.includes(`Working directory: ${ctx.workDir}`), "environment context names the session cwd");
});

test("systemMessage append: default prompt kept, content added at the end (replayed)", T, async (t) => {
    const suffix = "End each response with the phrase 'Have a nice day!'";
    const { ctx, system } = await run(t, {
        snapshot: "session/should_create_a_session_with_appended_systemmessage_config.yaml",
        prompt: "What is your full name?",
        systemMessage: { mode: "append", content: suffix },
        expected:
            "I am the GitHub Copilot CLI, a terminal assistant built by GitHub. I'm an interactive command-line tool designed to help with software engineering tasks.\n\nHave a nice day!",
    });
    assert.ok(system.includes(section("preamble", ctx.workDir)), "the default prompt is kept");
    assert.ok(system.includes(section("code_change_rules", ctx.workDir)));
    assert.ok(system.trimEnd().endsWith(suffix), "the appended content comes last");
});

test("systemMessage replace: the system message is exactly the given content (replayed)", T, async (t) => {
    const content = "You are an assistant called Testy McTestface. Reply succinctly.";
    const { system } = await run(t, {
        snapshot: "session/should_create_a_session_with_replaced_systemmessage_config.yaml",
        prompt: "What is your full name?",
        systemMessage: { mode: "replace", content },
        expected: "My full name is **Testy McTestface**.",
    });
    assert.equal(system, content);
});

test("systemMessage customize: tone replaced, code_change_rules removed, content appended (replayed)", T, async (t) => {
    const customTone = "Respond in a warm, professional tone. Be thorough in explanations.";
    const appended = "Always mention quarterly earnings.";
    const { ctx, system } = await run(t, {
        snapshot: "session/should_create_a_session_with_customized_systemmessage_config.yaml",
        prompt: "Who are you?",
        systemMessage: {
            mode: "customize",
            sections: { tone: { action: "replace", content: customTone }, code_change_rules: { action: "remove" } },
            content: appended,
        },
    });
    assert.ok(system.includes(customTone));
    assert.ok(system.includes(appended));
    assert.ok(!system.includes("<code_change_instructions>"), "code_change_rules removed");
    assert.ok(!system.includes(section("tone", ctx.workDir)), "the default tone text is gone");
    assert.ok(system.includes(section("preamble", ctx.workDir)), "untouched sections stay");
    assert.ok(system.indexOf(customTone) < system.indexOf(appended), "content comes after the sections");
});

test("system_message_sections: identity replaced (replayed)", T, async (t) => {
    const { ctx, system } = await run(t, {
        snapshot: "system_message_sections/should_use_replaced_identity_section_in_response.yaml",
        prompt: "Who are you?",
        systemMessage: { mode: "customize", sections: { identity: { action: "replace", content: BOTANICA } } },
    });
    assert.ok(system.includes(BOTANICA));
    assert.ok(!system.includes(section("identity", ctx.workDir)), "the default identity text is gone");
    assert.ok(system.includes(section("preamble", ctx.workDir)), "the preamble stays");
    assert.ok(system.indexOf(section("preamble", ctx.workDir)) < system.indexOf(BOTANICA), "the replacement sits where identity was");
    assert.ok(system.indexOf(BOTANICA) < system.indexOf(section("tone", ctx.workDir)));
});

test("system_message_sections: preamble replaced (replayed)", T, async (t) => {
    const { ctx, system } = await run(t, {
        snapshot: "system_message_sections/should_use_replaced_preamble_section_in_response.yaml",
        prompt: "Who are you?",
        systemMessage: { mode: "customize", sections: { preamble: { action: "replace", content: BOTANICA } } },
    });
    assert.ok(system.startsWith(BOTANICA), "the replaced preamble opens the prompt");
    assert.ok(!system.includes(section("preamble", ctx.workDir)), "the default preamble text is gone");
    assert.ok(system.includes(section("identity", ctx.workDir)), "identity stays");
});

test("customize: append, prepend and a transform callback on sections", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ text: "ok" }]);
    const client = ctx.client();
    let seen;
    const session = await client.createSession({
        onPermissionRequest: approveAll,
        systemMessage: {
            mode: "customize",
            sections: {
                guidelines: { action: "append", content: "APPENDED_TO_GUIDELINES" },
                safety: { action: "prepend", content: "PREPENDED_TO_SAFETY" },
                tone: {
                    action: (current) => {
                        seen = current;
                        return current.replace("<tone>", "<tone>\nTRANSFORMED_TONE");
                    },
                },
            },
        },
    });
    await sendAndWait(ctx, session, "Hi");
    const system = await firstSystemMessage(ctx);
    const guidelines = section("guidelines", ctx.workDir);
    const safety = section("safety", ctx.workDir);
    assert.ok(system.includes(`${guidelines}\nAPPENDED_TO_GUIDELINES`), "append adds after the section");
    assert.ok(system.includes(`PREPENDED_TO_SAFETY\n${safety}`), "prepend adds before the section");
    assert.equal(seen, section("tone", ctx.workDir), "the transform callback receives the current section text");
    assert.ok(system.includes("TRANSFORMED_TONE"), "the transformed text is used");
});

test("the system message is the same for every call of the session", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([
        { tool_calls: [{ name: "bash", arguments: { command: "echo hi", description: "hi" } }] },
        { text: "one" },
        { text: "two" },
    ]);
    const client = ctx.client();
    const session = await client.createSession({ onPermissionRequest: approveAll, systemMessage: { mode: "append", content: "STABLE_SUFFIX" } });
    await sendAndWait(ctx, session, "A");
    await sendAndWait(ctx, session, "B");
    const reqs = await ctx.fake.requests();
    assert.equal(reqs.length, 3);
    const systems = reqs.map((r) => systemMessageOf(r.body));
    assert.ok(systems.every((s) => s === systems[0]), "identical system message on every request");
    assert.ok(systems[0].endsWith("STABLE_SUFFIX"));
    assert.equal(reqs[2].body.messages.filter((m) => m.role === "system").length, 1, "exactly one system message");
});
