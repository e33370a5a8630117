// Times compaction planning in pi-mono 0.73.1 on one session file (BENCHMARKS.md, "Compaction planning"):
// open, then getBranch + estimateContextTokens + findCutPoint + prepareCompaction + compact with a stub
// model. Usage: node bench-compaction.mjs FILE [RUNS]
import { performance } from "node:perf_hooks";

const [file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
const lib = await import("@mariozechner/pi-coding-agent");
const base = new URL("./node_modules/@mariozechner/pi-coding-agent/dist/core/compaction/", import.meta.url);
const C = await import(new URL("compaction.js", base).href);
const ai = await import("@mariozechner/pi-ai");
const message = { role: "assistant", content: [{ type: "text", text: "S" }], stopReason: "stop", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 }, timestamp: 0 };
const stream = () => ({ result: async () => message, async *[Symbol.asyncIterator]() {} });
ai.registerApiProvider({ api: "bench-stub", stream, streamSimple: stream }, "bench");
const model = { id: "stub", api: "bench-stub", provider: "stub", contextWindow: 200000, maxTokens: 4096, reasoning: false };
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const open = [];
const plan = [];
for (let i = 0; i < runs; i++) {
	let t = performance.now();
	const sm = lib.SessionManager.open(file, "/tmp/bench/sessions");
	open.push(performance.now() - t);
	t = performance.now();
	const path = sm.getBranch();
	const settings = C.DEFAULT_COMPACTION_SETTINGS;
	const tokens = C.estimateContextTokens(lib.buildSessionContext(path).messages).tokens;
	C.shouldCompact(tokens, 200000, settings);
	C.findCutPoint(path, 0, path.length, settings.keepRecentTokens);
	const prep = C.prepareCompaction(path, settings);
	if (prep) await C.compact(prep, model, "k");
	plan.push(performance.now() - t);
}
console.log(JSON.stringify({ impl: "pi-mono", openMs: median(open), planMs: median(plan) }));
