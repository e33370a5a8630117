// Times compaction planning in omp 13.19.0 on one
// session file (BENCHMARKS.md, "Compaction planning"): open, then getBranch + pruneToolOutputs (in place, as the agent session does)
// + getLastAssistantUsage + findCutPoint + prepareCompaction + compact with a stub model.
// Usage: bun bench-compaction.ts FILE [RUNS]
import * as path from "node:path";

const [file, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
const PKG = path.join(import.meta.dir, "node_modules", "@oh-my-pi", "pi-coding-agent", "src", "session");
const { SessionManager } = await import(path.join(PKG, "session-manager.ts"));
const C = await import(path.join(PKG, "compaction", "compaction.ts"));
const P = await import(path.join(PKG, "compaction", "pruning.ts"));
const ai: any = await import(Bun.resolveSync("@oh-my-pi/pi-ai", PKG));
const message = { role: "assistant", content: [{ type: "text", text: "S" }], stopReason: "stop", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 }, timestamp: 0 };
ai.registerCustomApi("bench-stub", () => ({ result: async () => message, async *[Symbol.asyncIterator]() {} }), "bench");
const model = { id: "stub", api: "bench-stub", provider: "stub", contextWindow: 200000, maxTokens: 4096, reasoning: false };
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const open: number[] = [];
const plan: number[] = [];
for (let i = 0; i < runs; i++) {
	let t = performance.now();
	const sm = await SessionManager.open(file, "/tmp/bench/sessions");
	open.push(performance.now() - t);
	t = performance.now();
	const branch = sm.getBranch();
	const settings = C.DEFAULT_COMPACTION_SETTINGS;
	const pruning = P.pruneToolOutputs(branch, P.DEFAULT_PRUNE_CONFIG);
	const usage = C.getLastAssistantUsage(branch);
	const tokens = usage ? Math.max(0, C.calculateContextTokens(usage) - pruning.tokensSaved) : 0;
	C.shouldCompact(tokens, 200000, settings);
	C.findCutPoint(branch, 0, branch.length, settings.keepRecentTokens);
	const prep = C.prepareCompaction(branch, settings);
	if (prep) await C.compact(prep, model, "k");
	plan.push(performance.now() - t);
}
console.log(JSON.stringify({ impl: "omp", openMs: median(open), planMs: median(plan) }));
process.exit(0);
