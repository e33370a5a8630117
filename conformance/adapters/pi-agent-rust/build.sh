#!/usr/bin/env bash
# Measure a clean build of pi_agent_rust 0.8.0 (this folder's own Cargo project, outside the
# workspace) on this machine, the way the kit measured it: one job, lowest priority, in the background
# of other work. Prints wall and CPU time (GNU time) and how many crates were compiled.
# Usage: conformance/adapters/pi-agent-rust/build.sh [LOG]      (default LOG: target/build.log)
set -euo pipefail
cd "$(dirname "$0")"
log=${1:-target/build.log}
mkdir -p "$(dirname "$log")"
start=$(date +%s)
status=0
/usr/bin/time -v nice -n 19 cargo build --release -j1 > "$log" 2>&1 || status=$?
echo "exit $status after $(( $(date +%s) - start )) s; $(grep -c '^ *Compiling' "$log") crates compiled of $(grep -c '^name = ' Cargo.lock) in Cargo.lock"
grep -E 'Elapsed|User time|System time|Maximum resident' "$log" || true
exit "$status"
