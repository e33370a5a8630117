//! Issue #45, "A verdict nobody can bend": the findings about `run`'s reports, `report`
//! and `gate.sh`. Each test reproduces the attack the third attack run made.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use snapbox::cmd::Command;

fn bin() -> &'static Path {
    snapbox::cmd::cargo_bin!("session-conformance")
}

fn cli() -> Command {
    Command::new(bin()).env_remove("CI")
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    fs::write(path, text).expect("write");
}

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(made.success());
}

/// A corpus of two real cases (`parse/crlf-line-endings`, id 24, and
/// `parse/crlf-blank-lines`, id 25) in `root/cases`; case 25 is given the tag `bad-line`
/// and a second clause, so that each case's labels are its own.
fn corpus(root: &Path) -> PathBuf {
    let cases = root.join("cases");
    let from = Path::new("../../corpus/cases/parse");
    for name in ["crlf-line-endings", "crlf-blank-lines"] {
        for item in walkdir::WalkDir::new(from.join(name)) {
            let item = item.expect("walk");
            if !item.file_type().is_file() {
                continue;
            }
            let rel = item.path().strip_prefix(from).expect("inside");
            let to = cases.join("parse").join(rel);
            fs::create_dir_all(to.parent().expect("parent")).expect("folders");
            fs::copy(item.path(), &to).expect("copy");
        }
    }
    let path = cases.join("parse/crlf-blank-lines/case.json");
    let mut case: Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
    case["tags"] = serde_json::json!(["bad-line"]);
    case["clauses"] = serde_json::json!(["loading.1", "loading.3"]);
    fs::write(&path, case.to_string()).expect("write");
    cases
}

/// `run --format json` of the reference under pi over `cases`: the report's text.
fn json_report(cases: &Path) -> String {
    let out = cli()
        .args([
            "run",
            "--profile",
            "pi",
            "--format",
            "json",
            "--jobs",
            "1",
            "--corpus",
        ])
        .arg(cases)
        .timeout(Duration::from_mins(1))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).expect("UTF-8")
}

fn records(report: &str) -> Vec<Value> {
    report
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// A report as an older kit wrote it: case records without `clauses` and `tags`.
fn without_labels(report: &str) -> String {
    let mut out = String::new();
    for mut record in records(report) {
        if let Some(map) = record.as_object_mut() {
            map.remove("clauses");
            map.remove("tags");
        }
        out.push_str(&record.to_string());
        out.push('\n');
    }
    out
}

/// Finding 1: `report` reads each case's clauses and tags from the JSON report, which
/// carries them, and never walks a corpus with plain reads: a file named `case.json`
/// inside an `input/` folder is not a case (it must not relabel case 24), a FIFO of that
/// name must not hang it, and a link of that name to `/dev/zero` must not eat memory.
#[test]
fn report_takes_labels_from_the_report_and_never_reads_stray_case_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = corpus(dir.path());
    write(
        &cases.join("parse/stray/input/case.json"),
        r#"{"id":24,"name":"forged","clauses":["forged.1"],"tags":["forged-tag"]}"#,
    );
    mkfifo(&cases.join("parse/fifo/input/case.json"));
    let report = json_report(&cases);
    let by_id = |id: &str| {
        records(&report)
            .into_iter()
            .find(|r| r["type"] == "case" && r["id"] == id)
            .expect("a record")
    };
    assert_eq!(by_id("0024")["clauses"], serde_json::json!(["loading.1"]));
    assert_eq!(by_id("0024")["tags"], serde_json::json!([]));
    assert_eq!(
        by_id("0025")["clauses"],
        serde_json::json!(["loading.1", "loading.3"])
    );
    assert_eq!(by_id("0025")["tags"], serde_json::json!(["bad-line"]));
    fs::create_dir_all(cases.join("parse/zero")).expect("folder");
    std::os::unix::fs::symlink("/dev/zero", cases.join("parse/zero/case.json")).expect("link");
    let new = dir.path().join("new.jsonl");
    let old = dir.path().join("old.jsonl");
    fs::write(&new, &report).expect("write");
    fs::write(&old, without_labels(&report)).expect("write");
    for path in [&new, &old] {
        let started = Instant::now();
        let out = cli()
            .arg("report")
            .arg(path)
            .arg("--corpus")
            .arg(&cases)
            .timeout(Duration::from_secs(20))
            .assert()
            .success()
            .get_output()
            .clone();
        assert!(started.elapsed() < Duration::from_secs(20));
        let markdown = String::from_utf8_lossy(&out.stdout);
        assert!(
            markdown.contains("| clause loading.1 | 2 passed |")
                && markdown.contains("| clause loading.3 | 1 passed |")
                && markdown.contains("| tag: bad-line | 1 passed |"),
            "{}: {markdown}",
            path.display()
        );
        assert!(!markdown.contains("forged"), "{markdown}");
    }
}

