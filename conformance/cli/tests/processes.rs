//! Issue #41, items 11–13: adapter processes that lie in their acks, never say hello,
//! or exit while a child they started keeps their stdout open. Each test starts a small
//! fake adapter (a shell or Python script) and checks what the runner says of it, and
//! that it says so promptly.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;
use session_conformance::adapter::{Adapter, Failure, ProcessAdapter};
use session_conformance::protocol::{Args, Request};
use session_reference::model::Profile;

const HELLO: &str = r#"{"type":"hello","implementation":"fake","version":"1","profile":"pi","operations":["apply","load"],"capabilities":[]}"#;

/// A fake ack-mode adapter: it says hello, answers a later open (no ack mode) with an
/// error, and answers an ack-mode `apply` with the acks of `MODE` (its first argument)
/// and an empty response. It writes no file.
const FAKE_CRASH_ADAPTER: &str = r#"
import json, os, subprocess, sys

MODE = sys.argv[1]


def send(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def acks(case, steps):
    def ack(step, result, durable=True):
        send({"type": "ack", "case": case, "step": step, "result": result, "durable": durable})

    if MODE == "before-open":
        ack(0, "aaaa0001")
        ack(None, None, False)
    elif MODE == "open-twice":
        ack(None, None, False)
        ack(None, None, False)
    elif MODE == "duplicate":
        ack(None, None, False)
        ack(0, "aaaa0001")
        ack(0, "aaaa0001")
    elif MODE == "out-of-order":
        ack(None, None, False)
        ack(1, "aaaa0002")
    elif MODE == "out-of-range":
        ack(None, None, False)
        ack(9999, "aaaa0001")
    elif MODE == "malformed":
        ack(None, None, False)
        send({"type": "ack", "case": case, "step": "one", "result": None, "durable": True})
    elif MODE == "null-result":
        ack(None, None, False)
        ack(0, None)
    elif MODE == "same-id":
        ack(None, None, False)
        ack(0, "aaaa0001")
        ack(1, "aaaa0001")
    elif MODE == "unwritten":
        ack(None, None, False)
        for n in range(3):
            ack(n, "fake%04d" % n)
    elif MODE == "flood":
        ack(None, None, False)
        ack(0, "aaaa0001")
        for _ in range(3000000):
            ack(0, "aaaa0001")
    elif MODE == "exit-holding-stdout":
        ack(None, None, False)
        subprocess.Popen(["sleep", "60"])
        sys.stderr.write("boom\n")
        sys.stderr.flush()
        os._exit(3)


for raw in sys.stdin:
    msg = json.loads(raw)
    if msg.get("type") == "hello":
        send({"type": "hello", "implementation": "fake", "version": MODE, "profile": "pi",
              "operations": ["apply"], "capabilities": []})
    elif msg.get("type") == "bye":
        break
    elif msg.get("type") == "request":
        case, args = msg["case"], msg.get("args") or {}
        if args.get("ack") is True:
            acks(case, args.get("steps") or [])
            send({"type": "response", "case": case, "ok": {"results": []}})
        else:
            send({"type": "response", "case": case,
                  "error": {"kind": "exception", "message": "the fake does not reopen"}})
"#;

/// Writes the fake adapter into `dir`; its path.
fn fake_adapter(dir: &Path) -> PathBuf {
    let path = dir.join("fake.py");
    std::fs::write(&path, FAKE_CRASH_ADAPTER).expect("write the fake adapter");
    path
}

/// `crash` of one small trial against the fake adapter in `mode`.
fn crash_fake(mode: &str) -> (Output, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = fake_adapter(dir.path());
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_session-conformance"))
        .env_remove("CI")
        .args(["crash", "--profile", "pi", "--trials", "1", "--seed", "1"])
        .args(["--appends", "8", "--v1-entries", "5", "--timeout", "20"])
        .arg("--cases")
        .arg(dir.path().join("cases"))
        .args(["--adapter", "python3"])
        .arg(&fake)
        .args(["--", mode])
        .output()
        .expect("run session-conformance");
    (out, started.elapsed())
}

/// Stdout and stderr of `out`, after checking that it did not panic.
fn said(out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("panicked"), "{text}");
    text
}

