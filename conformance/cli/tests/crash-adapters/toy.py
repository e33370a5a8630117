#!/usr/bin/env python3
"""A toy session implementation (pi's format) that speaks the adapter protocol's ack mode,
for the tests of `session-conformance crash` (conformance/cli/tests/crash.rs).

Correct by default; `--bug NAME` plants one defect the command must find:
  ack-before-write  acknowledges each append as durable, but writes it only at the next flush
  drop-last         acknowledges each append as durable, but holds the latest entry back
  fuse              writes each line in two halves (a kill can tear it) and appends on reopen
                    without checking that the file ends with a newline (pi-mono 0.73.1)
  junk              answers with lies: a branched session outside the case directory, lines
                    that are not JSON, and after the last step an ack of a step that does
                    not exist
  no-ack            ignores ack mode (answers without acknowledgements)
  no-fsync          (power loss) a flush writes nothing to the disk: no fsync
  unsynced-rename   (power loss) rewrites rename their temp file without an fsync first
  no-journal        declares no `journal` capability

With `"journal": true` it reports its file-system calls (PROTOCOL.md "Journal").
"""
import base64
import json
import os
import sys
import time
import uuid

BUG = sys.argv[sys.argv.index("--bug") + 1] if "--bug" in sys.argv else None
JOURNAL = None  # the calls not yet reported, in journal mode


def record(op, path, **more):
    if JOURNAL is not None:
        JOURNAL.append(dict(op=op, path=path, **more))


def record_write(path, text):
    record("write", path, data=base64.b64encode(text.encode("utf-8")).decode("ascii"))


def send_journal(case):
    while JOURNAL:
        send(dict(JOURNAL.pop(0), type="fs", case=case))
    if BUG == "junk" and JOURNAL is not None:  # calls outside the case, bad data, a file and a folder of one name
        for line in ({"op": "write", "path": "/etc/passwd", "data": "eA=="},
                     {"op": "write", "path": "x", "data": "not base64!"},
                     {"op": "chmod", "path": "x"},
                     {"op": "write", "path": "clash", "data": "eA=="},
                     {"op": "write", "path": "clash/inner", "data": "eA=="}):
            send(dict(line, type="fs", case=case))


def fsync(path):
    with open(path, "a") as f:
        os.fsync(f.fileno())
    record("fsync", path)


def rewrite(temp, target, text):
    """An atomic rewrite: temp file, fsync (unless unsynced-rename), rename."""
    with open(temp, "w") as f:
        record("truncate", temp)
        f.write(text)
        record_write(temp, text)
    if BUG != "unsynced-rename":
        fsync(temp)
    os.replace(temp, target)
    record("rename", temp, to=target)


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def new_id(taken):
    while True:
        i = uuid.uuid4().hex[:8]
        if i not in taken:
            return i


def line_of(obj):
    return json.dumps(obj, separators=(",", ":"))


class Session:
    def __init__(self, path, sessions_dir):
        self.path = path
        self.sessions_dir = sessions_dir
        self.pending = []  # lines not yet written (ack-before-write, drop-last)
        for folder in (os.path.dirname(path), sessions_dir):  # temp files of killed rewrites
            for name in os.listdir(folder) if os.path.isdir(folder) else []:
                if name.startswith(".") and name.endswith(".tmp"):
                    os.remove(os.path.join(folder, name))
                    record("unlink", os.path.join(folder, name))
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        self.ends_with_newline = text.endswith("\n") or text == ""
        lines = [l for l in text.split("\n") if l.strip()]
        values = []
        for l in lines:
            try:
                values.append(json.loads(l))
            except ValueError:
                pass  # a torn or bad line is skipped
        self.header = values[0]
        self.entries = [v for v in values[1:] if isinstance(v, dict)]
        if "version" not in self.header:  # v1: ids and parent ids, then an atomic rewrite
            parent = None
            taken = set()
            for e in self.entries:
                e["id"] = new_id(taken)
                taken.add(e["id"])
                e["parentId"] = parent
                parent = e["id"]
            self.header["version"] = 3
            temp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
            rewrite(temp, path, "".join(line_of(v) + "\n" for v in [self.header] + self.entries))
            self.ends_with_newline = True
        self.by_id = {e["id"]: e for e in self.entries if "id" in e}
        self.leaf = self.entries[-1]["id"] if self.entries else None

    def write(self, text):
        with open(self.path, "a") as f:
            if BUG == "fuse":
                half = len(text) // 2
                f.write(text[:half])
                f.flush()
                record_write(self.path, text[:half])
                time.sleep(0.002)  # a window for the kill
                f.write(text[half:])
                record_write(self.path, text[half:])
            else:
                f.write(text)
                record_write(self.path, text)

    def append(self, entry):
        entry["id"] = new_id(self.by_id)
        entry["parentId"] = self.leaf
        entry["timestamp"] = "2026-01-01T00:00:00.000Z"
        self.entries.append(entry)
        self.by_id[entry["id"]] = entry
        self.leaf = entry["id"]
        text = line_of(entry) + "\n"
        if not self.ends_with_newline and BUG != "fuse":
            text = "\n" + text
        self.ends_with_newline = True
        if BUG == "ack-before-write":
            self.pending.append(text)
        elif BUG == "drop-last":
            self.pending.append(text)
            while len(self.pending) > 1:
                self.write(self.pending.pop(0))
        else:
            self.write(text)
        return entry["id"]

    def flush(self):
        if BUG == "ack-before-write":
            for text in self.pending:
                self.write(text)
            self.pending = []
        if BUG != "no-fsync" and os.path.exists(self.path):
            fsync(self.path)

    def branched(self, leaf):
        path = []
        at = leaf
        while at in self.by_id:
            e = self.by_id[at]
            if e.get("type") != "label":
                path.append(e)
            at = e.get("parentId")
        path.reverse()
        name = os.path.join(self.sessions_dir, uuid.uuid4().hex + ".jsonl")
        header = dict(self.header, id=str(uuid.uuid4()), parentSession=self.path)
        temp = os.path.join(self.sessions_dir, "." + os.path.basename(name) + ".tmp")
        if os.path.exists(self.path):
            fsync(self.path)  # the old file's appends: a later flush syncs only the new one
        rewrite(temp, name, "".join(line_of(v) + "\n" for v in [header] + path))
        self.path = name
        self.entries = list(path)
        self.by_id = {e["id"]: e for e in path}
        self.leaf = leaf
        self.ends_with_newline = True
        return name


