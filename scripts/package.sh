#!/usr/bin/env bash
# The crates as a registry would serve them (#48): checks that the library's package holds
# every file of the corpus, schemas and specification it embeds, then runs
# `cargo publish --dry-run` for each crate a user installs or depends on, which packages
# them and builds each package as downloaded (target/package/NAME-VERSION/, which
# conformance/example-port uses through its [patch.crates-io]).
#
# Usage: scripts/package.sh   (from anywhere; writes only under target/)
set -euo pipefail
cd "$(dirname "$0")/.."

crates=(session-reference session-conformance session-generators session-conformance-cli)

echo "== the library's package carries corpus/cases, corpus/README.md, schemas/ and docs/spec/ whole"
listed=$(mktemp)
trap 'rm -f "$listed"' EXIT
cargo package --locked --allow-dirty --list -p session-conformance 2> /dev/null > "$listed"
for pair in cases:corpus/cases README.md:corpus/README.md schemas:schemas spec:docs/spec; do
  bundled=bundled/${pair%%:*}
  source=${pair#*:}
  if ! diff <(grep -E "^$bundled(/|\$)" "$listed" | sed "s|^$bundled||" | sort) \
    <(git ls-files -- "$source" | sed "s|^$source||" | sort) > /dev/null; then
    echo "package.sh: the package's $bundled differs from the files git holds in $source:" >&2
    diff <(grep -E "^$bundled(/|\$)" "$listed" | sed "s|^$bundled||" | sort) \
      <(git ls-files -- "$source" | sed "s|^$source||" | sort) | head -20 >&2 || true
    exit 1
  fi
done
grep -qx PROTOCOL.md "$listed" || { echo "package.sh: PROTOCOL.md is not in the package" >&2; exit 1; }
if grep -E '^(adapters|ci|matrix-test|example-port|cli|tests)/' "$listed"; then
  echo "package.sh: the library's package holds the files above, which are not its users'" >&2
  exit 1
fi

echo "== cargo publish --dry-run: ${crates[*]}"
args=()
for crate in "${crates[@]}"; do args+=(-p "$crate"); done
# --allow-dirty: a local run may have edits; CI's tree is its commit.
cargo publish --dry-run --locked --allow-dirty "${args[@]}"
