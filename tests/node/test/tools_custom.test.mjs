// Issue 4 (and methods.md §4): SDK-defined (external) tools and the tool list the model sees —
// a custom tool invoked, a throwing handler (the `Failed to execute … due to error: Error: …`
// text, the exception kept from the model), overriding a built-in, skipPermission,
// availableTools / excludedTools / defaultAgent.excludedTools filtering (checked on the captured
// request), several custom tools in parallel in one turn, complex argument and result types,
// and an unknown tool name. Replays the tools/ and session/ recordings.

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

import { approveAll, defineTool } from "@github/copilot-sdk";
import { setup, sendAndWait, assertAllMatched, toolNamesOf, typesOf, waitUntil, delay } from "../lib/harness.mjs";

const T = { timeout: 90_000 };

const encryptString = (onCall) =>
    defineTool("encrypt_string", {
        description: "Encrypts a string",
        parameters: { type: "object", properties: { input: { type: "string", description: "String to encrypt" } }, required: ["input"] },
        handler: ({ input }) => {
            onCall?.(input);
            return input.toUpperCase();
        },
    });

async function replaySetup(t, snapshot, prepare) {
    const ctx = await setup(t);
    if (prepare) await prepare(ctx.workDir);
    await ctx.fake.load(snapshot, ctx.workDir);
    return ctx;
}

async function firstRequest(ctx) {
    const reqs = await waitUntil(async () => {
        const r = await ctx.fake.requests();
        return r.length > 0 && r;
    });
    return reqs[0].body;
}

test("custom tool invoked: external_tool events, result fed back (tools/invokes_custom_tool)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/invokes_custom_tool.yaml");
    const inputs = [];
    const events = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        tools: [encryptString((i) => inputs.push(i))],
        onEvent: (e) => events.push(e),
    });
    const answer = await sendAndWait(ctx, session, "Use encrypt_string to encrypt this string: Hello");
    assert.equal(answer?.data.content, "The encrypted string is: **HELLO**\n\n(This is a simple cipher that converts the string to uppercase.)");
    await assertAllMatched(ctx);
    assert.deepEqual(inputs, ["Hello"]);
    const types = typesOf(events).join(", ");
    const start = events.find((e) => e.type === "tool.execution_start");
    assert.equal(start?.data.toolName, "encrypt_string");
    const requested = events.find((e) => e.type === "external_tool.requested");
    assert.ok(requested, `external_tool.requested: ${types}`);
    assert.equal(requested.data.toolName, "encrypt_string");
    assert.equal(requested.data.toolCallId, start.data.toolCallId);
    assert.equal(requested.data.sessionId, session.sessionId);
    assert.deepEqual(requested.data.arguments, { input: "Hello" });
    const completedExt = events.find((e) => e.type === "external_tool.completed");
    assert.equal(completedExt?.data.requestId, requested.data.requestId, "external_tool.completed names the request");
    const done = events.find((e) => e.type === "tool.execution_complete");
    assert.equal(done.data.success, true);
    assert.equal(done.data.result?.content, "HELLO");
    assert.ok(events.indexOf(requested) < events.indexOf(done));
    const body = await firstRequest(ctx);
    const def = body.tools.find((x) => x.function?.name === "encrypt_string");
    assert.equal(def?.type, "function");
    assert.equal(def.function.description, "Encrypts a string");
    assert.equal(def.function.parameters?.properties?.input?.type, "string");
    const names = toolNamesOf(body);
    assert.equal(names.at(-1), "encrypt_string", "custom tools come after the built-ins");
    assert.ok(names.includes("bash") && names.includes("view"), "built-ins still offered");
});

test("custom tool with a permission handler: a custom-tool request (tools/invokes_custom_tool_with_permission_handler)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/invokes_custom_tool_with_permission_handler.yaml");
    const requests = [];
    const session = await ctx.client().createSession({
        tools: [encryptString()],
        onPermissionRequest: (req) => {
            requests.push(req);
            return { kind: "approve-once" };
        },
    });
    const answer = await sendAndWait(ctx, session, "Use encrypt_string to encrypt this string: Hello");
    assert.equal(answer?.data.content, "The encrypted string is: **HELLO**");
    await assertAllMatched(ctx);
    const custom = requests.filter((r) => r.kind === "custom-tool");
    assert.equal(custom.length, 1);
    assert.equal(custom[0].toolName, "encrypt_string");
    assert.equal(custom[0].toolDescription, "Encrypts a string");
    assert.deepEqual(custom[0].args, { input: "Hello" });
    assert.equal(typeof custom[0].toolCallId, "string");
});