/// Finding 2: a report without labels (an older kit's) that ran another corpus, or names
/// none, is not labelled with `--corpus`'s clauses: `report` says so on stderr and shows
/// its cases by group only.
#[test]
fn labels_of_another_corpus_are_not_taken_and_the_report_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = corpus(dir.path());
    let old = without_labels(&json_report(&cases));
    let other = old.replacen(
        "\"sha256\":\"",
        "\"sha256\":\"0000000000000000000000000000000000000000",
        1,
    );
    let unnamed = old.replacen("\"corpus\":", "\"corpusHash\":", 1);
    for (name, text, why) in [
        (
            "other.jsonl",
            other,
            "ran corpus 2 cases, sha256 000000000000",
        ),
        ("unnamed.jsonl", unnamed, "names no corpus"),
    ] {
        let path = dir.path().join(name);
        fs::write(&path, text).expect("write");
        let out = cli()
            .arg("report")
            .arg(&path)
            .arg("--corpus")
            .arg(&cases)
            .timeout(Duration::from_secs(20))
            .assert()
            .success()
            .get_output()
            .clone();
        let markdown = String::from_utf8_lossy(&out.stdout);
        assert!(!markdown.contains("clause "), "{name}: {markdown}");
        assert!(!markdown.contains("tag: "), "{name}: {markdown}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!(
                "session-conformance: warning: {}:",
                path.display()
            )) && stderr.contains(why)
                && stderr.contains("clauses and tags"),
            "{name}: {stderr}"
        );
    }
}

/// The `"sha256"` of a JSON report's first header.
fn corpus_hash(report: &str) -> Value {
    records(report)[0]["corpus"]["sha256"].clone()
}

/// Finding 3: the corpus hash covers the files the cases read, nothing else: stray
/// files (a note, a 16 GiB sparse file, a file in a folder that is no case) change
/// neither the hash nor, measurably, the run's time.
#[test]
fn the_corpus_hash_covers_only_what_the_cases_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = corpus(dir.path());
    let before = corpus_hash(&json_report(&cases));
    write(&cases.join("NOTES.md"), "notes");
    write(&cases.join("parse/crlf-line-endings/notes.txt"), "notes");
    write(&cases.join("parse/not-a-case/input/x.jsonl"), "{}\n");
    let big = fs::File::create(cases.join("big.img")).expect("create");
    big.set_len(16 << 30).expect("a sparse file");
    let started = Instant::now();
    let after = corpus_hash(&json_report(&cases));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(before, after);
}

