//! Issue #45: a verdict nobody can bend. A case whose safety checks fail is `unsafe`
//! whatever its list says, unless the list's id line records that very loss and says
//! why (`unsafe-listed`); the checks run on what a timed-out adapter left, too; and
//! `--write-divergences` writes nothing an adapter can turn into a list line.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};
use snapbox::cmd::Command;

fn cli() -> Command {
    Command::new(snapbox::cmd::cargo_bin!("session-conformance")).env_remove("CI")
}

const SESSION: &str = concat!(
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
    "\n",
    r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#,
    "\n"
);

/// The adapter of these tests, in Python: for each request it does what its first
/// argument says to the case's `session.jsonl`, then answers.
/// - `destroy`: empties the file, answers `{"ok": {"x": 1}}`;
/// - `hang`: empties the file, deletes its backup, never answers;
/// - `keep`: answers `{"ok": {"x": 1}}` and leaves the file alone;
/// - `hostile`: leaves the file, answers the golden's key and one holding a newline and
///   a list line;
/// - `typed`: answers the golden's `{"y": 2}` and a defaulted `reasoningTokens: 0`;
/// - `typed-bug`: the same with `y` wrong too;
/// - `slow`: answers `{"ok": {"x": 1}}` after 1.5 s, past the short wait of a case
///   listed as timing out.
const ADAPTER: &str = r#"
import json, os, sys, time
mode = sys.argv[1]
sys.stdin.readline()
print(json.dumps({"type": "hello", "implementation": "t", "version": "1", "profile": "pi",
                  "operations": ["load"], "capabilities": []}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    path = os.path.join(request["dir"], "session.jsonl")
    if mode in ("destroy", "hang"):
        open(path, "w").close()
    if mode == "hang":
        try:
            os.remove(path + ".bak")
        except OSError:
            pass
        time.sleep(600)
    ok = {"x": 1}
    if mode == "hostile":
        ok = {"y": 2, "\n0002 looks fine to me ## *\n": 1}
    if mode == "slow":
        time.sleep(1.5)
    if mode == "typed":
        ok = {"y": 2, "reasoningTokens": 0}
    if mode == "typed-bug":
        ok = {"y": 3, "reasoningTokens": 0}
    print(json.dumps({"type": "response", "case": request["case"], "ok": ok}), flush=True)
"#;

/// A corpus of two `load` cases, `0001` (`g/one`, tag `t`) and `0002` (`g/two`), each
/// checking that `session.jsonl` keeps its lines, with a golden that keeps the file
/// and answers `{"y": 2}`, which only the `hostile` adapter's first key matches.
fn corpus(root: &Path) {
    for (id, name) in [(1, "one"), (2, "two")] {
        let dir = root.join("g").join(name);
        fs::create_dir_all(dir.join("input")).expect("folders");
        let file = json!({
            "id": id, "name": name, "profiles": ["pi"], "clauses": ["loading.1"],
            "op": "load", "args": {"file": "session.jsonl"}, "tags": ["t"],
            "safety": [{"check": "lines-kept", "file": "session.jsonl"}],
        });
        fs::write(dir.join("case.json"), file.to_string()).expect("case");
        fs::write(dir.join("input/session.jsonl"), SESSION).expect("input");
        fs::write(
            dir.join("expected.json"),
            "{\n  \"files\": {\n    \"session.jsonl\": {\n      \"unchanged\": true\n    }\n  },\n  \"response\": {\n    \"ok\": {\n      \"y\": 2\n    }\n  }\n}\n",
        )
        .expect("golden");
    }
}

/// Runs the corpus at `root` against the adapter in `mode` with `list` as its
/// divergence list; returns the exit code and each case's record by id.
fn run(root: &Path, mode: &str, list: &str, extra: &[&str]) -> (i32, Vec<Value>) {
    let adapter = root.join("adapter.py");
    fs::write(&adapter, ADAPTER).expect("adapter");
    let list_path = root.join("list");
    fs::write(&list_path, list).expect("list");
    let output = cli()
        .args(["run", "--profile", "pi", "--format", "json", "--jobs", "1"])
        .args(["--timeout", "4", "--corpus"])
        .arg(root.join("corpus"))
        .arg("--expect")
        .arg(&list_path)
        .args(extra)
        .args(["--adapter", "python3"])
        .arg(&adapter)
        .arg(mode)
        .output()
        .expect("runs");
    let records = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "case")
        .collect();
    (output.status.code().unwrap_or(-1), records)
}

fn status_of<'a>(records: &'a [Value], id: &str) -> &'a str {
    records
        .iter()
        .find(|r| r["id"] == id)
        .and_then(|r| r["status"].as_str())
        .unwrap_or("(no record)")
}

