#!/usr/bin/env bash
# Smoke test for the omp adapters: one hello, one request per operation, bye.
# Usage: smoke.sh [path/to/run.sh]     (default: the run.sh next to this file, i.e. 13.19.0)
#        smoke.sh ../omp-18/run.sh     (18.2.3)
# Checks: every response line is JSON, the hello names oh-my-pi / profile omp, each request gets one
# response with its own case id and an `ok` payload of the expected shape, files land under the case dir,
# and the adapter exits 0 after bye.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RUN="$(cd "$(dirname "${1:-$HERE/run.sh}")" && pwd)/$(basename "${1:-$HERE/run.sh}")"
FIXTURE="$HERE/fixtures/real-session.jsonl"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/omp-smoke.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

for c in load context tree apply persist; do
	mkdir -p "$WORK/$c"
	[ "$c" = persist ] || cp "$FIXTURE" "$WORK/$c/session.jsonl"
done

ASSISTANT='{"role":"assistant","content":[{"type":"text","text":"done"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}'
{
	echo '{"type":"hello","protocol":1,"profile":"omp"}'
	echo "{\"type\":\"request\",\"case\":\"s-load\",\"op\":\"load\",\"profile\":\"omp\",\"dir\":\"$WORK/load\",\"args\":{\"file\":\"session.jsonl\"}}"
	echo "{\"type\":\"request\",\"case\":\"s-context\",\"op\":\"context\",\"profile\":\"omp\",\"dir\":\"$WORK/context\",\"args\":{\"file\":\"session.jsonl\"}}"
	echo "{\"type\":\"request\",\"case\":\"s-tree\",\"op\":\"tree\",\"profile\":\"omp\",\"dir\":\"$WORK/tree\",\"args\":{\"file\":\"session.jsonl\"}}"
	echo "{\"type\":\"request\",\"case\":\"s-apply\",\"op\":\"apply\",\"profile\":\"omp\",\"dir\":\"$WORK/apply\",\"args\":{\"open\":\"session.jsonl\",\"cwd\":\"/proj\",\"steps\":[{\"call\":\"appendMessage\",\"message\":{\"role\":\"user\",\"content\":\"more\",\"timestamp\":3}},{\"call\":\"appendLabelChange\",\"targetId\":{\"\$result\":0},\"label\":\"L\"},{\"call\":\"branch\",\"id\":\"no-such-id\"},{\"call\":\"appendSessionInfo\",\"name\":\"x\"},{\"call\":\"flush\"}]}}"
	echo "{\"type\":\"request\",\"case\":\"s-persist\",\"op\":\"persist\",\"profile\":\"omp\",\"dir\":\"$WORK/persist\",\"args\":{\"message\":$ASSISTANT}}"
	echo '{"type":"bye"}'
} > "$WORK/requests.jsonl"

set +e
timeout 120 "$RUN" < "$WORK/requests.jsonl" > "$WORK/responses.jsonl" 2> "$WORK/stderr.txt"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
	echo "FAIL: adapter exited with status $rc" >&2
	tail -20 "$WORK/stderr.txt" >&2
	exit 1
fi

node - "$WORK" <<'EOF'
const fs = require("fs");
const path = require("path");
const work = process.argv[2];
const lines = fs.readFileSync(path.join(work, "responses.jsonl"), "utf8").split("\n").filter(l => l !== "");
const fail = m => { console.error(`FAIL: ${m}`); process.exit(1); };
const msgs = lines.map((l, i) => { try { return JSON.parse(l); } catch { fail(`line ${i + 1} is not JSON: ${l.slice(0, 200)}`); } });
const expect = ["s-load", "s-context", "s-tree", "s-apply", "s-persist"];
if (msgs.length !== expect.length + 1) fail(`expected ${expect.length + 1} lines, got ${msgs.length}`);
const hello = msgs[0];
if (hello.type !== "hello" || hello.implementation !== "oh-my-pi" || hello.profile !== "omp" || typeof hello.version !== "string")
	fail(`bad hello ${JSON.stringify(hello)}`);
for (const op of ["load", "context", "tree", "apply", "persist"]) if (!hello.operations.includes(op)) fail(`hello lacks ${op}`);
const byCase = {};
msgs.slice(1).forEach((m, i) => {
	if (m.type !== "response") fail(`line ${i + 2} is not a response`);
	if (m.case !== expect[i]) fail(`line ${i + 2}: case ${m.case}, expected ${expect[i]}`);
	if (!m.ok) fail(`${m.case}: no ok payload: ${JSON.stringify(m).slice(0, 300)}`);
	byCase[m.case] = m.ok;
});
const load = byCase["s-load"];
if (!load.header || load.header.type !== "session" || !Array.isArray(load.entries) || load.entries.length < 10 || typeof load.leafId !== "string")
	fail("load payload has the wrong shape");
const ctx = byCase["s-context"];
if (!Array.isArray(ctx.messages) || ctx.messages[0]?.role !== "compactionSummary" || typeof ctx.models !== "object" || !Array.isArray(ctx.injectedTtsrRules))
	fail("context payload has the wrong shape");
const tree = byCase["s-tree"];
if (!Array.isArray(tree.nodes) || tree.nodes.length !== load.entries.length || tree.nodes[0].parentId !== null) fail("tree payload has the wrong shape");
if (!tree.nodes.some(n => n.label === "start")) fail("tree lost the label");
const apply = byCase["s-apply"];
const r = apply.results;
if (!/^[0-9a-f]{8}$/.test(r[0]) || !/^[0-9a-f]{8}$/.test(r[1])) fail(`apply results ${JSON.stringify(r)}`);
if (r[2]?.error?.kind !== "not_found") fail(`branch(unknown) should be not_found: ${JSON.stringify(r[2])}`);
if (r[3]?.error?.kind !== "exception" || r[3].error.message !== "unsupported call") fail(`appendSessionInfo should be unsupported: ${JSON.stringify(r[3])}`);
if (r[4] !== null) fail(`flush should return null: ${JSON.stringify(r[4])}`);
if (apply.leafId !== r[1]) fail("apply leafId should be the label entry");
const applied = fs.readFileSync(path.join(work, "apply", "session.jsonl"), "utf8");
if (!applied.includes(r[0]) || !applied.includes(r[1])) fail("apply did not write its entries to session.jsonl before answering");
const persist = byCase["s-persist"];
if (persist.results.length !== 2 || !persist.results.every(x => /^[0-9a-f]{8}$/.test(x))) fail(`persist results ${JSON.stringify(persist.results)}`);
const sessions = fs.readdirSync(path.join(work, "persist", "sessions")).filter(f => f.endsWith(".jsonl"));
if (sessions.length !== 1) fail(`persist wrote ${sessions.length} session files`);
const written = fs.readFileSync(path.join(work, "persist", "sessions", sessions[0]), "utf8");
if (!persist.results.every(id => written.includes(id))) fail("persist entries are not on disk");
console.log(`ok: ${hello.implementation} ${hello.version} (${msgs.length - 1} responses)`);
EOF
