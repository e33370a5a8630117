//! Issue #20: nothing escapes its root, nothing hangs, nothing aborts. One test (or
//! more) per numbered item; each reproduces the defect the attack run found.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use session_conformance::adapter::{Adapter, Failure, ProcessAdapter};
use session_conformance::corpus;
use session_conformance::harness::Harness;
use session_conformance::normalize::snapshot;
use session_conformance::protocol::{Args, Request};
use session_conformance::runner::Status;
use session_conformance_cli::validate::{self, Options, Schemas};
use session_reference::model::Profile;
use snapbox::cmd::Command;

fn cli() -> Command {
    Command::new(snapbox::cmd::cargo_bin!("session-conformance")).env_remove("CI")
}

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

fn message(id: &str, content: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":{content}}}}}"#
    )
}

/// A session whose one message holds a value nested `depth` arrays deep around `inner`.
fn deep_session(depth: usize, inner: &str) -> String {
    let content = format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth));
    format!("{HEADER}\n{}\n", message("aaaa0001", &content))
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    fs::write(path, text).expect("write");
}

/// A corpus case `group/name` with `case.json` fields `extra` and `input/session.jsonl`.
fn case(root: &Path, id: u32, name: &str, extra: &Value) -> PathBuf {
    let dir = root.join("g").join(name);
    let mut file =
        json!({"id": id, "name": name, "profiles": ["pi"], "clauses": ["loading.1"], "op": "load"});
    for (k, v) in extra.as_object().expect("object") {
        file[k] = v.clone();
    }
    write(&dir.join("case.json"), &file.to_string());
    write(
        &dir.join("input/session.jsonl"),
        &format!("{HEADER}\n{}\n", message("aaaa0001", "\"hi\"")),
    );
    dir
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(made.success());
}

// 1. Corpus paths, and 10 / 13: a `$repeat` past the limit, an unknown profile and a bad
// `mtimes` entry are case errors: the case fails, the others run.
#[test]
fn corpus_errors_fail_their_case_and_the_run_goes_on() {
    let root = tempfile::tempdir().expect("dir");
    let outside = tempfile::tempdir().expect("dir");
    let victim = outside.path().join("victim.jsonl");
    fs::write(&victim, "not a session\n").expect("write");
    let victim_text = victim.to_string_lossy().into_owned();
    let good = case(root.path(), 1, "good", &json!({}));
    case(
        root.path(),
        2,
        "absolute",
        &json!({"args": {"file": victim_text}}),
    );
    case(
        root.path(),
        3,
        "climbs",
        &json!({"op": "apply", "args": {"open": "../../../x.jsonl"}}),
    );
    case(
        root.path(),
        4,
        "agent",
        &json!({"op": "list", "args": {"agent_dir": "/tmp"}}),
    );
    case(
        root.path(),
        5,
        "repeat",
        &json!({"args": {"m": {"$repeat": ["x", u64::MAX]}}}),
    );
    case(
        root.path(),
        6,
        "profile",
        &json!({"profiles": ["pi", "nope"]}),
    );
    case(
        root.path(),
        7,
        "mtimes",
        &json!({"mtimes": {"session.jsonl": "yesterday"}}),
    );
    case(
        root.path(),
        8,
        "mtimes-outside",
        &json!({"mtimes": {"../session.jsonl": "2026-01-01T00:00:00.000Z"}}),
    );
    case(
        root.path(),
        9,
        "fault-outside",
        &json!({"op": "apply", "faults": [{"on": "write", "path": "../*", "error": "EIO"}]}),
    );
    write(&root.path().join("g/broken/case.json"), "{not json");
    // The good case's golden: bless writes it from the reference.
    session_conformance::harness::bless(root.path(), Some("g/good"), &mut Vec::new())
        .expect("bless");
    assert!(good.join("expected.json").is_file());

    let cases = corpus::load(root.path()).expect("the corpus loads");
    let refused: Vec<&str> = cases
        .iter()
        .filter(|c| c.refused.is_some())
        .map(|c| c.file.name.as_str())
        .collect();
    assert_eq!(
        refused,
        [
            "absolute",
            "agent",
            "broken",
            "climbs",
            "fault-outside",
            "mtimes",
            "mtimes-outside",
            "profile",
            "repeat"
        ]
    );
    let problems = corpus::check(root.path());
    assert_eq!(
        problems
            .iter()
            .filter(|p| matches!(p.kind, corpus::CorpusProblem::Refused(_)))
            .count(),
        9,
        "{problems:?}"
    );

    let run = Harness::new(root.path())
        .profile(Profile::Pi)
        .jobs(1)
        .run_reference()
        .expect("the run goes on");
    for result in &run.results {
        if result.name == "g/good" {
            assert_eq!(result.status, Status::Pass, "{result:?}");
        } else {
            assert_eq!(result.status, Status::Fail, "{result:?}");
            assert!(result.notes[0].starts_with("case error: "), "{result:?}");
        }
    }
    assert_eq!(run.results.len(), 10);
    assert_eq!(
        fs::read_to_string(&victim).expect("still there"),
        "not a session\n",
        "the file outside the case is neither renamed nor replaced"
    );
    assert_eq!(fs::read_dir(outside.path()).expect("dir").count(), 1);
}

