#!/usr/bin/env node
// session-conformance adapter for the real pi implementations: pi-mono
// (@mariozechner/pi-coding-agent 0.73.1, in ./node_modules) and, when
// PI_ADAPTER_PKG names its package folder (../pi-1.5/run.sh), its successor
// @earendil-works/pi-coding-agent 1.5.2 and 1.6.0 (SessionManager, buildSessionContext,
// dist/core/compaction/).
//
// Speaks the protocol in conformance/PROTOCOL.md: one JSON object per line on
// stdin (requests) and stdout (responses). Persistent mode by default;
// `--one-shot` handles exactly one request and exits.
//
// The adapter only calls the library's public API. It never patches or works
// around the library's behaviour: known hangs (parentId cycles in getBranch /
// buildSessionContext / getTree) are left to the runner's per-case timeout.

import fs, { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { join, isAbsolute, relative, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

// The package under test: its folder, and whether it is pi 1.x (@earendil-works).
const PKG_DIR = process.env.PI_ADAPTER_PKG ?? fileURLToPath(new URL("./node_modules/@mariozechner/pi-coding-agent/", import.meta.url));
const PKG = JSON.parse(readFileSync(join(PKG_DIR, "package.json"), "utf8"));
const PI_1 = PKG.name === "@earendil-works/pi-coding-agent";
const IMPLEMENTATION = PI_1 ? "pi" : "pi-mono";
const VERSION = PKG.version;
const PROFILE = "pi";
// Session stores (PROTOCOL.md "Session stores"): pi has no getRecentSessions,
// no terminal breadcrumbs and no prompt history, so `recent` and `history` are
// left out and report as skipped. Compaction planning (`compaction`,
// `branch_summary`) calls pi 1.x's own dist/core/compaction/ as it calls
// pi-mono's; where 1.x changed the API (a `streamFn` parameter, a `usage` in
// the results, the turn-prefix prompt's framing) the calls are adapted below.
const OPERATIONS = ["load", "context", "tree", "apply", "persist", "list", "continue", "resolve", "switch", "compaction", "branch_summary"];

// ---------------------------------------------------------------------------
// stdout belongs to the protocol. Anything else that writes through console
// (the library, a stray warning) goes to stderr instead.
// ---------------------------------------------------------------------------
const protocolOut = process.stdout.write.bind(process.stdout);
for (const name of ["log", "info", "debug", "warn", "trace", "dir"]) {
	console[name] = (...args) => {
		try {
			process.stderr.write(`${args.map((a) => (typeof a === "string" ? a : safeInspect(a))).join(" ")}\n`);
		} catch {
			/* ignore */
		}
	};
}
function safeInspect(v) {
	try {
		return JSON.stringify(v);
	} catch {
		return String(v);
	}
}
// Resolves once the line has been handed to the OS. Writes to a pipe can be
// asynchronous in Node (a large response that fills the pipe is queued), so
// every response is awaited, and the process only exits after stdout drains.
function writeLine(text) {
	return new Promise((resolve) => {
		try {
			protocolOut(`${text}\n`, () => resolve());
		} catch (err) {
			log(`cannot write to stdout: ${err}`);
			resolve();
		}
	});
}
function send(obj) {
	return writeLine(JSON.stringify(obj));
}
async function drainAndExit(code) {
	if (process.stdout.writableNeedDrain) {
		await new Promise((resolve) => {
			process.stdout.once("drain", resolve);
			process.stdout.once("error", resolve);
		});
	}
	process.exit(code);
}
function log(msg) {
	try {
		process.stderr.write(`[${IMPLEMENTATION} adapter] ${msg}\n`);
	} catch {
		/* ignore */
	}
}

// Never die on a stray async error: log it and keep serving.
process.on("uncaughtException", (err) => log(`uncaughtException: ${err && err.stack ? err.stack : err}`));
process.on("unhandledRejection", (err) => log(`unhandledRejection: ${err && err.stack ? err.stack : err}`));

// The library reads HOME (os.homedir()) and PI_CODING_AGENT_DIR per call
// (config.js getAgentDir()), not at import time; the import itself writes
// nothing to the home directory. Importing once is therefore fine; the
// per-request values are set before every library call.
let lib;
async function loadLibrary() {
	if (!lib) {
		lib = await import(pathToFileURL(join(PKG_DIR, "dist/index.js")).href);
		restoreDefaultSignals();
	}
	return lib;
}

// Importing the package pulls in `signal-exit`, which installs JavaScript
// listeners for SIGTERM/SIGINT/SIGHUP/... A JavaScript listener cannot run
// while the library spins in one of its known infinite loops (a parentId
// cycle in getBranch/buildSessionContext), so a hung adapter would ignore the
// runner's SIGTERM and only die to SIGKILL. Removing those process-level
// listeners restores the default "terminate" action. It changes nothing in
// the session library's behaviour (they only run exit hooks for the TUI).
function restoreDefaultSignals() {
	for (const sig of ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"]) {
		try {
			process.removeAllListeners(sig);
		} catch {
			/* ignore */
		}
	}
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------
class ProtocolError extends Error {}
/** An error whose protocol kind is known already (a `persist` whose write failed). */
class KindedError extends Error {
	constructor(kind, message) {
		super(message);
		this.kind = kind;
	}
}

// `phase` is "step" for an apply step, else "other". A step's filesystem error (an errno
// `code` and a `syscall`) is a write failing: pi-mono writes with appendFileSync inside the
// append* call and latches nothing, so each later append throws its own (PROTOCOL.md
// "Response": persistence). Elsewhere (opening a file) it is a read: exception.
function errorKind(err, phase = "other") {
	const message = err && typeof err.message === "string" ? err.message : String(err);
	if (/^Entry [\s\S]* not found$/.test(message)) return "not_found";
	if (message.startsWith("Cannot fork: source session file is empty or invalid")) return "invalid_source";
	// pi 1.5+ `assertValidSessionId`: a newSession id that could not be a file name.
	if (message.startsWith("Session id must be non-empty, contain only alphanumeric characters")) return "invalid_name";
	if (phase === "step" && typeof err?.code === "string" && typeof err?.syscall === "string") return "persistence";
	return "exception";
}
function errorObject(err, phase = "other") {
	if (err instanceof KindedError) return { kind: err.kind, message: err.message };
	const message = err && typeof err.message === "string" ? err.message : String(err);
	const name = err && typeof err.name === "string" ? err.name : "Error";
	return { kind: errorKind(err, phase), message: name && name !== "Error" ? `${name}: ${message}` : message };
}

// ---------------------------------------------------------------------------
// Per-request environment
// ---------------------------------------------------------------------------
function enterCaseDir(dir) {
	if (typeof dir !== "string" || !isAbsolute(dir)) throw new ProtocolError(`request.dir must be an absolute path, got ${JSON.stringify(dir)}`);
	const home = join(dir, "home");
	const agentDir = join(home, ".pi", "agent");
	mkdirSync(agentDir, { recursive: true });
	process.chdir(dir);
	process.env.HOME = home;
	process.env.PI_CODING_AGENT_DIR = agentDir;
	return { sessionDir: join(dir, "sessions") };
}

function openSession(SessionManager, file, sessionDir) {
	if (typeof file !== "string") throw new ProtocolError(`args.file must be a string, got ${JSON.stringify(file)}`);
	// The working directory is the case dir, so a relative name resolves there,
	// exactly as a user resuming `pi --session session.jsonl` from that dir.
	return SessionManager.open(file, sessionDir);
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------
function opLoad(L, args, env) {
	const sm = openSession(L.SessionManager, args.file, env.sessionDir);
	return { header: sm.getHeader(), entries: sm.getEntries(), leafId: sm.getLeafId() ?? null };
}

function opContext(L, args, env) {
	const sm = openSession(L.SessionManager, args.file, env.sessionDir);
	// absent: the session's own leaf after load; null: null; string: as given.
	const leafId = Object.hasOwn(args, "leafId") ? args.leafId : sm.getLeafId();
	return L.buildSessionContext(sm.getEntries(), leafId);
}

function opTree(L, args, env) {
	const sm = openSession(L.SessionManager, args.file, env.sessionDir);
	return { nodes: flatTree(sm.getTree()) };
}

// getTree's nested nodes as the protocol's flat pre-order list. Without recursion:
// an explicit stack, children pushed reversed.
function flatTree(roots) {
	const nodes = [];
	const stack = [];
	for (let i = roots.length - 1; i >= 0; i--) stack.push(roots[i]);
	while (stack.length > 0) {
		const node = stack.pop();
		const entry = node.entry;
		const children = node.children;
		nodes.push({
			id: entry.id ?? null,
			parentId: entry.parentId ?? null,
			type: entry.type ?? null,
			label: node.label ?? null,
			children: children.map((c) => c.entry.id ?? null),
		});
		for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
	}
	return nodes;
}

// Replace every {"$result": N} (an object with exactly that one key) by the
// raw value returned by step N. Iterative, so deep arguments cannot overflow.
function substituteResults(value, returns) {
	const isRef = (v) =>
		v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && Object.hasOwn(v, "$result");
	const resolveRef = (v) => {
		const n = v.$result;
		if (!Number.isInteger(n) || n < 0 || n >= returns.length) throw new ProtocolError(`bad $result reference ${JSON.stringify(n)}`);
		return returns[n];
	};
	if (isRef(value)) return resolveRef(value);
	if (value === null || typeof value !== "object") return value;
	const root = Array.isArray(value) ? [...value] : { ...value };
	const stack = [root];
	while (stack.length > 0) {
		const obj = stack.pop();
		for (const key of Object.keys(obj)) {
			const v = obj[key];
			if (isRef(v)) obj[key] = resolveRef(v);
			else if (v !== null && typeof v === "object") {
				const copy = Array.isArray(v) ? [...v] : { ...v };
				obj[key] = copy;
				stack.push(copy);
			}
		}
	}
	return root;
}

const UNSUPPORTED_CALLS = new Set([
	"appendTtsrInjection",
	"appendSessionInit",
	"appendModeChange",
	"fork",
	"setSessionName",
	"rewriteEntries",
	"moveTo",
]);

// Absent step keys stay `undefined` (JSON cannot say undefined); an explicit
// null is passed as null. That is what the library distinguishes.
function runStep(sm, step) {
	switch (step.call) {
		case "appendMessage":
			return sm.appendMessage(step.message);
		case "appendThinkingLevelChange":
			return sm.appendThinkingLevelChange(step.thinkingLevel);
		case "appendModelChange":
			return sm.appendModelChange(step.provider, step.modelId);
		case "appendCompaction":
			return sm.appendCompaction(step.summary, step.firstKeptEntryId, step.tokensBefore, step.details, step.fromHook);
		case "appendCustomEntry":
			return sm.appendCustomEntry(step.customType, step.data);
		case "appendCustomMessageEntry":
			return sm.appendCustomMessageEntry(step.customType, step.content, step.display, step.details);
		case "appendLabelChange":
			return sm.appendLabelChange(step.targetId, step.label);
		case "appendSessionInfo":
			return sm.appendSessionInfo(step.name);
		case "branch":
			return sm.branch(step.id);
		case "resetLeaf":
			return sm.resetLeaf();
		case "branchWithSummary":
			return sm.branchWithSummary(step.fromId, step.summary, step.details, step.fromHook);
		case "createBranchedSession":
			return sm.createBranchedSession(step.leafId);
		// Queries (PROTOCOL.md "Queries"): what the manager holds at this step.
		case "getLeafId":
			return sm.getLeafId() ?? null;
		case "getHeader":
			return sm.getHeader();
		case "getEntry":
			return sm.getEntry(step.id) ?? null;
		case "getEntries":
			return sm.getEntries();
		case "getBranch":
		case "getPath":
			return sm.getBranch(step.fromId);
		case "getChildren":
			return sm.getChildren(step.parentId);
		case "getLabel":
			return sm.getLabel(step.id) ?? null;
		case "getTree":
			return flatTree(sm.getTree());
		case "buildSessionContext":
			return sm.buildSessionContext();
		// Starting over (002 newSession({ parentSession }); pi-mono also takes `id`).
		case "newSession":
			return sm.newSession({ id: step.id, parentSession: step.parentSession }) ?? null;
		case "flush":
			// pi-mono has no flush: every write is a synchronous appendFileSync /
			// writeFileSync, so the files are already on disk.
			return undefined;
		default:
			if (UNSUPPORTED_CALLS.has(step.call)) {
				const e = new Error("unsupported call");
				throw e;
			}
			throw new Error(`unknown call ${JSON.stringify(step.call)}`);
	}
}

// ---------------------------------------------------------------------------
// Faults (PROTOCOL.md "Faults"): pi-mono calls `fs` directly (named imports), so the
// functions it writes with are wrapped on the `fs` module and syncBuiltinESMExports()
// makes its named imports see the wrappers; both are restored after the request.
// appendFileSync and writeFileSync on a path are each one `open` and one `write` call of
// their file; pi 1.x also opens files to write (openSync "w", "wx": an `open`) and writes
// to the descriptor (writeFileSync(fd): a `write` of the file it was opened on); renameSync
// is wrapped too, though pi-mono never calls it.
// ---------------------------------------------------------------------------
const ERRNO = { ENOSPC: -28, EIO: -5, EXDEV: -18, EACCES: -13 };

function faultError(code, syscall, path) {
	const err = new Error(`${code}: fault injected, ${syscall} '${path}'`);
	err.code = code;
	err.errno = ERRNO[code];
	err.syscall = syscall;
	err.path = String(path);
	return err;
}

function globRegex(pattern) {
	const body = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]");
	return new RegExp(`^${body}$`);
}

// The armed faults of one request: each counts the calls of its kind on matching files.
function armFaults(faults, dir) {
	const armed = (Array.isArray(faults) ? faults : []).map((f) => ({
		...f,
		re: typeof f.path === "string" ? globRegex(f.path) : null,
		nth: Number.isInteger(f.nth) ? f.nth : 1,
		seen: 0,
	}));
	// The fault that fires on this call of kind `on` to `path`, if any.
	return (on, path) => {
		if (typeof path !== "string") return null;
		const rel = relative(dir, resolve(path));
		let fired = null;
		for (const f of armed) {
			if (f.on !== on || (f.re && !f.re.test(rel))) continue;
			f.seen++;
			if (f.seen === f.nth && !fired) fired = f;
		}
		return fired;
	};
}

// Writes `data` to `path` with `write` (the original appendFileSync or writeFileSync)
// as one `open` and one `write` call, through the faults.
// Node's own appendFileSync calls fs.writeFileSync: a call made inside a wrapped one
// (`inside`) is not counted again.
// `target` is a path or a descriptor `fds` knows (opened through the wrapped openSync).
let inside = false;
function faultyWrite(hit, fds, write, append, target, data, rest) {
	if (inside) return write(target, data, ...rest);
	const path = typeof target === "number" ? fds.get(target) : target;
	if (path === undefined) return write(target, data, ...rest);
	inside = true;
	try {
		return faultyCall(hit, write, append, target, path, data, rest);
	} finally {
		inside = false;
	}
}

function faultyCall(hit, write, append, target, path, data, rest) {
	// A descriptor was opened (and counted) by openSync; a path is opened by this call.
	const opened = typeof target === "number" ? null : hit("open", path);
	if (opened) throw faultError(opened.error, "open", path);
	const fault = hit("write", path);
	if (!fault) return write(target, data, ...rest);
	const bytes = Buffer.from(typeof data === "string" ? data : String(data));
	const n = Math.min(fault.after_bytes ?? (fault.short ? 1 : 0), bytes.length);
	write(target, bytes.subarray(0, n), ...rest);
	// The rest of a short write, as Node's own loop writes it.
	if (fault.short) return append(target, bytes.subarray(n));
	throw faultError(fault.error, "write", path);
}

// Installs the faults of a request; returns the function that removes them.
function installFaults(faults, dir) {
	if (!Array.isArray(faults) || faults.length === 0) return () => {};
	const hit = armFaults(faults, dir);
	const saved = {
		appendFileSync: fs.appendFileSync,
		writeFileSync: fs.writeFileSync,
		openSync: fs.openSync,
		closeSync: fs.closeSync,
		fsyncSync: fs.fsyncSync,
		renameSync: fs.renameSync,
	};
	const fds = new Map(); // descriptor -> path, for files opened to write
	fs.openSync = (path, flags, ...rest) => {
		const f = String(flags ?? "r");
		const writes = !(f.startsWith("r") && !f.includes("+"));
		if (writes && !inside) {
			const opened = hit("open", path);
			if (opened) throw faultError(opened.error, "open", path);
		}
		const fd = saved.openSync(path, flags, ...rest);
		if (writes && !inside && typeof path === "string") fds.set(fd, path);
		return fd;
	};
	fs.closeSync = (fd) => {
		fds.delete(fd);
		return saved.closeSync(fd);
	};
	fs.appendFileSync = (path, data, ...rest) => faultyWrite(hit, fds, saved.appendFileSync, saved.appendFileSync, path, data, rest);
	fs.writeFileSync = (path, data, ...rest) => faultyWrite(hit, fds, saved.writeFileSync, saved.appendFileSync, path, data, rest);
	fs.renameSync = (from, to) => {
		const fault = hit("rename", from) ?? (from !== to ? hit("rename", to) : null);
		if (fault) throw faultError(fault.error, "rename", from);
		return saved.renameSync(from, to);
	};
	syncBuiltinESMExports();
	return () => {
		Object.assign(fs, saved);
		syncBuiltinESMExports();
	};
}

// Journal (PROTOCOL.md "Journal", `session-conformance crash --power-loss`): with
// `"journal": true` in ack mode, the `fs` calls that change files are recorded as they
// return, and written as `fs` lines before the next ack (and before the response).
// pi-mono 0.73.1 writes with appendFileSync and writeFileSync on paths; pi 1.x also opens
// files ("w", "wx") and writes to the descriptor. Neither calls fsyncSync; it is wrapped
// anyway, so that the journal would show one.
// ---------------------------------------------------------------------------
let journal = null; // the calls not yet written, in journal mode

function record(op, path, more) {
	journal?.push({ op, path: resolve(String(path)), ...more });
}

function dataOf(data) {
	return Buffer.from(typeof data === "string" ? data : data ?? "").toString("base64");
}

// Installs the journal's wrappers; returns the function that removes them.
function installJournal() {
	journal = [];
	const fds = new Map(); // descriptor -> path, for files opened to write
	const saved = {};
	let depth = 0; // Node's own fs functions call each other: only the outermost call counts
	const wrap = (name, after) => {
		const original = fs[name];
		saved[name] = original;
		fs[name] = (...args) => {
			depth++;
			let result;
			try {
				result = original(...args);
			} finally {
				depth--;
			}
			if (depth === 0) after(args, result);
			return result;
		};
	};
	const pathOf = (target) => (typeof target === "number" ? fds.get(target) : target);
	wrap("openSync", ([path, flags], fd) => {
		const f = String(flags ?? "r");
		if (f.startsWith("r") && !f.includes("+")) return;
		fds.set(fd, path);
		if (f.startsWith("w")) record("truncate", path);
		else record("write", path, { data: "" });
	});
	wrap("closeSync", ([fd]) => fds.delete(fd));
	wrap("appendFileSync", ([target, data]) => {
		const path = pathOf(target);
		if (path !== undefined) record("write", path, { data: dataOf(data) });
	});
	wrap("writeFileSync", ([target, data]) => {
		const path = pathOf(target);
		if (path === undefined) return;
		if (typeof target !== "number") record("truncate", path); // a path: the file is replaced in place
		record("write", path, { data: dataOf(data) });
	});
	wrap("fsyncSync", ([fd]) => {
		if (fds.has(fd)) record("fsync", fds.get(fd));
	});
	wrap("renameSync", ([from, to]) => record("rename", from, { to: resolve(String(to)) }));
	wrap("unlinkSync", ([path]) => record("unlink", path));
	syncBuiltinESMExports();
	return () => {
		Object.assign(fs, saved);
		syncBuiltinESMExports();
		journal = null;
	};
}

// Writes the journal's lines so far.
async function sendJournal() {
	if (!journal) return;
	const lines = journal.splice(0);
	for (const line of lines) await send({ type: "fs", case: currentCase, ...line });
}

// Ack mode (PROTOCOL.md "Ack mode", `session-conformance crash`): with `"ack": true` an
// apply writes an ack line after the open and after each step returns, awaited before
// the next step runs. pi-mono writes synchronously (appendFileSync) once the session is
// flushed (it holds an assistant message), so from then on every ack is durable.
function ackLine(sm, step, result) {
	const line = { type: "ack", case: currentCase, step, result: result ?? null, durable: sm.flushed === true };
	if (typeof result === "string") {
		const entry = sm.getEntry(result);
		if (entry) line.entry = entry;
	}
	return line;
}

async function opApply(L, args, env) {
	const { SessionManager } = L;
	const steps = Array.isArray(args.steps) ? args.steps : [];
	const ack = args.ack === true;
	const unjournal = ack && args.journal === true ? installJournal() : () => {};
	try {
		return await applySteps(SessionManager, args, env, ack, steps);
	} finally {
		unjournal();
	}
}

async function applySteps(SessionManager, args, env, ack, steps) {
	let sm;
	if (typeof args.open === "string") {
		sm = openSession(SessionManager, args.open, env.sessionDir);
	} else if (typeof args.fork_from === "string") {
		const target = typeof args.target_cwd === "string" ? args.target_cwd : "/proj";
		sm = SessionManager.forkFrom(join(process.cwd(), args.fork_from), target, env.sessionDir);
	} else if (args.inMemory === true) {
		sm = SessionManager.inMemory(args.cwd);
	} else {
		sm = SessionManager.create(args.cwd, env.sessionDir);
	}
	await sendJournal();
	if (ack) await send(ackLine(sm, null, null));
	const returns = []; // raw return values, for {"$result": N}
	const results = []; // what the response reports
	for (let i = 0; i < steps.length; i++) {
		let raw;
		try {
			const step = substituteResults(steps[i], returns);
			if (step === null || typeof step !== "object") throw new ProtocolError(`step ${i} is not an object`);
			// PROTOCOL.md "Faults": `reopen` opens the session's file again.
			if (step.call === "reopen") {
				const file = sm.getSessionFile();
				if (!file) throw new Error("reopen: the session has no file");
				sm = SessionManager.open(file, env.sessionDir);
				raw = null;
			} else raw = runStep(sm, step);
			if (raw && typeof raw.then === "function") raw = await raw;
			results.push(raw === undefined ? null : raw);
		} catch (err) {
			raw = undefined;
			results.push({ error: errorObject(err, "step") });
		}
		returns.push(raw);
		await sendJournal();
		if (ack) await send(ackLine(sm, i, results[i]));
	}
	// Nothing to flush or close: pi-mono writes synchronously.
	return { results, leafId: sm.getLeafId() ?? null };
}

function opPersist(L, args, env) {
	const sm = L.SessionManager.create("/proj", env.sessionDir);
	try {
		const first = sm.appendMessage({ role: "user", content: "go", timestamp: 1 });
		const second = sm.appendMessage(args.message);
		return { results: [first, second] };
	} catch (err) {
		// PROTOCOL.md `persist`: a call or write that fails fails the operation, with its kind
		// (appendFileSync throws inside appendMessage: a step's error).
		const { kind, message } = errorObject(err, "step");
		throw new KindedError(kind, message);
	}
}

// ---------------------------------------------------------------------------
// Session stores: list, continue, resolve
// ---------------------------------------------------------------------------

// Point the library at <dir>/<agent_dir>: config.js getAgentDir() reads
// PI_CODING_AGENT_DIR on every call, so SessionManager.list (via
// getDefaultSessionDir), listAll (getSessionsDir) and continueRecent use it.
// `agent_dir: null`: the library's own default, ~/.pi/agent under HOME = <dir>/home
// (config.js getAgentDir() without PI_CODING_AGENT_DIR).
function enterStore(dir, args) {
	let agentDir;
	if (args.agent_dir === null) {
		delete process.env.PI_CODING_AGENT_DIR;
		agentDir = join(dir, "home", ".pi", "agent");
	} else {
		agentDir = join(dir, typeof args.agent_dir === "string" ? args.agent_dir : "agent");
		process.env.PI_CODING_AGENT_DIR = agentDir;
	}
	const cwd = typeof args.cwd === "string" ? args.cwd : "/";
	const sessionDir = typeof args.session_dir === "string" ? join(dir, args.session_dir) : undefined;
	return { agentDir, cwd, sessionDir };
}

async function opList(L, args, _env, dir) {
	const { cwd, sessionDir } = enterStore(dir, args);
	const sessions = args.all === true ? await L.SessionManager.listAll() : await L.SessionManager.list(cwd, sessionDir);
	// Dates serialise through Date.prototype.toJSON: ISO strings, null for an Invalid Date.
	return { sessions };
}

// Every regular file under `root`, to tell an opened file from a new one.
function filesUnder(root) {
	const out = new Set();
	const stack = [root];
	while (stack.length > 0) {
		const d = stack.pop();
		let entries;
		try {
			entries = readdirSync(d, { withFileTypes: true });
		} catch {
			continue;
		}
		for (const e of entries) {
			const p = join(d, e.name);
			if (e.isDirectory()) stack.push(p);
			else if (e.isFile()) out.add(p);
		}
	}
	return out;
}

function opContinue(L, args, _env, dir) {
	const { cwd, sessionDir } = enterStore(dir, args);
	// pi-mono has no terminal breadcrumbs: args.env is not consulted by the library.
	const before = filesUnder(dir);
	const sm = L.SessionManager.continueRecent(cwd, sessionDir);
	const file = sm.getSessionFile() ?? null;
	return { file, new: file === null || !before.has(file) };
}

// Replica of pi-mono 0.73.1's `resolveSessionPath(sessionArg, cwd, sessionDir)`,
// an unexported function in node_modules/@mariozechner/pi-coding-agent/dist/main.js
// (lines 106-126). It only calls the public SessionManager.list / listAll.
async function resolveSessionPath073(SessionManager, sessionArg, cwd, sessionDir) {
	// If it looks like a file path, use as-is
	if (sessionArg.includes("/") || sessionArg.includes("\\") || sessionArg.endsWith(".jsonl")) {
		return { type: "path", path: sessionArg };
	}
	// Try to match as session ID in current project first
	const localSessions = await SessionManager.list(cwd, sessionDir);
	const localMatches = localSessions.filter((s) => s.id.startsWith(sessionArg));
	if (localMatches.length >= 1) {
		return { type: "local", path: localMatches[0].path };
	}
	// Try global search across all projects
	const allSessions = await SessionManager.listAll();
	const globalMatches = allSessions.filter((s) => s.id.startsWith(sessionArg));
	if (globalMatches.length >= 1) {
		const match = globalMatches[0];
		return { type: "global", path: match.path, cwd: match.cwd };
	}
	// Not found anywhere
	return { type: "not_found", arg: sessionArg };
}

// Replica of pi 1.5.2's `resolveSessionPath(sessionArg, cwd, sessionDir)`,
// an unexported function in node_modules/@earendil-works/pi-coding-agent/dist/main.js
// (lines 233-262, with `findLocalSessionByExactId`). It calls only the public
// SessionManager.findById / list / listAll and `resolvePath` of dist/utils/paths.js.
// Differences from 0.73.1: a path is resolved against cwd, an exact local id is found
// from the headers first, listAll is given the session dir, and a global exact id wins
// over a prefix match.
let pathsModule;
async function resolveSessionPath1(SessionManager, sessionArg, cwd, sessionDir) {
	if (!pathsModule) {
		pathsModule = await import(pathToFileURL(join(PKG_DIR, "dist/utils/paths.js")).href);
	}
	if (sessionArg.includes("/") || sessionArg.includes("\\") || sessionArg.endsWith(".jsonl")) {
		return { type: "path", path: pathsModule.resolvePath(sessionArg, cwd) };
	}
	const exact = SessionManager.findById(cwd, sessionArg, sessionDir);
	if (exact) {
		return { type: "local", path: exact };
	}
	const localSessions = await SessionManager.list(cwd, sessionDir);
	const localMatch = localSessions.find((s) => s.id.startsWith(sessionArg));
	if (localMatch) {
		return { type: "local", path: localMatch.path };
	}
	const allSessions = await SessionManager.listAll(sessionDir);
	const globalMatch = allSessions.find((s) => s.id === sessionArg) ?? allSessions.find((s) => s.id.startsWith(sessionArg));
	if (globalMatch) {
		return { type: "global", path: globalMatch.path, cwd: globalMatch.cwd };
	}
	return { type: "not_found", arg: sessionArg };
}

// The implementation's own `--session` resolution.
function resolveSessionPath(...args) {
	return PI_1 ? resolveSessionPath1(...args) : resolveSessionPath073(...args);
}

// The CLI's decision on `--session <value>`, dist/main.js createSessionManager
// (0.73.1 lines 180-199, 1.5.2 lines 353-371): path/local -> SessionManager.open; global -> "Fork this
// session into current directory?" (yes -> forkFrom, no -> print "Aborted.",
// exit 0); not_found -> print "No session found matching '<arg>'", exit 1.
// The adapter reports the decision; on a yes to the fork question it forks, as the CLI does.
// The picker's outcome (PROTOCOL.md `resolve`): without `pick`, its list; `pick: null`, the
// user cancels it: dist/main.js (0.73.1 lines 203-206) prints "No session selected" and exits 0;
// `pick: n`, the user chooses its n-th session, which the CLI opens (SessionManager.open).
function pickerOutcome(sessions, args) {
	if (!("pick" in args)) return { match: "picker", action: "pick", sessions };
	if (args.pick === null) return { match: "picker", action: "stop", message: "No session selected", error: false };
	if (!Number.isInteger(args.pick) || args.pick < 0 || args.pick >= sessions.length) {
		throw new Error(`pick ${JSON.stringify(args.pick)}: the picker offers ${sessions.length} session(s)`);
	}
	return { match: "picker", action: "open", path: sessions[args.pick] };
}

async function opResolve(L, args, _env, dir) {
	const { cwd, sessionDir } = enterStore(dir, args);
	if (typeof args.value !== "string") {
		// `--resume` without a value, dist/main.js (0.73.1 lines 200-208): selectSession opens the picker
		// on SessionManager.list(cwd, sessionDir) whether or not it is empty (listAll is its other tab).
		const sessions = await L.SessionManager.list(cwd, sessionDir);
		return pickerOutcome(sessions.map((s) => s.path), args);
	}
	const value = args.value;
	const resolved = await resolveSessionPath(L.SessionManager, value, cwd, sessionDir);
	switch (resolved.type) {
		case "path":
		case "local":
			return { match: resolved.type, action: "open", path: resolved.path };
		case "global":
			if (args.fork === true) {
				const forked = L.SessionManager.forkFrom(resolved.path, cwd, sessionDir);
				return { match: "global", action: "fork", path: resolved.path, file: forked.getSessionFile() };
			}
			return { match: "global", action: "stop", message: "Aborted.", error: false };
		default:
			return { match: "none", action: "stop", message: `No session found matching '${resolved.arg}'`, error: true };
	}
}

// `switch` (PROTOCOL.md "Session stores"). pi-mono writes no terminal breadcrumbs.
// - open: SessionManager.open(file, sessionDir); create: SessionManager.create(cwd, sessionDir);
//   fork: SessionManager.forkFrom(file, cwd, sessionDir);
// - switch: AgentSessionRuntime.switchSession opens SessionManager.open(file) (0.73.1
//   dist/core/agent-session-runtime.js line 130) and builds the session with createAgentSession,
//   whose thinking-level step is replicated here (dist/core/sdk.js lines 99-102, 132-150, 248-252:
//   a session with messages and no thinking_level_change on its branch gets one): building the whole
//   AgentSession needs a model registry. `thinkingLevel` is the level after the settings and the
//   model's clamp (the case gives it; 0.73.1's default is DEFAULT_THINKING_LEVEL, "medium").
function opSwitch(L, args, _env, dir) {
	const { cwd, sessionDir } = enterStore(dir, args);
	const file = typeof args.file === "string" ? join(dir, args.file) : undefined;
	const needFile = () => {
		if (file === undefined) throw new ProtocolError(`switch: start ${args.start} needs a file`);
		return file;
	};
	let sm;
	let appended = false;
	switch (args.start) {
		case "open":
			sm = L.SessionManager.open(needFile(), sessionDir);
			break;
		case "create":
			sm = L.SessionManager.create(cwd, sessionDir);
			break;
		case "fork":
			sm = L.SessionManager.forkFrom(needFile(), cwd, sessionDir);
			break;
		case "switch": {
			sm = L.SessionManager.open(needFile());
			const hasMessages = sm.buildSessionContext().messages.length > 0;
			const hasThinkingEntry = sm.getBranch().some((entry) => entry.type === "thinking_level_change");
			if (hasMessages && !hasThinkingEntry) {
				sm.appendThinkingLevelChange(typeof args.thinkingLevel === "string" ? args.thinkingLevel : "medium");
				appended = true;
			}
			break;
		}
		default:
			throw new ProtocolError(`switch: unknown start ${JSON.stringify(args.start)}`);
	}
	return { file: sm.getSessionFile() ?? null, thinkingLevelAppended: appended };
}

// ---------------------------------------------------------------------------
// Compaction planning (PROTOCOL.md "Compaction planning"): the real functions
// of dist/core/compaction/, with a stub model that records each request and
// answers the case's stubSummary.
// - pi-mono 0.73.1 calls the model through pi-ai's completeSimple, so the stub
//   is registered as an API provider of @mariozechner/pi-ai.
// - pi 1.x takes a `streamFn` (compact's 8th parameter, generateBranchSummary's
//   `streamFn` option; completeSummarization calls it instead of completeSimple),
//   which is how its AgentSession calls them (`this.agent.streamFunction`,
//   1.5.2 dist/core/agent-session.js _runDefaultCompaction and navigateTree): the stub is
//   passed as that function, and no provider is registered.
// ---------------------------------------------------------------------------
const STUB_API = "session-conformance-stub";
const stub = { text: "", calls: [] };
let planning;
async function loadPlanning() {
	if (!planning) {
		const pkg = pathToFileURL(join(PKG_DIR, "dist/core/compaction/"));
		const [C, B, U] = await Promise.all([
			import(new URL("compaction.js", pkg).href),
			import(new URL("branch-summarization.js", pkg).href),
			import(new URL("utils.js", pkg).href),
		]);
		const streamSimple = (model, context, options) => {
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
		if (!PI_1) {
			const ai = await import("@mariozechner/pi-ai");
			ai.registerApiProvider({ api: STUB_API, stream: streamSimple, streamSimple }, "session-conformance");
		}
		planning = { C, B, U, streamFn: PI_1 ? streamSimple : undefined };
	}
	return planning;
}
function stubModel(contextWindow) {
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
// The protocol's view of one recorded request: which prompt, the conversation,
// the previous summary and the custom instructions, read back from the prompt text.
// pi 1.x's turn-prefix prompt starts otherwise (its second entry here) and frames
// the conversation as `# Conversation\n…\n\n# Instructions\n` instead of the tags
// (1.5.2 dist/core/compaction/compaction.js generateTurnPrefixSummary).
const PROMPT_STARTS = [
	["summary", "The messages above are a conversation to summarize"],
	["update", "The messages above are NEW"],
	["turnPrefix", "This is the PREFIX of a turn"],
	["turnPrefix", "The messages above are earlier context from an ongoing conversation"],
	["branch", "Create a structured summary of this conversation branch"],
];
function describeRequest(call) {
	// pi-ai 1.x's normalizeContext puts the system prompt first in the message list:
	// the prompt is the user message.
	const text = call.context.messages.find((m) => m.role === "user").content[0].text;
	let conversation;
	let rest;
	if (text.startsWith("# Conversation\n")) {
		const sep = "\n\n# Instructions\n";
		const end = text.lastIndexOf(sep);
		conversation = text.slice("# Conversation\n".length, end);
		rest = text.slice(end + sep.length);
	} else {
		const close = "\n</conversation>\n\n";
		const end = text.lastIndexOf(close);
		conversation = text.slice("<conversation>\n".length, end);
		rest = text.slice(end + close.length);
	}
	const out = { prompt: "custom", conversation };
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
	out.maxTokens = call.options.maxTokens;
	return out;
}
function fileOpsJson(fileOps) {
	return { read: [...fileOps.read], written: [...fileOps.written], edited: [...fileOps.edited] };
}
// pi 1.x's compact and generateBranchSummary also return the summary request's
// `usage`: the stub model's answer (all zero), not something planning computes,
// so it is left out as `settings` is left out of the preparation.
function withoutStubUsage(result) {
	if (!PI_1 || result === null || typeof result !== "object" || !Object.hasOwn(result, "usage")) return result;
	const { usage: _usage, ...rest } = result;
	return rest;
}

async function opCompaction(L, args, env) {
	const { C, streamFn } = await loadPlanning();
	const sm = openSession(L.SessionManager, args.file, env.sessionDir);
	const leafId = Object.hasOwn(args, "leafId") ? args.leafId : sm.getLeafId();
	const path = leafId ? sm.getBranch(leafId) : [];
	const settings = { ...C.DEFAULT_COMPACTION_SETTINGS, ...(args.settings ?? {}) };
	const contextTokens = C.estimateContextTokens(L.buildSessionContext(path).messages).tokens;
	let start = 0;
	for (let i = path.length - 1; i >= 0; i--) {
		if (path[i].type === "compaction") {
			start = i + 1;
			break;
		}
	}
	const cutPoint = C.findCutPoint(path, start, path.length, settings.keepRecentTokens);
	const prep = C.prepareCompaction(path, settings);
	let preparation = null;
	let request = [];
	let result = null;
	if (prep) {
		const { settings: _settings, fileOps, ...rest } = prep;
		preparation = { ...rest, fileOps: fileOpsJson(fileOps) };
		stub.text = args.stubSummary ?? "";
		stub.calls = [];
		// pi 1.x: compact(preparation, model, apiKey, headers, customInstructions, signal, thinkingLevel, streamFn, …)
		const model = stubModel(args.contextWindow ?? 0);
		result = withoutStubUsage(
			PI_1
				? await C.compact(prep, model, "stub-key", undefined, args.customInstructions, undefined, undefined, streamFn)
				: await C.compact(prep, model, "stub-key", undefined, args.customInstructions),
		);
		request = stub.calls.map(describeRequest);
	}
	return {
		contextTokens,
		shouldCompact: C.shouldCompact(contextTokens, args.contextWindow ?? 0, settings),
		cutPoint,
		preparation,
		request,
		result,
	};
}

async function opBranchSummary(L, args, env) {
	const { B, streamFn } = await loadPlanning();
	const sm = openSession(L.SessionManager, args.file, env.sessionDir);
	const oldLeafId = Object.hasOwn(args, "oldLeafId") ? args.oldLeafId : sm.getLeafId();
	const { entries, commonAncestorId } = B.collectEntriesForBranchSummary(sm, oldLeafId, args.targetId);
	const model = stubModel(args.contextWindow ?? 0);
	const reserveTokens = args.reserveTokens ?? 16384;
	const prep = B.prepareBranchEntries(entries, (model.contextWindow || 128000) - reserveTokens);
	stub.text = args.stubSummary ?? "";
	stub.calls = [];
	const result = await B.generateBranchSummary(entries, {
		model,
		apiKey: "stub-key",
		signal: new AbortController().signal,
		customInstructions: args.customInstructions,
		reserveTokens,
		...(PI_1 ? { streamFn } : {}),
	});
	return {
		entries: entries.map((e) => e.id),
		commonAncestorId,
		preparation: { messages: prep.messages, fileOps: fileOpsJson(prep.fileOps), totalTokens: prep.totalTokens },
		request: stub.calls.map(describeRequest),
		result: withoutStubUsage(result),
	};
}

const OPS = {
	load: opLoad,
	context: opContext,
	tree: opTree,
	apply: opApply,
	persist: opPersist,
	list: opList,
	continue: opContinue,
	resolve: opResolve,
	switch: opSwitch,
	compaction: opCompaction,
	branch_summary: opBranchSummary,
};

let currentCase = null; // the request being answered (ack lines name it)

async function handleRequest(req) {
	const caseId = req.case ?? null;
	currentCase = caseId;
	try {
		const op = OPS[req.op];
		if (!op) return { type: "response", case: caseId, unsupported: true };
		const args = req.args && typeof req.args === "object" ? req.args : {};
		const L = await loadLibrary();
		const env = enterCaseDir(req.dir);
		const lift = installFaults(req.faults, req.dir);
		let ok;
		try {
			ok = await op(L, args, env, req.dir);
		} finally {
			lift();
		}
		// Serialise here so a value JSON cannot hold (BigInt, a cycle) becomes an
		// error response instead of a crash.
		const line = JSON.stringify({ type: "response", case: caseId, ok });
		return line;
	} catch (err) {
		if (!(err instanceof ProtocolError)) log(`case ${caseId}: ${err && err.stack ? err.stack : err}`);
		return { type: "response", case: caseId, error: errorObject(err) };
	}
}

function writeResponse(resp) {
	return typeof resp === "string" ? writeLine(resp) : send(resp);
}

function parseLine(line) {
	try {
		return { msg: JSON.parse(line) };
	} catch (err) {
		return { err };
	}
}

function helloMessage() {
	return {
		type: "hello",
		implementation: IMPLEMENTATION,
		version: VERSION,
		profile: PROFILE,
		operations: OPERATIONS,
		capabilities: ["faults", "journal"],
	};
}

async function persistent() {
	const rl = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
	for await (const rawLine of rl) {
		const line = rawLine.trim();
		if (!line) continue;
		const { msg, err } = parseLine(line);
		if (err || msg === null || typeof msg !== "object") {
			log(`unparseable message: ${line.slice(0, 200)}`);
			await send({ type: "response", case: null, error: { kind: "exception", message: "unparseable message" } });
			continue;
		}
		if (msg.type === "hello") {
			try {
				await loadLibrary(); // say hello only once the library is ready
			} catch (e) {
				log(`cannot import ${PKG.name}: ${e && e.stack ? e.stack : e}`);
			}
			await send(helloMessage());
		} else if (msg.type === "bye") {
			rl.close();
			await drainAndExit(0);
		} else if (msg.type === "request") {
			await writeResponse(await handleRequest(msg));
		} else {
			log(`ignoring message of type ${JSON.stringify(msg.type)}`);
		}
	}
	await drainAndExit(0);
}

async function oneShot() {
	let text = "";
	try {
		text = readFileSync(0, "utf8");
	} catch (e) {
		log(`cannot read stdin: ${e}`);
	}
	const line = text.split("\n").find((l) => l.trim() !== "") ?? "";
	const { msg, err } = parseLine(line.trim());
	if (err || msg === null || typeof msg !== "object") {
		await send({ type: "response", case: null, error: { kind: "exception", message: "unparseable request" } });
	} else {
		await writeResponse(await handleRequest(msg));
	}
	await drainAndExit(0);
}

if (process.argv.includes("--one-shot")) oneShot();
else persistent();