test(
    "a throwing tool handler → 'Failed to execute … due to error: Error: Tool execution failed' (tools/handles_tool_calling_errors)",
    T,
    async (t) => {
        const ctx = await replaySetup(t, "tools/handles_tool_calling_errors.yaml");
        const events = [];
        const session = await ctx.client().createSession({
            onPermissionRequest: approveAll,
            tools: [
                defineTool("get_user_location", {
                    description: "Gets the user's location",
                    handler: () => {
                        throw new Error("Melbourne");
                    },
                }),
            ],
            onEvent: (e) => events.push(e),
        });
        const answer = await sendAndWait(ctx, session, "What is my location? If you can't find out, just say 'unknown'.");
        assert.equal(answer?.data.content, "Your location is unknown.");
        await assertAllMatched(ctx);
        const reqs = await ctx.fake.requests();
        const last = reqs.at(-1).body.messages;
        const calls = last.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
        assert.equal(calls.length, 1);
        assert.equal(calls[0].function.name, "get_user_location");
        const results = last.filter((m) => m.role === "tool");
        assert.equal(results.length, 1);
        assert.equal(results[0].tool_call_id, calls[0].id);
        assert.equal(results[0].content, "Failed to execute `get_user_location` tool with arguments: {} due to error: Error: Tool execution failed");
        assert.ok(!results[0].content.includes("Melbourne"), "the exception text is not shown to the model");
        const done = events.find((e) => e.type === "tool.execution_complete");
        assert.equal(done.data.success, false);
        assert.equal(typeof done.data.error?.message, "string");
    }
);

test("a custom tool overrides a built-in of the same name (tools/overrides_built_in_tool_with_custom_tool)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/overrides_built_in_tool_with_custom_tool.yaml");
    const queries = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        tools: [
            defineTool("grep", {
                description: "A custom grep implementation that overrides the built-in",
                parameters: { type: "object", properties: { query: { type: "string", description: "Search query" } }, required: ["query"] },
                handler: ({ query }) => {
                    queries.push(query);
                    return `CUSTOM_GREP_RESULT: ${query}`;
                },
                overridesBuiltInTool: true,
            }),
        ],
    });
    const answer = await sendAndWait(ctx, session, "Use grep to search for the word 'hello'");
    assert.match(answer?.data.content ?? "", /CUSTOM_GREP_RESULT: hello/);
    await assertAllMatched(ctx);
    assert.deepEqual(queries, ["hello"], "the SDK handler ran, not the built-in");
    const body = await firstRequest(ctx);
    const greps = body.tools.filter((x) => x.function?.name === "grep");
    assert.equal(greps.length, 1, "exactly one grep offered");
    assert.equal(greps[0].function.description, "A custom grep implementation that overrides the built-in");
    assert.deepEqual(Object.keys(greps[0].function.parameters.properties), ["query"]);
});

test("skipPermission: the handler is never asked (tools/skippermission_sent_in_tool_definition)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/skippermission_sent_in_tool_definition.yaml");
    let asked = false;
    const events = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: () => {
            asked = true;
            return { kind: "no-result" };
        },
        tools: [
            defineTool("safe_lookup", {
                description: "A safe lookup that skips permission",
                parameters: { type: "object", properties: { id: { type: "string", description: "ID to look up" } }, required: ["id"] },
                handler: ({ id }) => `RESULT: ${id}`,
                skipPermission: true,
            }),
        ],
        onEvent: (e) => events.push(e),
    });
    const answer = await sendAndWait(ctx, session, "Use safe_lookup to look up 'test123'");
    assert.equal(answer?.data.content, 'The lookup for "test123" returned: RESULT: test123');
    await assertAllMatched(ctx);
    assert.equal(asked, false);
    assert.equal(events.filter((e) => e.type === "permission.requested").length, 0);
});

test("availableTools: only the listed tools are offered (session/should_create_a_session_with_availabletools)", T, async (t) => {
    const ctx = await replaySetup(t, "session/should_create_a_session_with_availabletools.yaml");
    const session = await ctx.client().createSession({ onPermissionRequest: approveAll, availableTools: ["view", "edit"] });
    assert.equal((await sendAndWait(ctx, session, "What is 1+1?"))?.data.content, "1 + 1 = 2");
    await assertAllMatched(ctx);
    assert.deepEqual(toolNamesOf(await firstRequest(ctx)).sort(), ["edit", "view"]);
});

