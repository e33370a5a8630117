"""Tests for the example adapter. Run in this folder: python3 -m unittest"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import adapter

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}
T0 = "2025-06-01T12:00:00.000Z"
T0_MS = 1748779200000


def line(value):
    return json.dumps(value, separators=(",", ":"))


def msg(entry_id, parent, role, text, ts=T0, **extra):
    message = {"role": role, "content": text, **extra}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts, "message": message}


def summary(message):
    """role:text of a context message, for short assertions."""
    return f'{message["role"]}:{message.get("content", message.get("summary"))}'


class CaseDir(unittest.TestCase):
    """Each test gets a fresh case directory, like the runner's `dir`."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name
        self._cwd = os.getcwd()

    def tearDown(self):
        os.chdir(self._cwd)
        self._tmp.cleanup()

    def write(self, content, name="session.jsonl"):
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(data)
        return data

    def read(self, name="session.jsonl"):
        with open(os.path.join(self.dir, name), "rb") as f:
            return f.read()

    def run_op(self, op, **args):
        """Runs one request through handle(), as the protocol loop does."""
        request = {"type": "request", "case": "t", "op": op, "profile": "pi", "dir": self.dir,
                   "args": {"file": "session.jsonl", **args}}
        response = json.loads(adapter.handle(request))
        self.assertNotIn("error", response, response.get("error"))
        return response["ok"]

    def lines(self, *values):
        return "".join(line(v) + "\n" for v in values)


