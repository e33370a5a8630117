#!/usr/bin/env bash
# Gate a change on the session-conformance corpus: run it against an adapter, write the
# reports (JSON Lines, JUnit, the HTML matrix), print the summary, fail on failures.
# Copy this file into your repository; conformance/ci/README.md explains it.
set -euo pipefail

usage() {
  cat << 'EOF'
Usage: gate.sh --profile PROFILE --out DIR [OPTIONS] -- ADAPTER [ARG...]

Runs the session-conformance corpus against ADAPTER (a command and its arguments,
started without a shell; `reference` is the kit's own implementation) in PROFILE, and
writes into DIR:
  report.jsonl   the run's JSON report (`run --format json`)
  junit.xml      the same corpus as JUnit (`run --format junit`: a second run)
  matrix.html    the report as one self-contained page (`report --html`)
  matrix.md      the same as a Markdown table (`report --markdown`)
  schema-diff.txt  with --schema-base: `schema diff git:REV SCHEMAS`
Prints the summary and the cases that failed; on GitHub Actions also appends the
table to the job summary ($GITHUB_STEP_SUMMARY).

Options:
  --profile PROFILE   pi, omp or operator (required)
  --out DIR           the output folder, made when missing (required)
  --expect LIST       the implementation's divergence list: listed cases are `divergent`,
                      not failed (PROTOCOL.md "Expected divergences")
  --bin PATH          the kit binary (default: $SESSION_CONFORMANCE, else
                      `session-conformance` on PATH)
  --corpus DIR        run this corpus (default: the kit's: corpus/cases when it is in the
                      current folder, else the corpus built into the binary)
  --jobs N            cases in parallel (default: 2)
  --timeout SECONDS   per case (default: 20)
  --no-junit          skip the second run that writes junit.xml
  --schema-base REV   also compare the schema set SCHEMAS with the one at git
                      revision REV (`schema diff`, run in the current folder, which must
                      be in a git repository with REV); a breaking change fails the gate
  --schemas DIR       the schema set compared with --schema-base (default: schemas)
  -h, --help          this text

Exit status: 0 every case passed, is skipped or is a listed divergence (and no breaking
schema change); 1 a case failed (or a schema change is breaking); 2 a usage error, or
the kit or the adapter could not start.
EOF
}

die() { # MESSAGE: a usage error
  echo "gate.sh: $1" >&2
  echo "Try 'gate.sh --help'." >&2
  exit 2
}

bin=${SESSION_CONFORMANCE:-session-conformance}
profile="" out="" expect="" corpus="" jobs=2 timeout=20 junit=true schema_base="" schemas=schemas
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --profile | --out | --expect | --bin | --corpus | --jobs | --timeout | --schema-base | --schemas)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --profile) profile=$2 ;;
        --out) out=$2 ;;
        --expect) expect=$2 ;;
        --bin) bin=$2 ;;
        --corpus) corpus=$2 ;;
        --jobs) jobs=$2 ;;
        --timeout) timeout=$2 ;;
        --schema-base) schema_base=$2 ;;
        --schemas) schemas=$2 ;;
      esac
      shift 2
      ;;
    --no-junit)
      junit=false
      shift
      ;;
    --)
      shift
      break
      ;;
    *) die "unknown option '$1' (the adapter command goes after --)" ;;
  esac
done
adapter=("$@")
[ -n "$profile" ] || die "--profile is required"
[ -n "$out" ] || die "--out is required"
[ ${#adapter[@]} -gt 0 ] || die "no adapter command after --"
[ -z "$expect" ] || [ -f "$expect" ] || die "--expect $expect: no such file"
command -v "$bin" > /dev/null || die "no kit binary '$bin' (set --bin or SESSION_CONFORMANCE)"

{ mkdir -p -- "$out" && [ -d "$out" ] && [ -w "$out" ]; } 2> /dev/null ||
  die "--out $out: cannot make this folder or write into it"
echo "== $("$bin" --version), profile $profile, adapter: ${adapter[*]}"

run_args=(--profile "$profile" --jobs "$jobs" --timeout "$timeout")
[ -z "$expect" ] || run_args+=(--expect "$expect")
[ -z "$corpus" ] || run_args+=(--corpus "$corpus")
run() { # FORMAT: one run of the corpus, its report on stdout
  # The adapter's own arguments go after `--`, so that ones starting with `-` stay the adapter's.
  "$bin" run "${run_args[@]}" --format "$1" --adapter "${adapter[0]}" -- "${adapter[@]:1}"
}
report_args=()
[ -z "$corpus" ] || report_args+=(--corpus "$corpus")

status=0
worse() { # STATUS: keep the worst exit status seen (2 above 1 above 0)
  if [ "$1" -gt "$status" ]; then status=$1; fi
}

run_status=0
run json > "$out/report.jsonl" || run_status=$?
worse "$run_status"
echo "== summary"
# Records start with their type (the kit writes `type` first), so an anchored match finds
# the summary records and nothing inside a case's output.
if grep '^{"type":"summary"' "$out/report.jsonl"; then
  # The kit reads the report and picks cases by their status field alone (a case's
  # output, name or notes may hold any text): `STATUS ID GROUP/NAME POINTER` a line.
  list() { # WHICH: failed or changed
    "$bin" report "$out/report.jsonl" --list "$1"
  }
  changed="" failed=""
  changed=$(list changed) || worse 2
  failed=$(list failed) || worse 2
  show() { # LINES: at most 300 characters of each
    cut -c1-300 <<< "$1"
  }
  if [ -n "$changed" ]; then
    echo "== listed divergences that now differ otherwise (not a failure, but the reason may be stale)"
    show "$changed"
  fi
  if [ -n "$failed" ]; then
    echo "== cases that failed (status, id, name, first difference; report.jsonl has the diffs)"
    show "$failed"
  fi
else
  echo "gate.sh: the run wrote no summary (exit $run_status): the kit or the adapter did not start" >&2
fi

if [ -s "$out/report.jsonl" ]; then
  report_status=0
  "$bin" report "$out/report.jsonl" "${report_args[@]}" --html "$out/matrix.html" \
    --markdown "$out/matrix.md" || report_status=$?
  worse "$report_status"
  if [ -f "$out/matrix.md" ]; then
    cat "$out/matrix.md"
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
      {
        echo "### session-conformance, profile $profile"
        cat "$out/matrix.md"
      } >> "$GITHUB_STEP_SUMMARY"
    fi
  fi
fi

if $junit; then
  junit_status=0
  run junit > "$out/junit.xml" || junit_status=$?
  worse "$junit_status"
  if [ "$junit_status" -ne "$run_status" ]; then
    echo "gate.sh: the JUnit run exited $junit_status, the JSON run $run_status (a flaky adapter?)" >&2
  fi
fi

if [ -n "$schema_base" ]; then
  echo "== schema diff git:$schema_base $schemas"
  schema_status=0
  "$bin" schema diff "git:$schema_base" "$schemas" > "$out/schema-diff.txt" || schema_status=$?
  cat "$out/schema-diff.txt"
  worse "$schema_status"
fi

echo "== reports in $out: $(cd "$out" && ls | tr '\n' ' ')"
if [ "$status" -ne 0 ]; then
  echo "gate.sh: FAILED (exit $status)" >&2
else
  echo "gate.sh: passed"
fi
exit "$status"
