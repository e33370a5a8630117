// Benchmark for the real oh-my-pi session library: @oh-my-pi/pi-coding-agent 13.19.0, run with Bun.
//
//   conformance/adapters/omp/node_modules/@oven/bun-linux-x64/bin/bun conformance/adapters/omp/bench.ts OP FILE [RUNS]
//
// OP:
//   load          time `await SessionManager.open(copy of FILE)` (read + parse + migrate + index).
//                 A fresh copy of FILE is made before every run, outside the timing.
//   context       open once (untimed), time buildSessionContext(entries, leafId) at the leaf
//                 (13.19.0 exports it from src/session/session-manager.ts; 18.x from session-context.ts).
//   tree          open once (untimed), time getTree().
//   append        per run: open a fresh copy (untimed; an assistant message is appended and flushed
//                 first, untimed, if the file has none, so every append is persisted), then time
//                 10,000 appendMessage() calls of a small user message plus the final
//                 `await flush()` (flush + fsync) and `await close()`.
//   append-fsync  as append, but `await sm.flush()` (writer flush + fsync) after every append.
//   e2e           one run: the time from this process's start to a built context (open +
//                 buildSessionContext), less the time of copying FILE; the bench starts one process per run.
// RUNS: number of timed runs (default 5).
//
// Output: one JSON line on stdout,
//   {"impl":"omp","version":"13.19.0","op":"load","runs":[ms,...],"medianMs":...,"peakRssBytes":...}
// peakRssBytes is VmHWM from /proc/self/status of the process that ran the library. Errors:
// {"error":"..."} and exit 1.
//
// Environment: nothing needs to be set. Bun caches os.homedir() at process start and the library
// writes under ~/.omp, so the script re-runs itself once (a child Bun process, marked by
// OMP_BENCH_CHILD) with HOME set to a throwaway dir under $TMPDIR (os.tmpdir()), removed at the end.
// It also sets, unless already set, OMP_PKG_DIR (default: <this folder>/node_modules/@oh-my-pi/pi-coding-agent)
// and BUN_RUNTIME_TRANSPILER_CACHE_PATH (<this folder>/node_modules/.cache/bun-transpiler), as run.sh does.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { SCRUB_ENV } from "./env.ts";

const HERE = import.meta.dir;
const APPENDS = 10_000;
const OPS = new Set(["load", "context", "tree", "append", "append-fsync", "e2e"]);


const stdoutWrite = (line: string) =>
	new Promise<void>(resolve => {
		process.stdout.write(line, () => resolve());
	});

async function emit(obj: unknown, code: number): Promise<never> {
	await stdoutWrite(`${JSON.stringify(obj)}\n`);
	process.exit(code);
}

const errMessage = (err: unknown) => (err instanceof Error ? err.message : String(err));

// -----------------------------------------------------------------------------------------------
// Parent: re-run this file with a throwaway HOME.
// -----------------------------------------------------------------------------------------------
if (!process.env.OMP_BENCH_CHILD) {
	let tmp: string | undefined;
	let code = 1;
	try {
		tmp = fs.mkdtempSync(path.join(os.tmpdir(), "omp-bench."));
		const home = path.join(tmp, "home");
		fs.mkdirSync(home, { recursive: true });
		const env: Record<string, string | undefined> = { ...process.env, HOME: home, OMP_BENCH_CHILD: tmp };
		for (const key of SCRUB_ENV) delete env[key];
		env.OMP_PKG_DIR ??= path.join(HERE, "node_modules", "@oh-my-pi", "pi-coding-agent");
		env.BUN_RUNTIME_TRANSPILER_CACHE_PATH ??= path.join(HERE, "node_modules", ".cache", "bun-transpiler");
		const child = Bun.spawnSync([process.execPath, "--no-install", import.meta.path, ...process.argv.slice(2)], {
			env,
			cwd: process.cwd(),
			stdio: ["ignore", "pipe", "inherit"],
		});
		const out = child.stdout ? child.stdout.toString() : "";
		if (child.exitCode === null || (out.trim() === "" && child.exitCode !== 0)) {
			const why = child.signalCode ? `signal ${child.signalCode}` : `exit code ${child.exitCode}`;
			await stdoutWrite(`${JSON.stringify({ error: `benchmark process died (${why})` })}\n`);
			code = 1;
		} else {
			await stdoutWrite(out);
			code = child.exitCode;
		}
	} catch (err) {
		await stdoutWrite(`${JSON.stringify({ error: errMessage(err) })}\n`);
		code = 1;
	} finally {
		if (tmp) {
			try {
				fs.rmSync(tmp, { recursive: true, force: true });
			} catch {}
		}
	}
	process.exit(code);
}