def run_step(sm, step):
    call = step.get("call")
    if call == "appendMessage":
        return sm.append({"type": "message", "message": step.get("message")})
    if call == "appendThinkingLevelChange":
        return sm.append({"type": "thinking_level_change", "thinkingLevel": step.get("thinkingLevel")})
    if call == "appendCustomEntry":
        return sm.append({"type": "custom", "customType": step.get("customType"), "data": step.get("data")})
    if call == "appendLabelChange":
        return sm.append({"type": "label", "targetId": step.get("targetId"), "label": step.get("label")})
    if call == "branch":
        sm.leaf = step.get("id")
        return None
    if call == "branchWithSummary":
        sm.leaf = step.get("fromId")
        return sm.append({"type": "branch_summary", "fromId": step.get("fromId") or "root", "summary": step.get("summary")})
    if call == "createBranchedSession":
        if BUG == "junk":
            return "/etc/passwd"
        return sm.branched(step.get("leafId"))
    if call == "flush":
        sm.flush()
        return None
    raise ValueError("unsupported call")


def substitute(value, results):
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("$result"), int):
            n = value["$result"]
            return results[n] if 0 <= n < len(results) else None
        return {k: substitute(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, results) for v in value]
    return value


def apply(req):
    global JOURNAL
    case, args, d = req.get("case"), req.get("args") or {}, req["dir"]
    ack = args.get("ack") is True and BUG != "no-ack"
    JOURNAL = [] if ack and args.get("journal") is True else None
    sm = Session(os.path.join(d, args["open"]), os.path.join(d, "sessions"))
    if ack:
        send_journal(case)
        send({"type": "ack", "case": case, "step": None, "result": None, "durable": True})
    results = []
    for n, step in enumerate(args.get("steps") or []):
        try:
            result = run_step(sm, substitute(step, results))
        except Exception as e:  # noqa: BLE001 - a step's error is its result
            result = {"error": {"kind": "exception", "message": str(e)}}
        results.append(result)
        if ack:
            send_journal(case)
            line = {"type": "ack", "case": case, "step": n, "result": result, "durable": True}
            if isinstance(result, str) and result in sm.by_id:
                line["entry"] = sm.by_id[result]
            send(line)
            if BUG == "junk":
                sys.stdout.write("not json {\n")
                # An ack out of range stops the trial: only after the last step.
                if n + 1 == len(args.get("steps") or []):
                    send({"type": "ack", "case": case, "step": 10**9, "result": "zzzzzzzz", "durable": True})
    sm.flush()
    if ack:
        send_journal(case)
    return {"results": results, "leafId": sm.leaf}


def main():
    for raw in sys.stdin:
        if not raw.strip():
            continue
        msg = json.loads(raw)
        if msg.get("type") == "hello":
            send({"type": "hello", "implementation": "toy", "version": BUG or "correct", "profile": "pi",
                  "operations": ["apply"], "capabilities": [] if BUG == "no-journal" else ["journal"]})
        elif msg.get("type") == "bye":
            return
        elif msg.get("type") == "request":
            try:
                send({"type": "response", "case": msg.get("case"), "ok": apply(msg)})
            except Exception as e:  # noqa: BLE001
                send({"type": "response", "case": msg.get("case"), "error": {"kind": "exception", "message": str(e)}})


main()
