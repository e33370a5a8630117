#!/usr/bin/env bash
# Mutation testing of the reference against the corpus (issue 26): how many deliberate
# bugs in `reference/` does the corpus catch?
#
# Each mutant is one small change to `reference/src` (cargo-mutants 27.1.0); it is
# built and checked by the corpus test alone (`cargo test -p session-conformance-cli
# --test corpus`). A mutant the corpus does not catch is a behaviour no case pins
# down: add a case for it, or list it in corpus/MUTANTS.md with the reason it cannot
# be observed through the protocol.
#
# Usage:
#   scripts/mutants.sh [--file PATH]... [--shard K/N] [--out DIR] [--jobs J] [--list]
#   scripts/mutants.sh --ci [--out DIR]
#
#   --file PATH   mutate only this file of reference/src (repeatable; default: the
#                 files corpus/MUTANTS.md lists under "Covered files")
#   --all         mutate every file of reference/src
#   --shard K/N   run the K-th of N slices (0-based), e.g. to spread a full run over sessions
#   --out DIR     where cargo-mutants writes mutants.out/ (default target/mutants)
#   --jobs J      mutants built and tested at once, each in a copy (default 1; not in place)
#   --list        list the mutants and stop
#   --in-place    mutate and build this checkout itself, reusing its target/ (no
#                 fresh build of the workspace first); each file is restored after its
#                 mutant. Use it in a worktree of its own, or in CI.
#   --ci          one slice of about 30 mutants of the covered files, chosen by the
#                 commit hash (so successive commits rotate through them); in place
#
# cargo-mutants 27.1.0 runs its unmutated baseline with the mutated package's tests,
# not those of --test-package, so the script runs the baseline itself (the corpus
# test, which must pass) and tells cargo-mutants to skip its own.
#
# Afterwards the script compares the missed mutants with corpus/MUTANTS.md and fails
# (exit 1) when one is neither caught nor listed there. Exit 2: a usage error or a
# missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."

listed=corpus/MUTANTS.md
out=target/mutants
jobs=1
shard=""
list=false
ci=false
all=false
in_place=false
files=()

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --file) files+=("$2"); shift 2 ;;
    --all) all=true; shift ;;
    --shard) shard=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --list) list=true; shift ;;
    --in-place) in_place=true; shift ;;
    --ci) ci=true; in_place=true; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mutants.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if ! cargo mutants --version > /dev/null 2>&1; then
  echo "mutants.sh: cargo-mutants is not installed: cargo install cargo-mutants --version 27.1.0 --locked" >&2
  exit 2
fi

# The covered files: those a full run has gone through, listed in MUTANTS.md as
# "- `reference/src/…`" lines under "## Covered files".
covered() { sed -n '/^## Covered files/,/^## /p' "$listed" | sed -n 's/^- `\(reference\/src\/[^`]*\)`.*/\1/p'; }

if $all; then
  files=()
elif [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(covered)
  if [ ${#files[@]} -eq 0 ]; then
    echo "mutants.sh: $listed lists no covered files; pass --file or --all" >&2
    exit 2
  fi
fi

# `--cargo-arg --test=corpus` goes to the build (`cargo test --no-run`) as well as the
# test: each mutant builds the corpus test alone, not every test binary of the package.
args=(--package session-reference --test-package session-conformance-cli --timeout 120 --baseline skip
  --cargo-arg=--test=corpus)
if $in_place; then
  args+=(--in-place)
else
  args+=(--jobs "$jobs")
fi
for f in "${files[@]}"; do
  args+=(--file "$f")
done

if $ci; then
  # About 30 mutants: N slices of the covered files, slice K by the commit hash.
  total=$(cargo mutants "${args[@]}" --list | wc -l)
  n=$(( (total + 29) / 30 ))
  [ "$n" -ge 1 ] || n=1
  hash=$(git rev-parse --short=8 HEAD 2>/dev/null || echo 0)
  k=$(( 16#$hash % n ))
  shard="$k/$n"
  echo "mutants.sh: slice $shard of $total mutants in ${#files[@]} covered files (commit $hash)"
fi
if [ -n "$shard" ]; then
  args+=(--shard "$shard")
fi

if $list; then
  exec cargo mutants "${args[@]}" --list
fi

echo "mutants.sh: baseline: the corpus test on the unmutated tree"
cargo test -q -p session-conformance-cli --test corpus > /dev/null

mkdir -p "$out"
status=0
cargo mutants "${args[@]}" --output "$out" || status=$?
# cargo-mutants exits 2 when a mutant was missed, 3 on timeouts; other codes are failures of the run.
case "$status" in
  0|2|3) ;;
  *) echo "mutants.sh: cargo mutants failed (exit $status)" >&2; exit "$status" ;;
esac

results=$out/mutants.out
# A run where no mutant built checks nothing (a renamed test package once made every
# mutant unviable and the slice pass): that is a failure of the run, not a pass.
tested=$(cat "$results"/{caught,missed,timeout,unviable}.txt 2>/dev/null | wc -l)
unviable=$(wc -l < "$results/unviable.txt" 2>/dev/null || echo 0)
if [ "$tested" -gt 0 ] && [ "$unviable" -eq "$tested" ]; then
  echo "mutants.sh: all $tested mutants were unviable: nothing was checked (see $results/log)" >&2
  exit 1
fi
key() { sed -E 's/^([^:]+):[0-9]+:[0-9]+: /\1: /'; }
for outcome in caught missed timeout unviable; do
  printf '%-9s %s\n' "$outcome" "$(wc -l < "$results/$outcome.txt" 2>/dev/null || echo 0)"
done

unlisted=0
while IFS= read -r line; do
  mutant=$(printf '%s\n' "$line" | key)
  if ! grep -qF -- "$mutant" "$listed"; then
    echo "missed, not in $listed: $line"
    unlisted=$((unlisted + 1))
  fi
done < <(cat "$results/missed.txt" 2>/dev/null)

if [ "$unlisted" -gt 0 ]; then
  echo "mutants.sh: $unlisted missed mutant(s) are neither caught by a case nor listed in $listed" >&2
  exit 1
fi
echo "mutants.sh: every missed mutant is listed in $listed"
