#!/usr/bin/env python3
"""Example session-conformance adapter: pi's session format in pure Python (stdlib only).

Speaks conformance/PROTOCOL.md (JSON lines on stdin and stdout) and does what pi-mono does
for `load` (lenient parse, migrations, rewrite), `context` (buildSessionContext) and `tree`
(getTree, flattened). `apply` and `persist` are not implemented: hello omits them and
requests for them get {"unsupported": true}. Where pi-mono loses data, crashes or hangs,
this file does what the corpus reference does instead, and a comment says so.

The `operator` profile (document 003) lives in operator_dialect.py, written from that
document alone; the runner's hello says which profile a run is for.

Usage: adapter.py [--one-shot]     (persistent mode by default)
"""

import json
import math
import os
import re
import sys
import tempfile
import uuid
from datetime import datetime, timedelta, timezone

import operator_dialect

HELLO = {"type": "hello", "implementation": "python-example", "version": "0.1.0", "profile": "pi",
         "operations": ["load", "context", "tree"], "capabilities": []}

# A key that is absent: JavaScript's `undefined`, which JSON.stringify omits.
UNDEFINED = object()


# ---- JavaScript semantics the format depends on ------------------------------

# What String.prototype.trim() removes (str.strip() keeps U+FEFF, strips U+001C..U+001F).
JS_WHITESPACE = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                 "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")

def js_truthy(value):
    """JavaScript truthiness of a JSON value ([] and {} are truthy there)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value != 0  # JSON has no NaN
    return value not in (None, False, "", UNDEFINED)

JS_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?Infinity", re.ASCII)

def js_version(header):
    """`Number(header.version ?? 1)`; NaN (which compares false) when it is no number."""
    value = header.get("version")
    if value is None:  # absent or null
        return 1.0
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):  # Number("2") is 2, Number(" ") is 0, Number("v2") is NaN
        text = value.strip(JS_WHITESPACE)
        return 0.0 if text == "" else float(text) if JS_DECIMAL.fullmatch(text) else math.nan
    return math.nan  # arrays and objects (as the reference reads them)

ISO_TIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)"                        # date (alone it means UTC midnight)
    r"(?:T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?"    # time, optional seconds and fraction
    r"(Z|[+-]\d\d:\d\d)?)?", re.ASCII)              # zone (none: read as UTC here)

def js_time_ms(value):
    """`new Date(value).getTime()` for the ISO forms: epoch ms, or None for NaN."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value) if math.isfinite(value) and value == int(value) else None
    if not isinstance(value, str):
        return None
    m = ISO_TIME.fullmatch(value)
    if not m:
        return None
    *fields, fraction, zone = m.groups()
    micros = int((fraction or "0")[:3].ljust(3, "0")) * 1000  # milliseconds; more digits are cut
    try:
        when = datetime(*(int(f or 0) for f in fields), micros, tzinfo=timezone.utc)
    except ValueError:  # month 13, 31 February, 25:00 (JavaScript's 24:00 is not handled)
        return None
    if zone and zone != "Z":
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        when -= offset if zone[0] == "+" else -offset
    return (when - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)

def reject_constant(name):
    raise ValueError(f"{name} is not JSON")  # Python accepts NaN/Infinity; JSON.parse does not

def finite_or_null(text):  # JSON.parse reads 1e400 as Infinity, which JSON.stringify writes as null
    return value if math.isfinite(value := float(text)) else None

JSON_PARSE = json.JSONDecoder(parse_constant=reject_constant, parse_float=finite_or_null).decode

def to_json(value, **kwargs):  # JSON.stringify; allow_nan=False raises rather than write bad JSON
    return json.dumps(value, separators=(",", ":"), allow_nan=False, **kwargs)


# ---- load: parse, migrate, rewrite  (pi-mono §2, §3, §6.12) ------------------

def is_header(value):
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)

def is_entry(value):  # a second {"type":"session"} line is kept, but is no tree node, leaf or parent
    return value.get("type") != "session"

