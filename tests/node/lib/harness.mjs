// Test harness for the Node SDK conformance suite.
//
// Everything real except the model: the official `@github/copilot-sdk` client spawns the real
// `skipper` binary, which talks to the `fake-model` binary (crates/fake-model) over loopback.
// Each test gets its own fake model, its own temp HOME / COPILOT_HOME / working directory, and
// its own Skipper process(es); `t.after` tears everything down.
//
// Binaries: $SKIPPER_BIN and $FAKE_MODEL_BIN, defaulting to <repo>/target/release/{skipper,fake-model}.
// Snapshots: $SKIPPER_SNAPSHOTS, defaulting to <repo>/../shared/snapshots.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, realpathSync, mkdirSync } from "node:fs";
import { rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import { dirname, join, resolve, isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";

import { CopilotClient, RuntimeConnection } from "@github/copilot-sdk";

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(HERE, "../../..");
export const SKIPPER_BIN = process.env.SKIPPER_BIN ?? join(REPO_ROOT, "target/release/skipper");
export const FAKE_MODEL_BIN =
    process.env.FAKE_MODEL_BIN ?? join(REPO_ROOT, "target/release/fake-model");
export const SNAPSHOTS_DIR =
    process.env.SKIPPER_SNAPSHOTS ?? resolve(REPO_ROOT, "../shared/snapshots");

/** The token the SDK hands to Skipper (`gitHubToken` → COPILOT_SDK_AUTH_TOKEN). */
export const TEST_TOKEN = "fake-token-for-e2e-tests";

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
export const ISO_TS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export const delay = (ms) => new Promise((r) => setTimeout(r, ms));

/** Rejects with `message` if `promise` does not settle within `ms`. */
export async function withTimeout(promise, ms, message) {
    let timer;
    try {
        return await Promise.race([
            promise,
            new Promise((_, reject) => {
                timer = setTimeout(() => reject(new Error(message ?? `timed out after ${ms} ms`)), ms);
            }),
        ]);
    } finally {
        clearTimeout(timer);
    }
}

/** Polls `fn` until it returns a truthy value (returned) or the timeout elapses. */
export async function waitUntil(fn, { timeout = 10_000, interval = 25, message } = {}) {
    const deadline = Date.now() + timeout;
    let last;
    for (;;) {
        last = await fn();
        if (last) return last;
        if (Date.now() > deadline) {
            throw new Error(message ?? `condition not met within ${timeout} ms`);
        }
        await delay(interval);
    }
}

function requireBinary(path, what) {
    if (!existsSync(path)) {
        throw new Error(
            `${what} binary not found at ${path}; run \`cargo build --release -p skipper -p fake-model\` ` +
                `or set ${what === "skipper" ? "SKIPPER_BIN" : "FAKE_MODEL_BIN"}`
        );
    }
}

// ---------------------------------------------------------------------------------------------
// fake-model

/** A running `fake-model` process and its `/_fake/` control API. */
export class FakeModel {
    constructor(proc, url) {
        this.proc = proc;
        this.url = url;
        this.stderr = "";
        proc.stderr.on("data", (d) => {
            this.stderr += d.toString();
        });
    }

    static async start() {
        requireBinary(FAKE_MODEL_BIN, "fake-model");
        const proc = spawn(FAKE_MODEL_BIN, ["--port", "0"], {
            stdio: ["ignore", "pipe", "pipe"],
            env: { ...process.env, RUST_LOG: process.env.FAKE_MODEL_LOG ?? "warn" },
        });
        let stdout = "";
        let early = "";
        proc.stderr.on("data", (d) => {
            early += d.toString();
        });
        const url = await withTimeout(
            new Promise((resolveUrl, reject) => {
                proc.stdout.on("data", (d) => {
                    stdout += d.toString();
                    const m = /FAKE_MODEL_URL=(\S+)/.exec(stdout);
                    if (m) resolveUrl(m[1]);
                });
                proc.on("exit", (code) =>
                    reject(new Error(`fake-model exited early (code ${code}): ${early}`))
                );
                proc.on("error", reject);
            }),
            10_000,
            "fake-model did not print FAKE_MODEL_URL within 10 s"
        );
        const fake = new FakeModel(proc, url);
        fake.stderr = early;
        return fake;
    }

    async #call(method, path, body) {
        const res = await fetch(`${this.url}${path}`, {
            method,
            headers: body === undefined ? {} : { "content-type": "application/json" },
            body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        if (!res.ok) {
            throw new Error(`fake-model ${method} ${path} → ${res.status}: ${text}`);
        }
        return text ? JSON.parse(text) : null;
    }

    /** Replays `snapshot` (path relative to the snapshots dir, or absolute) for `workdir`. */
    load(snapshot, workdir) {
        const path = isAbsolute(snapshot) ? snapshot : join(SNAPSHOTS_DIR, snapshot);
        return this.#call("POST", "/_fake/load", { snapshot: path, workdir });
    }

    /** Queues scripted replies (FIFO, one per model request; they win over a snapshot). */
    replies(list) {
        return this.#call("POST", "/_fake/replies", { replies: list });
    }

    /** Captured model requests: `[{path, headers, body}]`, oldest first. */
    requests() {
        return this.#call("GET", "/_fake/requests");
    }

    /** `[{request, response, requestHeaders}]`; `response` is null when nothing matched. */
    exchanges() {
        return this.#call("GET", "/_fake/exchanges");
    }

    reset() {
        return this.#call("POST", "/_fake/reset", {});
    }

    /** The last `n` characters of the fake's stderr (snapshot-mismatch diagnostics land here). */
    stderrTail(n = 4000) {
        return this.stderr.length > n ? `…${this.stderr.slice(-n)}` : this.stderr;
    }

    async stop() {
        if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
        const exited = once(this.proc, "exit");
        this.proc.kill("SIGTERM");
        await withTimeout(exited, 5_000).catch(() => this.proc.kill("SIGKILL"));
    }
}

// ---------------------------------------------------------------------------------------------
// Environment

/** Env for a Skipper process: isolated dirs, the fake model as CAPI, no ambient credentials. */
export function skipperEnv({ fakeUrl, home, copilotHome, extra = {} }) {
    const env = { ...process.env };
    for (const k of Object.keys(env)) {
        if (
            /^(GH_TOKEN|GITHUB_TOKEN|COPILOT_GITHUB_TOKEN|COPILOT_SDK_AUTH_TOKEN|COPILOT_CONNECTION_TOKEN|COPILOT_PROVIDER_.*|COPILOT_MODEL|COPILOT_OFFLINE|COPILOT_ALLOW_ALL|NODE_DEBUG)$/.test(
                k
            ) ||
            /^(https?_proxy|all_proxy)$/i.test(k)
        ) {
            delete env[k];
        }
    }
    Object.assign(env, {
        COPILOT_API_URL: fakeUrl,
        COPILOT_DEBUG_GITHUB_API_URL: fakeUrl,
        COPILOT_HOME: copilotHome,
        HOME: home,
        XDG_CONFIG_HOME: join(home, ".config"),
        XDG_STATE_HOME: join(home, ".local/state"),
        XDG_DATA_HOME: join(home, ".local/share"),
        XDG_CACHE_HOME: join(home, ".cache"),
        GH_CONFIG_DIR: join(home, ".config/gh"),
        NO_PROXY: "127.0.0.1,localhost",
        no_proxy: "127.0.0.1,localhost",
        RUST_BACKTRACE: "1",
        ...extra,
    });
    return env;
}

// ---------------------------------------------------------------------------------------------
// Per-test context

/**
 * Sets up one test: temp dirs, a fake model, and a factory for SDK clients against Skipper.
 * Registers teardown with `t.after`.
 */
export async function setup(t) {
    requireBinary(SKIPPER_BIN, "skipper");
    const root = realpathSync(mkdtempSync(join(os.tmpdir(), "skipper-node-")));
    const home = join(root, "home");
    const copilotHome = join(root, "copilot-home");
    const workDir = join(root, "work");
    for (const d of [home, copilotHome, workDir]) mkdirSync(d, { recursive: true });

    const fake = await FakeModel.start();
    const env = skipperEnv({ fakeUrl: fake.url, home, copilotHome });
    const clients = [];
    const raws = [];

    const ctx = {
        root,
        home,
        copilotHome,
        workDir,
        fake,
        env,

        /**
         * A CopilotClient that spawns Skipper. `transport`: "stdio" (default) or "tcp";
         * `port`/`connectionToken` for TCP; other keys are CopilotClient options.
         */
        client({ transport = "stdio", port, connectionToken, env: extraEnv, ...options } = {}) {
            const childEnv = extraEnv ? { ...env, ...extraEnv } : env;
            const connection =
                transport === "tcp"
                    ? RuntimeConnection.forTcp({
                          path: SKIPPER_BIN,
                          env: childEnv,
                          port,
                          connectionToken,
                      })
                    : RuntimeConnection.forStdio({ path: SKIPPER_BIN, env: childEnv });
            const client = new CopilotClient({
                connection,
                gitHubToken: TEST_TOKEN,
                baseDirectory: copilotHome,
                workingDirectory: workDir,
                logLevel: "error",
                ...options,
            });
            clients.push(client);
            return client;
        },

        /**
         * A raw JSON-RPC peer over Skipper's stdio (see RawPeer). By default launched like the
         * SDK does with a token (`--auth-token-env COPILOT_SDK_AUTH_TOKEN --no-auto-login`).
         */
        async raw(args = ["--auth-token-env", "COPILOT_SDK_AUTH_TOKEN", "--no-auto-login"], extraEnv = {}) {
            const peer = RawPeer.spawn(args, { ...env, COPILOT_SDK_AUTH_TOKEN: TEST_TOKEN, ...extraEnv }, workDir);
            raws.push(peer);
            return peer;
        },

        /** Rethrows `err` with the fake model's stderr (snapshot mismatch diagnostics) attached. */
        explain(err) {
            const tail = fake.stderrTail();
            if (tail.trim() && err instanceof Error && !err.message.includes("fake-model stderr")) {
                err.message += `\n--- fake-model stderr ---\n${tail}`;
            }
            return err;
        },
    };

    t.after(async () => {
        for (const c of clients) {
            try {
                await withTimeout(c.stop(), 15_000, "client.stop() timed out");
            } catch {
                await c.forceStop().catch(() => {});
            }
        }
        for (const p of raws) await p.kill();
        await fake.stop();
        if (!process.env.KEEP_TMP) {
            await rm(root, { recursive: true, force: true }).catch(() => {});
        }
    });
    return ctx;
}

// ---------------------------------------------------------------------------------------------
// SDK helpers

/** Records every event a session dispatches. */
export function recordEvents(session) {
    const events = [];
    session.on((e) => events.push(e));
    return events;
}

/** Resolves with the first event (dispatched from now on) matching `pred`. */
export function nextEvent(session, pred, timeout = 30_000) {
    const test = typeof pred === "string" ? (e) => e.type === pred : pred;
    let unsubscribe;
    return withTimeout(
        new Promise((res) => {
            unsubscribe = session.on((e) => {
                if (test(e)) res(e);
            });
        }),
        timeout,
        `no matching event within ${timeout} ms (${typeof pred === "string" ? pred : "predicate"})`
    ).finally(() => unsubscribe?.());
}

/** `session.sendAndWait` with fake-model diagnostics attached on failure. */
export async function sendAndWait(ctx, session, prompt, timeout = 30_000) {
    try {
        return await session.sendAndWait({ prompt }, timeout);
    } catch (err) {
        throw ctx.explain(err);
    }
}

/** Asserts the fake model answered every request (no snapshot mismatch / missing reply). */
export async function unmatchedExchanges(fake) {
    const ex = await fake.exchanges();
    return ex.filter((e) => e.response === null || e.response === undefined);
}

// ---------------------------------------------------------------------------------------------
// Raw JSON-RPC over Content-Length framing

/**
 * Strict parser of the server→client byte stream: every byte must belong to a frame of the
 * form `Content-Length: N\r\n\r\n<N bytes of JSON>`. Anything else is recorded in `errors`.
 */
export class FrameReader {
    constructor() {
        this.buf = Buffer.alloc(0);
        this.messages = [];
        this.errors = [];
        this.listeners = new Set();
        this.broken = false;
    }

    push(chunk) {
        if (this.broken) return;
        this.buf = Buffer.concat([this.buf, chunk]);
        for (;;) {
            const prefix = "Content-Length: ";
            const head = this.buf.subarray(0, prefix.length).toString("latin1");
            if (!prefix.startsWith(head)) {
                this.#fail(`bytes outside a frame: ${JSON.stringify(this.buf.subarray(0, 200).toString())}`);
                return;
            }
            const sep = this.buf.indexOf("\r\n\r\n");
            if (sep < 0) return;
            const header = this.buf.subarray(0, sep).toString("latin1");
            const m = /^Content-Length: (\d+)$/.exec(header);
            if (!m) {
                this.#fail(`unexpected header block ${JSON.stringify(header)}`);
                return;
            }
            const len = Number(m[1]);
            if (this.buf.length < sep + 4 + len) return;
            const body = this.buf.subarray(sep + 4, sep + 4 + len).toString("utf8");
            this.buf = this.buf.subarray(sep + 4 + len);
            let msg;
            try {
                msg = JSON.parse(body);
            } catch (e) {
                this.errors.push(`frame body is not JSON (${e.message}): ${body.slice(0, 200)}`);
                continue;
            }
            this.messages.push(msg);
            for (const l of this.listeners) l(msg);
        }
    }

    #fail(msg) {
        this.errors.push(msg);
        this.broken = true;
    }

    /** Bytes received but not (yet) forming a complete frame. */
    get pending() {
        return this.buf.length;
    }
}

export function frame(body) {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === "string" ? body : JSON.stringify(body), "utf8");
    return Buffer.concat([Buffer.from(`Content-Length: ${bytes.length}\r\n\r\n`, "latin1"), bytes]);
}

/** A raw JSON-RPC client over a writable/readable pair (a Skipper child's stdio, or a socket). */
export class RawPeer {
    constructor({ write, proc = null, socket = null }) {
        this.writeBytes = write;
        this.proc = proc;
        this.socket = socket;
        this.reader = new FrameReader();
        this.nextId = 1;
        this.stderr = "";
        this.stdoutBytes = 0;
    }

    /** Spawns `skipper --headless --stdio --no-auto-update …args`. */
    static spawn(args, env, cwd) {
        const proc = spawn(SKIPPER_BIN, ["--headless", "--stdio", "--no-auto-update", ...args], {
            stdio: ["pipe", "pipe", "pipe"],
            env,
            cwd,
        });
        const peer = new RawPeer({
            write: (b) => new Promise((res, rej) => proc.stdin.write(b, (e) => (e ? rej(e) : res()))),
            proc,
        });
        proc.stdout.on("data", (d) => {
            peer.stdoutBytes += d.length;
            peer.reader.push(d);
        });
        proc.stderr.on("data", (d) => {
            peer.stderr += d.toString();
        });
        proc.stdin.on("error", () => {});
        peer.exited = new Promise((res) => proc.on("exit", (code, signal) => res({ code, signal })));
        return peer;
    }

    /** Connects to a Skipper TCP server on 127.0.0.1:`port`. */
    static async connect(port) {
        const socket = net.connect(port, "127.0.0.1");
        await once(socket, "connect");
        const peer = new RawPeer({
            write: (b) => new Promise((res, rej) => socket.write(b, (e) => (e ? rej(e) : res()))),
            socket,
        });
        socket.on("data", (d) => peer.reader.push(d));
        socket.on("error", () => {});
        return peer;
    }

    get messages() {
        return this.reader.messages;
    }

    write(bytes) {
        return this.writeBytes(bytes);
    }

    send(msg) {
        return this.write(frame(msg));
    }

    /** Waits for the first message (at or after index `from`) matching `pred`. */
    waitFor(pred, { from = 0, timeout = 10_000, what = "message" } = {}) {
        const found = this.reader.messages.slice(from).find(pred);
        if (found) return Promise.resolve(found);
        let listener;
        return withTimeout(
            new Promise((res) => {
                listener = (m) => {
                    if (pred(m)) res(m);
                };
                this.reader.listeners.add(listener);
            }),
            timeout,
            `no ${what} within ${timeout} ms; received: ${JSON.stringify(this.reader.messages).slice(0, 2000)}; ` +
                `frame errors: ${JSON.stringify(this.reader.errors)}; stderr: ${this.stderr.slice(-2000)}`
        ).finally(() => this.reader.listeners.delete(listener));
    }

    /** Sends a request and resolves with the whole response message (`result` or `error`). */
    async call(method, params = {}, { timeout = 10_000, id } = {}) {
        const reqId = id ?? this.nextId++;
        const from = this.reader.messages.length;
        await this.send({ jsonrpc: "2.0", id: reqId, method, params });
        return this.waitFor((m) => m.id === reqId && ("result" in m || "error" in m), {
            from,
            timeout,
            what: `response to ${method} (id ${JSON.stringify(reqId)})`,
        });
    }

    async kill() {
        if (this.socket) this.socket.destroy();
        if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
            this.proc.kill("SIGKILL");
            await this.exited;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers for the issue 3/4 suites (loop, streaming, abort, retries, permissions, tools)

/** Asserts the fake answered every model request (snapshot replay matched), with diagnostics. */
export async function assertAllMatched(ctx, what = "the loaded snapshot") {
    const unmatched = await unmatchedExchanges(ctx.fake);
    if (unmatched.length > 0) {
        const err = new Error(
            `${unmatched.length} model request(s) did not match ${what}; last unmatched request messages: ` +
                JSON.stringify(unmatched.at(-1)?.request?.messages?.slice(1) ?? null).slice(0, 3000)
        );
        throw ctx.explain(err);
    }
}

/** The system message text of a captured chat-completions request body. */
export function systemMessageOf(body) {
    const m = body?.messages?.find((x) => x.role === "system");
    if (!m) return undefined;
    return typeof m.content === "string" ? m.content : (m.content ?? []).map((p) => p.text ?? "").join("");
}

/** The function names offered to the model in a captured request body. */
export function toolNamesOf(body) {
    return (body?.tools ?? []).map((t) => t.function?.name ?? t.name);
}

/** Event types, for assertion messages. */
export function typesOf(events) {
    return events.map((e) => e.type);
}

/** Resolves once `events` (a live array) contains an event matching `pred`; returns it. */
export function waitForEvent(events, pred, { timeout = 30_000, message } = {}) {
    const test = typeof pred === "string" ? (e) => e.type === pred : pred;
    return waitUntil(() => events.find(test), {
        timeout,
        interval: 10,
        message: message ?? `no ${typeof pred === "string" ? pred : "matching"} event within ${timeout} ms; got: ${events.map((e) => e.type).join(", ")}`,
    });
}
