// session-conformance adapter for oh-my-pi (@oh-my-pi/pi-coding-agent), run with Bun.
//
// Speaks the protocol in conformance/PROTOCOL.md over stdin/stdout:
//   persistent mode (default): hello, one response per request, exit 0 on bye;
//   --one-shot: read one request, answer it, exit.
//
// Which copy of the library is driven:
//   OMP_PKG_DIR = absolute path of an installed `@oh-my-pi/pi-coding-agent` package directory.
//   Default: <this folder>/node_modules/@oh-my-pi/pi-coding-agent (13.19.0, the `omp` profile).
//   ../omp-18/run.sh points it at 18.2.3 and reuses this file unchanged.
//
// Per-request environment (see README.md, "Home and agent directory"):
//   - process.env.HOME = <dir>/home (created), and the library's project dir / process cwd = <dir>
//     (pi-utils `setProjectDir`, which also does process.chdir);
//   - Bun caches os.homedir() at process start and pi-utils caches its DirResolver at import time,
//     so setting HOME alone does not move `~/.omp/agent`. We therefore also call pi-utils
//     `setAgentDir(<dir>/home/.omp/agent)` before every request: blobs, terminal breadcrumbs and
//     custom-session-file registries then land under <dir>/home/.omp/agent, as the protocol wants.
//   - Config-root files (`~/.omp/logs/...`) still follow the process-start HOME, which run.sh sets to a
//     throwaway directory; they never land in the case directory.

import * as fs from "node:fs";
import * as path from "node:path";
import { SCRUB_ENV } from "./env.ts";

// ---------------------------------------------------------------------------------------------
// Environment hygiene, before the library is imported (pi-utils reads these at import time).
// ---------------------------------------------------------------------------------------------
for (const key of SCRUB_ENV) {
	delete process.env[key];
}

// stdout is the protocol channel: route any console output from the library to stderr.
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

function installProcessHandlers() {
	process.on("unhandledRejection", (reason: unknown) => {
		// 13.19.0 fires `void this.#rewriteFile()` from append*, whose rejection nobody awaits.
		toStderr("[omp-adapter] unhandled rejection:", reason instanceof Error ? reason.stack ?? reason.message : reason);
	});
	process.on("uncaughtException", (err: unknown) => {
		toStderr("[omp-adapter] uncaught exception:", err instanceof Error ? err.stack ?? err.message : err);
	});
}
installProcessHandlers();

// ---------------------------------------------------------------------------------------------
// Library import
// ---------------------------------------------------------------------------------------------
const PKG_DIR = path.resolve(
	process.env.OMP_PKG_DIR ?? path.join(import.meta.dir, "node_modules", "@oh-my-pi", "pi-coding-agent"),
);
const PKG_JSON = JSON.parse(fs.readFileSync(path.join(PKG_DIR, "package.json"), "utf8")) as {
	name: string;
	version: string;
};
const SESSION_SRC = path.join(PKG_DIR, "src", "session");

const sm_mod: any = await import(path.join(SESSION_SRC, "session-manager.ts"));
const SessionManager: any = sm_mod.SessionManager;
// 13.19.0 exports buildSessionContext from session-manager.ts; 18.x moved it to session-context.ts.
let buildSessionContext: any = sm_mod.buildSessionContext;
if (typeof buildSessionContext !== "function") {
	const ctx_mod: any = await import(path.join(SESSION_SRC, "session-context.ts"));
	buildSessionContext = ctx_mod.buildSessionContext;
}
// The same pi-utils module instance the library resolved (resolved from the library's own folder).
const utils: any = await import(Bun.resolveSync("@oh-my-pi/pi-utils", SESSION_SRC));
if (typeof utils.setAgentDir !== "function" || typeof utils.setProjectDir !== "function") {
	throw new Error("this pi-utils has no setAgentDir/setProjectDir; the adapter cannot redirect ~/.omp/agent");
}
// 18.x builds its file logger lazily on the first log line, from the directories in force then.
// Pin it to the process-start home so a log file never appears inside a case directory.
if (typeof utils.setTransports === "function") {
	try {
		utils.setTransports({ file: path.join(utils.getConfigRootDir(), "logs") });
	} catch (err) {
		toStderr("[omp-adapter] setTransports failed:", err);
	}
}

// pi-utils' postmortem module (loaded with the library) registers process handlers that would end the
// adapter: unhandledRejection/uncaughtException -> process.exit(1), and async SIGTERM/SIGINT/SIGHUP
// handlers that only run when the event loop is free, so a case stuck in a busy loop (13.19.0 on a
// parentId cycle) ignores SIGTERM. Drop them: signals get their default action again, and a stray
// rejection is logged instead of killing the process. Session behaviour is not affected.
for (const event of ["unhandledRejection", "uncaughtException", "SIGTERM", "SIGINT", "SIGHUP", "exit"] as const) {
	process.removeAllListeners(event);
}
installProcessHandlers();

// Session stores (PROTOCOL.md "Session stores"): 13.19.0 exports getRecentSessions and
// resolveResumableSession from session-manager.ts; 18.x moved them to session-listing.ts.
let listing_mod: any = sm_mod;
if (typeof sm_mod.resolveResumableSession !== "function" || typeof sm_mod.getRecentSessions !== "function") {
	listing_mod = await import(path.join(SESSION_SRC, "session-listing.ts"));
}
const resolveResumableSession: any = listing_mod.resolveResumableSession;
const getRecentSessions: any = listing_mod.getRecentSessions;
const HistoryStorage: any = (await import(path.join(SESSION_SRC, "history-storage.ts"))).HistoryStorage;
// The session picker's filter (13.19.0 src/utils/fuzzy.ts); 18.x has another search (see opSearch).
const fuzzyFilter: any = fs.existsSync(path.join(SESSION_SRC, "../utils/fuzzy.ts"))
	? (await import(path.join(SESSION_SRC, "../utils/fuzzy.ts"))).fuzzyFilter
	: undefined;
const { Database } = await import("bun:sqlite");
const LIB_MAJOR = Number.parseInt(PKG_JSON.version, 10);

const OPERATIONS = [
	"load",
	"context",
	"tree",
	"apply",
	"persist",
	"list",
	"recent",
	"continue",
	"resolve",
	"history",
	"switch",
	"search",
	"compaction",
	"branch_summary",
];

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------
type ErrorKind = "not_found" | "invalid_header" | "invalid_source" | "persistence" | "exception";
type Phase = "open" | "step" | "flush" | "other";

class Unsupported extends Error {
	constructor() {
		super("unsupported call");
	}
}

/** An error whose protocol kind is known already (a `persist` whose write failed). */
class KindedError extends Error {
	constructor(
		readonly kind: ErrorKind,
		message: string,
	) {
		super(message);
	}
}

const PERSISTENCE_ERROR_NAMES = new Set(["SessionWriteConflictError", "SessionPersistenceIndeterminateError"]);

function errorKind(err: unknown, phase: Phase): ErrorKind {
	const e = err as any;
	const message = String(e?.message ?? e);
	if (/^Entry [\s\S]* not found$/.test(message)) return "not_found";
	if (/^Cannot resume session [\s\S]*header is missing or malformed/.test(message)) return "invalid_header";
	if (e?.name === "ForkSourceNotFoundError") return "invalid_source";
	if (PERSISTENCE_ERROR_NAMES.has(e?.name) || PERSISTENCE_ERROR_NAMES.has(e?.constructor?.name)) return "persistence";
	// flush()/close() only fail with the latched write error; 13.19.0 append* rethrow that latched
	// fs error (it carries an errno `code`) synchronously.
	if (phase === "flush") return "persistence";
	if (phase === "step" && typeof e?.code === "string" && typeof e?.syscall === "string") return "persistence";
	return "exception";
}

function errorObject(err: unknown, phase: Phase): { kind: ErrorKind; message: string } {
	if (err instanceof Unsupported) return { kind: "exception", message: "unsupported call" };
	if (err instanceof KindedError) return { kind: err.kind, message: err.message };
	const e = err as any;
	const name = typeof e?.name === "string" ? e.name : "Error";
	const message = e instanceof Error ? `${name}: ${e.message}` : String(e);
	return { kind: errorKind(err, phase), message };
}

