//! Issue #45: `run` and `serve` take memory by the bytes they read, not by the values
//! those bytes hold. Each row runs the CLI on a 20 MB message (an adapter's answer to
//! `run`, a request to `serve`) and reads the peak memory of the process and what it
//! waited for (`wait4`'s `ru_maxrss`, from a small Python wrapper: the CLI's own
//! children are counted, so the adapter is too, and the bound holds all the more for
//! the CLI alone). The bound is README's: 400 MB plus 20 times the message's bytes (the
//! 400 MB are for an answer of a million values, `guard::MAX_MESSAGE_VALUES`: 270 MB
//! measured).
//!
//! One test in its own binary: the peak is of the measured process alone.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// An adapter that answers its hello, then each request with `ok` set to the JSON text
/// read from the file named by its first argument.
const ADAPTER: &str = r#"
import json, sys
answer = open(sys.argv[1]).read()
for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "hello":
        print(json.dumps({"type": "hello", "implementation": "big", "version": "0",
                          "profile": "pi", "operations": ["load"]}), flush=True)
    elif message.get("type") == "request":
        sys.stdout.write('{"type":"response","case":%s,"ok":%s}\n' % (json.dumps(message["case"]), answer))
        sys.stdout.flush()
    else:
        break
"#;

/// Runs argv[1:] with stdin from the file argv[0] ("-" for none), counts its stdout's
/// bytes, and prints `maxrss_kib BYTES_OUT EXIT` on stderr's last line.
const MEASURE: &str = r#"
import os, subprocess, sys
stdin = subprocess.DEVNULL if sys.argv[1] == "-" else open(sys.argv[1], "rb")
child = subprocess.Popen(sys.argv[2:], stdin=stdin, stdout=subprocess.PIPE)
out, tail = 0, b""
while True:
    chunk = child.stdout.read(1 << 16)
    if not chunk:
        break
    out += len(chunk)
    tail = (tail + chunk)[-4000:]
_, status, usage = os.wait4(child.pid, 0)
sys.stdout.buffer.write(tail)
print(usage.ru_maxrss, out, os.waitstatus_to_exitcode(status), file=sys.stderr)
"#;

const MB: u64 = 1_000_000;

/// A corpus of one `load` case whose golden is `{"files": {}, "response": {"ok": []}}`.
fn corpus(root: &Path) {
    let dir = root.join("g/big-answer");
    fs::create_dir_all(dir.join("input")).expect("folders");
    fs::write(
        dir.join("case.json"),
        r#"{"id": 1, "name": "big-answer", "profiles": ["pi"], "clauses": ["loading.1"], "op": "load", "args": {"file": "session.jsonl"}}"#,
    )
    .expect("case.json");
    fs::write(
        dir.join("input/session.jsonl"),
        "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n",
    )
    .expect("input");
    fs::write(
        dir.join("expected.json"),
        "{\n  \"files\": {},\n  \"response\": {\n    \"ok\": []\n  }\n}\n",
    )
    .expect("golden");
}

/// What a measured command did: its peak memory in bytes, its stdout's size and last
/// bytes, its exit code.
struct Measured {
    peak: u64,
    out_bytes: u64,
    tail: String,
    exit: i32,
}

fn measure(dir: &Path, stdin: &str, argv: &[&str]) -> Measured {
    let output = Command::new("python3")
        .arg("-c")
        .arg(MEASURE)
        .arg(stdin)
        .args(argv)
        .current_dir(dir)
        .env_remove("CI")
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    let numbers: Vec<i64> = last.split(' ').filter_map(|n| n.parse().ok()).collect();
    assert_eq!(numbers.len(), 3, "the wrapper's last line: {stderr}");
    Measured {
        peak: u64::try_from(numbers[0]).unwrap_or(0) * 1024,
        out_bytes: u64::try_from(numbers[1]).unwrap_or(0),
        tail: String::from_utf8_lossy(&output.stdout).into_owned(),
        exit: i32::try_from(numbers[2]).unwrap_or(-1),
    }
}

#[test]
fn run_and_serve_take_memory_by_bytes_not_values() {
    let bin = env!("CARGO_BIN_EXE_session-conformance");
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path();
    corpus(&root.join("corpus"));
    fs::write(root.join("adapter.py"), ADAPTER).expect("adapter");
    let zeros = |n: usize| format!("[{}0]", "0,".repeat(n - 1));
    let answers = [
        // 20 MB of numbers: ten million values, over the limit; refused unparsed.
        (
            "numbers",
            zeros(10_000_000),
            "protocol-error",
            "JSON values",
        ),
        // Just under the limit of values: parsed, compared and diffed.
        (
            "numbers under the limit",
            zeros(999_990),
            "fail",
            "0001 g/big-answer (pi, fail)",
        ),
        // 20 MB in one string: bytes, few values.
        (
            "a string",
            format!("\"{}\"", "x".repeat(20_000_000)),
            "fail",
            "0001 g/big-answer (pi, fail)",
        ),
    ];
    let mut failures = Vec::new();
    for (what, answer, status, said) in &answers {
        fs::write(root.join("answer.json"), answer).expect("answer");
        let run = measure(
            root,
            "-",
            &[
                bin,
                "run",
                "--corpus",
                "corpus",
                "--profile",
                "pi",
                "--timeout",
                "120",
                "--adapter",
                "python3",
                "adapter.py",
                "answer.json",
            ],
        );
        let input = answer.len() as u64;
        let bound = 400 * MB + 20 * input;
        eprintln!(
            "run, {what}: {} bytes in, peak {} MB, report {} bytes, exit {}",
            input,
            run.peak / MB,
            run.out_bytes,
            run.exit
        );
        let text = format!("{} {}", run.tail, status);
        if run.peak > bound
            || run.out_bytes > 1_000_000
            || run.exit != 1
            || !run.tail.contains(status)
            || !run.tail.contains(said)
        {
            failures.push(format!(
                "run, {what}: peak {} MB (bound {} MB), report {} bytes, exit {}: {text}",
                run.peak / MB,
                bound / MB,
                run.out_bytes,
                run.exit
            ));
        }
    }
    // serve: a request of 20 MB of numbers, refused unparsed.
    let request = format!(
        "{{\"type\":\"request\",\"case\":\"c\",\"op\":\"load\",\"profile\":\"pi\",\"dir\":\"/tmp\",\"args\":{}}}\n",
        zeros(10_000_000)
    );
    fs::write(root.join("request.json"), &request).expect("request");
    let served = measure(root, "request.json", &[bin, "serve", "--profile", "pi"]);
    let bound = 400 * MB + 20 * request.len() as u64;
    eprintln!(
        "serve: {} bytes in, peak {} MB, exit {}",
        request.len(),
        served.peak / MB,
        served.exit
    );
    if served.peak > bound || !served.tail.contains("JSON values") {
        failures.push(format!(
            "serve: peak {} MB (bound {} MB): {}",
            served.peak / MB,
            bound / MB,
            served.tail
        ));
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