/// Finding 3: a file that cannot be hashed after the run (here a case file the adapter
/// deleted) does not discard the results: the report is written, its header says why
/// the corpus has no hash, and the exit status is the verdict's.
#[test]
fn a_hashing_problem_keeps_the_results_and_the_verdict() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = corpus(dir.path());
    let doomed = cases.join("parse/crlf-blank-lines/case.json");
    let script = format!(
        "rm -f '{}'; exec '{}' serve --profile pi",
        doomed.display(),
        bin().display()
    );
    let out = cli()
        .args(["run", "--profile", "pi", "--format", "json", "--jobs", "1"])
        .args(["--filter", "parse/crlf-line-endings", "--corpus"])
        .arg(&cases)
        .args(["--adapter", "sh", "--", "-c"])
        .arg(&script)
        .timeout(Duration::from_mins(1))
        .assert()
        .success()
        .get_output()
        .clone();
    let report = String::from_utf8_lossy(&out.stdout);
    let header = &records(&report)[0];
    assert_eq!(header["corpus"]["cases"], 2, "{header}");
    assert_eq!(header["corpus"]["sha256"], Value::Null, "{header}");
    assert!(
        header["corpus"]["problem"]
            .as_str()
            .is_some_and(|p| p.contains("crlf-blank-lines/case.json")),
        "{header}"
    );
    assert!(report.contains("\"status\":\"pass\""), "{report}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("session-conformance: warning: the corpus could not be hashed"),
        "{stderr}"
    );
}

/// An adapter in Python that writes control characters wherever the text report shows
/// its text: its hello's name and version, an error's kind and message, and an object
/// key (a pointer).
const HOSTILE_ADAPTER: &str = r#"
import json, sys
sys.stdin.readline()
print(json.dumps({"type": "hello", "implementation": "evil\u001b]0;pwned\u0007\uffff", "version": "1\u001b[2J",
                  "profile": "pi", "operations": ["load"], "capabilities": []}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    if request.get("type") == "bye":
        break
    if request["case"] == "0024":
        answer = {"type": "response", "case": request["case"],
                  "error": {"kind": "x\u001b[2J", "message": "m\u001b]0;title\u0007\r"}}
    else:
        answer = {"type": "response", "case": request["case"], "ok": {"\u001b[2J": 1, "\u009b31m": 2}}
    print(json.dumps(answer), flush=True)
"#;

/// Finding 4: `run`'s text report shows adapter and corpus text with its control
/// characters escaped (a case name from `case.json` too), so an adapter cannot retitle
/// or clear the terminal; JSON and JUnit reports stay well-formed.
#[test]
fn reports_escape_adapter_and_corpus_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = corpus(dir.path());
    let path = cases.join("parse/crlf-blank-lines/case.json");
    let mut case: Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("json");
    case["name"] = Value::from("crlf\u{1b}[31m-blank\u{7}");
    fs::write(&path, case.to_string()).expect("write");
    for format in ["text", "json", "junit"] {
        let out = cli()
            .args(["run", "--profile", "pi", "--jobs", "1", "--color", "never"])
            .args(["--format", format, "--corpus"])
            .arg(&cases)
            .args(["--adapter", "python3", "--", "-c", HOSTILE_ADAPTER])
            .timeout(Duration::from_mins(1))
            .assert()
            .code(1)
            .get_output()
            .clone();
        let text = String::from_utf8_lossy(&out.stdout);
        let control: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
            .collect();
        assert!(control.is_empty(), "{format}: {control:?} in {text}");
        if format == "junit" {
            assert!(!text.contains('\u{ffff}'), "{text}");
        }
        assert!(text.contains("evil"), "{format}: {text}");
        if format == "json" {
            records(&text);
        }
    }
}

/// Finding 5: a corpus folder with no case (emptied, a submodule not checked out, a
/// wrong subfolder) is an error naming the folder, not "0 passed".
#[test]
fn a_corpus_without_cases_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).expect("folder");
    let wrong = dir.path().join("wrong");
    write(&wrong.join("parse/README.md"), "not a case");
    write(&wrong.join("g/c/input/case.json"), "{}");
    for folder in [&empty, &wrong] {
        let out = cli()
            .args(["run", "--profile", "pi", "--corpus"])
            .arg(folder)
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .get_output()
            .clone();
        assert!(out.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "session-conformance: {}: no cases: a corpus folder holds case folders, each with a case.json (is it the right folder, or an unchecked-out submodule?)\n",
                folder.display()
            )
        );
    }
    let cases = corpus(dir.path());
    let out = cli()
        .args(["run", "--profile", "operator", "--corpus"])
        .arg(&cases)
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "session-conformance: none of the 2 case(s) of {} applies to profile operator; is it the right corpus?\n",
            cases.display()
        )
    );
}

