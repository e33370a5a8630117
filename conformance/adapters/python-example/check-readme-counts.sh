#!/usr/bin/env bash
# Runs the Python example per profile and checks the counts its README states.
set -euo pipefail

usage() {
  cat << 'EOF'
Usage: check-readme-counts.sh [--write]

Runs the Python example adapter against the corpus once per profile it implements
(pi with expected-divergences.pi, operator with expected-divergences), reads each run's
summary (`run --format json`) and compares it with the line of README.md that ends in
`<!-- counts:PROFILE -->`. Exit status: 0 when every line matches and every run passed,
1 when a line differs or a run failed, 2 on usage errors.

  --write   rewrite the README's marked lines from the runs instead of checking them

The kit binary is $SESSION_CONFORMANCE (default: `session-conformance` on PATH).
Runs from the repository root, wherever it is called from.
EOF
}

write=false
case "${1:-}" in
  "") ;;
  --write) write=true ;;
  -h | --help)
    usage
    exit 0
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac

bin=${SESSION_CONFORMANCE:-session-conformance}
# A path relative to the caller's folder stays valid after the cd below.
if [[ $bin == */* && $bin != /* ]]; then
  bin=$PWD/$bin
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."
example=conformance/adapters/python-example
readme=$example/README.md
if ! command -v "$bin" > /dev/null; then
  echo "check-readme-counts: no kit binary at '$bin' (set SESSION_CONFORMANCE)" >&2
  exit 2
fi

# PROFILE:LIST for each profile the example's hello supports (adapter.py `hello_for`:
# pi and operator; omp is refused, the hello would say pi).
runs=("pi:$example/expected-divergences.pi" "operator:$example/expected-divergences")

count() { # SUMMARY STATUS: the count of STATUS in a summary record, 0 when absent
  local n
  n=$(grep -o "\"$2\":[0-9]*" <<< "$1" | head -n 1 | cut -d: -f2) || true
  echo "${n:-0}"
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for run in "${runs[@]}"; do
  profile=${run%%:*}
  list=${run#*:}
  report=$out/$profile.jsonl
  run_status=0
  "$bin" run --adapter python3 "$example/adapter.py" --profile "$profile" --expect "$list" \
    --jobs 2 --timeout 20 --format json > "$report" || run_status=$?
  summary=$(grep '"type":"summary"' "$report" || true)
  if [ "$run_status" -ne 0 ] || [ -z "$summary" ]; then
    echo "check-readme-counts: the $profile run exited $run_status:" >&2
    grep '"type":"case"' "$report" | grep -v '"status":"\(pass\|divergent\|skipped\)"' | cut -c1-300 >&2 || true
    status=1
    continue
  fi
  # Every status of the summary: a run that exits 0 has only these three, or also
  # `divergent-changed` (a listed case that differs otherwise: its signature, maybe its
  # reason, is stale), which does not fail a run but fails this check.
  passed=$(count "$summary" pass)
  divergent=$(count "$summary" divergent)
  skipped=$(count "$summary" skipped)
  total=0
  for n in $(grep -o ':[0-9]\+' <<< "${summary#*\"counts\"}" | cut -d: -f2); do
    total=$((total + n))
  done
  if [ "$total" -ne $((passed + divergent + skipped)) ]; then
    echo "check-readme-counts: the $profile run has statuses beside pass, divergent and skipped: $summary" >&2
    status=1
  fi
  marker="<!-- counts:$profile -->"
  line="- \`$profile\` (\`${list##*/}\`): $total cases, $passed passed, $divergent divergent, $skipped skipped $marker"
  if ! grep -qF -- "$marker" "$readme"; then
    echo "check-readme-counts: $readme has no line ending in $marker" >&2
    status=1
  elif $write; then
    MARKER=$marker LINE=$line python3 - "$readme" << 'EOF'
import os, sys
path, marker, line = sys.argv[1], os.environ["MARKER"], os.environ["LINE"]
with open(path, encoding="utf-8") as f:
    lines = f.read().split("\n")
lines = [line if l.endswith(marker) else l for l in lines]
with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
EOF
    echo "wrote: $line"
  elif grep -qxF -- "$line" "$readme"; then
    echo "ok: $line"
  else
    echo "check-readme-counts: $readme states" >&2
    grep -F -- "$marker" "$readme" >&2
    echo "but the run gives (\`$example/check-readme-counts.sh --write\` writes it)" >&2
    echo "$line" >&2
    status=1
  fi
done
exit "$status"