def parse_session(text):
    """pi-mono's parseSessionEntries + loadEntriesFromFile's header check.

    Returns (header, entries, ordinals, skipped). ordinals[i] is entry i's position among
    all parsed values, header = 0 (what v1 firstKeptEntryIndex counts); skipped: a
    non-blank line was dropped."""
    values, skipped = [], False
    for line in text.strip(JS_WHITESPACE).split("\n"):  # trim (drops a BOM), split on \n only
        if line.strip(JS_WHITESPACE) == "":
            continue  # blank, whitespace-only, or "\r" of a CRLF blank line
        try:  # exactly one JSON value; "\r" at the end is JSON whitespace
            values.append(JSON_PARSE(line))
        except (ValueError, RecursionError):
            skipped = True  # torn write, garbage, two objects on one line
    if not values or not is_header(values[0]):
        return None, [], [], skipped  # not a session (pi-mono: no entries)
    # Values that are not objects are skipped (pi-mono keeps them, then crashes on `null`).
    ordinals = [i for i, value in enumerate(values) if i > 0 and isinstance(value, dict)]
    skipped = skipped or len(ordinals) < len(values) - 1
    return values[0], [values[i] for i in ordinals], ordinals, skipped

def migrate_v1_to_v2(entries, ordinals):
    """New ids, a linear parent chain, firstKeptEntryIndex -> firstKeptEntryId."""
    chain = [i for i, entry in enumerate(entries) if is_entry(entry)]
    new_ids = set()  # every id is made first (see firstKeptEntryIndex below)
    while len(new_ids) < len(chain):  # 8 lowercase hex digits, unique in the session
        new_ids.add(uuid.uuid4().hex[:8])
    new_id = dict(zip(chain, new_ids))  # entry index -> its new id
    by_ordinal = {ordinal: i for i, ordinal in enumerate(ordinals)}
    parent = None
    for i in chain:
        entry = entries[i]
        entry["id"], entry["parentId"] = new_id[i], parent  # existing ids are overwritten, as in pi-mono
        parent = new_id[i]
        index = entry.get("firstKeptEntryIndex")
        if entry.get("type") == "compaction" and isinstance(index, (int, float)) and not isinstance(index, bool):
            # Index 0 is the header, so it names no entry. pi-mono loses an index pointing
            # forward (no id yet); ours were all made first, so it resolves (as the reference).
            whole = math.isfinite(index) and index == int(index)
            target = by_ordinal.get(int(index)) if whole else None
            if target in new_id:
                entry["firstKeptEntryId"] = new_id[target]
            del entry["firstKeptEntryIndex"]

def migrate_v2_to_v3(entries):
    """message.role "hookMessage" becomes "custom"; nothing else changes."""
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"

def migrate(header, entries, ordinals):
    """Runs the steps `header.version` needs; returns whether any ran."""
    version = js_version(header)
    if version < 2:
        migrate_v1_to_v2(entries, ordinals)
    if version < 3:
        migrate_v2_to_v3(entries)
        for line in [header, *(entry for entry in entries if not is_entry(entry))]:
            line["version"] = 3  # every header line; kept in place, or appended at the end
        return True
    return False

def write_atomically(path, data):
    """Temp file in the same directory, fsync, rename over the target."""
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):  # only when something failed
            os.unlink(temp)

def iso_now():  # 2026-11-25T21:12:20.603Z
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")