/// Item 1, at the reference adapter itself (`serve` answers any runner): a path out of the
/// case directory is an error, whatever the request.
#[test]
fn the_reference_refuses_paths_out_of_the_case() {
    let dir = tempfile::tempdir().expect("dir");
    for (op, args) in [
        ("load", json!({"file": "/etc/passwd"})),
        ("apply", json!({"open": "../x.jsonl", "steps": []})),
        ("apply", json!({"fork_from": "/etc/hosts", "steps": []})),
        ("list", json!({"session_dir": "../.."})),
        ("recent", json!({"agent_dir": "/"})),
    ] {
        let request = Request {
            kind: "request".into(),
            case: "c".into(),
            op: op.into(),
            profile: "omp".into(),
            dir: dir.path().to_string_lossy().into_owned(),
            args: Args::from_text(
                serde_json::value::RawValue::from_string(args.to_string()).expect("json"),
            ),
            faults: Vec::new(),
        };
        let response = session_conformance::execute::execute(request);
        let error = response
            .error
            .unwrap_or_else(|| panic!("{op} {args}: no error"));
        assert!(
            error.message.contains("absolute") || error.message.contains("leaves"),
            "{op} {args}: {}",
            error.message
        );
    }
}

// 4 and 7. Walks never follow a link to a folder and cannot loop.
#[cfg(unix)]
#[test]
fn walks_do_not_follow_folder_links_or_loop() {
    use std::os::unix::fs::symlink;
    let store = tempfile::tempdir().expect("dir");
    let sessions = store.path().join("sessions/--p--");
    write(&sessions.join("a.jsonl"), &format!("{HEADER}\n"));
    symlink("..", sessions.join("up")).expect("link");
    symlink("loop-b", sessions.join("loop-a")).expect("link");
    symlink("loop-a", sessions.join("loop-b")).expect("link");
    symlink(".", sessions.join("self")).expect("link");
    let outside = tempfile::tempdir().expect("dir");
    write(&outside.path().join("x.jsonl"), &format!("{HEADER}\n"));
    symlink(outside.path(), sessions.join("out")).expect("link");

    let (files, problems) = validate::files(store.path());
    assert_eq!(files, [sessions.join("a.jsonl")], "{problems:?}");
    let out = cli()
        .args(["sessions", "check", "--agent-dir"])
        .arg(store.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.ends_with("1 file(s), 0 error(s), 0 warning(s)\n"),
        "{text}"
    );

    // The corpus walk too: a loop of folder links in a corpus is not followed.
    let corpus_root = tempfile::tempdir().expect("dir");
    case(corpus_root.path(), 1, "one", &json!({}));
    symlink(".", corpus_root.path().join("g/again")).expect("link");
    symlink(
        corpus_root.path(),
        corpus_root.path().join("g/one/input/up"),
    )
    .expect("link");
    let cases = corpus::load(corpus_root.path()).expect("loads");
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].inputs.len(), 1, "{:?}", cases[0].inputs.keys());
}

