#!/usr/bin/env bash
# Run the session-conformance adapter over @oh-my-pi/pi-coding-agent 18.2.3 (the current release), reusing ../omp/adapter.ts.
# Usage: run.sh [--one-shot]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUN="$HERE/node_modules/@oven/bun-linux-x64/bin/bun"
if [ ! -x "$BUN" ]; then
	echo "omp adapter: $BUN is missing; run 'npm ci --ignore-scripts' in $HERE" >&2
	exit 127
fi
# Bun reads HOME once at start (os.homedir() is cached) and the library writes under it,
# so give the process a throwaway HOME; the adapter removes it on a clean exit.
PROC_HOME="$(mktemp -d "${TMPDIR:-/tmp}/omp-adapter-home.XXXXXX")"
export HOME="$PROC_HOME" OMP_ADAPTER_PROCESS_HOME="$PROC_HOME"
export OMP_PKG_DIR="$HERE/node_modules/@oh-my-pi/pi-coding-agent"
# Keep Bun's transpiler cache across runs (the throwaway HOME would otherwise lose it).
export BUN_RUNTIME_TRANSPILER_CACHE_PATH="$HERE/node_modules/.cache/bun-transpiler"
exec "$BUN" --no-install "$HERE/../omp/adapter.ts" "$@"