class LoadTests(CaseDir):
    def test_crlf_loads_like_lf_and_is_not_rewritten(self):
        data = self.write(self.lines(HEADER, msg("a1", None, "user", "hi")).replace("\n", "\r\n"))
        out = self.run_op("load")
        self.assertEqual(out["header"], HEADER)
        self.assertEqual([e["id"] for e in out["entries"]], ["a1"])
        self.assertEqual(out["leafId"], "a1")
        self.assertEqual(self.read(), data)  # v3: never rewritten on load

    def test_torn_last_line_is_skipped_and_kept_on_disk(self):
        good = self.lines(HEADER, msg("a1", None, "user", "hi"))
        data = self.write(good + line(msg("a2", "a1", "user", "x"))[:40])
        out = self.run_op("load")
        self.assertEqual([e["id"] for e in out["entries"]], ["a1"])
        self.assertEqual(self.read(), data)

    def test_bom_blank_lines_garbage_and_scalars(self):
        text = "\ufeff" + line(HEADER) + "\n\n   \nnot json\n5\nnull\n" + line(msg("a1", None, "user", "hi"))
        self.write(text + "\n" + line(msg("a2", "a1", "user", "b")) + line(msg("a3", "a2", "user", "c")) + "\n")
        out = self.run_op("load")
        self.assertEqual([e["id"] for e in out["entries"]], ["a1"])  # two objects on one line: dropped

    def test_no_header_and_missing_file(self):
        for text in ["", "garbage only\n", line(msg("a1", None, "user", "hi")) + "\n" + line(HEADER) + "\n",
                     line({**HEADER, "id": 5}) + "\n", "null\n" + line(HEADER) + "\n"]:
            data = self.write(text)
            self.assertEqual(self.run_op("load"), {"header": None, "entries": [], "leafId": None}, text)
            self.assertEqual(self.read(), data)
        # A garbage first line is skipped; the header after it counts.
        self.write("garbage\n" + self.lines(HEADER, msg("a1", None, "user", "hi")))
        self.assertEqual(self.run_op("load")["leafId"], "a1")
        # A missing file is a new session held in memory: a fresh header, nothing written.
        out = self.run_op("load", file="new.jsonl")
        self.assertEqual(out["header"]["cwd"], self.dir)
        self.assertEqual((out["header"]["version"], out["entries"], out["leafId"]), (3, [], None))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "new.jsonl")))

    def test_v1_migration(self):
        v1_header = {"type": "session", "id": "s1", "timestamp": T0, "cwd": "/p", "provider": "x"}
        entries = [
            {"type": "message", "timestamp": T0, "message": {"role": "user", "content": "u1"}},
            {"type": "message", "timestamp": T0, "message": {"role": "assistant", "content": "a1"}},
            {"type": "compaction", "timestamp": T0, "summary": "S", "firstKeptEntryIndex": 2, "tokensBefore": 9},
            {"type": "compaction", "timestamp": T0, "summary": "S2", "firstKeptEntryIndex": 0, "tokensBefore": 9},
            {"type": "compaction", "timestamp": T0, "summary": "S3", "firstKeptEntryIndex": 6, "tokensBefore": 9},
            {"type": "message", "timestamp": T0, "message": {"role": "hookMessage", "content": "h"}},
        ]
        self.write("\ufeff" + self.lines(v1_header, *entries).replace("\n", "\r\n"))
        out = self.run_op("load")
        got = out["entries"]
        ids = [e["id"] for e in got]
        self.assertTrue(all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids), ids)
        self.assertEqual(len(set(ids)), 6)
        self.assertEqual([e["parentId"] for e in got], [None] + ids[:-1])  # one linear chain
        self.assertEqual(got[2]["firstKeptEntryId"], ids[1])  # index 2 = second entry (0 = header)
        self.assertNotIn("firstKeptEntryId", got[3])  # index 0 is the header
        self.assertEqual(got[4]["firstKeptEntryId"], ids[5])  # forward index resolves
        self.assertFalse(any("firstKeptEntryIndex" in e for e in got))
        self.assertEqual(got[5]["message"]["role"], "custom")
        self.assertEqual(list(out["header"]), ["type", "id", "timestamp", "cwd", "provider", "version"])
        self.assertEqual(out["leafId"], ids[5])
        # Rewritten: no BOM, no CR, one value per line, and no temp file or backup left behind.
        disk = self.read().decode("utf-8")
        self.assertEqual([json.loads(x) for x in disk.splitlines()], [out["header"], *got])
        self.assertNotIn("\r", disk)
        self.assertFalse(disk.startswith("\ufeff"))
        self.assertEqual(os.listdir(self.dir), ["session.jsonl"])
        # Loading again changes nothing.
        self.assertEqual(self.run_op("load"), out)
        self.assertEqual(self.read().decode("utf-8"), disk)

    def test_v1_migration_keeps_a_backup_when_lines_are_dropped(self):
        v1 = self.lines({"type": "session", "id": "s1", "timestamp": T0, "cwd": "/p"},
                        {"type": "message", "timestamp": T0, "message": {"role": "user", "content": "u1"}})
        data = self.write(v1 + '{"type":"message","timest')
        self.assertEqual(len(self.run_op("load")["entries"]), 1)
        backups = [n for n in os.listdir(self.dir) if n != "session.jsonl"]
        self.assertEqual(len(backups), 1)
        self.assertRegex(backups[0], r"^session\.jsonl\.pre-migration-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")
        self.assertEqual(self.read(backups[0]), data)

    def test_second_header_line_is_kept_but_is_no_entry(self):
        second = {"type": "session", "id": "s2", "timestamp": T0, "cwd": "/q"}
        self.write(self.lines(HEADER, msg("a1", None, "user", "hi"), second))
        out = self.run_op("load")
        self.assertEqual((len(out["entries"]), out["leafId"]), (2, "a1"))
        self.assertEqual([n["id"] for n in self.run_op("tree")["nodes"]], ["a1"])
        # v1: the second header gets no id, is not in the chain, and gets version 3.
        v1_header = {"type": "session", "id": "s1", "timestamp": T0, "cwd": "/p"}
        user = {"type": "message", "timestamp": T0, "message": {"role": "user", "content": "u"}}
        self.write(self.lines(v1_header, user, second, user))
        first, header2, last = self.run_op("load")["entries"]
        self.assertEqual(header2, {**second, "version": 3})
        self.assertEqual(last["parentId"], first["id"])

    def test_number_overflow_reads_as_null(self):
        self.write(line(HEADER) + '\n{"type":"custom","id":"a1","parentId":null,"timestamp":"t","data":1e400}\n')
        self.assertIsNone(self.run_op("load")["entries"][0]["data"])  # Infinity, which JSON writes as null

    def test_version_is_compared_as_javascript_does(self):
        hook = {"type": "message", "id": "a1", "parentId": None, "timestamp": T0,
                "message": {"role": "hookMessage", "content": "h"}}
        for version, role, ids_kept in [("2", "custom", True), (4, "hookMessage", True), ("abc", "hookMessage", True),
                                        (None, "custom", False), (2.5, "custom", True)]:
            self.write(self.lines({**HEADER, "version": version}, hook))
            out = self.run_op("load")
            self.assertEqual(out["entries"][0]["message"]["role"], role, version)
            self.assertEqual(out["entries"][0]["id"] == "a1", ids_kept, version)