// 5. Special files: a snapshot names them by kind without opening them, and reads no
// more than its limit of a file.
#[cfg(unix)]
#[test]
fn a_snapshot_names_special_files_and_caps_what_it_reads() {
    let dir = tempfile::tempdir().expect("dir");
    mkfifo(&dir.path().join("pipe.jsonl"));
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.jsonl")).expect("link");
    let sparse = fs::File::create(dir.path().join("sparse.bin")).expect("file");
    sparse.set_len(1 << 40).expect("1 TiB, sparse");
    write(&dir.path().join("ok.jsonl"), "{}\n");
    let start = Instant::now();
    let files = snapshot(dir.path(), &std::collections::BTreeMap::new());
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(files["pipe.jsonl"], json!({"special": "fifo"}));
    assert_eq!(files["zero.jsonl"], json!({"special": "character device"}));
    assert_eq!(files["sparse.bin"]["bytes"], json!(1_u64 << 40));
    assert!(files["sparse.bin"]["unread"]
        .as_str()
        .is_some_and(|s| s.contains("limit")));
    assert_eq!(files["ok.jsonl"], json!({"lines": [{}]}));
}

/// Item 5: `validate` and `sessions show` refuse a FIFO in a store instead of waiting
/// on it; the CLI refuses a device given as FILE.
#[cfg(unix)]
#[test]
fn validate_and_show_refuse_special_files() {
    let store = tempfile::tempdir().expect("dir");
    let sessions = store.path().join("sessions/--p--");
    write(&sessions.join("a.jsonl"), &format!("{HEADER}\n"));
    mkfifo(&sessions.join("b.jsonl"));
    let out = cli()
        .args(["validate", "--profile", "pi"])
        .arg(store.path())
        .timeout(Duration::from_secs(20))
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("b.jsonl:0: error: cannot read: is a fifo"),
        "{text}"
    );
    assert!(
        text.ends_with("2 file(s), 1 error(s), 0 warning(s)\n"),
        "{text}"
    );
    cli()
        .args(["sessions", "show", "--agent-dir"])
        .arg(store.path())
        .arg(sessions.join("b.jsonl"))
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr_eq("session-conformance: [..]b.jsonl: is a fifo, not a regular file; not read\n");
    for command in ["load", "tree", "context"] {
        cli()
            .args([command, "/dev/zero", "--profile", "pi"])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2);
        // A named pipe whose writer closes it without writing reads as empty: an error
        // at once. (One that nobody opens is waited for, up to `guard::PIPE_IDLE_TIMEOUT`:
        // issue #41 item 17, `guard`'s unit test.)
        let start = Instant::now();
        let fifo = sessions.join("b.jsonl");
        let writer = std::thread::spawn(move || {
            drop(
                fs::OpenOptions::new()
                    .write(true)
                    .open(fifo)
                    .expect("writer"),
            );
        });
        cli()
            .args([command])
            .arg(sessions.join("b.jsonl"))
            .args(["--profile", "pi"])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2);
        writer.join().expect("writer");
        assert!(start.elapsed() < Duration::from_secs(10));
    }
    let fifo = sessions.join("b.jsonl");
    let writer = std::thread::spawn(move || {
        drop(
            fs::OpenOptions::new()
                .write(true)
                .open(fifo)
                .expect("writer"),
        );
    });
    cli()
        .args(["validate", "--profile", "pi"])
        .arg(sessions.join("b.jsonl"))
        .timeout(Duration::from_secs(20))
        .assert()
        .code(1)
        .stdout_eq("[..]b.jsonl:0: error: no session header; the file is not a session\n1 file(s), 1 error(s), 0 warning(s)\n");
    writer.join().expect("writer");
}