const LOSS: &str = "unsafe: lines-kept session.jsonl";

/// No list line but a reviewed one that records the loss turns a destroyed file into
/// anything but `unsafe`: not an id line with another signature, `*`, none, `timeout`
/// or the placeholder reason, not a glob or a tag; and a hang after the damage is judged
/// on what it left.
#[test]
fn only_a_reviewed_line_recording_the_loss_lists_it() {
    let rows: [(&str, String, &str, i32); 11] = [
        // (adapter, list line for case 0001, 0001's status, exit code)
        ("destroy", String::new(), "unsafe", 1),
        ("destroy", "0001 differs ## *".into(), "unsafe", 1),
        ("destroy", "0001 differs".into(), "unsafe", 1),
        (
            "destroy",
            "0001 differs ## /response/ok/y: 2 -> (absent)".into(),
            "unsafe",
            1,
        ),
        ("destroy", "g/* differs".into(), "unsafe", 1),
        ("destroy", "tag:t differs".into(), "unsafe", 1),
        (
            "destroy",
            format!("0001 UNREVIEWED: x ## {LOSS}"),
            "unsafe",
            1,
        ),
        (
            "destroy",
            "0001 other loss ## unsafe: bytes-kept session.jsonl".into(),
            "unsafe",
            1,
        ),
        (
            "destroy",
            format!("0001 replaces the file on purpose ## {LOSS}"),
            "unsafe-listed",
            0,
        ),
        ("hang", "0001 hangs ## timeout".into(), "unsafe", 1),
        ("hang", String::new(), "unsafe", 1),
    ];
    for (mode, line, expected, code) in rows {
        let root = tempfile::tempdir().expect("dir");
        corpus(&root.path().join("corpus"));
        let (exit, records) = run(
            root.path(),
            mode,
            &format!("{line}\n"),
            &["--filter", "0001"],
        );
        assert_eq!(
            status_of(&records, "0001"),
            expected,
            "{mode} with {line:?}: {records:?}"
        );
        assert_eq!(exit, code, "{mode} with {line:?}");
        let record = records.iter().find(|r| r["id"] == "0001").expect("record");
        assert_eq!(record["signature"], LOSS, "{mode} with {line:?}");
    }
}

/// An adapter's key holding a newline and a list line does not add a line that
/// excuses another case: the list written by `--write-divergences` still lists each id
/// once, and the next run still fails the case.
#[test]
fn write_divergences_escapes_what_the_adapter_says() {
    let root = tempfile::tempdir().expect("dir");
    corpus(&root.path().join("corpus"));
    let (exit, _) = run(
        root.path(),
        "hostile",
        "",
        &["--filter", "0001", "--write-divergences"],
    );
    assert_eq!(exit, 1);
    let list = fs::read_to_string(root.path().join("list")).expect("list");
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.starts_with("0001 UNREVIEWED"), "{list}");
    // The list as written: case 0002, which it does not name, fails on the next run.
    let adapter_list = list.clone();
    let (exit, records) = run(root.path(), "hostile", &adapter_list, &[]);
    assert_eq!(exit, 1);
    assert_eq!(status_of(&records, "0001"), "divergent", "{records:?}");
    assert_eq!(status_of(&records, "0002"), "fail", "{records:?}");
}

/// `--write-divergences` never lists a loss by itself: a new failure that destroys data
/// is added UNREVIEWED (still `unsafe` on the next run), and a listed case that now
/// destroys data keeps its line as it was.
#[test]
fn write_divergences_never_lists_a_loss() {
    let root = tempfile::tempdir().expect("dir");
    corpus(&root.path().join("corpus"));
    let listed = "0002 differs on purpose ## /response/ok/y: 2 -> (absent)\n";
    let (exit, _) = run(root.path(), "destroy", listed, &["--write-divergences"]);
    assert_eq!(exit, 1);
    let list = fs::read_to_string(root.path().join("list")).expect("list");
    assert_eq!(
        list,
        format!("{listed}0001 UNREVIEWED: say why this implementation differs ## {LOSS}\n")
    );
    let (exit, records) = run(root.path(), "destroy", &list, &[]);
    assert_eq!(exit, 1);
    assert_eq!(status_of(&records, "0001"), "unsafe");
    assert_eq!(status_of(&records, "0002"), "unsafe");
}