def load_session(path, case_dir):
    """SessionManager.open(path): returns (header, entries)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        # A new session, in memory only (pi writes nothing before the first assistant message).
        header = {"type": "session", "version": 3, "id": str(uuid.uuid4()),
                  "timestamp": iso_now(), "cwd": case_dir}
        return header, []
    text = data.decode("utf-8", errors="replace")  # invalid bytes become U+FFFD, as in Node
    header, entries, ordinals, skipped = parse_session(text)
    if header is None:
        # Not a session. pi-mono truncates the file to a fresh header (data loss); we leave it.
        return None, []
    if migrate(header, entries, ordinals):
        if skipped or text.encode("utf-8") != data:  # dropped lines or invalid UTF-8
            # The rewrite loses those: keep the original bytes beside it (as the reference).
            stamp = iso_now().replace(":", "-").replace(".", "-")  # as in session file names
            write_atomically(f"{path}.pre-migration-{stamp}", data)
        lines = [to_json(value, ensure_ascii=False) + "\n" for value in [header, *entries]]
        # "backslashreplace" writes a lone surrogate as \udXXX, as JSON.stringify does.
        write_atomically(path, "".join(lines).encode("utf-8", errors="backslashreplace"))
    return header, entries

def session_leaf(entries):
    """The leaf after load: the last entry with an id (pi-mono: the last entry's id, maybe none)."""
    return next((e["id"] for e in reversed(entries) if is_entry(e) and isinstance(e.get("id"), str)), None)


# ---- context: buildSessionContext(entries, leafId)  (pi-mono §5) -------------

def parent_of(entry):
    parent = entry.get("parentId")
    return parent if isinstance(parent, str) and parent != "" else None

def index_by_id(entries):
    """id -> position in `entries`; a later duplicate wins (Map.set)."""
    return {e["id"]: i for i, e in enumerate(entries) if is_entry(e) and isinstance(e.get("id"), str)}

def path_to_root(entries, by_id, start):
    """Root -> start, following parentId; stops at a missing or repeated parent."""
    path, seen = [start], {start}
    parent = by_id.get(parent_of(entries[start]))
    while parent is not None and parent not in seen:  # pi-mono loops forever on a cycle
        path.append(parent)
        seen.add(parent)
        parent = by_id.get(parent_of(entries[parent]))
    return [entries[i] for i in reversed(path)]

def js_object(**fields):  # an object literal; JSON.stringify omits its undefined fields
    return {key: value for key, value in fields.items() if value is not UNDEFINED}

def to_message(entry):
    """One path entry as a context message, or None (pi-mono §5.5)."""
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message")  # verbatim; a missing one (pi-mono: TypeError) is skipped
    if kind == "custom_message":
        return js_object(role="custom", customType=entry.get("customType", UNDEFINED),
                         content=entry.get("content", UNDEFINED), display=entry.get("display", UNDEFINED),
                         details=entry.get("details", UNDEFINED), timestamp=js_time_ms(entry.get("timestamp")))
    if kind == "branch_summary" and js_truthy(entry.get("summary", UNDEFINED)):
        return js_object(role="branchSummary", summary=entry["summary"],
                         fromId=entry.get("fromId", UNDEFINED), timestamp=js_time_ms(entry.get("timestamp")))
    return None  # settings, labels, custom, session_info, unknown types, other compactions

def build_context(entries, leaf_id):
    """leaf_id: None -> the empty context; a known id -> that entry; anything else -> the last entry."""
    if leaf_id is None or not entries:
        return {"messages": [], "thinkingLevel": "off", "model": None}
    by_id = index_by_id(entries)
    start = by_id.get(leaf_id) if isinstance(leaf_id, str) and leaf_id != "" else None
    path = path_to_root(entries, by_id, len(entries) - 1 if start is None else start)

    # Settings: a forward scan of the whole path; the last change wins.
    thinking, model = "off", None
    for entry in path:
        kind, message = entry.get("type"), entry.get("message")
        if kind == "thinking_level_change":
            thinking = entry.get("thinkingLevel", UNDEFINED)  # verbatim; absent drops the key
        elif kind == "model_change":
            model = js_object(provider=entry.get("provider", UNDEFINED), modelId=entry.get("modelId", UNDEFINED))
        elif kind == "message" and isinstance(message, dict) and message.get("role") == "assistant":
            model = js_object(provider=message.get("provider", UNDEFINED), modelId=message.get("model", UNDEFINED))

    # Messages: with a compaction on the path, its summary, then the kept
    # stretch before it (from firstKeptEntryId), then everything after it.
    compactions = [i for i, entry in enumerate(path) if entry.get("type") == "compaction"]
    if compactions:
        c = compactions[-1]
        kept_id = path[c].get("firstKeptEntryId")
        first = next((i for i in range(c) if isinstance(kept_id, str) and path[i].get("id") == kept_id), c)
        messages = [js_object(role="compactionSummary", summary=path[c].get("summary", UNDEFINED),
                              tokensBefore=path[c].get("tokensBefore", UNDEFINED),
                              timestamp=js_time_ms(path[c].get("timestamp")))]
        stretch = path[first:c] + path[c + 1:]
    else:
        messages, stretch = [], path
    messages += [m for m in map(to_message, stretch) if m is not None]
    return js_object(messages=messages, thinkingLevel=thinking, model=model)


# ---- tree: getTree() flattened in pre-order  (pi-mono §4.7, §4.9) ------------

def current_labels(entries):
    """Label entries replayed in file order: truthy sets, anything else clears."""
    labels = {}
    for entry in entries:
        target, label = entry.get("targetId"), entry.get("label")
        if entry.get("type") != "label" or not isinstance(target, str):
            continue
        if js_truthy(label):
            labels[target] = label  # verbatim: not trimmed, and kept as it is when not a string
        else:
            labels.pop(target, None)
    return labels

def cut_cycles(parent):
    """Where a parent chain returns to itself, the node that closes it becomes a root."""
    state = [None] * len(parent)  # None: unvisited, then "walking", then "done"
    for start in range(len(parent)):
        walked, node = [], start
        while node is not None and state[node] != "done":
            if state[node] == "walking":
                parent[node] = None  # the chain came back here: cut it
                break
            state[node] = "walking"
            walked.append(node)
            node = parent[node]
        for n in walked:
            state[n] = "done"

def build_tree(entries):
    by_id = index_by_id(entries)
    # One node per distinct id, in first-appearance order; the last entry with that id wins.
    ids, nodes = list(by_id), [entries[i] for i in by_id.values()]
    position = {node_id: n for n, node_id in enumerate(ids)}
    # Roots: parentId null or missing, a parent that does not exist, or itself.
    parent = [position.get(parent_of(node)) for node in nodes]
    parent = [None if p == n else p for n, p in enumerate(parent)]
    cut_cycles(parent)

    roots, children = [], [[] for _ in nodes]
    for n, p in enumerate(parent):
        (roots if p is None else children[p]).append(n)

    def by_time(n):  # an unparseable timestamp sorts first
        ms = js_time_ms(nodes[n].get("timestamp"))
        return -math.inf if ms is None else ms
    for child_list in children:
        if len(child_list) > 1:
            child_list.sort(key=by_time)  # stable: equal times keep file order

    labels, out, stack = current_labels(entries), [], list(reversed(roots))
    while stack:  # pre-order without recursion: a stack, children pushed reversed
        n = stack.pop()
        node = nodes[n]  # parentId and type as written (null when absent)
        out.append({"id": ids[n], "parentId": node.get("parentId"), "type": node.get("type"),
                    "label": labels.get(ids[n]), "children": [ids[c] for c in children[n]]})
        stack.extend(reversed(children[n]))
    return {"nodes": out}


# ---- Operations and the protocol loop ----------------------------------------

def run_operation(op, case_dir, args):
    header, entries = load_session(args["file"], case_dir)
    if op == "load":
        return {"header": header, "entries": entries, "leafId": session_leaf(entries)}
    if op == "context":  # leafId absent: the session's leaf; present (null too): as given
        return build_context(entries, args["leafId"] if "leafId" in args else session_leaf(entries))
    return build_tree(entries)

def hello_for(profile):
    """The hello for the runner's profile: pi (this file) or operator (operator_dialect.py)."""
    if profile == "operator":
        return {**HELLO, "profile": "operator", "operations": operator_dialect.OPERATIONS}
    return HELLO

def handle(request):
    """One request -> one response line. Never raises."""
    case, op = request.get("case"), request.get("op")
    operator = request.get("profile") == "operator"
    try:
        if op not in hello_for(request.get("profile"))["operations"]:
            return to_json({"type": "response", "case": case, "unsupported": True})
        os.chdir(case_dir := request["dir"])  # args.file is relative to it (read ~? set HOME=dir/home)
        run = operator_dialect.run_operation if operator else run_operation
        ok = run(op, case_dir, request.get("args") or {})
        return to_json({"type": "response", "case": case, "ok": ok})
    except operator_dialect.SessionError as err:
        error = {"kind": err.kind, "message": str(err)}
        return to_json({"type": "response", "case": case, "error": error})
    except Exception as err:  # noqa: BLE001 - every failure becomes a response
        print(f"python-example: case {case}: {type(err).__name__}: {err}", file=sys.stderr)
        error = {"kind": "exception", "message": f"{type(err).__name__}: {err}"}
        return to_json({"type": "response", "case": case, "error": error})

def send(line):
    sys.stdout.buffer.write(line.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()

def respond_to(line):
    """Answers one protocol line; returns False on bye."""
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if not isinstance(message, dict):  # answer it, in case it was meant as a request
        send(to_json({"type": "response", "case": None, "error": {"kind": "exception", "message": "unreadable message"}}))
    elif message.get("type") == "hello":
        send(to_json(hello_for(message.get("profile"))))
    elif message.get("type") == "bye":
        return False
    elif message.get("type") == "request":
        send(handle(message))
    return True  # anything else is ignored

def main(argv):
    if "--one-shot" in argv:  # one request, stdin closed, one response, exit
        lines = [t for t in sys.stdin.buffer.read().decode("utf-8", "replace").split("\n") if t.strip()]
        respond_to(lines[0] if lines else "")
        return 0
    for raw in sys.stdin.buffer:  # persistent: hello, requests ..., bye
        line = raw.decode("utf-8", "replace").strip()
        if line and not respond_to(line):
            break
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
