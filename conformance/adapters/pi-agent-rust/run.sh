#!/usr/bin/env bash
# Run the session-conformance adapter for pi_agent_rust 0.8.0 (this folder's own Cargo project).
# It is not built by the kit's build: ./build.sh (or `cargo build --release` here) first; README.md says why.
# Usage: run.sh [--one-shot]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="$HERE/target/release/session-conformance-adapter-pi-agent-rust"
if [ ! -x "$BIN" ]; then
	echo "pi-agent-rust adapter: $BIN is missing; build it with $HERE/build.sh (hours on a small machine: README.md)" >&2
	exit 127
fi
exec "$BIN" "$@"