/// A line excusing a timeout is checked again at full length by a rewriting run: a
/// case that now answers, though after the short wait, loses its `timeout` line
/// instead of keeping it for ever.
#[test]
fn a_rewriting_run_checks_timeout_lines_at_full_length() {
    let root = tempfile::tempdir().expect("dir");
    corpus(&root.path().join("corpus"));
    let list = "0001 hung once on a slow day ## timeout\n";
    let (_, records) = run(root.path(), "slow", list, &["--filter", "0001"]);
    assert_eq!(
        status_of(&records, "0001"),
        "divergent",
        "cut short: {records:?}"
    );
    let (_, records) = run(
        root.path(),
        "slow",
        list,
        &["--filter", "0001", "--write-divergences"],
    );
    assert_eq!(
        status_of(&records, "0001"),
        "divergent-changed",
        "{records:?}"
    );
    let written = fs::read_to_string(root.path().join("list")).expect("list");
    assert!(
        written.starts_with("0001 hung once on a slow day ## /") && !written.contains("timeout"),
        "{written}"
    );
}

/// A strictly typed port declares its defaulted key once, by where and how it differs:
/// the line excuses the key, and a second, undeclared difference in the same case still
/// fails, with a note naming the line that almost matched.
#[test]
fn a_shape_line_excuses_its_key_and_nothing_else() {
    let line = "at:/response/ok/reasoningTokens&diff:added its typed Usage writes a defaulted reasoningTokens\n";
    let rows = [
        // (adapter, list, status, exit)
        ("typed", line.to_owned(), "divergent", 0),
        ("typed", String::new(), "fail", 1),
        ("typed-bug", line.to_owned(), "fail", 1),
        (
            "typed",
            line.replace("diff:added", "diff:changed"),
            "fail",
            1,
        ),
        ("typed", format!("clause:loading.1&{line}"), "divergent", 0),
        ("typed", format!("clause:context.*&{line}"), "fail", 1),
    ];
    for (mode, list, status, code) in rows {
        let root = tempfile::tempdir().expect("dir");
        corpus(&root.path().join("corpus"));
        let (exit, records) = run(root.path(), mode, &list, &["--filter", "0001"]);
        assert_eq!(
            status_of(&records, "0001"),
            status,
            "{mode} with {list:?}: {records:?}"
        );
        assert_eq!(exit, code, "{mode} with {list:?}");
        let notes = records[0]["notes"].to_string();
        if mode == "typed-bug" {
            assert_eq!(records[0]["pointer"], "/response/ok/y", "{records:?}");
            assert!(notes.contains("line 1 (at:/response/ok/reasoningTokens&diff:added) covers 1 difference(s) of this case, but not /response/ok/y: 2 -> 3"), "{notes}");
        }
        if status == "divergent" {
            assert!(notes.contains("known divergence (line 1"), "{notes}");
        }
    }
}

/// In one-shot mode the short wait of a case listed as timing out is for the work, not
/// the adapter's start: a one-shot adapter that takes 1.2 s to start and then answers at
/// once is judged on its answer, not cut at the start.
#[test]
fn the_short_wait_does_not_count_a_one_shot_start() {
    let root = tempfile::tempdir().expect("dir");
    corpus(&root.path().join("corpus"));
    let adapter = root.path().join("one-shot.py");
    fs::write(
        &adapter,
        "import json, sys, time\ntime.sleep(1.2)\nrequest = json.loads(sys.stdin.readline())\nprint(json.dumps({\"type\": \"response\", \"case\": request[\"case\"], \"ok\": {\"x\": 1}}), flush=True)\n",
    )
    .expect("adapter");
    let list = root.path().join("list");
    fs::write(&list, "0001 hung once ## timeout\n").expect("list");
    let output = cli()
        .args(["run", "--profile", "pi", "--format", "json", "--one-shot"])
        .args(["--timeout", "10", "--filter", "0001", "--corpus"])
        .arg(root.path().join("corpus"))
        .arg("--expect")
        .arg(&list)
        .args(["--adapter", "python3"])
        .arg(&adapter)
        .output()
        .expect("runs");
    let records: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "case")
        .collect();
    assert_eq!(
        status_of(&records, "0001"),
        "divergent-changed",
        "{records:?}"
    );
}

/// An id line that names no case of the corpus is said on stderr, not silently dead.
#[test]
fn an_id_line_naming_no_case_is_said() {
    let root = tempfile::tempdir().expect("dir");
    corpus(&root.path().join("corpus"));
    fs::write(root.path().join("list"), "0001 r\n9999 gone\n").expect("list");
    cli()
        .args(["run", "--format", "json", "--corpus"])
        .arg(root.path().join("corpus"))
        .arg("--expect")
        .arg(root.path().join("list"))
        .assert()
        .stderr_eq("[..]list: 1 id line(s) name no case of [..]corpus: 9999\n...");
}
