#!/usr/bin/env python3
"""Reading lengths of six behaviours: the reference against the smallest published
implementation of the same rules (docs/ARCHITECTURE.md "Reading lengths").

A length is the count of code lines: not blank, not a comment (`//`, `/*`, `*`), not an
import (`use …;`, `import …`), and in Rust nothing from `#[cfg(test)]` on. A published
function is taken from its first line to the line where its braces balance.

usage: scripts/reading_lengths.py [PI_MONO_DIST OMP_SRC]
(defaults: the adapters' node_modules, after `npm ci` in conformance/adapters/pi-mono and
conformance/adapters/omp)."""
import os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADAPTERS = os.path.join(ROOT, "conformance", "adapters")
PI = sys.argv[1] if len(sys.argv) > 2 else os.path.join(
    ADAPTERS, "pi-mono/node_modules/@mariozechner/pi-coding-agent/dist")
OMP = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    ADAPTERS, "omp/node_modules/@oh-my-pi/pi-coding-agent/src")


def code(lines):
    n, in_block = 0, False
    for line in lines:
        s = line.strip()
        if in_block:
            in_block = "*/" not in s
            continue
        if s.startswith("/*"):
            in_block = "*/" not in s
            continue
        if not s or s.startswith(("//", "*")) or re.match(r"(pub(\(crate\))? )?use |import ", s):
            continue
        n += 1
    return n


def rust(*files):
    total = 0
    for f in files:
        text = open(os.path.join(ROOT, "reference/src", f), encoding="utf-8").read()
        total += code(text.split("#[cfg(test)]")[0].splitlines())
    return total


def rust_fns(file, *starts):
    """Items of a reference file, each from its first line to where its braces balance."""
    return blocks(os.path.join(ROOT, "reference/src", file), starts)


def js(path, *starts):
    """Functions of a published file; a start is a regex, or (regex, first line to look from)."""
    return blocks(path, starts)


def blocks(path, starts):
    lines = open(path, encoding="utf-8").read().splitlines()
    total = 0
    for start in starts:
        start, after = start if isinstance(start, tuple) else (start, 0)
        at = next(i for i, l in enumerate(lines) if i >= after and re.search(start, l))
        depth, seen, end = 0, False, at
        for end in range(at, len(lines)):
            depth += lines[end].count("{") - lines[end].count("}")
            seen = seen or "{" in lines[end]
            if seen and depth <= 0:
                break
        total += code(lines[at:end + 1])
    return total


def context(arm, settings):
    """context/ with only `arm` of Rules::for_profile and only `settings`'s function."""
    shared = rust("context/mod.rs") - rust_fns("context/mod.rs", r"pub fn for_profile")
    rules = rust_fns("context/mod.rs", r"pub fn for_profile") - sum(
        rust_fns("context/mod.rs", rf"Profile::{other} => Rules {{")
        for other in ("Pi", "Omp", "Operator") if other != arm)
    own = rust_fns("context/settings.rs", rf"^pub fn {settings}\(")
    return shared + rules + own + 1  # + the Settings type


sm = os.path.join(PI, "core/session-manager.js")
cp = os.path.join(PI, "core/compaction/compaction.js")
ut = os.path.join(PI, "core/compaction/utils.js")
msgs = os.path.join(PI, "core/messages.js")
omp_sm = os.path.join(OMP, "session/session-manager.ts")
rows = [
    ("getTree", rust("tree/nodes.rs"), "pi-mono", js(sm, r"^    getTree\(\) \{")),
    ("migrations", rust("migrate.rs"), "pi-mono",
     js(sm, r"^function migrateV1ToV2", r"^function migrateV2ToV3",
        r"^function migrateToCurrentVersion", r"^export function migrateSessionEntries")),
    # The shared code with one profile's rules: Rules::for_profile's other arms and the
    # other profiles' settings functions left out.
    ("buildSessionContext, pi", context("Pi", "pi"), "pi-mono",
     js(sm, r"^export function buildSessionContext")
     + js(msgs, r"^export function createBranchSummaryMessage",
          r"^export function createCompactionSummaryMessage", r"^export function createCustomMessage")),
    ("buildSessionContext, omp", context("Omp", "omp"), "omp",
     js(omp_sm, r"^export function buildSessionContext")),
    ("persistence (deferred write, append, latch, atomic rewrite)",
     rust("session/write.rs")
     + rust_fns("storage/mod.rs", r"^struct Latch", r"^impl Latch", r"^struct FileWriter",
                r"^impl Writer for FileWriter", r"    fn write_text\(&mut self", r"    fn open_writer\(&mut self"),
     "omp",
     js(omp_sm, r"^class NdjsonFileWriter", r"^\t#recordPersistError", r"^\t#queuePersistTask",
        r"^\t#ensurePersistWriter", r"^\tasync #closePersistWriterInternal",
        r"^\tasync #closePersistWriter\(", r"^\tasync #writeEntriesAtomically",
        r"^\tasync #rewriteFile", (r"^\tasync flush\(\)", 1800),
        r"^\t_persist\(")),
    ("listing (list, listAll, findMostRecentSession)", rust("listing.rs"), "pi-mono",
     js(sm, r"^function isValidSessionFile", r"^export function findMostRecentSession",
        r"^function isMessageWithContent", r"^function extractTextContent",
        r"^function getLastActivityTime", r"^function getSessionModifiedDate",
        r"^async function buildSessionInfo", r"^async function listSessionsFromDir",
        r"^    static async list\(", r"^    static async listAll\(")),
    ("findCutPoint/prepareCompaction", rust("compaction/cut.rs", "compaction/prepare.rs"), "pi-mono",
     js(cp, r"^function extractFileOperations", r"^function findValidCutPoints",
        r"^export function findTurnStartIndex", r"^export function findCutPoint",
        r"^export function prepareCompaction")
     + js(ut, r"^export function createFileOps", r"^export function extractFileOpsFromMessage",
          r"^export function computeFileLists")),
]
print("| behaviour | reference | smallest published | ratio |")
print("| --- | ---: | ---: | ---: |")
for name, ours, who, theirs in rows:
    print(f"| {name} | {ours} | {who} {theirs} | {ours / theirs:.1f}× |")
