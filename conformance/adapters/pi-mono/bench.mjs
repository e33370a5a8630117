#!/usr/bin/env node
// Benchmark for the real pi-mono session library: @mariozechner/pi-coding-agent 0.73.1.
//
//   node conformance/adapters/pi-mono/bench.mjs OP FILE [RUNS]
//
// OP:
//   load          time SessionManager.open(copy of FILE) (read + parse + migrate + index).
//                 A fresh copy of FILE is made before every run, outside the timing (open
//                 rewrites the file when it migrates an old version or finds it empty).
//   context       open once (untimed), time buildSessionContext(entries, leafId) at the leaf.
//   tree          open once (untimed), time getTree().
//   append        per run: open a fresh copy (untimed; an assistant message is appended first,
//                 untimed, if the file has none, so every append is persisted), then time 10,000
//                 appendMessage() calls of a small user message. pi-mono writes synchronously
//                 (appendFileSync per entry), so there is no flush/close to await.
//   append-fsync  unsupported: pi-mono has no flush/fsync call; reported as "unsupported": true.
// RUNS: number of timed runs (default 5).
//
// Output: one JSON line on stdout,
//   {"impl":"pi-mono","version":"0.73.1","op":"load","runs":[ms,...],"medianMs":...,"peakRssBytes":...}
// peakRssBytes is VmHWM from /proc/self/status at the end. Errors: {"error":"..."} and exit 1.
// Library console output goes to stderr. Temporary files live under $TMPDIR (os.tmpdir()) and
// are removed at the end; HOME and PI_CODING_AGENT_DIR point into that temp dir.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const IMPL = "pi-mono";
const PKG_NAME = "@mariozechner/pi-coding-agent";
const APPENDS = 10_000;
const OPS = new Set(["load", "context", "tree", "append", "append-fsync", "e2e"]);

// stdout carries exactly one JSON line: everything the library prints goes to stderr.
const stdoutWrite = process.stdout.write.bind(process.stdout);
for (const name of ["log", "info", "debug", "warn", "trace", "dir"]) {
	console[name] = (...args) => {
		try {
			process.stderr.write(`${args.map((a) => (typeof a === "string" ? a : String(a))).join(" ")}\n`);
		} catch {
			/* ignore */
		}
	};
}

function emit(obj, code) {
	stdoutWrite(`${JSON.stringify(obj)}\n`, () => process.exit(code));
}

function peakRssBytes() {
	const status = readFileSync("/proc/self/status", "utf8");
	const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
	if (!m) throw new Error("VmHWM not found in /proc/self/status");
	return Number(m[1]) * 1024;
}