test("excludedTools: the excluded tool is not offered (session/should_create_a_session_with_excludedtools)", T, async (t) => {
    const ctx = await replaySetup(t, "session/should_create_a_session_with_excludedtools.yaml");
    const session = await ctx.client().createSession({ onPermissionRequest: approveAll, excludedTools: ["view"] });
    assert.equal((await sendAndWait(ctx, session, "What is 1+1?"))?.data.content, "1 + 1 = 2");
    await assertAllMatched(ctx);
    const names = toolNamesOf(await firstRequest(ctx));
    assert.ok(names.includes("edit") && names.includes("grep"), names.join(", "));
    assert.ok(!names.includes("view"), names.join(", "));
});

test(
    "defaultAgent.excludedTools hides a custom tool from the model (session/…_defaultagent_excludedtools)",
    T,
    async (t) => {
        const ctx = await replaySetup(t, "session/should_create_a_session_with_defaultagent_excludedtools.yaml");
        const session = await ctx.client().createSession({
            onPermissionRequest: approveAll,
            tools: [
                defineTool("secret_tool", {
                    description: "A secret tool hidden from the default agent",
                    parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
                    handler: async () => "SECRET",
                }),
            ],
            defaultAgent: { excludedTools: ["secret_tool"] },
        });
        assert.equal((await sendAndWait(ctx, session, "What is 1+1?"))?.data.content, "1 + 1 = 2");
        await assertAllMatched(ctx);
        const names = toolNamesOf(await firstRequest(ctx));
        assert.ok(!names.includes("secret_tool"), names.join(", "));
        assert.ok(names.includes("bash"), "built-ins still offered");
    }
);

test("availableTools and excludedTools combined (tools/should_respect_availabletools_and_excludedtools_combined)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/should_respect_availabletools_and_excludedtools_combined.yaml");
    let allowed = false;
    let excluded = false;
    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        tools: [
            defineTool("allowed_tool", {
                description: "A tool that is allowed",
                parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] },
                handler: ({ input }) => {
                    allowed = true;
                    return `ALLOWED_${input.toUpperCase()}`;
                },
            }),
            defineTool("excluded_tool", {
                description: "A tool that should be excluded",
                parameters: { type: "object", properties: {} },
                handler: () => {
                    excluded = true;
                    return "EXCLUDED_RESULT";
                },
            }),
        ],
        availableTools: ["allowed_tool", "excluded_tool"],
        excludedTools: ["excluded_tool"],
    });
    const answer = await sendAndWait(ctx, session, "Use the allowed_tool with input 'test'. Do NOT use excluded_tool.");
    assert.match(answer?.data.content ?? "", /ALLOWED_TEST/);
    await assertAllMatched(ctx);
    assert.ok(allowed && !excluded);
    assert.deepEqual(toolNamesOf(await firstRequest(ctx)), ["allowed_tool"], "excluded wins over available");
});

test("several custom tools in parallel in one turn (tools/should_execute_multiple_custom_tools_in_parallel_single_turn)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/should_execute_multiple_custom_tools_in_parallel_single_turn.yaml");
    let inFlight = 0;
    let maxInFlight = 0;
    let arrive;
    const bothArrived = new Promise((r) => (arrive = r));
    const make = (name, key, fmt) =>
        defineTool(name, {
            description: `Looks up ${key} information`,
            parameters: { type: "object", properties: { [key]: { type: "string" } }, required: [key] },
            handler: async (args) => {
                inFlight++;
                maxInFlight = Math.max(maxInFlight, inFlight);
                if (inFlight === 2) arrive();
                await Promise.race([bothArrived, delay(3_000)]);
                inFlight--;
                return fmt(args[key]);
            },
        });
    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        tools: [make("lookup_city", "city", (c) => `CITY_${c.toUpperCase()}`), make("lookup_country", "country", (c) => `COUNTRY_${c.toUpperCase()}`)],
    });
    const answer = await sendAndWait(
        ctx,
        session,
        "Use lookup_city with 'Paris' and lookup_country with 'France' at the same time, then combine both results in your reply."
    );
    assert.match(answer?.data.content ?? "", /CITY_PARIS[\s\S]*COUNTRY_FRANCE/);
    await assertAllMatched(ctx);
    assert.equal(maxInFlight, 2, "both external tool handlers were running at the same time");
});