class ContextTests(CaseDir):
    def context(self, *entries, **args):
        self.write(self.lines(HEADER, *entries))
        return self.run_op("context", **args)

    def test_leaf_selection(self):
        entries = [msg("a", None, "user", "a"), msg("b", "a", "user", "b"), msg("c", "a", "user", "c")]
        self.assertEqual([summary(m) for m in self.context(*entries)["messages"]], ["user:a", "user:c"])
        self.assertEqual([summary(m) for m in self.context(*entries, leafId="b")["messages"]], ["user:a", "user:b"])
        for unknown in ["nope", ""]:
            self.assertEqual(len(self.context(*entries, leafId=unknown)["messages"]), 2)
        self.assertEqual(self.context(*entries, leafId=None), {"messages": [], "thinkingLevel": "off", "model": None})

    def test_settings(self):
        out = self.context(
            {"type": "thinking_level_change", "id": "t", "parentId": None, "timestamp": T0, "thinkingLevel": "high"},
            msg("a", "t", "assistant", "x", provider="anthropic", model="claude"),
            {"type": "model_change", "id": "m", "parentId": "a", "timestamp": T0, "provider": "openai", "modelId": "gpt"})
        self.assertEqual((out["thinkingLevel"], out["model"]), ("high", {"provider": "openai", "modelId": "gpt"}))
        out = self.context({"type": "thinking_level_change", "id": "t", "parentId": None, "timestamp": T0},
                           msg("a", "t", "assistant", "x"))
        self.assertEqual(out, {"messages": [out["messages"][0]], "model": {}})  # undefined keys are omitted

    def test_compaction(self):
        entries = [
            msg("u1", None, "user", "u1"), msg("a1", "u1", "assistant", "a1"), msg("u2", "a1", "user", "u2"),
            {"type": "compaction", "id": "c1", "parentId": "u2", "timestamp": T0, "summary": "S",
             "firstKeptEntryId": "a1", "tokensBefore": 5},
            msg("u3", "c1", "user", "u3"),
        ]
        out = self.context(*entries)
        self.assertEqual([summary(m) for m in out["messages"]], ["compactionSummary:S", "assistant:a1", "user:u2", "user:u3"])
        self.assertEqual(out["messages"][0], {"role": "compactionSummary", "summary": "S", "tokensBefore": 5, "timestamp": T0_MS})
        entries[3] = {**entries[3], "firstKeptEntryId": "missing"}
        self.assertEqual([summary(m) for m in self.context(*entries)["messages"]], ["compactionSummary:S", "user:u3"])

    def test_custom_message_and_branch_summary(self):
        out = self.context(
            {"type": "custom_message", "customType": "ext", "content": "s", "id": "c", "parentId": None, "timestamp": "bad"},
            {"type": "branch_summary", "id": "b", "parentId": "c", "timestamp": T0, "fromId": "c", "summary": "B", "details": 1},
            {"type": "branch_summary", "id": "e", "parentId": "b", "timestamp": T0, "fromId": "b", "summary": ""},
            {"type": "label", "id": "l", "parentId": "e", "timestamp": T0, "targetId": "c", "label": "x"})
        self.assertEqual(out["messages"], [
            {"role": "custom", "customType": "ext", "content": "s", "timestamp": None},
            {"role": "branchSummary", "summary": "B", "fromId": "c", "timestamp": T0_MS}])

    def test_cycle_terminates(self):
        out = self.context(msg("x", "y", "user", "x"), msg("y", "x", "user", "y"), leafId="y")
        self.assertEqual([summary(m) for m in out["messages"]], ["user:x", "user:y"])
        self.assertEqual(len(self.context(msg("s", "s", "user", "s"))["messages"]), 1)


