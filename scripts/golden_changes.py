#!/usr/bin/env python3
"""Shows how the goldens changed since a revision, sorted by kind: a key added (and
which), a key removed, a value changed (and where). Issue #36 used it to show that
adding messages' `api` and `timestamp` (and v2 hookMessages' `customType` and `display`) changed every golden only by those keys.

Usage: scripts/golden_changes.py [REV]   (default HEAD; the working tree against REV)
Exit status 1 when a golden changed other than by an added `api` or `timestamp` key,
or by a file description (`bytes`, `sha256`) of an input whose bytes changed with it.
"""
import json
import subprocess
import sys
from collections import Counter

# `customType` and `display`: the fields v2 `hookMessage`s were given (scripts/add_message_fields.py leaves them to a hand edit).
ALLOWED_ADDED = {"api", "timestamp", "customType", "display"}
FILE_FIELDS = {"bytes", "sha256"}


def changed_goldens(rev):
    out = subprocess.run(
        ["git", "diff", "--name-only", rev, "--", "corpus/cases"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return [p for p in out if p.rsplit("/", 1)[-1].startswith("expected")]


def walk(old, new, path, changes):
    """Every difference of two values, without recursion on depth."""
    stack = [(old, new, path)]
    while stack:
        old, new, path = stack.pop()
        if isinstance(old, dict) and isinstance(new, dict):
            for key in new.keys() - old.keys():
                changes.append(("added", key, f"{path}/{key}"))
            for key in old.keys() - new.keys():
                changes.append(("removed", key, f"{path}/{key}"))
            for key in old.keys() & new.keys():
                stack.append((old[key], new[key], f"{path}/{key}"))
        elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
            for i, (a, b) in enumerate(zip(old, new)):
                stack.append((a, b, f"{path}/{i}"))
        elif old != new:
            changes.append(("changed", path.rsplit("/", 1)[-1], path))


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    kinds, unexpected = Counter(), []
    for golden in changed_goldens(rev):
        try:
            old = json.loads(subprocess.run(["git", "show", f"{rev}:{golden}"], check=True,
                                            capture_output=True, text=True).stdout)
        except subprocess.CalledProcessError:
            kinds[("new golden", "")] += 1
            continue
        new = json.load(open(golden, encoding="utf-8"))
        changes = []
        walk(old, new, "", changes)
        for kind, key, path in changes:
            kinds[(kind, key)] += 1
            ok = (kind == "added" and key in ALLOWED_ADDED) or (kind == "changed" and key in FILE_FIELDS)
            if not ok:
                unexpected.append(f"{golden}: {kind} {path}")
    for (kind, key), n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"{n:6} {kind} {key}")
    for line in unexpected:
        print(f"unexpected: {line}")
    sys.exit(1 if unexpected else 0)


if __name__ == "__main__":
    main()