function logError(where: string, err: unknown) {
	const e = err as any;
	toStderr(`[omp-adapter] ${where}:`, e instanceof Error ? e.stack ?? e.message : e);
}

// ---------------------------------------------------------------------------------------------
// Faults (PROTOCOL.md "Faults"): omp takes a SessionStorage (SessionManager.create(cwd, dir, storage),
// open(file, dir, storage)); a request with faults gets a FileSessionStorage wrapped so that its
// calls fail as the faults say. openWriter is an `open`; a writer's writeLine a `write` and its
// fsync an `fsync`; writeText/writeTextSync an `open` and a `write`; rename a `rename`. The calls on a
// rewrite's temp file count on its target (faultTarget).
// ---------------------------------------------------------------------------------------------
const storage_mod: any = await import(path.join(SESSION_SRC, "session-storage.ts"));
const ERRNO: Record<string, number> = { ENOSPC: -28, EIO: -5, EXDEV: -18, EACCES: -13 };

function faultError(code: string, syscall: string, file: string): Error {
	const err: any = new Error(`${code}: fault injected, ${syscall} '${file}'`);
	err.code = code;
	err.errno = ERRNO[code];
	err.syscall = syscall;
	err.path = file;
	return err;
}

function globRegex(pattern: string): RegExp {
	const body = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]");
	return new RegExp(`^${body}$`);
}

/**
 * The file a call counts on: a rewrite's temp file (`.NAME.<16 hex>.tmp`, 13.19.0 #writeEntriesAtomically)
 * is its target NAME, as PROTOCOL.md "Faults" counts a rewrite's calls.
 */
function faultTarget(file: string): string {
	const temp = /^\.(.+)\.[0-9a-f]{16}\.tmp$/.exec(path.basename(file));
	return temp ? path.join(path.dirname(file), temp[1]) : file;
}

/** The faults of one request: `hit(on, file)` counts a call and returns the fault it fires, if any. */
function armFaults(faults: any[], dir: string) {
	const armed = faults.map(f => ({ ...f, re: typeof f.path === "string" ? globRegex(f.path) : null, nth: Number.isInteger(f.nth) ? f.nth : 1, seen: 0 }));
	return (on: string, file: string): any => {
		const rel = path.relative(dir, path.resolve(faultTarget(file)));
		let fired: any = null;
		for (const f of armed) {
			if (f.on !== on || (f.re && !f.re.test(rel))) continue;
			f.seen++;
			if (f.seen === f.nth && !fired) fired = f;
		}
		return fired;
	};
}

/** The storage of a request with faults; undefined (the library's default) without. */
function faultyStorage(faults: unknown, dir: string): any {
	if (!Array.isArray(faults) || faults.length === 0) return undefined;
	const hit = armFaults(faults, dir);
	const inner = new storage_mod.FileSessionStorage();
	const cut = (text: string, f: any) => {
		const bytes = Buffer.from(text, "utf-8");
		const n = Math.min(f.after_bytes ?? (f.short ? 1 : 0), bytes.length);
		return [bytes.subarray(0, n), bytes.subarray(n)] as const;
	};
	const storage = Object.create(inner);
	storage.openWriter = (file: string, options?: any) => {
		const opened = hit("open", file);
		if (opened) throw faultError(opened.error, "open", file);
		const writer = inner.openWriter(file, options);
		let error: Error | undefined;
		const record = (err: Error) => {
			error ??= err;
			options?.onError?.(err);
			return err;
		};
		return {
			async writeLine(line: string) {
				if (error) throw error;
				const f = hit("write", file);
				if (!f) return await writer.writeLine(line);
				const [head, tail] = cut(line, f);
				if (head.length > 0) fs.appendFileSync(file, head);
				if (f.short) {
					fs.appendFileSync(file, tail);
					return;
				}
				throw record(faultError(f.error, "write", file));
			},
			async flush() {
				if (error) throw error;
				return await writer.flush();
			},
			async fsync() {
				if (error) throw error;
				const f = hit("fsync", file);
				if (f) throw record(faultError(f.error, "fsync", file));
				return await writer.fsync();
			},
			close: () => writer.close(),
			getError: () => error ?? writer.getError(),
		};
	};
	const writeText = (file: string, content: string, write: (file: string, content: string | Buffer) => any) => {
		const opened = hit("open", file);
		if (opened) throw faultError(opened.error, "open", file);
		const f = hit("write", file);
		if (!f) return write(file, content);
		const [head, tail] = cut(content, f);
		fs.mkdirSync(path.dirname(file), { recursive: true });
		fs.writeFileSync(file, head);
		if (f.short) return fs.appendFileSync(file, tail);
		throw faultError(f.error, "write", file);
	};
	storage.writeTextSync = (file: string, content: string) => writeText(file, content, (p, c) => inner.writeTextSync(p, c));
	storage.writeText = async (file: string, content: string) => writeText(file, content, (p, c) => inner.writeText(p, c));
	storage.rename = async (from: string, to: string) => {
		const f = hit("rename", from) ?? (faultTarget(from) !== faultTarget(to) ? hit("rename", to) : null);
		if (f) throw faultError(f.error, "rename", from);
		return await inner.rename(from, to);
	};
	return storage;
}

/**
 * The wrapper above follows 13.x's SessionStorage; 18.x's is another interface (writeTextAtomic, a
 * writer's appendSync, a publish lock), wrapped by `storage18` below.
 */
const IS_13 = PKG_JSON.version.startsWith("13.");

/**
 * 18.x: a FileSessionStorage whose file-changing calls go through the request's faults and, in
 * journal mode, the journal. The wrappers are own properties of the storage itself, so its private
 * fields stay usable and its own calls reach them (writeTextSync and writeTextAtomic publish their
 * temp file through `this.renameSync`). Bun ignores assignments to the `fs` module, so the calls are
 * caught at this interface, and a fault acts as 18.x's own code would after the failing `fs` call:
 * - openWriter is an `open`; a writer's appendSync a `write`. A failed write leaves no bytes: 18.x's
 *   writer truncates the file back to its size before the write (`#writeNow`). A short write is
 *   completed by its loop.
 * - writeTextSync and writeTextAtomic (a temp file, renamed over the target) are an `open`, a `write`
 *   and a `rename` of the target: a failed write discards the temp file, the target untouched.
 * - 18.x never calls fsync, so an `fsync` fault never fires.
 * - The journal records a rewrite's temp file (its truncate and write) when `renameSync` publishes it,
 *   just before the rename: for writeTextAtomic, whose write is awaited, slightly later than it happened.
 */