test("complex argument and result types (tools/can_receive_and_return_complex_types)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/can_receive_and_return_complex_types.yaml");
    let got;
    const session = await ctx.client().createSession({
        onPermissionRequest: approveAll,
        tools: [
            defineTool("db_query", {
                description: "Performs a database query",
                parameters: {
                    type: "object",
                    properties: {
                        query: {
                            type: "object",
                            properties: { table: { type: "string" }, ids: { type: "array", items: { type: "number" } }, sortAscending: { type: "boolean" } },
                            required: ["table", "ids", "sortAscending"],
                        },
                    },
                    required: ["query"],
                },
                handler: ({ query }, invocation) => {
                    got = { query, sessionId: invocation.sessionId };
                    return [
                        { countryId: 19, cityName: "Passos", population: 135460 },
                        { countryId: 12, cityName: "San Lorenzo", population: 204356 },
                    ];
                },
            }),
        ],
    });
    const answer = await sendAndWait(
        ctx,
        session,
        "Perform a DB query for the 'cities' table using IDs 12 and 19, sorting ascending. Reply only with lines of the form: [cityname] [population]"
    );
    assert.equal(answer?.data.content, "Passos 135460\nSan Lorenzo 204356");
    await assertAllMatched(ctx);
    assert.deepEqual(got.query, { table: "cities", ids: [12, 19], sortAscending: true });
    assert.equal(got.sessionId, session.sessionId);
});

test("built-in tool from the tools recordings (tools/invokes_built_in_tools)", T, async (t) => {
    const ctx = await replaySetup(t, "tools/invokes_built_in_tools.yaml", (dir) =>
        writeFile(join(dir, "README.md"), "# ELIZA, the only chatbot you'll ever need")
    );
    const session = await ctx.client().createSession({ onPermissionRequest: approveAll });
    const answer = await sendAndWait(ctx, session, "What's the first line of README.md in this directory?");
    assert.equal(answer?.data.content, "The first line of README.md is: `# ELIZA, the only chatbot you'll ever need`");
    await assertAllMatched(ctx);
});

test("a rejected custom tool never runs; the model is told the user rejected it", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ tool_calls: [{ name: "encrypt_string", arguments: { input: "Hello" } }] }, { text: "Fine." }, { text: "Spare." }]);
    let called = false;
    const session = await ctx.client().createSession({
        tools: [encryptString(() => (called = true))],
        onPermissionRequest: () => ({ kind: "reject" }),
    });
    await sendAndWait(ctx, session, "Use encrypt_string to encrypt this string: Hello");
    if ((await ctx.fake.requests()).length === 1) await sendAndWait(ctx, session, "Next");
    assert.equal(called, false, "the handler was not called");
    const reqs = await ctx.fake.requests();
    const tool = reqs[1].body.messages.find((m) => m.role === "tool");
    assert.equal(tool?.content, "The user rejected this tool call.");
});

test(
    "a rejected custom tool stops the loop (tools/denies_custom_tool_when_permission_denied)",
    T,
    async (t) => {
        const ctx = await replaySetup(t, "tools/denies_custom_tool_when_permission_denied.yaml");
        let called = false;
        const session = await ctx.client().createSession({
            tools: [encryptString(() => (called = true))],
            onPermissionRequest: () => ({ kind: "reject" }),
        });
        await sendAndWait(ctx, session, "Use encrypt_string to encrypt this string: Hello");
        assert.equal(called, false);
        await assertAllMatched(ctx);
        assert.equal((await ctx.fake.requests()).length, 1);
    }
);

test("unknown tool name: 'Tool … does not exist. Available tools …' listing the offered tools; the loop goes on", T, async (t) => {
    const ctx = await setup(t);
    await ctx.fake.replies([{ tool_calls: [{ name: "does_not_exist", arguments: { x: 1 } }] }, { text: "Sorry about that." }]);
    const events = [];
    const asked = [];
    const session = await ctx.client().createSession({
        onPermissionRequest: (r) => {
            asked.push(r);
            return { kind: "approve-once" };
        },
        tools: [encryptString()],
        onEvent: (e) => events.push(e),
    });
    const answer = await sendAndWait(ctx, session, "Call something odd.");
    assert.equal(answer?.data.content, "Sorry about that.");
    assert.deepEqual(asked, [], "no permission request for an unknown tool");
    const done = events.find((e) => e.type === "tool.execution_complete");
    assert.equal(done.data.success, false);
    assert.equal(done.data.error?.message, "Tool 'does_not_exist' does not exist.");
    const reqs = await ctx.fake.requests();
    const offered = toolNamesOf(reqs[0].body);
    const tool = reqs[1].body.messages.find((m) => m.role === "tool");
    assert.equal(
        tool?.content,
        `Tool 'does_not_exist' does not exist. Available tools that can be called are ${offered.join(", ")}.`,
        "the available list is the offered tool names, comma-separated, in order"
    );
});
