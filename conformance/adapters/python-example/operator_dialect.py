"""The `operator` profile: document 003's session format, written from the document alone.

Document 003 (shared/seeds/003_e7576d93202cc0ce.txt) describes a Python port: a
`session_header` line, snake_case entries (`parent_id`, `first_kept_entry_id`,
`target_id`), durable `leaf` navigation entries and lazy persistence. Its sentences are
quoted beside the code that follows them. Where 003 says nothing, this file does what the
other profiles do and says "003 is silent".

Operations: load, context, tree and apply (PROTOCOL.md; apply's calls are 003's method
names: append_message, branch, branch_with_summary, create_branched_session, ...).
"""

import json
import os
import secrets
import uuid
from datetime import datetime, timezone

HEADER_TYPE = "session_header"


class SessionError(Exception):
    """An error a call reports as {"error": {"kind", "message"}}."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def now_iso():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def file_time(iso):
    """`2024-01-15T10-30-00-000000` (003 "Session directory layout"), from an ISO time."""
    return iso[:19].replace(":", "-") + "-" + iso[20:23] + "000"


def js_ms(value):
    """An entry's timestamp in epoch milliseconds, None when it is not a valid time."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value) if value == value and abs(value) <= 8.64e15 and value == int(value) else None
    if isinstance(value, str):
        try:
            when = datetime.strptime(value.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
        except ValueError:
            try:
                when = datetime.strptime(value.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z")
            except ValueError:
                return None
        return int(when.timestamp() * 1000 // 1) if when.microsecond % 1000 == 0 else int(when.timestamp() * 1000)
    return None


# ---- Storage format: the header line, then one entry per line -----------------

def parse(text):
    """(header or None, entries). Lines that are blank, not JSON or not objects are
    skipped (003: loading is lenient; 003 is silent on how: as pi, one JSON value a line)."""
    header, entries = None, []
    if text.startswith("\ufeff"):
        text = text[1:]
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if header is None:
            if not (isinstance(value, dict) and value.get("type") == HEADER_TYPE and isinstance(value.get("id"), str)):
                return None, []
            header = value
        elif isinstance(value, dict):
            entries.append(value)
    return header, entries


def is_node(entry):
    """An entry that takes part in the index: it has a string id and is not a second header."""
    return isinstance(entry.get("id"), str) and entry.get("type") != HEADER_TYPE


def parent_of(entry):
    parent = entry.get("parent_id")
    return parent if isinstance(parent, str) and parent else None


class Session:
    """003's SessionManager: entries, the index (by_id, leaf_id, labels_by_id) and the file."""

    def __init__(self, header, entries, path, flushed_count):
        self.header, self.entries, self.path = header, [], path
        self.by_id, self.leaf_id, self.labels = {}, None, {}
        self.label_seq = 0
        self.on_disk = flushed_count  # None: the header is not on disk yet
        self.needs_newline = False
        self.persist_error = None  # the first write error, latched
        for entry in entries:
            self._index(entry)
        self.has_assistant = any(is_assistant(e) for e in self.entries)

    # In-memory index: "_build_index() walks all entries"; "leaf_id is updated on every
    # _append_entry() call. LeafEntry records are special: they update leaf_id to
    # entry.target_id".
    def _index(self, entry):
        self.entries.append(entry)
        if is_node(entry):
            self.by_id[entry["id"]] = entry
            self.leaf_id = entry["id"]
        if entry.get("type") == "leaf":
            target = entry.get("target_id")
            self.leaf_id = target if isinstance(target, str) else None
        if entry.get("type") == "label" and isinstance(entry.get("target_id"), str):
            label = entry.get("label")
            if label not in (None, False, "", 0):
                self.label_seq += 1
                text = label if isinstance(label, str) else json.dumps(label, separators=(",", ":"))
                self.labels[entry["target_id"]] = (self.label_seq, text, entry.get("timestamp"))
            else:
                self.labels.pop(entry["target_id"], None)

    # get_branch: "following parent_id links backward and reversing"; "if not entry: break".
    def get_branch(self, from_id=None):
        path, seen = [], set()
        cursor = from_id if from_id is not None else self.leaf_id
        while cursor is not None and cursor not in seen:
            entry = self.by_id.get(cursor)
            if entry is None:
                break
            seen.add(cursor)
            path.append(entry)
            cursor = parent_of(entry)
        path.reverse()
        return path

    # ---- appending (Entry types; Lazy persistence) ----
    def append(self, kind, fields):
        entry = {"type": kind, "id": self._new_id(), "parent_id": self.leaf_id, "timestamp": now_iso()}
        entry.update({k: v for k, v in fields.items() if v is not UNSET})
        self._index(entry)
        self.has_assistant = self.has_assistant or is_assistant(entry)
        self.persist()
        return entry["id"]

    def _new_id(self):
        while True:
            candidate = secrets.token_hex(4)
            if candidate not in self.by_id:
                return candidate

    # "The file is first written when the session accumulates at least one
    # AssistantMessage"; "Once flushed = True, new entries are appended one at a time".
    # 003 is silent on write errors; as pi and the reference, the first one is latched and
    # returned by every later append and by flush (PROTOCOL.md "Response": persistence).
    def persist(self):
        if self.path is None:
            return
        self.check_written()
        if not self.has_assistant:
            return
        try:
            if self.on_disk is None:
                self.write_all()
                return
            text = "\n" if self.needs_newline else ""
            text += "".join(dump(e) + "\n" for e in self.entries[self.on_disk:])
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text)
            self.on_disk, self.needs_newline = len(self.entries), False
        except OSError as err:
            self.persist_error = SessionError("persistence", f"{self.path}: write failed: {err}")
            raise self.persist_error from err

    def check_written(self):
        """Raises the latched write error, if there is one (`flush`)."""
        if self.persist_error is not None:
            raise self.persist_error

    def write_all(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write("".join(dump(v) + "\n" for v in [self.header, *self.entries]))
        self.on_disk, self.needs_newline = len(self.entries), False


UNSET = object()


def dump(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def is_assistant(entry):
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"


def new_header(cwd, parent=None):
    header = {"type": HEADER_TYPE, "id": str(uuid.uuid4()), "timestamp": now_iso(), "cwd": cwd}
    if parent is not None:
        header["parent_session"] = parent
    return header


def default_path(case_dir, header):
    """Session directory layout: `<YYYY-MM-DDTHH-MM-SS-ffffff>_<uuid>.jsonl`, flat."""
    return os.path.join(case_dir, "sessions", f"{file_time(header['timestamp'])}_{header['id']}.jsonl")


# ---- Factory methods ----

def create(case_dir, cwd):
    """SessionManager.create(cwd): nothing on disk until the first assistant message."""
    header = new_header(cwd)
    return Session(header, [], default_path(case_dir, header), None)


def in_memory(cwd):
    """SessionManager.in_memory(cwd) ("Factory methods"): a session without a file; every
    append is kept in memory and nothing is ever written."""
    return Session(new_header(cwd), [], None, None)


def open_session(path, case_dir):
    """SessionManager.open(path). A missing file is a new session at that path; a file
    without a readable session_header is kept as `.corrupt-<time>` and replaced by a new
    session, written at once (003 is silent on both: as pi)."""
    if not os.path.exists(path):
        return Session(new_header(case_dir), [], path, None)
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", "replace")
    header, entries = parse(text)
    if header is None:
        if text.strip():
            os.rename(path, f"{path}.corrupt-{corrupt_time()}")
        session = Session(new_header(case_dir), [], path, None)
        session.write_all()
        return session
    session = Session(header, entries, path, len(entries))
    session.needs_newline = bool(text) and not text.endswith("\n")
    return session


def corrupt_time():
    """The other profiles' file-name time, `YYYY-MM-DDTHH-MM-SS-sssZ`."""
    iso = now_iso()
    return iso[:19].replace(":", "-") + "-" + iso[20:23] + "Z"


def fork_from(source, target_cwd, case_dir, folder=None):
    """SessionManager.fork_from(source, target_cwd): "Copy a session file to a new location
    with a new ID"; the copy's header names the source path (003 is silent: as pi), and
    it is written at once."""
    try:
        with open(source, "rb") as f:
            header, entries = parse(f.read().decode("utf-8", "replace"))
    except OSError:
        header = None
    if header is None:
        raise SessionError("invalid_source", f"not a session: {source}")
    new = new_header(target_cwd, source)
    path = default_path(case_dir, new)
    if folder is not None:
        path = os.path.join(folder, os.path.basename(path))
    session = Session(new, entries, path, None)
    session.write_all()
    return session


# ---- Context reconstruction ----

def build_context(session, leaf):
    path = session.get_branch(leaf) if leaf is not None else []
    messages = []
    compaction = max((i for i, e in enumerate(path) if e.get("type") == "compaction"), default=None)
    if compaction is None:
        messages = [m for m in map(to_message, path) if m is not None]
    else:
        c = path[compaction]
        messages.append(synthetic(c, "compactionSummary", ["summary", "tokens_before"]))
        kept = c.get("first_kept_entry_id")
        start = next((i for i in range(compaction - 1, -1, -1) if path[i].get("id") == kept), None) if isinstance(kept, str) else None
        if start is not None:
            messages += [m for m in map(to_message, path[start:compaction]) if m is not None]
        messages += [m for m in map(to_message, path[compaction + 1:]) if m is not None]
    out = {"messages": messages}
    # Step 1: "Scan all entries for the most recent ThinkingLevelChangeEntry and
    # ModelChangeEntry". Defaults: thinking level "off" (003 is silent: as pi), model null.
    thinking, model = "off", None
    for entry in session.entries:
        if entry.get("type") == "thinking_level_change":
            thinking = entry.get("thinking_level", UNSET)
        elif entry.get("type") == "model_change":
            model = entry.get("model_id")
    if thinking is not UNSET:
        out["thinking_level"] = thinking
    out["model_id"] = model
    return out


def to_message(entry):
    """Step 3: "Append all MessageEntry and BranchEntry messages"."""
    if entry.get("type") == "message":
        return entry.get("message")
    if entry.get("type") == "branch" and entry.get("summary") not in (None, False, "", 0):
        return synthetic(entry, "branchSummary", ["summary", "from_id"])
    return None


def synthetic(entry, role, fields):
    message = {"role": role}
    message.update({f: entry[f] for f in fields if f in entry})
    message["timestamp"] = js_ms(entry.get("timestamp"))
    return message


# ---- get_tree ----

def build_tree(session):
    """get_tree() "as in the other profiles" (003 is silent on details: as pi): one node per
    id in first-appearance order, the last entry with an id wins; a parent that is missing
    or the node itself makes a root; where a parent chain returns to itself, the node
    that closes it becomes a root; children sorted by timestamp, stable."""
    ids, nodes = [], {}
    for entry in session.entries:
        if is_node(entry):
            if entry["id"] not in nodes:
                ids.append(entry["id"])
            nodes[entry["id"]] = entry
    parent = {i: parent_of(nodes[i]) for i in ids}
    parent = {i: (p if p in nodes and p != i else None) for i, p in parent.items()}
    done = set()
    for start in ids:
        walking, node = [], start
        while node is not None and node not in done:
            if node in walking:
                parent[node] = None
                break
            walking.append(node)
            node = parent[node]
        done.update(walking)
    roots, children = [], {i: [] for i in ids}
    for i in ids:
        (roots if parent[i] is None else children[parent[i]]).append(i)

    def order(i):
        ms = js_ms(nodes[i].get("timestamp"))
        return -(2 ** 63) if ms is None else ms
    out, stack = [], list(reversed(roots))
    while stack:
        i = stack.pop()
        kids = sorted(children[i], key=order)
        label = session.labels.get(i)
        out.append({"id": i, "parentId": nodes[i].get("parent_id"), "type": nodes[i].get("type"),
                    "label": label[1] if label else None, "children": kids})
        stack.extend(reversed(kids))
    return {"nodes": out}


# ---- apply ----

def substitute(value, results):
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("$result"), int):
            n = value["$result"]
            return results[n] if 0 <= n < len(results) else None
        return {k: substitute(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, results) for v in value]
    return value


def require(session, entry_id):
    if not isinstance(entry_id, str) or entry_id not in session.by_id:
        raise SessionError("not_found", f"entry {entry_id} not found")
    return entry_id


def create_branched_session(session, case_dir, leaf_id):
    """"Creates a new JSONL file containing only the entries on the path from root to
    leaf_id. The new session gets its own session_id and a parent_session back-link."
    Labels of the kept entries are carried as new label entries (003 is silent: as pi)."""
    path = [e for e in session.get_branch(leaf_id) if e.get("type") != "label"]
    if not path:
        raise SessionError("not_found", f"entry {leaf_id} not found")
    ids = {e["id"] for e in path}
    labels = sorted((v for k, v in session.labels.items() if k in ids), key=lambda v: v[0])
    targets = {v: k for k, v in session.labels.items()}
    header = new_header(session.header.get("cwd"), session.path)
    new = Session(header, path, default_path(case_dir, header) if session.path else None, None)
    for label in labels:
        entry = {"type": "label", "id": new._new_id(), "parent_id": new.leaf_id,
                 "timestamp": label[2], "target_id": targets[label], "label": label[1]}
        new._index(entry)
    if new.has_assistant:
        new.write_all()
    return new


def run_step(session, step, case_dir):
    """One call; returns (session, value)."""
    call = step.get("call")
    get = lambda name: step.get(name, UNSET)
    if call == "append_message":
        return session, session.append("message", {"message": step.get("message")})
    if call == "append_thinking_level_change":
        return session, session.append("thinking_level_change", {"thinking_level": step.get("thinking_level")})
    if call == "append_model_change":
        return session, session.append("model_change", {"provider": get("provider"), "model_id": step.get("model_id")})
    if call == "append_compaction":
        return session, session.append("compaction", {
            "summary": step.get("summary"), "first_kept_entry_id": step.get("first_kept_entry_id"),
            "tokens_before": step.get("tokens_before"), "details": get("details")})
    if call == "append_custom_entry":
        return session, session.append("custom_info", {"custom_type": step.get("custom_type"), "data": get("data")})
    if call == "append_custom_message_entry":
        return session, session.append("custom_message", {
            "custom_type": step.get("custom_type"), "content": step.get("content"),
            "display": step.get("display"), "details": get("details")})
    if call == "append_label_change":
        target = require(session, step.get("target_id"))
        return session, session.append("label", {"target_id": target, "label": get("label")})
    if call == "append_session_info":
        return session, session.append("session_info", {"name": str(step.get("name") or "").strip()})
    if call == "branch":
        # "leaf_entry = LeafEntry(parent_id=self.leaf_id, target_id=from_id)"; the id must
        # exist (003 is silent: as pi).
        target = require(session, step.get("id"))
        session.append("leaf", {"target_id": target})
        session.leaf_id = target
        return session, None
    if call == "reset_leaf":
        session.leaf_id = None
        return session, None
    if call == "branch_with_summary":
        # "Creates a BranchEntry at from_id"; from the root when from_id is null (as pi).
        from_id = step.get("from_id")
        session.leaf_id = require(session, from_id) if from_id is not None else None
        return session, session.append("branch", {
            "from_id": from_id if from_id is not None else "root", "summary": step.get("summary"),
            "details": get("details")})
    if call == "create_branched_session":
        new = create_branched_session(session, case_dir, step.get("leaf_id"))
        return new, new.path
    if call == "flush":
        session.check_written()
        return session, None
    raise SessionError("exception", f"unsupported call {call!r}")


def apply(case_dir, args):
    if isinstance(args.get("open"), str):
        session = open_session(os.path.join(case_dir, args["open"]), case_dir)
    elif args.get("inMemory") is True:
        session = in_memory(args.get("cwd") or case_dir)
    elif isinstance(args.get("fork_from"), str):
        session = fork_from(os.path.join(case_dir, args["fork_from"]), args.get("target_cwd", "/proj"), case_dir)
    else:
        session = create(case_dir, args.get("cwd") or case_dir)
    results = []
    for step in args.get("steps") or []:
        step = substitute(step, results)
        try:
            session, value = run_step(session, step, case_dir)
        except SessionError as err:
            value = {"error": {"kind": err.kind, "message": str(err)}}
        results.append(value)
    output = {"results": results, "leafId": session.leaf_id}
    if session.persist_error is not None:
        err = session.persist_error
        output["flushError"] = {"kind": err.kind, "message": str(err)}
    return output


# ---- Session directory layout: one flat folder ----
# "All sessions are stored flat in a single directory"; "list_sessions_from_dir() scans it
# and returns SessionInfo objects sorted by last modification time. The cwd recorded in
# each SessionHeader is how per-project filtering is done at list/load time."
# SessionInfo's fields (003 is silent): as pi's, with `modified` the file's time.

def iso_of_ms(ms):
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def message_text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b["text"] for b in content
                        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return None


def session_info(path):
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        mtime_ms = os.stat(path).st_mtime_ns // 1_000_000
    except OSError:
        return None
    objects = []
    for line in text.lstrip("\ufeff").split("\n"):
        try:
            value = json.loads(line) if line.strip() else None
        except ValueError:
            continue
        if isinstance(value, dict):
            objects.append(value)
    if not objects or objects[0].get("type") != HEADER_TYPE:
        return None
    header, info = objects[0], {"path": path}
    if isinstance(header.get("id"), str):
        info["id"] = header["id"]
    info["cwd"] = header.get("cwd") if isinstance(header.get("cwd"), str) else ""
    if "parent_session" in header:
        info["parentSessionPath"] = header["parent_session"]
    created = js_ms(header.get("timestamp")) if isinstance(header.get("timestamp"), str) else None
    info["created"] = iso_of_ms(created) if created is not None else None
    count, first, texts, name = 0, "", [], None
    for entry in objects[1:]:
        if entry.get("type") == "session_info":
            name = entry["name"].strip() if isinstance(entry.get("name"), str) else None
            name = name or None
        if entry.get("type") != "message":
            continue
        count += 1
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        text = message_text(message.get("content"))
        if text:
            if not first and message.get("role") == "user":
                first = text
            texts.append(text)
    if name is not None:
        info["name"] = name
    info.update({"modified": iso_of_ms(mtime_ms), "messageCount": count,
                 "firstMessage": first or "(no messages)", "allMessagesText": " ".join(texts)})
    return mtime_ms, info


def sessions_dir(case_dir, args):
    """get_default_session_dir(): `<agent>/sessions`, no cwd. With `agent_dir: null`, the
    agent folder is 003's `~/.operator/profiles/<name>` under the case's `home/`; 003 is
    silent on how the name is chosen: here `$OPERATOR_PROFILE` when set and not empty,
    else `default`."""
    agent = args.get("agent_dir", "agent")
    if agent is None:
        name = (args.get("env") or {}).get("OPERATOR_PROFILE") or "default"
        agent = os.path.join("home", ".operator", "profiles", name)
    return os.path.join(case_dir, agent, "sessions")


def list_sessions_from_dir(folder, cwd=None):
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        names = []
    found = []
    for n in names:
        path = os.path.join(folder, n)
        if os.path.isfile(path) and (got := session_info(path)) is not None:
            if cwd is None or got[1]["cwd"] == cwd:
                found.append(got)
    found.sort(key=lambda pair: (-pair[0], pair[1]["path"]))
    return [info for _, info in found]


def list_op(case_dir, args):
    cwd = None if args.get("all") else args.get("cwd", "/")
    return {"sessions": list_sessions_from_dir(sessions_dir(case_dir, args), cwd)}


def continue_op(case_dir, args):
    """continue_recent(cwd): "Resume the most recently modified session in session_dir"
    (the flat folder: not filtered by cwd); else a new session there."""
    folder = sessions_dir(case_dir, args)
    newest = None
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        names = []
    for n in names:
        path = os.path.join(folder, n)
        with open(path, "rb") as f:
            first = f.read(512).decode("utf-8", "replace").split("\n")[0]
        try:
            header = json.loads(first)
        except ValueError:
            continue
        if isinstance(header, dict) and header.get("type") == HEADER_TYPE and isinstance(header.get("id"), str):
            mtime = os.stat(path).st_mtime_ns // 1_000_000
            if newest is None or mtime > newest[0]:
                newest = (mtime, path)
    if newest is not None:
        return {"file": newest[1], "new": False}
    header = new_header(args.get("cwd", "/"))
    return {"file": os.path.join(folder, f"{file_time(header['timestamp'])}_{header['id']}.jsonl"), "new": True}


def resolve_op(case_dir, args):
    """`--resume VALUE` (003 is silent: as pi): a path, else an id prefix in this
    project's sessions, then in all; a match in another project is forked (fork_from)
    when the user says yes, else "Aborted."."""
    value, cwd = args.get("value", ""), args.get("cwd", "/")
    if "/" in value or value.endswith(".jsonl"):
        return {"match": "path", "action": "open", "path": value}
    folder = sessions_dir(case_dir, args)
    def first(infos):
        return next((i for i in infos if i.get("id", "").startswith(value)), None)
    if (local := first(list_sessions_from_dir(folder, cwd))) is not None:
        return {"match": "local", "action": "open", "path": local["path"]}
    if (other := first(list_sessions_from_dir(folder))) is None:
        return {"match": "none", "action": "stop", "message": f"No session found matching '{value}'", "error": True}
    if not args.get("fork"):
        return {"match": "global", "action": "stop", "message": "Aborted.", "error": False}
    forked = fork_from(other["path"], cwd, case_dir, folder)
    return {"match": "global", "action": "fork", "path": other["path"], "file": forked.path}


# ---- the protocol's operations ----

OPERATIONS = ["load", "context", "tree", "apply", "list", "continue", "resolve"]


def run_operation(op, case_dir, args):
    if op == "apply":
        return apply(case_dir, args)
    if op == "list":
        return list_op(case_dir, args)
    if op == "continue":
        return continue_op(case_dir, args)
    if op == "resolve":
        return resolve_op(case_dir, args)
    session = open_session(os.path.join(case_dir, args.get("file", "session.jsonl")), case_dir)
    if op == "load":
        return {"header": session.header, "entries": session.entries, "leafId": session.leaf_id}
    if op == "context":
        if "leafId" not in args:
            leaf = session.leaf_id
        elif args["leafId"] is None or isinstance(args["leafId"], str):
            leaf = args["leafId"]
        else:
            leaf = session.entries[-1].get("id") if session.entries else None
        return build_context(session, leaf)
    return build_tree(session)