class TreeTests(CaseDir):
    def tree(self, *entries):
        self.write(self.lines(HEADER, *entries))
        return self.run_op("tree")["nodes"]

    def test_roots_in_file_order_children_by_time(self):
        nodes = self.tree(
            msg("r2", None, "user", "r2", ts="2026-01-01T00:00:00Z"),
            msg("r1", None, "user", "r1", ts="2020-01-01T00:00:00Z"),
            msg("x", "r2", "user", "x", ts="garbage"),
            msg("y", "r2", "user", "y", ts="2025-01-01T00:00:00Z"),
            msg("z", "r2", "user", "z", ts="2024-01-01T00:00:00Z"),
            msg("o", "missing", "user", "o"),
            msg("s", "s", "user", "s"))
        self.assertEqual([n["id"] for n in nodes], ["r2", "x", "z", "y", "r1", "o", "s"])
        self.assertEqual(nodes[0], {"id": "r2", "parentId": None, "type": "message", "label": None,
                                    "children": ["x", "z", "y"]})
        self.assertEqual(nodes[5]["parentId"], "missing")

    def test_labels(self):
        label = lambda i, target, text: {"type": "label", "id": i, "parentId": "a", "timestamp": T0, "targetId": target, "label": text}
        nodes = self.tree(msg("a", None, "user", "a"), label("l1", "a", "one"), label("l2", "l1", "two"),
                          label("l3", "l1", ""), label("l4", "a", "  kept  "))
        self.assertEqual({n["id"]: n["label"] for n in nodes}, {"a": "  kept  ", "l1": None, "l2": None, "l3": None, "l4": None})

    def test_fields_as_written(self):
        nodes = self.tree(msg("a", "", "user", "a"),  # "" is no parent: a root
                          {"type": "label", "id": "l", "parentId": "a", "timestamp": T0, "targetId": "a", "label": 5},
                          {"id": "n", "parentId": "a", "timestamp": T0})
        self.assertEqual([(n["id"], n["parentId"], n["type"], n["label"]) for n in nodes],
                         [("a", "", "message", 5), ("l", "a", "label", None), ("n", "a", None, None)])

    def test_cycles_list_every_id_once(self):
        nodes = self.tree(msg("x", "y", "user", "x"), msg("y", "x", "user", "y"), msg("z", "y", "user", "z"))
        self.assertEqual(sorted(n["id"] for n in nodes), ["x", "y", "z"])
        self.assertEqual(sum(len(n["children"]) for n in nodes), 2)  # one link was cut

    def test_deep_chain_needs_no_recursion(self):
        chain = [msg("e0", None, "user", "0")] + [msg(f"e{i}", f"e{i - 1}", "user", str(i)) for i in range(1, 20000)]
        self.assertEqual(len(self.tree(*reversed(chain))), 20000)
        self.assertEqual(len(self.run_op("context")["messages"]), 1)  # leaf = last line = e0


class ProtocolTests(CaseDir):
    def adapter(self, text, *args):
        proc = subprocess.run([sys.executable, os.path.join(HERE, "adapter.py"), *args], input=text.encode(),
                              capture_output=True, timeout=30, check=False)
        return proc.returncode, [json.loads(x) for x in proc.stdout.decode().splitlines()]

    def test_persistent_session(self):
        self.write(self.lines(HEADER, msg("a1", None, "user", "hi")))
        request = {"type": "request", "profile": "pi", "dir": self.dir, "args": {"file": "session.jsonl"}}
        lines = [{"type": "hello", "protocol": 1, "profile": "pi"},
                 {**request, "case": "1", "op": "tree"},
                 {**request, "case": "2", "op": "apply"},
                 {**request, "case": "3", "op": "load", "args": {}},
                 {"type": "bye"}]
        code, out = self.adapter("".join(line(x) + "\n" for x in lines))
        self.assertEqual(code, 0)
        self.assertEqual(out[0], adapter.HELLO)
        self.assertEqual(out[1]["ok"]["nodes"][0]["id"], "a1")
        self.assertEqual(out[2], {"type": "response", "case": "2", "unsupported": True})
        self.assertEqual((out[3]["case"], out[3]["error"]["kind"]), ("3", "exception"))
        self.assertEqual(len(out), 4)

    def test_one_shot(self):
        self.write(self.lines(HEADER, msg("a1", None, "user", "hi")))
        request = {"type": "request", "case": "9", "op": "context", "profile": "pi", "dir": self.dir,
                   "args": {"file": "session.jsonl"}}
        code, out = self.adapter(line(request) + "\n", "--one-shot")
        self.assertEqual(code, 0)
        self.assertEqual(out, [{"type": "response", "case": "9", "ok": {
            "messages": [{"role": "user", "content": "hi"}], "thinkingLevel": "off", "model": None}}])


