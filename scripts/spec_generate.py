#!/usr/bin/env python3
"""Writes the generated part of each clause of docs/spec/: its cases, and per real
implementation the divergences its list gives for them (issue #39 item 1).

Each clause holds a block between `<!-- generated: cases -->` and `<!-- end generated -->`
(the end marker is added the first time). The cases come from each case.json's `clauses`;
the divergences from conformance/adapters/*/expected-divergences* (by id, by `group/name`
glob, or by `tag:` glob; the reason up to its ` ## ` signature).

Usage: scripts/spec_generate.py [--check]
  --check   write nothing; exit 1 when a file would change (CI runs this)
"""
import fnmatch
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "spec"
CASES = ROOT / "corpus" / "cases"
ADAPTERS = ROOT / "conformance" / "adapters"
START = "<!-- generated: cases -->"
END = "<!-- end generated -->"
HEADING = re.compile(r"^### ([a-z]+\.\d+)\b")
MAX_REASON = 160

# Adapter folders and their lists, as the README's matrix names the implementations.
LISTS = [
    ("pi-mono 0.73.1", "pi-mono/expected-divergences"),
    ("pi 1.5.2", "pi-1.5/expected-divergences"),
    ("pi 1.6.0", "pi-1.6/expected-divergences"),
    ("omp 13.19.0", "omp/expected-divergences"),
    ("omp 18.2.3", "omp-18/expected-divergences"),
    ("pi_agent_rust 0.8.0", "pi-agent-rust/expected-divergences"),
    ("the Python example (pi)", "python-example/expected-divergences.pi"),
    ("the Python example (operator)", "python-example/expected-divergences"),
]


def load_cases():
    """Case id (4 digits) -> (group/name, tags, clauses)."""
    cases = {}
    for path in sorted(CASES.glob("*/*/case.json")):
        case = json.loads(path.read_text())
        case_id = "%04d" % case["id"] if isinstance(case["id"], int) else str(case["id"])
        name = "%s/%s" % (path.parent.parent.name, path.parent.name)
        cases[case_id] = (name, case.get("tags", []), case.get("clauses", []))
    return cases


def load_list(path):
    """The list's entries: (selector, reason)."""
    entries = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        selector, _, rest = line.partition(" ")
        reason = rest.split(" ## ")[0].strip()
        entries.append((selector, reason))
    return entries


def excuse(entries, case_id, name, tags):
    """The reason a list gives for a case, or None."""
    for selector, reason in entries:
        if selector == case_id:
            return reason
        if selector.startswith("tag:"):
            if any(fnmatch.fnmatchcase(t, selector[4:]) for t in tags):
                return reason
        elif selector.startswith("entry-type:"):
            continue
        elif "/" in selector and fnmatch.fnmatchcase(name, selector):
            return reason
    return None


def short(text):
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def block(clause, cases, lists):
    """The generated Markdown of one clause."""
    ids = sorted(i for i, (_, _, clauses) in cases.items() if clause in clauses)
    if not ids:
        return "Cases: none (the clause says why it cannot be observed).\n"
    out = ["Cases: " + ", ".join("%s `%s`" % (i, cases[i][0]) for i in ids) + ".\n"]
    lines = []
    for label, entries in lists:
        by_reason = {}
        for i in ids:
            name, tags, _ = cases[i]
            reason = excuse(entries, i, name, tags)
            if reason is not None:
                by_reason.setdefault(reason, []).append(i)
        for reason, listed in by_reason.items():
            lines.append("- %s, %s: %s\n" % (label, ", ".join(listed), short(reason)))
    out.append("\nListed divergences:\n\n" + "".join(lines) if lines else "\nNo implementation lists a divergence for these cases.\n")
    return "".join(out)


def render(text, cases, lists):
    out, lines, i, clause = [], text.splitlines(keepends=True), 0, None
    while i < len(lines):
        line = lines[i]
        found = HEADING.match(line)
        if found:
            clause = found.group(1)
        out.append(line)
        i += 1
        if line.strip() == START and clause:
            # Skip an earlier generated block up to its end marker.
            j = i
            while j < len(lines) and lines[j].strip() != END and not HEADING.match(lines[j]):
                j += 1
            if j < len(lines) and lines[j].strip() == END:
                i = j + 1
            out.append(block(clause, cases, lists))
            out.append(END + "\n")
    return "".join(out)


def main(argv):
    check = "--check" in argv
    cases = load_cases()
    lists = [(label, load_list(ADAPTERS / rel)) for label, rel in LISTS if (ADAPTERS / rel).is_file()]
    stale = []
    for path in sorted(SPEC.glob("*.md")):
        text = path.read_text()
        new = render(text, cases, lists)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not check:
                path.write_text(new)
    if check and stale:
        print("spec_generate: stale generated sections in %s; run scripts/spec_generate.py" % ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    print("spec_generate: %s" % ("%d file(s) %s" % (len(stale), "stale" if check else "written") if stale else "all current"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