function storage18(faults: unknown, dir: string, journaling: boolean): any {
	const hasFaults = Array.isArray(faults) && faults.length > 0;
	if (!hasFaults && !journaling) return undefined;
	const hit = hasFaults ? armFaults(faults as any[], dir) : (_on: string, _file: string): any => null;
	const storage: any = new storage_mod.FileSessionStorage();
	const proto = storage_mod.FileSessionStorage.prototype;
	const staged = new Map<string, string>(); // target -> the text its pending rewrite stages in a temp file
	const rewrite = (file: string, content: string) => {
		const opened = hit("open", file);
		if (opened) throw faultError(opened.error, "open", file);
		const f = hit("write", file);
		if (f && !f.short) throw faultError(f.error, "write", file);
		staged.set(file, content);
	};
	storage.writeTextSync = (file: string, content: string, options?: any) => {
		rewrite(file, content);
		try {
			return proto.writeTextSync.call(storage, file, content, options);
		} finally {
			staged.delete(file);
		}
	};
	storage.writeTextAtomic = async (file: string, content: string, options?: any) => {
		rewrite(file, content);
		try {
			return await proto.writeTextAtomic.call(storage, file, content, options);
		} finally {
			staged.delete(file);
		}
	};
	storage.renameSync = (source: string, target: string) => {
		const text = staged.get(target);
		const f =
			text !== undefined ? hit("rename", target) : (hit("rename", source) ?? (faultTarget(source) !== faultTarget(target) ? hit("rename", target) : null));
		if (f) throw faultError(f.error, "rename", source);
		proto.renameSync.call(storage, source, target);
		if (text !== undefined) recordText(source, text, true);
		record("rename", source, { to: path.resolve(target) });
	};
	storage.rename = async (source: string, target: string) => {
		const f = hit("rename", source) ?? (faultTarget(source) !== faultTarget(target) ? hit("rename", target) : null);
		if (f) throw faultError(f.error, "rename", source);
		await proto.rename.call(storage, source, target);
		record("rename", source, { to: path.resolve(target) });
	};
	storage.unlink = async (file: string) => {
		await proto.unlink.call(storage, file);
		record("unlink", file);
	};
	storage.writeText = async (file: string, content: string) => {
		await proto.writeText.call(storage, file, content);
		recordText(file, content, true);
	};
	storage.openWriter = (file: string, options?: any) => {
		const opened = hit("open", file);
		if (opened) throw faultError(opened.error, "open", file);
		const writer = proto.openWriter.call(storage, file, options);
		if (options?.flags === "w") record("truncate", file);
		else record("write", file, { data: "" });
		let error: Error | undefined;
		const appendSync = (line: string) => {
			if (error) throw error;
			const f = hit("write", file);
			if (f && !f.short) {
				error = faultError(f.error, "write", file);
				options?.onError?.(error);
				throw error;
			}
			writer.appendSync(line);
			recordText(file, line, false);
		};
		return {
			appendSync,
			append: async (line: string) => appendSync(line),
			flush: async () => {
				if (error) throw error;
				return await writer.flush();
			},
			flushSync: () => {
				if (error) throw error;
				writer.flushSync?.();
			},
			isOpen: () => writer.isOpen(),
			close: async () => {
				await writer.close();
				if (error) throw error;
			},
			getError: () => error ?? writer.getError(),
		};
	};
	return storage;
}

// ---------------------------------------------------------------------------------------------
// Journal (PROTOCOL.md "Journal", `session-conformance crash --power-loss`): with `"journal": true`
// in ack mode, the request's storage records the calls that change files as they return, and
// they are written as `fs` lines before the next ack (and before the response). The wrapper
// follows 13.x's SessionStorage, like the faults' (18.x: `storage18` above).
// ---------------------------------------------------------------------------------------------
let journal: Record<string, unknown>[] | null = null; // the calls not yet written, in journal mode

function record(op: string, file: string, more: Record<string, unknown> = {}) {
	journal?.push({ op, path: path.resolve(String(file)), ...more });
}

function recordText(file: string, text: string | Buffer, replaced: boolean) {
	if (replaced) record("truncate", file);
	record("write", file, { data: Buffer.from(text).toString("base64") });
}

/** `inner` (a SessionStorage) with its file-changing calls recorded in the journal. */
function journaledStorage(inner: any): any {
	const storage = Object.create(inner);
	storage.openWriter = (file: string, options?: any) => {
		const writer = inner.openWriter(file, options);
		if (options?.flags === "w") record("truncate", file);
		else record("write", file, { data: "" });
		return {
			async writeLine(line: string) {
				await writer.writeLine(line);
				recordText(file, line, false);
			},
			flush: () => writer.flush(),
			async fsync() {
				await writer.fsync();
				record("fsync", file);
			},
			close: () => writer.close(),
			getError: () => writer.getError(),
		};
	};
	// writeFileSync and Bun.write replace the file in place: emptied, then written.
	storage.writeTextSync = (file: string, content: string) => {
		inner.writeTextSync(file, content);
		recordText(file, content, true);
	};
	storage.writeText = async (file: string, content: string) => {
		await inner.writeText(file, content);
		recordText(file, content, true);
	};
	storage.rename = async (from: string, to: string) => {
		await inner.rename(from, to);
		record("rename", from, { to: path.resolve(to) });
	};
	storage.unlink = async (file: string) => {
		await inner.unlink(file);
		record("unlink", file);
	};
	return storage;
}

/** Writes the journal's lines so far. */
async function sendJournal() {
	if (!journal) return;
	for (const line of journal.splice(0)) await send({ type: "fs", case: currentCase, ...line });
}

/** The current request's storage (faulty when it has faults) and case directory. */
let requestStorage: any;
let requestDir = "";

/** Point the library at this case's directory and home. */
function enterCaseDir(dir: string) {
	if (typeof dir !== "string" || !path.isAbsolute(dir)) throw new Error(`request.dir must be an absolute path, got ${JSON.stringify(dir)}`);
	const home = path.join(dir, "home");
	fs.mkdirSync(home, { recursive: true });
	process.env.HOME = home;
	utils.setProjectDir(dir); // process.chdir(dir) + the library's cached project dir
	utils.setAgentDir(path.join(home, ".omp", "agent"));
}

async function openSession(dir: string, file: string): Promise<any> {
	return await SessionManager.open(path.resolve(dir, file), path.join(dir, "sessions"), requestStorage);
}

/**
 * Flush and close, awaiting every pending write. Returns the first failure as the protocol's
 * `flushError` (PROTOCOL.md `apply`): the latched write error that flush() and close() rethrow.
 */
async function finish(sm: any): Promise<{ kind: ErrorKind; message: string } | undefined> {
	let failed: { kind: ErrorKind; message: string } | undefined;
	try {
		await sm.flush();
	} catch (err) {
		logError("final flush() failed", err);
		failed = errorObject(err, "flush");
	}
	try {
		await sm.close();
	} catch (err) {
		logError("final close() failed", err);
		failed ??= errorObject(err, "flush");
	}
	return failed;
}

function substitute(value: unknown, results: unknown[]): unknown {
	// Iterative deep copy replacing {"$result": N} (an object with that single key) by step N's value.
	const isRef = (v: unknown): v is { $result: number } =>
		v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && "$result" in v;
	const resolve = (v: { $result: number }) => {
		const r = results[v.$result];
		return r === undefined ? null : r;
	};
	if (isRef(value)) return resolve(value);
	if (value === null || typeof value !== "object") return value;
	const root: any = Array.isArray(value) ? [] : {};
	const stack: Array<[any, any]> = [[value, root]];
	while (stack.length > 0) {
		const [src, dst] = stack.pop()!;
		for (const key of Object.keys(src)) {
			const v = src[key];
			if (isRef(v)) dst[key] = resolve(v);
			else if (v !== null && typeof v === "object") {
				const copy: any = Array.isArray(v) ? [] : {};
				dst[key] = copy;
				stack.push([v, copy]);
			} else dst[key] = v;
		}
	}
	return root;
}

function method(sm: any, name: string): (...args: any[]) => any {
	const fn = sm[name];
	if (typeof fn !== "function") throw new Unsupported();
	return fn.bind(sm);
}

const has = (o: object, k: string) => Object.hasOwn(o, k);

/**
 * Run one apply step: map the protocol's named arguments onto this version's positional API.
 * Returns the call's return value (undefined for void calls).
 */
