#!/usr/bin/env bash
# README's two commands share one build: after `cargo run -p session-conformance-cli`
# (the main job), `cargo test --workspace` compiles only what the tests add (their own
# crates and dev-dependencies), never again a crate the main job compiled. A dev-dependency
# that turns on a feature of a shared crate (serde, indexmap, regex-automata, …) would make
# the second command rebuild it and everything above it (#48); this names such crates.
#
# Usage: scripts/check-shared-build.sh   (from the repository's root; builds what it must)
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
units() { # FILE ARGS...: the compiler artifacts of `cargo ARGS`, one JSON message a line
  local file=$1
  shift
  cargo "$@" --message-format=json-render-diagnostics > "$work/messages"
  grep '"reason":"compiler-artifact"' "$work/messages" > "$file" || true
}

main_job=$work/main-job
tests=$work/tests
units "$main_job" build -p session-conformance-cli
units "$tests" test --workspace --no-run

python3 - "$main_job" "$tests" << 'PY'
import json, sys

def units(path):
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            key = (m["package_id"], m["target"]["name"], tuple(m["target"]["kind"]), m["profile"]["test"])
            yield key, m["fresh"]

main_job = {key for key, _ in units(sys.argv[1])}
rebuilt = sorted({key[0] for key, fresh in units(sys.argv[2]) if key in main_job and not fresh})
if not main_job:
    sys.exit("check-shared-build: the main job's build listed no units")
if rebuilt:
    print("cargo test --workspace rebuilt what cargo run -p session-conformance-cli had built:", file=sys.stderr)
    for package in rebuilt:
        print("  " + package, file=sys.stderr)
    print("a dev-dependency turns on a feature of a shared crate: turn it on in conformance/cli/Cargo.toml too", file=sys.stderr)
    sys.exit(1)
print(f"cargo test --workspace reuses the main job's {len(main_job)} units")
PY