function median(values) {
	const s = [...values].sort((a, b) => a - b);
	const mid = s.length >> 1;
	return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const ms = (ns) => Math.round(Number(ns) / 1e3) / 1e3; // bigint ns -> ms, microsecond resolution

function countLines(path) {
	const buf = readFileSync(path);
	let n = 0;
	for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
	return n;
}

const hasAssistant = (entries) => entries.some((e) => e.type === "message" && e.message && e.message.role === "assistant");

let tmp;
let sink; // keeps results alive so the timed calls cannot be optimised away

async function main() {
	const [op, fileArg, runsArg] = process.argv.slice(2);
	if (!op || !fileArg) throw new Error("usage: node bench.mjs OP FILE [RUNS]");
	if (!OPS.has(op)) throw new Error(`unknown OP ${JSON.stringify(op)} (load|context|tree|append|append-fsync|e2e)`);
	const runs = runsArg === undefined ? 5 : Number(runsArg);
	if (!Number.isInteger(runs) || runs < 1) throw new Error(`RUNS must be a positive integer, got ${JSON.stringify(runsArg)}`);
	const file = resolve(fileArg);
	if (!statSync(file).isFile()) throw new Error(`not a file: ${file}`);

	const pkgJson = JSON.parse(readFileSync(new URL(`./node_modules/${PKG_NAME}/package.json`, import.meta.url), "utf8"));
	const version = pkgJson.version;
	const head = { impl: IMPL, version, op };

	if (op === "append-fsync") {
		return { ...head, unsupported: true, reason: "pi-mono has no flush/fsync call (appendFileSync per entry)" };
	}

	tmp = mkdtempSync(join(tmpdir(), "pi-mono-bench."));
	const home = join(tmp, "home");
	const agentDir = join(home, ".pi", "agent");
	const sessionDir = join(tmp, "sessions");
	mkdirSync(agentDir, { recursive: true });
	mkdirSync(sessionDir, { recursive: true });
	process.env.HOME = home;
	process.env.PI_CODING_AGENT_DIR = agentDir;
	process.chdir(tmp);

	const L = await import(PKG_NAME);
	// signal-exit (pulled in by the package) installs signal listeners; restore default actions.
	for (const sig of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"]) process.removeAllListeners(sig);
	const { SessionManager, buildSessionContext } = L;
	if (typeof SessionManager?.open !== "function") throw new Error("SessionManager.open not found");
	if (typeof buildSessionContext !== "function") throw new Error("buildSessionContext not exported");

	const copyPath = (i) => {
		const p = join(tmp, `run-${i}.jsonl`);
		copyFileSync(file, p);
		return p;
	};
	const times = [];

	if (op === "e2e") {
		// What a user waits for in a fresh process: start, module loading, open and
		// buildSessionContext, from this process's start (performance.now()), less the
		// time taken to copy the file first. One run per process.
		const c0 = performance.now();
		const p = copyPath(0);
		const copyMs = performance.now() - c0;
		const sm = SessionManager.open(p, sessionDir);
		sink = buildSessionContext(sm.getEntries(), sm.getLeafId());
		times.push(Math.round((performance.now() - copyMs) * 1e3) / 1e3);
		sink = undefined;
	} else if (op === "load") {
		for (let i = 0; i < runs; i++) {
			const p = copyPath(i);
			const t0 = process.hrtime.bigint();
			const sm = SessionManager.open(p, sessionDir);
			const t1 = process.hrtime.bigint();
			sink = sm;
			times.push(ms(t1 - t0));
			sink = undefined;
			rmSync(p, { force: true });
		}
	} else if (op === "context" || op === "tree") {
		const sm = SessionManager.open(copyPath(0), sessionDir);
		const entries = sm.getEntries();
		const leafId = sm.getLeafId();
		for (let i = 0; i < runs; i++) {
			let t0, t1;
			if (op === "context") {
				t0 = process.hrtime.bigint();
				sink = buildSessionContext(entries, leafId);
				t1 = process.hrtime.bigint();
			} else {
				t0 = process.hrtime.bigint();
				sink = sm.getTree();
				t1 = process.hrtime.bigint();
			}
			times.push(ms(t1 - t0));
			sink = undefined;
		}
	} else if (op === "append") {
		for (let i = 0; i < runs; i++) {
			const p = copyPath(i);
			const sm = SessionManager.open(p, sessionDir);
			if (!hasAssistant(sm.getEntries())) {
				sm.appendMessage({
					role: "assistant",
					content: [{ type: "text", text: "ok" }],
					api: "anthropic-messages",
					provider: "anthropic",
					model: "bench",
					usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
					stopReason: "stop",
					timestamp: 1,
				});
			}
			const before = countLines(p);
			const t0 = process.hrtime.bigint();
			for (let k = 0; k < APPENDS; k++) {
				sm.appendMessage({ role: "user", content: "benchmark append", timestamp: 1 });
			}
			// No flush/close in pi-mono: every append is a synchronous appendFileSync.
			const t1 = process.hrtime.bigint();
			times.push(ms(t1 - t0));
			const after = countLines(p);
			if (after - before !== APPENDS) throw new Error(`expected ${APPENDS} persisted lines, file grew by ${after - before}`);
			rmSync(p, { force: true });
		}
	}

	return { ...head, runs: times, medianMs: median(times), peakRssBytes: peakRssBytes() };
}

function cleanup() {
	if (tmp) {
		try {
			process.chdir("/");
			rmSync(tmp, { recursive: true, force: true });
		} catch {
			/* ignore */
		}
	}
}

try {
	const out = await main();
	cleanup();
	emit(out, 0);
} catch (err) {
	cleanup();
	emit({ error: err && err.message ? err.message : String(err) }, 1);
}