async function runStep(sm: any, step: any): Promise<unknown> {
	const call = step?.call;
	switch (call) {
		case "appendMessage":
			return method(sm, "appendMessage")(step.message);
		case "appendThinkingLevelChange": {
			// 18.x: appendThinkingLevelChange(thinkingLevel?, configured?); 13.19.0 has only the first.
			const args: unknown[] = [step.thinkingLevel];
			if (has(step, "configured")) args.push(step.configured);
			return method(sm, "appendThinkingLevelChange")(...args);
		}
		case "appendModelChange": {
			// omp: appendModelChange(model, role?) (18.x adds resolvedModelIsFallback = false).
			const args: unknown[] = [step.model, step.role];
			if (has(step, "resolvedModelIsFallback")) args.push(step.resolvedModelIsFallback);
			return method(sm, "appendModelChange")(...args);
		}
		case "appendCompaction": {
			const fn = method(sm, "appendCompaction");
			// Tell the two signatures apart by arity: 13.19.0 declares 7 plain parameters (length 7),
			// 18.x ends with `options = {}` (length 4).
			if (sm.appendCompaction.length > 4) {
				// 13.19.0: (summary, shortSummary, firstKeptEntryId, tokensBefore, details?, fromExtension?, preserveData?)
				return fn(
					step.summary,
					step.shortSummary,
					step.firstKeptEntryId,
					step.tokensBefore,
					step.details,
					step.fromExtension,
					step.preserveData,
				);
			}
			// 18.x: (summary, shortSummary, firstKeptEntryId, tokensBefore, options = {details, fromExtension,
			// preserveData, method, providerReplayThroughEntryId, tokensAfter})
			const options: Record<string, unknown> = {};
			for (const key of ["details", "fromExtension", "preserveData", "method", "providerReplayThroughEntryId", "tokensAfter"]) {
				if (has(step, key)) options[key] = step[key];
			}
			return fn(step.summary, step.shortSummary, step.firstKeptEntryId, step.tokensBefore, options);
		}
		case "appendCustomEntry":
			return method(sm, "appendCustomEntry")(step.customType, step.data);
		case "appendCustomMessageEntry": {
			// (customType, content, display, details?, attribution = "agent") (18.x adds timestamp?)
			const args: unknown[] = [step.customType, step.content, step.display, step.details];
			if (has(step, "attribution") || has(step, "timestamp")) args.push(step.attribution);
			if (has(step, "timestamp")) args.push(step.timestamp);
			return method(sm, "appendCustomMessageEntry")(...args);
		}
		case "appendLabelChange":
			return method(sm, "appendLabelChange")(step.targetId, step.label);
		case "appendSessionInfo":
			// pi-only call; omp has setSessionName instead (a different entry and file layout).
			throw new Unsupported();
		case "appendTtsrInjection":
			return method(sm, "appendTtsrInjection")(step.injectedRules);
		case "appendSessionInit": {
			// appendSessionInit(init) spreads `init` into the entry: pass every named argument given.
			const fn = method(sm, "appendSessionInit");
			const init: Record<string, unknown> = {};
			for (const key of Object.keys(step)) if (key !== "call") init[key] = step[key];
			return fn(init);
		}
		case "appendModeChange":
			return method(sm, "appendModeChange")(step.mode, step.data);
		case "branch":
			return method(sm, "branch")(step.id);
		case "resetLeaf":
			return method(sm, "resetLeaf")();
		case "branchWithSummary": {
			// (branchFromId | null, summary, details?, fromExtension?)
			const fromExtension = has(step, "fromExtension") ? step.fromExtension : step.fromHook;
			return method(sm, "branchWithSummary")(step.fromId, step.summary, step.details, fromExtension);
		}
		case "createBranchedSession":
			return method(sm, "createBranchedSession")(step.leafId);
		// Queries (PROTOCOL.md "Queries"): what the manager holds at this step.
		case "getLeafId":
			return method(sm, "getLeafId")() ?? null;
		case "getHeader":
			return method(sm, "getHeader")() ?? null;
		case "getEntry":
			return method(sm, "getEntry")(step.id) ?? null;
		case "getEntries":
			return method(sm, "getEntries")();
		case "getBranch":
		case "getPath":
			return method(sm, "getBranch")(step.fromId);
		case "getChildren":
			return method(sm, "getChildren")(step.parentId);
		case "getLabel":
			return method(sm, "getLabel")(step.id) ?? null;
		case "getTree":
			return flatTree(method(sm, "getTree")());
		case "buildSessionContext":
			return method(sm, "buildSessionContext")();
		case "flush":
			return await method(sm, "flush")();
		// Starting over and full rewrites (document 000 "Atomic full rewrites"; 002 newSession).
		case "newSession":
			return (await method(sm, "newSession")({ parentSession: step.parentSession })) ?? null;
		case "fork":
			return (await method(sm, "fork")()) ?? null;
		case "setSessionName":
			return await method(sm, "setSessionName")(step.name);
		case "rewriteEntries":
			return await method(sm, "rewriteEntries")();
		case "moveTo":
			return await method(sm, "moveTo")(step.cwd);
		default:
			throw new Unsupported();
	}
}

// Ack mode (PROTOCOL.md "Ack mode", `session-conformance crash`): with `"ack": true` an
// apply writes an ack line after the open and after each step returns, awaited before
// the next step runs. omp queues its writes (a promise chain behind the step), so no ack
// claims durability; the ack of a `flush` step (its awaited flush) is the flush point.
let currentCase: unknown = null; // the request being answered (ack lines name it)

function ackLine(sm: any, step: number | null, result: unknown) {
	const line: Record<string, unknown> = { type: "ack", case: currentCase, step, result: result ?? null, durable: false };
	if (typeof result === "string") {
		try {
			const entry = method(sm, "getEntry")(result);
			if (entry) line.entry = entry;
		} catch {}
	}
	return line;
}

async function runSteps(sm: any, steps: unknown[], ack = false, reopened?: (sm: any) => void): Promise<unknown[]> {
	const values: unknown[] = []; // raw values for $result (null for failed steps)
	const results: unknown[] = [];
	for (let i = 0; i < steps.length; i++) {
		let step: any;
		try {
			step = substitute(steps[i], values);
			let value: unknown;
			if (step?.call === "reopen") {
				// PROTOCOL.md "Faults": the session is closed and its file opened again.
				const file = sm.getSessionFile();
				if (!file) throw new Error("reopen: the session has no file");
				const closed = await sm
					.flush()
					.then(() => sm.close())
					.then(
						() => undefined,
						(err: unknown) => err,
					);
				if (closed !== undefined) await sm.close().catch(() => {});
				sm = await SessionManager.open(file, path.join(requestDir, "sessions"), requestStorage);
				reopened?.(sm);
				if (closed !== undefined) throw closed;
				value = null;
			} else value = await runStep(sm, step);
			values.push(value === undefined ? null : value);
			results.push(value === undefined ? null : value);
		} catch (err) {
			if (!(err instanceof Unsupported)) logError(`step ${i} (${step?.call}) threw`, err);
			values.push(null);
			results.push({ error: errorObject(err, step?.call === "flush" || step?.call === "reopen" ? "flush" : "step") });
		}
		await sendJournal();
		if (ack) await send(ackLine(sm, i, results[i]));
	}
	return results;
}

// ---------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------
async function opLoad(dir: string, args: any) {
	const sm = await openSession(dir, args.file);
	return { header: sm.getHeader(), entries: sm.getEntries(), leafId: sm.getLeafId() ?? null };
}

async function opContext(dir: string, args: any) {
	const sm = await openSession(dir, args.file);
	const leafId = has(args, "leafId") ? args.leafId : sm.getLeafId();
	return buildSessionContext(sm.getEntries(), leafId);
}

async function opTree(dir: string, args: any) {
	const sm = await openSession(dir, args.file);
	return { nodes: flatTree(sm.getTree()) };
}

// getTree's nested nodes as the protocol's flat pre-order list, without recursion.
function flatTree(roots: any[]): unknown[] {
	const nodes: unknown[] = [];
	const seen = new Set<object>();
	const stack: any[] = [...roots].reverse();
	while (stack.length > 0) {
		const node = stack.pop();
		if (seen.has(node)) continue;
		seen.add(node);
		const entry = node.entry;
		const children: any[] = node.children ?? [];
		nodes.push({
			id: entry?.id ?? null,
			parentId: entry?.parentId ?? null,
			type: entry?.type ?? null,
			label: node.label ?? null,
			children: children.map(c => c?.entry?.id ?? null),
		});
		for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
	}
	return nodes;
}

/** The session an apply runs on (PROTOCOL.md "apply"): inMemory, open, forkFrom, or a new one. */
async function startSession(dir: string, args: any): Promise<any> {
	if (typeof args.open === "string") return await openSession(dir, args.open);
	if (typeof args.fork_from === "string") {
		const target = typeof args.target_cwd === "string" ? args.target_cwd : "/proj";
		return await SessionManager.forkFrom(path.resolve(dir, args.fork_from), target, path.join(dir, "sessions"));
	}
	if (args.inMemory === true) return SessionManager.inMemory(args.cwd);
	return SessionManager.create(args.cwd, path.join(dir, "sessions"), requestStorage);
}

