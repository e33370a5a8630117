#!/usr/bin/env bash
# Writes the generated part of each clause of docs/spec/: its cases, and per implementation
# the divergences its list gives for them (`session-conformance corpus spec-sections`).
#
# Usage: scripts/spec_generate.sh [--check]
#   --check   write nothing; exit 1 when a generated part is not current (CI runs this)
# SESSION_CONFORMANCE names the binary to use (default: `cargo run -q -p session-conformance-cli --`).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${SESSION_CONFORMANCE:-}" ]; then
  bin=("$SESSION_CONFORMANCE")
else
  bin=(cargo run -q -p session-conformance-cli --)
fi

# The implementations, as the README's matrix names them, each with its list.
lists=(
  "pi-mono 0.73.1=conformance/adapters/pi-mono/expected-divergences"
  "pi 1.5.2=conformance/adapters/pi-1.5/expected-divergences"
  "pi 1.6.0=conformance/adapters/pi-1.6/expected-divergences"
  "omp 13.19.0=conformance/adapters/omp/expected-divergences"
  "omp 18.2.3=conformance/adapters/omp-18/expected-divergences"
  "pi_agent_rust 0.8.0=conformance/adapters/pi-agent-rust/expected-divergences"
  "the Python example (pi)=conformance/adapters/python-example/expected-divergences.pi"
  "the Python example (operator)=conformance/adapters/python-example/expected-divergences"
)
args=(corpus spec-sections --spec docs/spec)
for list in "${lists[@]}"; do args+=(--list "$list"); done
"${bin[@]}" "${args[@]}" "$@"