if __name__ == "__main__":
    unittest.main()


# ---- the operator profile (document 003) ----------------------------------------

import operator_dialect as op

OP_HEADER = {"type": "session_header", "id": "s1", "timestamp": T0, "cwd": "/p"}


def op_entry(kind, entry_id, parent, **fields):
    return {"type": kind, "id": entry_id, "parent_id": parent, "timestamp": T0, **fields}


class OperatorDialect(CaseDir):
    def write_op(self, *entries):
        with open(os.path.join(self.dir, "s.jsonl"), "w") as f:
            f.write("\n".join(line(v) for v in (OP_HEADER, *entries)) + "\n")

    def test_leaf_entry_moves_the_leaf_on_load(self):
        self.write_op(op_entry("message", "u1", None, message={"role": "user", "content": "a"}),
                      op_entry("message", "a1", "u1", message={"role": "assistant", "content": []}),
                      op_entry("leaf", "l1", "a1", target_id="u1"))
        out = op.run_operation("load", self.dir, {"file": "s.jsonl"})
        self.assertEqual(out["leafId"], "u1")

    def test_settings_scan_all_entries(self):
        self.write_op(op_entry("message", "u1", None, message={"role": "user", "content": "a"}),
                      op_entry("thinking_level_change", "t1", "u1", thinking_level="high"),
                      op_entry("message", "u2", "u1", message={"role": "user", "content": "b"}))
        out = op.run_operation("context", self.dir, {"file": "s.jsonl"})
        self.assertEqual(out["thinking_level"], "high")
        self.assertEqual([m["content"] for m in out["messages"]], ["a", "b"])

    def test_branch_is_durable_and_nothing_is_written_before_an_assistant(self):
        steps = [{"call": "append_message", "message": {"role": "user", "content": "a"}},
                 {"call": "branch", "id": {"$result": 0}}]
        out = op.run_operation("apply", self.dir, {"open": None, "cwd": "/p", "steps": steps})
        self.assertEqual(out["results"][1], None)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "sessions")))
        steps.append({"call": "append_message", "message": {"role": "assistant", "content": []}})
        out = op.run_operation("apply", self.dir, {"open": None, "cwd": "/p", "steps": steps})
        (name,) = os.listdir(os.path.join(self.dir, "sessions"))
        self.assertRegex(name, r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{6}_[0-9a-f-]{36}\.jsonl$")
        with open(os.path.join(self.dir, "sessions", name)) as f:
            types = [json.loads(t)["type"] for t in f.read().splitlines()]
        self.assertEqual(types, ["session_header", "message", "leaf", "message"])

    def test_in_memory_session_writes_nothing(self):
        steps = [{"call": "append_message", "message": {"role": "user", "content": "a"}},
                 {"call": "append_message", "message": {"role": "assistant", "content": []}},
                 {"call": "branch", "id": {"$result": 0}},
                 {"call": "flush"},
                 {"call": "create_branched_session", "leaf_id": {"$result": 0}}]
        out = op.run_operation("apply", self.dir, {"open": None, "inMemory": True, "cwd": "/p", "steps": steps})
        self.assertEqual(out["results"][2:], [None, None, None])
        self.assertEqual(out["leafId"], out["results"][0])
        self.assertEqual(os.listdir(self.dir), [])