/// An adapter in the shell: says hello, then runs `then`.
fn shell_adapter(then: &str) -> Vec<String> {
    let hello = r#"{"type":"hello","implementation":"sh","version":"1","profile":"pi","operations":["load"],"capabilities":[]}"#;
    vec![
        "sh".into(),
        "-c".into(),
        format!("read line; echo '{hello}'; {then}"),
    ]
}

fn load_request(args: &Value) -> Request {
    Request {
        kind: "request".into(),
        case: "0001".into(),
        op: "load".into(),
        profile: "pi".into(),
        dir: "/nonexistent".into(),
        args: Args::from_text(
            serde_json::value::RawValue::from_string(args.to_string()).expect("json"),
        ),
        faults: Vec::new(),
    }
}

// 6. The time limit covers the request's write (an adapter that never reads its stdin)
// and the hello.
#[test]
fn an_adapter_that_does_not_read_cannot_hold_the_runner() {
    let mut adapter = ProcessAdapter::new(shell_adapter("sleep 600"), Profile::Pi, false);
    adapter.hello().expect("hello");
    let big = load_request(&json!({"m": "x".repeat(3 << 20)}));
    let start = Instant::now();
    assert_eq!(
        adapter.call(&big, Duration::from_secs(2)),
        Err(Failure::Timeout)
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn the_hello_wait_honours_the_timeout() {
    let argv = vec!["sh".into(), "-c".into(), "sleep 600".into()];
    let mut adapter =
        ProcessAdapter::new(argv, Profile::Pi, false).with_timeout(Duration::from_secs(1));
    let start = Instant::now();
    assert_eq!(
        adapter.hello(),
        Err(Failure::Crash("no hello within 1 s".into()))
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}

// 8. A timed-out adapter is killed with its process group: what it started dies too.
#[cfg(target_os = "linux")]
#[test]
fn a_timed_out_adapter_is_killed_with_its_children() {
    let dir = tempfile::tempdir().expect("dir");
    let pid_file = dir.path().join("pid");
    let then = format!(
        "sleep 600 & echo $! > {}; read request; sleep 600",
        pid_file.display()
    );
    let mut adapter = ProcessAdapter::new(shell_adapter(&then), Profile::Pi, false);
    adapter.hello().expect("hello");
    let small = load_request(&json!({}));
    assert_eq!(
        adapter.call(&small, Duration::from_millis(500)),
        Err(Failure::Timeout)
    );
    let pid = fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .to_owned();
    let gone = || {
        fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| stat.contains(") Z "))
    };
    let start = Instant::now();
    while !gone() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(), "the adapter's child {pid} still runs");
}

// 9. Deep input: no command aborts; each reports the line past the nesting limit.
#[test]
fn deep_files_are_refused_not_overflowed() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("deep.jsonl");
    let blob = format!("\"blob:sha256:{}\"", "0".repeat(64));
    fs::write(&file, deep_session(100_000, &blob)).expect("write");
    for (command, profile) in [
        ("load", "pi"),
        ("tree", "omp"),
        ("context", "omp"),
        ("load", "omp"),
    ] {
        cli()
            .args([command])
            .arg(&file)
            .args(["--profile", profile])
            .assert()
            .code(2)
            .stderr_eq("session-conformance: [..]deep.jsonl: line 2: nested 100002 levels deep, deeper than the limit of 1000\n");
    }
    cli()
        .args(["tree", "--format", "text", "--profile", "omp"])
        .arg(&file)
        .assert()
        .code(2);
    let out = cli()
        .args(["validate", "--profile", "pi"])
        .arg(&file)
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("deep.jsonl:2: error: the line is nested 100002 levels deep"),
        "{text}"
    );
}

