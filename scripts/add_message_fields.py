#!/usr/bin/env python3
"""Issue #36: gives the corpus's messages the fields the real implementations always
write, where a case lacks them and its point is not the odd message:

- an assistant message's `api`, from its `provider` (anthropic: anthropic-messages,
  openai: openai-responses, any other: openai-completions, pi-ai's API for custom
  providers);
- a message's `timestamp`: in an input session file, the entry's own time (its ISO
  `timestamp` in milliseconds); in `case.json` (`appendMessage` steps, `persist`'s
  message), 2025-06-01T12:00:00Z plus a second per step.

Input lines change only by the inserted text (`"api":"…",` before `"provider"`, and
`,"timestamp":N` before the message's closing brace, spaced as the line is); nothing
else of a line is touched. `case.json` is rewritten only when it changes, as the
corpus writes it (2-space indent, final newline kept). Cases tagged `lenient-message`
and the `operator` group are left alone.

Usage: scripts/add_message_fields.py [CASES_DIR]   (default corpus/cases)
Prints each file it changed and how many fields it added.
"""
import datetime
import glob
import json
import os
import sys

API = {"anthropic": "anthropic-messages", "openai": "openai-responses"}
BASE_MS = 1748779200000  # 2025-06-01T12:00:00.000Z


def api_of(provider):
    return API.get(provider, "openai-completions")


def skip_string(text, i):
    """Index just past the JSON string starting at text[i] == '"'."""
    i += 1
    while text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i + 1


def skip_value(text, i):
    """Index just past the JSON value starting at text[i] (no leading whitespace)."""
    if text[i] == '"':
        return skip_string(text, i)
    if text[i] in "{[":
        depth = 0
        while True:
            c = text[i]
            if c == '"':
                i = skip_string(text, i)
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
    while i < len(text) and text[i] not in ",}] \t\r\n":
        i += 1
    return i


def members(text, start):
    """The top-level members of the object at text[start] == '{': (key, key_at, value_at, value_end)."""
    out, i = [], start + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "}":
            return out, i
        key_at = i
        i = skip_string(text, i)
        key = json.loads(text[key_at:i])
        while text[i] in " \t\r\n:":
            i += 1
        value_at = i
        i = skip_value(text, i)
        out.append((key, key_at, value_at, i))


def iso_ms(value):
    try:
        t = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None
    if t.tzinfo is None:
        return None
    return int(round(t.timestamp() * 1000))


def upgrade_line(line):
    """The line with the missing fields inserted, and how many."""
    try:
        entry = json.loads(line)
    except ValueError:
        return line, 0
    if not isinstance(entry, dict) or entry.get("type") != "message":
        return line, 0
    message = entry.get("message")
    if not isinstance(message, dict):
        return line, 0
    start = line.index("{")
    top, _ = members(line, start)
    found = [m for m in top if m[0] == "message"]
    if len(found) != 1 or line[found[0][2]] != "{":
        return line, 0
    msg_at = found[0][2]
    inner, close = members(line, msg_at)
    spaced = ": " in line[inner[0][1]:inner[0][2]] if inner else False
    colon, comma = (": ", ", ") if spaced else (":", ",")
    inserts = []
    if message.get("role") == "assistant" and "api" not in message and isinstance(message.get("provider"), str):
        at = next(m[1] for m in inner if m[0] == "provider")
        inserts.append((at, f'"api"{colon}{json.dumps(api_of(message["provider"]))}{comma}'))
    if "timestamp" not in message and "role" in message:
        ms = iso_ms(entry.get("timestamp"))
        if ms is not None:
            inserts.append((close, f'{comma}"timestamp"{colon}{ms}' if inner else f'"timestamp"{colon}{ms}'))
    for at, text in sorted(inserts, reverse=True):
        line = line[:at] + text + line[at:]
    return line, len(inserts)


def upgrade_message(message, ms):
    added = 0
    if not isinstance(message, dict) or "role" not in message:
        return 0
    if message.get("role") == "assistant" and "api" not in message and isinstance(message.get("provider"), str):
        # Before `provider`, as the real writers order it.
        items = list(message.items())
        message.clear()
        for k, v in items:
            if k == "provider":
                message["api"] = api_of(v)
            message[k] = v
        added += 1
    if "timestamp" not in message:
        message["timestamp"] = ms
        added += 1
    return added


def upgrade_case(case):
    added = 0
    args = case.get("args") or {}
    if isinstance(args.get("message"), dict):
        added += upgrade_message(args["message"], BASE_MS)
    for i, step in enumerate(args.get("steps") or []):
        if isinstance(step, dict) and step.get("call") == "appendMessage":
            added += upgrade_message(step.get("message"), BASE_MS + 1000 * i)
    return added


def input_sessions(folder):
    """Every `.jsonl` regular file under `folder`, hidden folders (`.omp`) included."""
    found = []
    for parent, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            if name.endswith(".jsonl") and os.path.isfile(path) and not os.path.islink(path):
                found.append(path)
    return sorted(found)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "corpus/cases"
    total = 0
    for case_path in sorted(glob.glob(os.path.join(root, "*", "*", "case.json"))):
        text = open(case_path, encoding="utf-8").read()
        case = json.loads(text)
        if "lenient-message" in (case.get("tags") or []) or case.get("profiles") == ["operator"]:
            continue
        added = upgrade_case(case)
        if added:
            new = json.dumps(case, indent=2, ensure_ascii=False) + ("\n" if text.endswith("\n") else "")
            if json.dumps(json.loads(text), indent=2, ensure_ascii=False) not in (text, text.rstrip("\n")):
                print(f"{case_path}: not rewritten (its layout is its own); {added} field(s) to add by hand")
            else:
                open(case_path, "w", encoding="utf-8").write(new)
                print(f"{case_path}: {added}")
                total += added
        case_dir = os.path.dirname(case_path)
        for path in input_sessions(os.path.join(case_dir, "input")):
            # Invalid UTF-8 (the point of some cases) goes through as it is.
            text = open(path, "rb").read().decode("utf-8", "surrogateescape")
            lines = text.split("\n")
            count = 0
            for n, line in enumerate(lines):
                lines[n], k = upgrade_line(line)
                count += k
            if count:
                open(path, "wb").write("\n".join(lines).encode("utf-8", "surrogateescape"))
                print(f"{path}: {count}")
                total += count
    print(f"{total} field(s) added")


if __name__ == "__main__":
    main()
