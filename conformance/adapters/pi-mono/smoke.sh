#!/bin/sh
# Smoke test for the pi adapter: hello + one request per operation + bye,
# in persistent mode, then the same load request in --one-shot mode.
# Usage: smoke.sh [path/to/run.sh]   (default: the run.sh next to this file, pi-mono 0.73.1;
#        ../pi-1.5/smoke.sh passes its own, pi 1.5.2)
# Checks that every response line is JSON, has the right `case`, and carries
# `ok` (not `error`). Needs `npm ci` to have been run in this folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
run=${1:-"$here/run.sh"}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pi-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

for c in load context tree apply persist oneshot; do
	mkdir -p "$tmp/$c"
	cp "$here/fixtures/real-session.jsonl" "$tmp/$c/session.jsonl"
done
rm "$tmp/persist/session.jsonl"

cat > "$tmp/requests.jsonl" <<JSONL
{"type":"hello","protocol":1,"profile":"pi"}
{"type":"request","case":"s-load","op":"load","profile":"pi","dir":"$tmp/load","args":{"file":"session.jsonl"}}
{"type":"request","case":"s-context","op":"context","profile":"pi","dir":"$tmp/context","args":{"file":"session.jsonl"}}
{"type":"request","case":"s-tree","op":"tree","profile":"pi","dir":"$tmp/tree","args":{"file":"session.jsonl"}}
{"type":"request","case":"s-apply","op":"apply","profile":"pi","dir":"$tmp/apply","args":{"open":null,"cwd":"/proj","steps":[{"call":"appendMessage","message":{"role":"user","content":"hi","timestamp":1}},{"call":"appendMessage","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}},{"call":"appendLabelChange","targetId":{"\$result":0},"label":"first"},{"call":"branch","id":"missing"},{"call":"flush"}]}}
{"type":"request","case":"s-persist","op":"persist","profile":"pi","dir":"$tmp/persist","args":{"message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"p","model":"m","timestamp":2}}}
{"type":"bye"}
JSONL

"$run" < "$tmp/requests.jsonl" > "$tmp/responses.jsonl"
printf '{"type":"request","case":"s-oneshot","op":"load","profile":"pi","dir":"%s","args":{"file":"session.jsonl"}}\n' "$tmp/oneshot" \
	| "$run" --one-shot >> "$tmp/responses.jsonl"

node - "$tmp/responses.jsonl" <<'JS'
const lines = require("fs").readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l !== "");
const expected = ["hello", "s-load", "s-context", "s-tree", "s-apply", "s-persist", "s-oneshot"];
let failed = 0;
const fail = (m) => { console.error(`FAIL: ${m}`); failed++; };
if (lines.length !== expected.length) fail(`expected ${expected.length} lines, got ${lines.length}`);
lines.forEach((line, i) => {
	let msg;
	try { msg = JSON.parse(line); } catch { return fail(`line ${i + 1} is not JSON: ${line.slice(0, 120)}`); }
	const want = expected[i];
	if (want === "hello") {
		if (msg.type !== "hello" || !["pi-mono", "pi"].includes(msg.implementation) || !msg.version) fail(`bad hello: ${line}`);
		return;
	}
	if (msg.type !== "response" || msg.case !== want) return fail(`line ${i + 1}: expected response for ${want}, got ${line.slice(0, 120)}`);
	if (!msg.ok) return fail(`${want}: not ok: ${line.slice(0, 300)}`);
	console.log(`ok   ${want}`);
});
const apply = lines.map((l) => { try { return JSON.parse(l); } catch { return {}; } }).find((m) => m.case === "s-apply");
if (apply && apply.ok && apply.ok.results[3]?.error?.kind !== "not_found") fail("s-apply: branch(missing) should give not_found");
if (failed) { console.error(`${failed} failure(s)`); process.exit(1); }
console.log("smoke test passed");
JS