async function opApply(dir: string, args: any) {
	let sm = await startSession(dir, args);
	const ack = args.ack === true;
	await sendJournal();
	if (ack) await send(ackLine(sm, null, null));
	const results = await runSteps(sm, Array.isArray(args.steps) ? args.steps : [], ack, reopened => {
		sm = reopened;
	});
	const leafId = sm.getLeafId() ?? null;
	const flushError = await finish(sm);
	await sendJournal();
	return flushError ? { results, leafId, flushError } : { results, leafId };
}

async function opPersist(dir: string, args: any) {
	const sm = SessionManager.create("/proj", path.join(dir, "sessions"), requestStorage);
	const results = await runSteps(sm, [
		{ call: "appendMessage", message: { role: "user", content: "go", timestamp: 1 } },
		{ call: "appendMessage", message: args.message },
	]);
	const flushError = await finish(sm);
	// PROTOCOL.md `persist`: a call or write that fails fails the operation, with its kind.
	const failed = (results.find(r => typeof r === "object" && r !== null && "error" in r) as any)?.error ?? flushError;
	if (failed) throw new KindedError(failed.kind, failed.message);
	return { results };
}

// ---------------------------------------------------------------------------------------------
// Session stores: list, recent, continue, resolve, history
// ---------------------------------------------------------------------------------------------
const TERMINAL_ENV = ["KITTY_WINDOW_ID", "TMUX_PANE", "TERM_SESSION_ID", "WT_SESSION"];

/**
 * `agent_dir: null`: the default agent directory under <dir>/home. Bun caches os.homedir() (the process's
 * throwaway HOME), so the adapter joins <dir>/home with the library's own name for it, pi-utils
 * getConfigAgentDirName() (`${PI_CONFIG_DIR || ".omp"}/agent`), read with the case's PI_CONFIG_DIR.
 */
function defaultAgentDir(dir: string, env: Record<string, unknown> | undefined): string {
	const saved = process.env.PI_CONFIG_DIR;
	const configDir = env?.PI_CONFIG_DIR;
	if (typeof configDir === "string") process.env.PI_CONFIG_DIR = configDir;
	else delete process.env.PI_CONFIG_DIR;
	try {
		return path.join(dir, "home", utils.getConfigAgentDirName());
	} finally {
		if (saved === undefined) delete process.env.PI_CONFIG_DIR;
		else process.env.PI_CONFIG_DIR = saved;
	}
}

/** Point the library at <dir>/<agent_dir> (pi-utils setAgentDir also sets PI_CODING_AGENT_DIR). */
function enterStore(dir: string, args: any) {
	const agentDir =
		args.agent_dir === null
			? defaultAgentDir(dir, args.env)
			: path.join(dir, typeof args.agent_dir === "string" ? args.agent_dir : "agent");
	utils.setAgentDir(agentDir);
	const cwd: string = typeof args.cwd === "string" ? args.cwd : "/";
	const sessionDir: string | undefined = typeof args.session_dir === "string" ? path.join(dir, args.session_dir) : undefined;
	return { agentDir, cwd, sessionDir };
}

/**
 * Run `fn` with the terminal variables of `env` set in process.env (the adapter's stdin is not a TTY, so
 * pi-tui getTerminalId() falls back to them), restoring the previous values afterwards. Calls to Bun.write
 * made meanwhile are collected and awaited: 13.19.0 writes breadcrumbs fire-and-forget
 * (`Bun.write(...).catch(() => {})`), and the response must not go out before they land.
 */
let terminalWrites: Promise<unknown>[] = [];

/** Wait for the breadcrumb writes made so far inside withTerminal (one write at a time to a breadcrumb). */
async function settleTerminalWrites(): Promise<void> {
	await Promise.allSettled(terminalWrites);
}

async function withTerminal<T>(env: Record<string, unknown> | undefined, fn: () => Promise<T>): Promise<T> {
	const saved = new Map<string, string | undefined>();
	for (const key of TERMINAL_ENV) {
		saved.set(key, process.env[key]);
		delete process.env[key];
	}
	for (const [key, value] of Object.entries(env ?? {})) {
		if (!saved.has(key)) saved.set(key, process.env[key]);
		if (typeof value === "string") process.env[key] = value;
	}
	const originalWrite = Bun.write;
	const writes: Promise<unknown>[] = [];
	terminalWrites = writes;
	(Bun as any).write = (...a: unknown[]) => {
		const p = (originalWrite as any)(...a);
		writes.push(p);
		return p;
	};
	try {
		return await fn();
	} finally {
		(Bun as any).write = originalWrite;
		await Promise.allSettled(writes);
		for (const [key, value] of saved) {
			if (value === undefined) delete process.env[key];
			else process.env[key] = value;
		}
	}
}

function isoTime(value: unknown): string | null {
	if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
	if (typeof value === "number") {
		const d = new Date(value);
		return Number.isNaN(d.getTime()) ? null : d.toISOString();
	}
	return null;
}

async function opList(dir: string, args: any) {
	const { cwd, sessionDir } = enterStore(dir, args);
	const sessions: any[] = args.all === true ? await SessionManager.listAll() : await SessionManager.list(cwd, sessionDir);
	// The protocol's SessionInfo fields, as the library returns them (13.19.0 has exactly these; 18.x adds
	// size, status, … which the protocol does not compare). Dates serialise through Date.prototype.toJSON:
	// ISO strings, null for an Invalid Date.
	return {
		sessions: sessions.map(info => {
			const out: Record<string, unknown> = {};
			for (const key of SESSION_INFO_KEYS) if (info[key] !== undefined) out[key] = info[key];
			return out;
		}),
	};
}

const SESSION_INFO_KEYS = [
	"path",
	"id",
	"cwd",
	"title",
	"name",
	"parentSessionPath",
	"created",
	"modified",
	"messageCount",
	"firstMessage",
	"allMessagesText",
];

async function opRecent(dir: string, args: any) {
	const { cwd, sessionDir } = enterStore(dir, args);
	const localDir = sessionDir ?? SessionManager.getDefaultSessionDir(cwd);
	const limit = Number.isInteger(args.limit) ? args.limit : undefined; // undefined: the library's default
	// `now`: the clock formatTimeAgo reads (Date.now()), fixed for the call and the lazy getters; dates from
	// 7 days on are toLocaleDateString() in en-US and UTC (PROTOCOL.md "Session stores").
	return await withClock(typeof args.now === "string" ? Date.parse(args.now) : undefined, async () => {
		const sessions: any[] = await getRecentSessions(localDir, limit);
		// name/fullName are lazy getters on 13.19.0's RecentSessionInfo; mtime is mtimeMs. 18.x's RecentSessionInfo
		// is {path, name, timeAgo}: no mtime or fullName, so those keys are left out.
		return {
			sessions: sessions.map(s => ({
				path: s.path,
				mtime: s.mtime === undefined ? undefined : isoTime(s.mtime),
				name: s.name,
				fullName: s.fullName,
				timeAgo: typeof args.now === "string" ? s.timeAgo : undefined,
			})),
		};
	});
}

/** Run `fn` with Date.now() fixed at `now` (and TZ=UTC, LANG=en-US for toLocaleDateString); unchanged when undefined. */
async function withClock<T>(now: number | undefined, fn: () => Promise<T>): Promise<T> {
	if (now === undefined || Number.isNaN(now)) return await fn();
	const realNow = Date.now;
	const realToLocaleDateString = Date.prototype.toLocaleDateString;
	const savedTz = process.env.TZ;
	Date.now = () => now;
	process.env.TZ = "UTC";
	Date.prototype.toLocaleDateString = function (locales?: any, options?: any) {
		return realToLocaleDateString.call(this, locales ?? "en-US", { timeZone: "UTC", ...(options ?? {}) });
	};
	try {
		return await fn();
	} finally {
		Date.now = realNow;
		Date.prototype.toLocaleDateString = realToLocaleDateString;
		if (savedTz === undefined) delete process.env.TZ;
		else process.env.TZ = savedTz;
	}
}