fn gate() -> Command {
    Command::new("bash").arg("../ci/gate.sh").env_remove("CI")
}

/// Finding 6: `gate.sh`'s usage errors exit 2, as its usage text says: an `--out` that
/// cannot be made among them.
#[test]
fn gate_usage_errors_exit_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("file");
    write(&file, "a file");
    let out = gate()
        .arg("--bin")
        .arg(bin())
        .args(["--profile", "pi", "--out"])
        .arg(file.join("out"))
        .args(["--", "reference"])
        .timeout(Duration::from_mins(1))
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("gate.sh: --out "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Finding 6: `gate.sh` finds the failed cases by their status field, not by a `grep`
/// over whole records: a failed case whose output (or name) holds `"status":"pass"` is
/// still listed as failed. A stand-in kit writes the report; `report` is the real one.
#[test]
fn gate_lists_failed_cases_by_their_status_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let report = [
        r#"{"type":"header","tool":"session-conformance","version":"0.1.0","corpus":{"cases":2,"sha256":"ab"},"profile":"pi","adapter":{"type":"hello","implementation":"x","version":"1","profile":"pi","operations":["load"],"capabilities":[]}}"#,
        r#"{"type":"case","profile":"pi","id":"0001","name":"g/a","status":"fail","pointer":"/response/ok","signature":null,"notes":[],"diff":null,"expected":{"a":1},"actual":{"type":"summary","id":"9","name":"n","status":"pass","pointer":null},"ms":1.0,"clauses":[],"tags":[]}"#,
        r#"{"type":"case","profile":"pi","id":"0002","name":"g/b\",\"status\":\"pass","status":"unsafe","pointer":null,"signature":null,"notes":["\"status\":\"pass\""],"diff":null,"expected":null,"actual":null,"ms":1.0,"clauses":[],"tags":[]}"#,
        r#"{"type":"summary","profile":"pi","counts":{"fail":1,"unsafe":1}}"#,
    ]
    .join("\n");
    let report_path = dir.path().join("fake-report.jsonl");
    fs::write(&report_path, format!("{report}\n")).expect("write");
    let fake = dir.path().join("fake-kit");
    fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$1\" in\n  --version) echo fake ;;\n  run) case \"$*\" in *json*) cat '{}' ;; *) echo '<testsuites/>' ;; esac; exit 1 ;;\n  *) exec '{}' \"$@\" ;;\nesac\n",
            report_path.display(),
            bin().display()
        ),
    )
    .expect("write");
    fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let out = gate()
        .arg("--bin")
        .arg(&fake)
        .args(["--profile", "pi", "--out"])
        .arg(dir.path().join("out"))
        .args(["--", "whatever"])
        .timeout(Duration::from_mins(1))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("== cases that failed")
            && stdout.contains("\nfail 0001 g/a /response/ok\n")
            && stdout.contains("\nunsafe 0002 g/b\",\"status\":\"pass -\n"),
        "{stdout}"
    );
}

/// Finding 1's class: a REPORT argument is read as the CLI reads a FILE argument, a
/// regular file or a pipe within the limits; a device (`/dev/zero`, which a plain read
/// would take memory from for ever) or a folder is refused unread.
#[test]
fn report_refuses_a_device_or_a_folder_as_a_report() {
    for path in ["/dev/zero", "/tmp"] {
        let out = cli()
            .args(["report", path])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("session-conformance: {path}: is a ")),
            "{stderr}"
        );
    }
}