// -----------------------------------------------------------------------------------------------
// Child: the benchmark itself.
// -----------------------------------------------------------------------------------------------
const TMP = process.env.OMP_BENCH_CHILD!;

// stdout carries exactly one JSON line: route any console output of the library to stderr.
const toStderr = (...args: unknown[]) => {
	try {
		process.stderr.write(`${args.map(a => (typeof a === "string" ? a : Bun.inspect(a))).join(" ")}\n`);
	} catch {}
};
console.log = toStderr;
console.info = toStderr;
console.debug = toStderr;
console.warn = toStderr;
console.error = toStderr;

// A stray rejection or exception (e.g. from 13.19.0's fire-and-forget `void this.#rewriteFile()`)
// means the measurement is not trustworthy: report it as the error.
function installFatalHandlers() {
	const fatal = (err: unknown) => {
		toStderr("[omp-bench] fatal:", err instanceof Error ? err.stack ?? err.message : err);
		void emit({ error: `unhandled: ${errMessage(err)}` }, 1);
	};
	process.on("unhandledRejection", fatal);
	process.on("uncaughtException", fatal);
}

function peakRssBytes(): number {
	const status = fs.readFileSync("/proc/self/status", "utf8");
	const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
	if (!m) throw new Error("VmHWM not found in /proc/self/status");
	return Number(m[1]) * 1024;
}

function median(values: number[]): number {
	const s = [...values].sort((a, b) => a - b);
	const mid = s.length >> 1;
	return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const ms = (ns: number) => Math.round(ns / 1e3) / 1e3; // ns -> ms, microsecond resolution

function countLines(p: string): number {
	const buf = fs.readFileSync(p);
	let n = 0;
	for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) n++;
	return n;
}

function syncFile(p: string) {
	const fd = fs.openSync(p, "r+");
	try {
		fs.fsyncSync(fd);
	} finally {
		fs.closeSync(fd);
	}
}

const hasAssistant = (entries: any[]) => entries.some(e => e.type === "message" && e.message?.role === "assistant");

let sink: unknown; // keeps results alive so the timed calls cannot be optimised away