/// The fake adapter in `mode` fails its run (exit 1 for a failed trial, 2 for a failed
/// calibration) with `message`, well before the 20 s timeout.
fn crash_fails_with(mode: &str, message: &str) {
    let (out, took) = crash_fake(mode);
    let text = said(&out);
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "{mode}: {:?}\n{text}",
        out.status
    );
    assert!(
        text.contains(message),
        "{mode}: wanted {message:?} in\n{text}"
    );
    assert!(took < Duration::from_secs(15), "{mode}: took {took:?}");
}

// 11. Acks out of place are protocol failures of the trial, naming the ack line.

#[test]
fn an_ack_of_a_step_before_the_open_is_a_protocol_failure() {
    crash_fails_with(
        "before-open",
        "ack line 1: step 0 acknowledged before the open",
    );
}

#[test]
fn a_second_ack_of_the_open_is_a_protocol_failure() {
    crash_fails_with("open-twice", "ack line 2: the open acknowledged twice");
}

#[test]
fn a_duplicated_ack_is_a_protocol_failure() {
    crash_fails_with("duplicate", "ack line 3: step 0 acknowledged twice");
}

#[test]
fn an_ack_out_of_order_is_a_protocol_failure() {
    crash_fails_with(
        "out-of-order",
        "ack line 2: step 1 acknowledged out of order; step 0 was due",
    );
}

#[test]
fn an_ack_of_a_step_the_plan_does_not_have_is_a_protocol_failure() {
    crash_fails_with(
        "out-of-range",
        "ack line 2: step 9999 acknowledged, but the plan has",
    );
}

#[test]
fn a_malformed_ack_is_a_protocol_failure() {
    crash_fails_with(
        "malformed",
        "ack line 2: a malformed ack: `step` is \"one\", not null or a step number",
    );
}

#[test]
fn an_append_acknowledged_without_an_entry_id_is_a_protocol_failure() {
    crash_fails_with(
        "null-result",
        "ack line 2: step 0 appends an entry, but its result null is neither an entry id nor an error",
    );
}

#[test]
fn an_entry_id_acknowledged_twice_is_a_protocol_failure() {
    crash_fails_with(
        "same-id",
        "ack line 3: step 1 returned entry id aaaa0001, which step 0 returned already",
    );
}

#[test]
fn durable_acks_of_entries_never_written_are_losses() {
    let (out, _) = crash_fake("unwritten");
    let text = said(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for n in 0..3 {
        assert!(
            text.contains(&format!(
                "session.jsonl: acknowledged entry fake{n:04} (step {n}) is missing"
            )),
            "{text}"
        );
    }
}

#[test]
fn a_flood_of_acks_is_cut_at_the_first_one_past_the_plan() {
    // Three million acks: the first repeated one stops the trial, and nothing after it
    // is read or kept.
    crash_fails_with("flood", "ack line 3: step 0 acknowledged twice");
}

// 13. An adapter that exits while a child it started holds its stdout is a crash,
// reported at once with its status and stderr.

#[test]
fn a_trial_adapter_that_exits_while_its_child_holds_stdout_is_reported_at_once() {
    crash_fails_with(
        "exit-holding-stdout",
        "adapter: it exited with status 3 before its answer; stderr: boom",
    );
}

/// A shell adapter: it reads the runner's hello, says its own, and runs `then`.
fn shell_adapter(then: &str) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("read line; echo '{HELLO}'; {then}"),
    ]
}

fn load_request() -> Request {
    Request {
        kind: "request".into(),
        case: "0001".into(),
        op: "load".into(),
        profile: "pi".into(),
        dir: "/nonexistent".into(),
        args: Args::from_text(
            serde_json::value::RawValue::from_string(json!({}).to_string()).expect("json"),
        ),
        faults: Vec::new(),
    }
}