/** Every regular file under `root`, to tell an opened session file from a new one. */
function filesUnder(root: string): Set<string> {
	const out = new Set<string>();
	const stack = [root];
	while (stack.length > 0) {
		const d = stack.pop()!;
		let entries: fs.Dirent[];
		try {
			entries = fs.readdirSync(d, { withFileTypes: true });
		} catch {
			continue;
		}
		for (const e of entries) {
			const p = path.join(d, e.name);
			if (e.isDirectory()) stack.push(p);
			else if (e.isFile()) out.add(p);
		}
	}
	return out;
}

/**
 * A request naming a TTY (`tty`: a path) cannot be served: pi-tui getTerminalId() reads the TTY from
 * process.stdin.isTTY and /proc/self/fd/0, and the adapter's stdin is the runner's pipe.
 */
const STORE_UNSUPPORTED = Symbol("unsupported");

async function opContinue(dir: string, args: any) {
	if (typeof args.tty === "string") return STORE_UNSUPPORTED;
	const { cwd, sessionDir } = enterStore(dir, args);
	const before = filesUnder(dir);
	return await withTerminal(args.env, async () => {
		const sm = await SessionManager.continueRecent(cwd, sessionDir);
		const file: string | null = sm.getSessionFile() ?? null;
		// Let queued writes settle (13.19.0 writes nothing for a lazy new session; 18.x may).
		try {
			await sm.flush?.();
		} catch (err) {
			logError("continue: flush() failed", err);
		}
		return { file, new: file === null || !before.has(file) };
	});
}

/**
 * main.ts's comparison of cwds, replicated: 13.19.0 declares it locally in
 * node_modules/@oh-my-pi/pi-coding-agent/src/main.ts (lines 189-196, not exported).
 */
function normalizePathForComparison(value: string): string {
	const resolved = path.resolve(value);
	let realPath = resolved;
	try {
		realPath = fs.realpathSync(resolved);
	} catch {}
	return process.platform === "win32" ? realPath.toLowerCase() : realPath;
}

/**
 * `--resume <value>`: the matching is the library's resolveResumableSession; the decision made on its
 * result lives in main.ts createSessionManager and is replicated here (the adapter reports it, and forks
 * on a yes to the fork question as the CLI does; it does not move):
 * - 13.19.0 (src/main.ts lines 256-278, seed 001): path-like -> open; no match -> throw
 *   `Session "X" not found.`; a global match whose cwd differs -> ask to fork: yes -> forkFrom, no -> throw
 *   `Session "X" is in another project (CWD).`; otherwise open.
 * - 18.x (src/main.ts lines 1096-1140 and moveMissingCwdSessionIfNeeded, lines 797-826; the message at
 *   1938-1943): no fork prompt; a match (local or global) whose recorded cwd no longer exists -> ask to
 *   move it here: yes -> moveTo, no -> print `Resume cancelled: session was not moved.` and exit 0;
 *   otherwise open.
 */
async function opResolve(dir: string, args: any) {
	const { cwd, sessionDir } = enterStore(dir, args);
	if (typeof args.value !== "string") return await resumePicker(cwd, sessionDir, args);
	const value: string = args.value;
	const answer = args.fork === true;
	if (value.includes("/") || value.includes("\\") || value.endsWith(".jsonl")) {
		return { match: "path", action: "open", path: value };
	}
	const match = await resolveResumableSession(value, cwd, sessionDir);
	if (!match) return { match: "none", action: "stop", message: `Session "${value}" not found.`, error: true };
	const session = match.session;
	if (LIB_MAJOR >= 18) {
		const sourceCwd = session.cwd;
		if (sourceCwd && !fs.existsSync(sourceCwd)) {
			if (answer) return { match: match.scope, action: "move", path: session.path };
			return { match: match.scope, action: "stop", message: "Resume cancelled: session was not moved.", error: false };
		}
		return { match: match.scope, action: "open", path: session.path };
	}
	if (match.scope === "global") {
		const normalizedCwd = normalizePathForComparison(cwd);
		const normalizedMatchCwd = normalizePathForComparison(session.cwd || cwd);
		if (normalizedCwd !== normalizedMatchCwd) {
			if (answer) {
				const forked = await SessionManager.forkFrom(session.path, cwd, sessionDir);
				return { match: "global", action: "fork", path: session.path, file: forked.getSessionFile() };
			}
			return {
				match: "global",
				action: "stop",
				message: `Session "${value}" is in another project (${session.cwd}).`,
				error: true,
			};
		}
	}
	return { match: match.scope, action: "open", path: session.path };
}

/**
 * `--resume` without a value, main.ts replicated: 13.19.0 (src/main.ts lines 661-670, seed 001) lists
 * SessionManager.list(cwd, sessionDir) and prints `No sessions found` (exit 0) when it is empty, else opens
 * the picker on it; 18.x looks at listAll() too before giving up (clause stores.13), and preloads it.
 */
async function resumePicker(cwd: string, sessionDir: string | undefined, args: any) {
	const sessions: any[] = await SessionManager.list(cwd, sessionDir);
	let empty = sessions.length === 0;
	if (empty && LIB_MAJOR >= 18) empty = (await SessionManager.listAll()).length === 0;
	if (empty) return { match: "none", action: "stop", message: "No sessions found", error: false };
	const paths: string[] = sessions.map(s => s.path);
	// What the user does in it (PROTOCOL.md `resolve`): `pick: null` cancels: main.ts (13.19.0 lines
	// 670-673) prints "No session selected" and returns; `pick: n` chooses the n-th, which it opens.
	if (!("pick" in args)) return { match: "picker", action: "pick", sessions: paths };
	if (args.pick === null) return { match: "picker", action: "stop", message: "No session selected", error: false };
	if (!Number.isInteger(args.pick) || args.pick < 0 || args.pick >= paths.length) {
		throw new Error(`pick ${JSON.stringify(args.pick)}: the picker offers ${paths.length} session(s)`);
	}
	return { match: "picker", action: "open", path: paths[args.pick] };
}

/**
 * `switch`: take up a session as `start` says, inside withTerminal so the breadcrumbs the library writes
 * land before the response:
 * - open: SessionManager.open(file, sessionDir); create: SessionManager.create(cwd, sessionDir);
 *   fork: SessionManager.forkFrom(file, cwd, sessionDir);
 * - switch: AgentSession.switchSession's session-manager part: the running session of this cwd
 *   (SessionManager.create), then setSessionFile(file). Step 14 is AgentSession's: 13.19.0 sets the level
 *   on the agent and appends no thinking_level_change (src/session/agent-session.ts lines 5641-5654), nor
 *   does 18.x (restoreThinkingLevel), so `thinkingLevelAppended` is false: an AgentSession needs a model
 *   registry and an agent, which the adapter does not build.
 */
async function opSwitch(dir: string, args: any) {
	if (typeof args.tty === "string") return STORE_UNSUPPORTED;
	const { cwd, sessionDir } = enterStore(dir, args);
	const file = typeof args.file === "string" ? path.join(dir, args.file) : undefined;
	const needFile = () => {
		if (file === undefined) throw new Error(`switch: start ${args.start} needs a file`);
		return file;
	};
	return await withTerminal(args.env, async () => {
		let sm: any;
		switch (args.start) {
			case "open":
				sm = await SessionManager.open(needFile(), sessionDir);
				break;
			case "create":
				sm = SessionManager.create(cwd, sessionDir);
				break;
			case "fork":
				sm = await SessionManager.forkFrom(needFile(), cwd, sessionDir);
				break;
			case "switch":
				sm = SessionManager.create(cwd, sessionDir);
				await settleTerminalWrites(); // the running session's breadcrumb lands first
				await sm.setSessionFile(needFile());
				break;
			default:
				throw new Error(`switch: unknown start ${JSON.stringify(args.start)}`);
		}
		try {
			await sm.flush?.();
		} catch (err) {
			logError("switch: flush() failed", err);
		}
		return { file: sm.getSessionFile() ?? null, thinkingLevelAppended: false };
	});
}