async function main(): Promise<Record<string, unknown>> {
	const [op, fileArg, runsArg] = process.argv.slice(2);
	if (!op || !fileArg) throw new Error("usage: bun bench.ts OP FILE [RUNS]");
	if (!OPS.has(op)) throw new Error(`unknown OP ${JSON.stringify(op)} (load|context|tree|append|append-fsync|e2e)`);
	const runs = runsArg === undefined ? 5 : Number(runsArg);
	if (!Number.isInteger(runs) || runs < 1) throw new Error(`RUNS must be a positive integer, got ${JSON.stringify(runsArg)}`);
	const file = path.resolve(fileArg);
	if (!fs.statSync(file).isFile()) throw new Error(`not a file: ${file}`);

	for (const key of SCRUB_ENV) delete process.env[key];
	const PKG_DIR = path.resolve(process.env.OMP_PKG_DIR ?? path.join(HERE, "node_modules", "@oh-my-pi", "pi-coding-agent"));
	const version = JSON.parse(fs.readFileSync(path.join(PKG_DIR, "package.json"), "utf8")).version as string;
	const SESSION_SRC = path.join(PKG_DIR, "src", "session");

	const smMod: any = await import(path.join(SESSION_SRC, "session-manager.ts"));
	const SessionManager: any = smMod.SessionManager;
	let buildSessionContext: any = smMod.buildSessionContext;
	if (typeof buildSessionContext !== "function") {
		buildSessionContext = (await import(path.join(SESSION_SRC, "session-context.ts"))).buildSessionContext;
	}
	if (typeof SessionManager?.open !== "function") throw new Error("SessionManager.open not found");
	if (typeof buildSessionContext !== "function") throw new Error("buildSessionContext not found");
	const utils: any = await import(Bun.resolveSync("@oh-my-pi/pi-utils", SESSION_SRC));

	// pi-utils' postmortem module installs handlers that process.exit(1) on a rejection and async
	// signal handlers; drop them (as the adapter does) and install ours.
	for (const event of ["unhandledRejection", "uncaughtException", "SIGTERM", "SIGINT", "SIGHUP", "exit"] as const) {
		process.removeAllListeners(event);
	}
	installFatalHandlers();

	const home = process.env.HOME!;
	const project = path.join(TMP, "project");
	const sessionDir = path.join(TMP, "sessions");
	fs.mkdirSync(project, { recursive: true });
	fs.mkdirSync(sessionDir, { recursive: true });
	if (typeof utils.setProjectDir === "function") utils.setProjectDir(project); // also chdir
	else process.chdir(project);
	if (typeof utils.setAgentDir === "function") utils.setAgentDir(path.join(home, ".omp", "agent"));

	const copyPath = (i: number) => {
		const p = path.join(TMP, `run-${i}.jsonl`);
		fs.copyFileSync(file, p);
		return p;
	};
	const head = { impl: "omp", version, op };
	const times: number[] = [];

	if (op === "e2e") {
		// What a user waits for in a fresh process: start, module loading, open and
		// buildSessionContext, from this (child) process's start (performance.now()), less
		// the time taken to copy the file first. One run per process.
		const c0 = performance.now();
		const p = copyPath(0);
		const copyMs = performance.now() - c0;
		const sm = await SessionManager.open(p, sessionDir);
		sink = buildSessionContext(sm.getEntries(), sm.getLeafId());
		times.push(Math.round((performance.now() - copyMs) * 1e3) / 1e3);
		sink = undefined;
		await sm.close();
	} else if (op === "load") {
		for (let i = 0; i < runs; i++) {
			const p = copyPath(i);
			const t0 = Bun.nanoseconds();
			const sm = await SessionManager.open(p, sessionDir);
			const t1 = Bun.nanoseconds();
			times.push(ms(t1 - t0));
			await sm.close();
			sink = sm;
			sink = undefined;
			fs.rmSync(p, { force: true });
		}
	} else if (op === "context" || op === "tree") {
		const sm = await SessionManager.open(copyPath(0), sessionDir);
		const entries = sm.getEntries();
		const leafId = sm.getLeafId();
		for (let i = 0; i < runs; i++) {
			let t0: number, t1: number;
			if (op === "context") {
				t0 = Bun.nanoseconds();
				sink = buildSessionContext(entries, leafId);
				t1 = Bun.nanoseconds();
			} else {
				t0 = Bun.nanoseconds();
				sink = sm.getTree();
				t1 = Bun.nanoseconds();
			}
			times.push(ms(t1 - t0));
			sink = undefined;
		}
		await sm.close();
	} else {
		const fsyncEach = op === "append-fsync";
		for (let i = 0; i < runs; i++) {
			const p = copyPath(i);
			syncFile(p); // the copy's pages are written now, not by the first timed flush
			const sm = await SessionManager.open(p, sessionDir);
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
				await sm.flush();
			}
			const before = countLines(p);
			const t0 = Bun.nanoseconds();
			if (fsyncEach) {
				for (let k = 0; k < APPENDS; k++) {
					sm.appendMessage({ role: "user", content: "benchmark append", timestamp: 1 });
					await sm.flush();
				}
			} else {
				for (let k = 0; k < APPENDS; k++) {
					sm.appendMessage({ role: "user", content: "benchmark append", timestamp: 1 });
				}
				await sm.flush();
			}
			await sm.close();
			const t1 = Bun.nanoseconds();
			times.push(ms(t1 - t0));
			const after = countLines(p);
			if (after - before !== APPENDS) throw new Error(`expected ${APPENDS} persisted lines, file grew by ${after - before}`);
			fs.rmSync(p, { force: true });
		}
	}

	return { ...head, runs: times, medianMs: median(times), peakRssBytes: peakRssBytes() };
}

try {
	const out = await main();
	await emit(out, 0);
} catch (err) {
	toStderr("[omp-bench] error:", err instanceof Error ? err.stack ?? err.message : err);
	await emit({ error: errMessage(err) }, 1);
}