/// Item 9: a response nested 5,000 deep fails its case as a protocol error; the runner lives.
#[test]
fn a_deep_response_fails_only_its_case() {
    let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let then = format!(
        "while read line; do echo '{{\"type\":\"response\",\"case\":\"0001\",\"ok\":{deep}}}'; done"
    );
    let mut adapter = ProcessAdapter::new(shell_adapter(&then), Profile::Pi, false);
    adapter.hello().expect("hello");
    match adapter.call(&load_request(&json!({})), Duration::from_secs(20)) {
        Err(Failure::Protocol(message)) => {
            assert!(message.contains("deeper than the limit"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// Item 9: a file the adapter leaves with a line nested past the limit is described, not parsed.
#[test]
fn a_deep_file_left_is_described_by_size_and_hash() {
    let dir = tempfile::tempdir().expect("dir");
    write(&dir.path().join("s.jsonl"), &deep_session(100_000, "1"));
    let files = snapshot(dir.path(), &std::collections::BTreeMap::new());
    let lines = files["s.jsonl"]["lines"].as_array().expect("lines");
    assert_eq!(lines[0]["type"], "session");
    assert!(lines[1]["$deep"]["sha256"].is_string(), "{}", lines[1]);
}

// 11. Under `ulimit -f`, a write past the limit is a latched persistence error, not a
// SIGXFSZ death.
#[cfg(unix)]
#[test]
fn a_file_size_limit_is_a_persistence_error() {
    let dir = tempfile::tempdir().expect("dir");
    let bin = snapbox::cmd::cargo_bin!("session-conformance");
    let text = "y".repeat(64 * 1024);
    let request = json!({
        "type": "request", "case": "c", "op": "persist", "profile": "pi",
        "dir": dir.path(),
        "args": {"message": {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": 2}},
    });
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 8; exec '{}' serve --profile pi",
            bin.display()
        ))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            writeln!(stdin, "{request}")?;
            drop(stdin);
            child.wait_with_output()
        })
        .expect("serve runs");
    assert!(out.status.success(), "{:?}", out.status);
    let response: Value = serde_json::from_slice(&out.stdout).expect("one response");
    assert_eq!(response["error"]["kind"], "persistence", "{response}");
}

// 13. `validate DIR` goes on past a file it cannot read, and reports invalid UTF-8.
#[cfg(unix)]
#[test]
fn validate_goes_on_past_an_unreadable_file_and_reports_invalid_utf8() {
    let dir = tempfile::tempdir().expect("dir");
    std::os::unix::fs::symlink("missing", dir.path().join("a.jsonl")).expect("link");
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(b"{\"type\":\"custom\",\"customType\":\"\xff\",\"id\":\"aaaa0001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\"}\n");
    fs::write(dir.path().join("b.jsonl"), bytes).expect("write");
    let results = validate::validate_path(
        dir.path(),
        &Schemas::new(),
        &Options {
            profile: Some(Profile::Pi),
            blob_dir: None,
        },
    )
    .expect("the folder exists");
    let all: Vec<String> = results
        .iter()
        .flat_map(|(findings, _)| findings.iter().map(ToString::to_string))
        .collect();
    assert_eq!(results.len(), 2, "{all:?}");
    assert!(all[0].contains("a.jsonl:0: error: cannot read"), "{all:?}");
    assert!(
        all[1].contains("b.jsonl:2: error: invalid UTF-8"),
        "{all:?}"
    );
}

// 14. Control characters from a store are escaped when printed.
#[test]
fn control_characters_from_a_store_are_escaped() {
    let store = tempfile::tempdir().expect("dir");
    let header = r#"{"type":"session","version":3,"id":"evil\u001b]0;owned\u0007","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
    let entry = r#"{"type":"message","id":"a\u001b[2J","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#;
    let file = store.path().join("sessions/--p--/s.jsonl");
    write(&file, &format!("{header}\n{entry}\n"));
    for args in [
        vec!["sessions", "list", "--all", "--agent-dir"],
        vec!["sessions", "show", "--agent-dir"],
    ] {
        let mut command = cli().args(&args).arg(store.path());
        if args[1] == "show" {
            command = command.arg(&file);
        }
        let out = command.assert().success().get_output().stdout.clone();
        let text = String::from_utf8_lossy(&out);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(text.contains("\\u{1b}"), "{text}");
    }
    let out = cli()
        .args(["tree", "--format", "text", "--profile", "pi"])
        .arg(&file)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(!out.contains(&0x1b), "{}", String::from_utf8_lossy(&out));
}
