#!/usr/bin/env python3
"""Check docs/spec against the corpus (stdlib only).

Reads the clause headings (`### area.N Title`) of docs/spec/*.md, the map
docs/spec/case-clauses.json (case id, 4 digits -> clause ids) and every
corpus/cases/*/*/case.json, and reports:
  - cases without clauses (missing from the map, or an empty list);
  - map keys that name no case;
  - unknown clause ids (cited by a case, or named in a clause's text);
  - duplicate clause ids;
  - clauses no case cites and that carry no `Not observable:` line;
  - clauses without the `<!-- generated: cases -->` marker.
Exit status 1 when anything is reported.
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, "docs", "spec")
HEADING = re.compile(r"^### ([a-z]+\.[0-9]+) \S")
MENTION = re.compile(r"`([a-z]+\.[0-9]+)`")
MARKER = "<!-- generated: cases -->"


def clauses():
    """{id: {"file", "line", "body"}} and a list of problems."""
    found, problems = {}, []
    for path in sorted(glob.glob(os.path.join(SPEC, "*.md"))):
        name = os.path.relpath(path, ROOT)
        current, fenced = None, False
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.startswith("```"):
                    fenced = not fenced
                m = None if fenced else HEADING.match(line)
                if m:
                    cid = m.group(1)
                    if cid in found:
                        problems.append(f"{name}:{n}: duplicate clause id {cid}")
                    current = {"file": name, "line": n, "body": []}
                    found[cid] = current
                elif line.startswith("#") and not fenced:
                    current = None
                elif current is not None:
                    current["body"].append(line)
    return found, problems


def cases():
    """{4-digit id: case path}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "corpus", "cases", "*", "*", "case.json"))):
        with open(path, encoding="utf-8") as f:
            case = json.load(f)
        out["%04d" % case["id"]] = os.path.relpath(os.path.dirname(path), os.path.join(ROOT, "corpus", "cases"))
    return out


def main():
    spec, problems = clauses()
    corpus = cases()
    with open(os.path.join(SPEC, "case-clauses.json"), encoding="utf-8") as f:
        mapping = json.load(f)

    cited = set()
    for cid, where in sorted(corpus.items()):
        ids = mapping.get(cid)
        if not ids:
            problems.append(f"case {cid} ({where}) cites no clause")
            continue
        for clause in ids:
            if clause not in spec:
                problems.append(f"case {cid} ({where}) cites unknown clause {clause}")
            cited.add(clause)
    for cid in sorted(set(mapping) - set(corpus)):
        problems.append(f"case-clauses.json: {cid} names no case")

    for clause, info in sorted(spec.items(), key=lambda kv: (kv[0].split(".")[0], int(kv[0].split(".")[1]))):
        body = "".join(info["body"])
        where = f"{info['file']}:{info['line']}"
        if MARKER not in body:
            problems.append(f"{where}: {clause} has no '{MARKER}' line")
        observable = not any(l.startswith("Not observable:") for l in info["body"])
        if clause not in cited and observable:
            problems.append(f"{where}: {clause} is cited by no case and says nothing is observable")
        for other in MENTION.findall(body):
            area = other.split(".")[0]
            if other not in spec and os.path.exists(os.path.join(SPEC, area + ".md")):
                problems.append(f"{where}: {clause} refers to unknown clause {other}")

    for p in problems:
        print(p)
    areas = {}
    for clause in spec:
        areas[clause.split(".")[0]] = areas.get(clause.split(".")[0], 0) + 1
    summary = ", ".join(f"{a} {n}" for a, n in sorted(areas.items()))
    print(f"{len(spec)} clauses ({summary}); {len(corpus)} cases, "
          f"{sum(1 for c in corpus if mapping.get(c))} mapped; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