/**
 * `search`: the picker's filter, src/modes/components/session-selector.ts #filterSessions (13.19.0 lines
 * 52-63) over SessionManager.list(cwd, sessionDir), with the library's own fuzzyFilter (src/utils/fuzzy.ts).
 */
async function opSearch(dir: string, args: any) {
	// 18.x's SessionSelector ranks exact title matches, then partial ones, then a history full-text search
	// (src/modes/components/session-selector.ts lines 150-250), inside the TUI component: not served.
	if (fuzzyFilter === undefined || LIB_MAJOR >= 18) return STORE_UNSUPPORTED;
	const { cwd, sessionDir } = enterStore(dir, args);
	const sessions: any[] = await SessionManager.list(cwd, sessionDir);
	const query = typeof args.query === "string" ? args.query : "";
	const kept: any[] = fuzzyFilter(sessions, query, (session: any) =>
		[session.id, session.title ?? "", session.cwd ?? "", session.firstMessage ?? "", session.allMessagesText, session.path]
			.filter(Boolean)
			.join(" "),
	);
	return { sessions: kept.map(s => s.path) };
}

/**
 * A HistoryStorage of its own for <agent>/history.db. HistoryStorage.open() keeps one instance per
 * process: 18.x has HistoryStorage.close() to drop it; 13.19.0 has none, so its (TypeScript-only)
 * private constructor is called directly, which opens the given path exactly as open() would.
 */
function openHistory(dbPath: string): { history: any; close: () => void } {
	if (typeof HistoryStorage.close === "function") {
		HistoryStorage.close();
		const history = HistoryStorage.open(dbPath);
		return { history, close: () => HistoryStorage.close() };
	}
	const history = new HistoryStorage(dbPath);
	return { history, close: () => {} };
}

/** One turn of the event loop: 13.19.0's add() inserts in a setImmediate callback, which runs before this. */
function afterImmediates(): Promise<void> {
	return new Promise(resolve => setImmediate(resolve));
}

async function opHistory(dir: string, args: any) {
	const { agentDir } = enterStore(dir, args);
	const dbPath = path.join(agentDir, "history.db");
	const { history, close } = openHistory(dbPath);
	const results: unknown[] = [];
	try {
		for (const step of Array.isArray(args.steps) ? args.steps : []) {
			let rows: any[];
			if (typeof step?.add === "string") {
				await history.add(step.add, typeof step.cwd === "string" ? step.cwd : undefined);
				await afterImmediates();
				continue;
			} else if (typeof step?.recent === "number") {
				rows = history.getRecent(step.recent);
			} else if (typeof step?.search === "string") {
				rows = history.search(step.search, typeof step.limit === "number" ? step.limit : 100);
			} else {
				throw new Error(`unknown history step ${JSON.stringify(step)}`);
			}
			results.push(
				rows.map(r => {
					const row: Record<string, unknown> = { id: r.id, prompt: r.prompt };
					if (r.cwd !== undefined && r.cwd !== null) row.cwd = r.cwd;
					return row;
				}),
			);
		}
		await afterImmediates();
	} finally {
		close();
	}
	const db = new Database(dbPath, { readonly: true });
	try {
		const objects = db.query("SELECT type, name FROM sqlite_master").all() as Array<{ type: string; name: string }>;
		const schema = objects.map(o => `${o.type} ${o.name}`).sort();
		return { results, schema };
	} finally {
		db.close();
	}
}

// ---------------------------------------------------------------------------------------------
// Compaction planning (PROTOCOL.md "Compaction planning"): the library's own functions (13.19.0:
// src/session/compaction/; 18.x: @oh-my-pi/pi-agent-core src/compaction/), with a stub model that
// records each request and answers the case's stubSummary.
// ---------------------------------------------------------------------------------------------
const STUB_API = "session-conformance-stub";
const stub: { text: string; calls: Array<{ context: any; options: any }> } = { text: "", calls: [] };
// 18.x counts tokens with a Tokenizer (not chars/4) and takes it as an extra argument.
let planning: { C: any; P: any; B: any; T: any } | undefined;
async function loadPlanning() {
	if (planning) return planning;
	let dir = path.join(SESSION_SRC, "compaction");
	if (!fs.existsSync(path.join(dir, "compaction.ts"))) {
		const core = Bun.resolveSync("@oh-my-pi/pi-agent-core", SESSION_SRC);
		dir = path.join(path.dirname(core), "compaction");
	}
	const C = await import(path.join(dir, "compaction.ts"));
	const P = await import(path.join(dir, "pruning.ts"));
	const B = await import(path.join(dir, "branch-summarization.ts"));
	const tokenizerFile = path.join(dir, "..", "tokenizer.ts");
	const T = fs.existsSync(tokenizerFile) ? await import(tokenizerFile) : undefined;
	const ai: any = await import(Bun.resolveSync("@oh-my-pi/pi-ai", SESSION_SRC));
	const streamSimple = (model: any, context: any, options: any) => {
		stub.calls.push({ context, options });
		const message = {
			role: "assistant",
			content: [{ type: "text", text: stub.text }],
			api: STUB_API,
			provider: "stub",
			model: model.id,
			usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
			stopReason: "stop",
			timestamp: 0,
		};
		return {
			result: async () => message,
			async *[Symbol.asyncIterator]() {
				yield { type: "done", reason: "stop", message };
			},
		};
	};
	ai.registerCustomApi(STUB_API, streamSimple, "session-conformance");
	planning = { C, P, B, T };
	return planning;
}

function stubModel(contextWindow: number) {
	return {
		id: "stub",
		name: "stub",
		api: STUB_API,
		provider: "stub",
		baseUrl: "",
		reasoning: false,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow,
		maxTokens: 4096,
	};
}

// The protocol's view of one recorded request, read back from the prompt text.
const PROMPT_STARTS: Array<[string, string]> = [
	["summary", "You **MUST** summarize the conversation above"],
	["update", "You **MUST** incorporate new messages above"],
	["turnPrefix", "This is the PREFIX of a turn"],
	["shortSummary", "You **MUST** summarize what was done in this conversation"],
	["branch", "You **MUST** create a structured summary of the conversation branch"],
];
function describeRequest(call: { context: any; options: any }) {
	const text: string = call.context.messages[0].content[0].text;
	const close = "\n</conversation>\n\n";
	const end = text.lastIndexOf(close);
	const out: Record<string, unknown> = { prompt: "custom", conversation: text.slice("<conversation>\n".length, end) };
	let rest = text.slice(end + close.length);
	if (rest.startsWith("<previous-summary>\n")) {
		const stop = rest.lastIndexOf("\n</previous-summary>\n\n");
		out.previousSummary = rest.slice("<previous-summary>\n".length, stop);
		rest = rest.slice(stop + "\n</previous-summary>\n\n".length);
	}
	const known = PROMPT_STARTS.find(([, start]) => rest.startsWith(start));
	const focus = rest.lastIndexOf("\n\nAdditional focus: ");
	if (known) {
		out.prompt = known[0];
		if (focus >= 0) out.customInstructions = rest.slice(focus + "\n\nAdditional focus: ".length);
	} else {
		out.customInstructions = rest;
	}
	out.maxTokens = call.options?.maxTokens;
	return out;
}

function fileOpsJson(fileOps: any) {
	return { read: [...fileOps.read], written: [...fileOps.written], edited: [...fileOps.edited] };
}