#[test]
fn an_adapter_that_exits_while_its_child_holds_stdout_is_a_crash_at_once() {
    let argv = shell_adapter("read request; sleep 60 & echo boom >&2; exit 3");
    let mut adapter = ProcessAdapter::new(argv, Profile::Pi, false);
    adapter.hello().expect("hello");
    let started = Instant::now();
    let failure = adapter.call(&load_request(), Duration::from_secs(20));
    assert_eq!(
        failure,
        Err(Failure::Crash("exited with status 3; stderr: boom".into()))
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_one_shot_answer_written_just_before_the_exit_is_still_read() {
    let answer = r#"{"type":"response","case":"0001","ok":{"done":true}}"#;
    let argv = shell_adapter(&format!("read request; sleep 60 & echo '{answer}'; exit 0"));
    let mut adapter = ProcessAdapter::new(argv, Profile::Pi, false);
    adapter.hello().expect("hello");
    let response = adapter
        .call(&load_request(), Duration::from_secs(20))
        .expect("the answer it wrote before it exited");
    assert_eq!(response.ok, Some(json!({"done": true})));
}

// 12. The hello: waited for as long as --timeout says (fuzz: never past the budget),
// and reported as what happened.

/// `session-conformance ARGS… --adapter sh -- -c SCRIPT`, timed.
fn cli_with_shell_adapter(args: &[&str], script: &str) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_session-conformance"))
        .env_remove("CI")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .args(["--adapter", "sh", "--", "-c", script])
        .output()
        .expect("run session-conformance");
    (out, started.elapsed())
}

/// `run` of the parse group with one job and `timeout`.
fn run_args(timeout: &str) -> Vec<&str> {
    vec![
        "run",
        "--corpus",
        "../../corpus/cases",
        "--filter",
        "parse/*",
        "--profile",
        "pi",
        "--jobs",
        "1",
        "--timeout",
        timeout,
    ]
}

fn fuzz_args(dir: &Path, timeout: &str, budget: &str) -> Vec<String> {
    [
        "fuzz",
        "--profile",
        "pi",
        "--cases",
        "1",
        "--timeout",
        timeout,
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(["--budget".into(), budget.into(), "--out".into()])
    .chain([dir.to_string_lossy().into_owned()])
    .collect()
}

#[test]
fn fuzz_waits_for_the_hello_as_long_as_its_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = fuzz_args(dir.path(), "1", "600");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, took) = cli_with_shell_adapter(&args, "sleep 600");
    let text = said(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("the adapter did not start: no hello within 1 s\n"),
        "{text}"
    );
    assert!(
        !text.contains("exited"),
        "a live adapter did not exit: {text}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

#[test]
fn fuzz_waits_for_the_hello_no_longer_than_its_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = fuzz_args(dir.path(), "60", "1");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, took) = cli_with_shell_adapter(&args, "sleep 600");
    let text = said(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("no hello within 1 s"), "{text}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

#[test]
fn fuzz_and_run_say_how_an_adapter_ended_before_its_hello() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fuzz = fuzz_args(dir.path(), "20", "600");
    let run = run_args("20");
    for args in [fuzz.iter().map(String::as_str).collect(), run] {
        let (out, took) = cli_with_shell_adapter(&args, "echo oops >&2; exit 3");
        let text = said(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(
            text.contains("the adapter did not start: exited with status 3 before its hello: oops"),
            "{args:?}: {text}"
        );
        assert!(took < Duration::from_secs(15), "took {took:?}");
    }
}

#[test]
fn run_says_no_hello_of_a_live_adapter_and_not_that_it_exited() {
    let run = run_args("1");
    let (out, _) = cli_with_shell_adapter(&run, "sleep 600");
    let text = said(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("the adapter did not start: no hello within 1 s\n"),
        "{text}"
    );
}

#[test]
fn an_adapter_that_exits_before_its_hello_while_its_child_holds_stdout_is_reported_at_once() {
    let (out, took) = cli_with_shell_adapter(&run_args("20"), "sleep 60 & echo gone >&2; exit 4");
    let text = said(&out);
    assert!(
        text.contains("exited with status 4 before its hello: gone"),
        "{text}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
}