async function opCompaction(dir: string, args: any) {
	const { C, P, T } = await loadPlanning();
	const sm = await openSession(dir, args.file);
	const leafId = has(args, "leafId") ? args.leafId : sm.getLeafId();
	const path_: any[] = leafId ? sm.getBranch(leafId) : [];
	const settings = { ...C.DEFAULT_COMPACTION_SETTINGS, ...(args.settings ?? {}) };
	const window = args.contextWindow ?? 0;
	// agent-session's threshold check: prune old tool outputs (on a copy here), then the last
	// assistant usage's context tokens less what pruning saved.
	const model = stubModel(window);
	const tok = T ? new T.Tokenizer(model) : undefined;
	const pruning = tok
		? P.pruneToolOutputs(structuredClone(path_), tok, P.DEFAULT_PRUNE_CONFIG)
		: P.pruneToolOutputs(structuredClone(path_), P.DEFAULT_PRUNE_CONFIG);
	const usage = C.getLastAssistantUsage(path_);
	const contextTokens = usage ? Math.max(0, C.calculateContextTokens(usage) - pruning.tokensSaved) : 0;
	let start = 0;
	for (let i = path_.length - 1; i >= 0; i--) {
		if (path_[i].type === "compaction") {
			start = i + 1;
			break;
		}
	}
	const cutPoint = tok
		? C.findCutPoint(path_, tok, start, path_.length, settings.keepRecentTokens)
		: C.findCutPoint(path_, start, path_.length, settings.keepRecentTokens);
	const prep = tok ? C.prepareCompaction(path_, settings, model, tok) : C.prepareCompaction(path_, settings);
	let preparation: unknown = null;
	let request: unknown[] = [];
	let result: unknown = null;
	if (prep) {
		const { settings: _s, fileOps, previousPreserveData: _p, ...rest } = prep;
		preparation = { ...rest, fileOps: fileOpsJson(fileOps) };
		stub.text = args.stubSummary ?? "";
		stub.calls = [];
		result = await C.compact(prep, model, "stub-key", args.customInstructions);
		request = stub.calls.map(describeRequest);
	}
	return {
		contextTokens,
		shouldCompact: C.shouldCompact(contextTokens, window, settings),
		cutPoint,
		preparation,
		request,
		result,
		pruning,
	};
}

async function opBranchSummary(dir: string, args: any) {
	const { B, T } = await loadPlanning();
	const sm = await openSession(dir, args.file);
	const oldLeafId = has(args, "oldLeafId") ? args.oldLeafId : sm.getLeafId();
	const { entries, commonAncestorId } = B.collectEntriesForBranchSummary(sm, oldLeafId, args.targetId);
	const model = stubModel(args.contextWindow ?? 0);
	const reserveTokens = args.reserveTokens ?? 16384;
	const budget = (model.contextWindow || 128000) - reserveTokens;
	const prep = T
		? B.prepareBranchEntries(entries, new T.Tokenizer(model), budget)
		: B.prepareBranchEntries(entries, budget);
	stub.text = args.stubSummary ?? "";
	stub.calls = [];
	const result = await B.generateBranchSummary(entries, {
		model,
		apiKey: "stub-key",
		signal: new AbortController().signal,
		customInstructions: args.customInstructions,
		reserveTokens,
	});
	return {
		entries: entries.map((e: any) => e.id),
		commonAncestorId,
		preparation: { messages: prep.messages, fileOps: fileOpsJson(prep.fileOps), totalTokens: prep.totalTokens },
		request: stub.calls.map(describeRequest),
		result,
	};
}

const HANDLERS: Record<string, (dir: string, args: any) => Promise<unknown>> = {
	list: opList,
	recent: opRecent,
	continue: opContinue,
	resolve: opResolve,
	history: opHistory,
	switch: opSwitch,
	search: opSearch,
	load: opLoad,
	context: opContext,
	tree: opTree,
	apply: opApply,
	persist: opPersist,
	compaction: opCompaction,
	branch_summary: opBranchSummary,
};

async function handleRequest(req: any): Promise<Record<string, unknown>> {
	const base = { type: "response", case: req?.case ?? null };
	const handler = HANDLERS[req?.op];
	currentCase = req?.case ?? null;
	if (!handler) return { ...base, unsupported: true };
	try {
		enterCaseDir(req.dir);
		requestDir = req.dir;
		const journaling = req.op === "apply" && req.args?.ack === true && req.args?.journal === true;
		journal = journaling ? [] : null;
		if (IS_13) {
			requestStorage = faultyStorage(req.faults, req.dir);
			if (journaling) requestStorage = journaledStorage(requestStorage ?? new storage_mod.FileSessionStorage());
		} else {
			requestStorage = storage18(req.faults, req.dir, journaling);
		}
		const ok = await handler(req.dir, req.args ?? {});
		if (ok === STORE_UNSUPPORTED) return { ...base, unsupported: true };
		return { ...base, ok };
	} catch (err) {
		logError(`case ${req?.case} (${req?.op}) failed`, err);
		return { ...base, error: errorObject(err, "open") };
	}
}

// ---------------------------------------------------------------------------------------------
// I/O
// ---------------------------------------------------------------------------------------------
function serialize(msg: unknown): string {
	return `${JSON.stringify(msg)}\n`;
}

async function send(msg: unknown): Promise<void> {
	let line: string;
	try {
		line = serialize(msg);
	} catch (err) {
		// e.g. a BigInt or a cycle in what the library returned
		const m = msg as any;
		line = serialize({ type: "response", case: m?.case ?? null, error: errorObject(err, "other") });
	}
	await new Promise<void>((resolve, reject) => {
		process.stdout.write(line, err => (err ? reject(err) : resolve()));
	});
}

/** Yields complete `\n`-terminated lines from stdin (and a final unterminated one). */
async function* stdinLines(): AsyncGenerator<string> {
	const decoder = new TextDecoder();
	let pending: string[] = [];
	for await (const chunk of Bun.stdin.stream()) {
		let text = decoder.decode(chunk, { stream: true });
		let nl = text.indexOf("\n");
		while (nl !== -1) {
			pending.push(text.slice(0, nl));
			yield pending.join("");
			pending = [];
			text = text.slice(nl + 1);
			nl = text.indexOf("\n");
		}
		if (text.length > 0) pending.push(text);
	}
	const rest = pending.join("") + decoder.decode();
	if (rest.trim().length > 0) yield rest;
}

function hello() {
	return {
		type: "hello",
		implementation: "oh-my-pi",
		version: PKG_JSON.version,
		profile: "omp",
		operations: OPERATIONS,
		capabilities: ["faults", "journal"],
	};
}

/** run.sh's throwaway HOMEs of adapters that were killed (SIGKILL/timeout) are removed by the next start. */
function sweepStaleHomes() {
	const own = process.env.OMP_ADAPTER_PROCESS_HOME;
	if (!own || !own.includes("omp-adapter-home.")) return;
	try {
		fs.writeFileSync(path.join(own, ".adapter-pid"), String(process.pid));
		const parent = path.dirname(own);
		for (const name of fs.readdirSync(parent)) {
			if (!name.startsWith("omp-adapter-home.")) continue;
			const candidate = path.join(parent, name);
			if (candidate === own) continue;
			let pid: number;
			try {
				pid = Number(fs.readFileSync(path.join(candidate, ".adapter-pid"), "utf8"));
			} catch {
				continue; // not started yet, or not ours
			}
			let alive = true;
			try {
				process.kill(pid, 0);
			} catch (err) {
				alive = (err as any)?.code === "EPERM";
			}
			if (!alive) fs.rmSync(candidate, { recursive: true, force: true });
		}
	} catch (err) {
		logError("sweeping stale adapter homes failed", err);
	}
}

function cleanupOwnHome() {
	// run.sh makes a throwaway process HOME and tells us so; remove it on a clean exit.
	const own = process.env.OMP_ADAPTER_PROCESS_HOME;
	if (own && own.includes("omp-adapter-home.")) {
		try {
			process.chdir("/");
			fs.rmSync(own, { recursive: true, force: true });
		} catch {}
	}
}

async function main() {
	sweepStaleHomes();
	const oneShot = process.argv.slice(2).includes("--one-shot");
	for await (const raw of stdinLines()) {
		const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
		if (line.trim() === "") continue;
		let msg: any;
		try {
			msg = JSON.parse(line);
		} catch (err) {
			toStderr(`[omp-adapter] ignoring a line that is not JSON (${line.length} chars)`);
			continue;
		}
		if (msg?.type === "hello") {
			await send(hello());
		} else if (msg?.type === "bye") {
			break;
		} else if (msg?.type === "request") {
			await send(await handleRequest(msg));
			if (oneShot) break;
		} else {
			toStderr(`[omp-adapter] ignoring message of type ${JSON.stringify(msg?.type)}`);
		}
	}
	cleanupOwnHome();
	process.exit(0);
}

await main();
