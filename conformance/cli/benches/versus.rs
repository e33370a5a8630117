//! The reference side by side with the real implementations (pi-mono on Node, omp on Bun), on the same files.
//!
//! Run with `cargo bench -p session-conformance-cli --bench versus` (the adapters' node_modules must be installed).
//!
//! Sessions: about 1, 10 and 100 MB of ~1 KB entries (a branch every 50 entries, a
//! compaction every 500), and a chain of 1,000,000 small entries. For each it times, in a
//! fresh process per implementation and operation (the reference: per run): load, context at
//! the leaf, get_tree (median of 5 runs; 9 for the reference), and 10,000 appends with fsync off and on (median of 3 runs);
//! and end to end (`e2e`), a fresh process per run: the CLI's `context FILE` against each real
//! implementation's open + buildSessionContext (omp 13.19.0, and 18.x as a column of its own). It
//! reports peak memory from the operating system (`VmHWM`), a bare serde_json parse of
//! every line as the floor, ratios against the other implementations measured in the same
//! run, and how each operation grows from 1 to 10 to 100 MB.
//!
//! `BENCH_SIZES_MB=1,10` picks the sizes (default 1,10,100); `BENCH_CHAIN=0` skips the chain;
//! `BENCH_ANCHOR=FILE` adds a session file as it is (the 120 MB anchor of `make_anchor_session.py`);
//! `BENCH_REAL=0` runs the reference only; `BENCH_OPS=e2e,load` runs only those operations.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};
use session_reference::model::Profile;
use session_reference::session::{Options, SessionManager};

/// Timed runs of load, context and tree.
const RUNS: usize = 5;
/// Timed runs of load, context and tree for the reference, each a process of its own:
/// more, as they are cheap and the smallest take under a millisecond, where a single
/// slow run moves a median of five (and the growth ratio computed from it).
const REFERENCE_RUNS: usize = 9;
/// Timed runs of the 10,000 appends.
const APPEND_RUNS: usize = 3;
/// Appends per run.
const APPENDS: usize = 10_000;
/// Entries of the chain session.
const CHAIN: usize = 1_000_000;
/// A real implementation that takes longer than this on one measurement is stopped.
const TIMEOUT_SECS: u64 = 300;

const OPS: [&str; 7] = [
    "floor",
    "load",
    "context",
    "tree",
    "append",
    "append-fsync",
    "e2e",
];
const IMPLS: [&str; 4] = ["reference", "pi-mono", "omp", "omp-18"];

/// One measurement: a session, an operation, an implementation.
struct Row {
    session: String,
    op: &'static str,
    implementation: &'static str,
    result: Value,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let (op, file) = (&args[2], Path::new(&args[3]));
        println!("{}", child(op, file));
        return;
    }
    let root = tempfile::tempdir().expect("temp dir");
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES_MB").ok().map_or_else(
        || vec![1, 10, 100],
        |s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
    );
    let real = std::env::var("BENCH_REAL").map_or(true, |v| v != "0");
    let ops: Vec<&str> = std::env::var("BENCH_OPS").map_or_else(
        |_| OPS.to_vec(),
        |list| {
            OPS.into_iter()
                .filter(|op| list.split(',').any(|o| o.trim() == *op))
                .collect()
        },
    );
    let mut sessions: Vec<(String, std::path::PathBuf)> = Vec::new();
    for &mb in &sizes {
        let file = root.path().join(format!("session-{mb}mb.jsonl"));
        let entries = write_session(&file, mb * 1024 * 1024);
        eprintln!("{mb} MB: {entries} entries");
        sessions.push((format!("{mb} MB"), file));
    }
    if let Some(anchor) = std::env::var_os("BENCH_ANCHOR") {
        // The 120 MB session of `shared/bench/make_anchor_session.py`, which the issues' targets use.
        sessions.push(("anchor".to_owned(), std::path::PathBuf::from(anchor)));
    }
    if std::env::var("BENCH_CHAIN").map_or(true, |v| v != "0") {
        let file = root.path().join("chain.jsonl");
        write_chain(&file, CHAIN);
        let mb = std::fs::metadata(&file).map_or(0, |m| m.len()) / 1_048_576;
        eprintln!("chain: {CHAIN} entries, {mb} MB");
        sessions.push(("1M chain".to_owned(), file));
    }
    let mut rows = Vec::new();
    for (session, file) in &sessions {
        for &op in &ops {
            for implementation in IMPLS {
                if (implementation != "reference" && (op == "floor" || !real))
                    || (session == "1M chain" && op.starts_with("append"))
                {
                    continue;
                }
                let result = measure(implementation, op, file);
                eprintln!("{session} {op} {implementation}: {result}");
                rows.push(Row {
                    session: session.clone(),
                    op,
                    implementation,
                    result,
                });
            }
        }
    }
    let sizes: Vec<(String, u64)> = sessions
        .iter()
        .map(|(s, f)| (s.clone(), std::fs::metadata(f).map_or(0, |m| m.len())))
        .collect();
    print!("{}", report(&rows, &sizes));
}

/// A session of about `bytes` bytes: ~1 KB entries, a branch every 50 entries, a compaction every 500.
fn write_session(path: &Path, bytes: usize) -> usize {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let _ = writeln!(out, "{}", header());
    let text = "lorem ipsum dolor sit amet ".repeat(30);
    let (mut written, mut n) = (0usize, 0usize);
    let mut ids: Vec<String> = Vec::new();
    while written < bytes {
        n += 1;
        let id = format!("{n:08x}");
        let parent = match ids.len() {
            0 => Value::Null,
            len if n % 50 == 0 && len > 10 => json!(ids[len - 10]),
            len => json!(ids[len - 1]),
        };
        let line = if n % 500 == 0 && ids.len() > 20 {
            json!({"type":"compaction","id":id,"parentId":parent,"timestamp":"2025-06-01T12:00:00.000Z","summary":text,"firstKeptEntryId":ids[ids.len() - 20],"tokensBefore":1000})
        } else {
            message(&id, &parent, n % 2 == 0, &text)
        };
        let line = line.to_string();
        let _ = writeln!(out, "{line}");
        written += line.len() + 1;
        ids.push(id);
    }
    n
}

/// A chain of `count` small messages, each the parent of the next, and no compaction.
fn write_chain(path: &Path, count: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let _ = writeln!(out, "{}", header());
    for n in 1..=count {
        let parent = if n == 1 {
            Value::Null
        } else {
            json!(format!("{:08x}", n - 1))
        };
        let line = message(&format!("{n:08x}"), &parent, n % 2 == 0, "a short message");
        let _ = writeln!(out, "{line}");
    }
}

fn header() -> &'static str {
    r#"{"type":"session","version":3,"id":"0000000000000001","timestamp":"2025-06-01T12:00:00.000Z","cwd":"/proj"}"#
}

fn message(id: &str, parent: &Value, assistant: bool, text: &str) -> Value {
    if assistant {
        json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-06-01T12:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":text}],"provider":"anthropic","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}})
    } else {
        json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-06-01T12:00:00.000Z","message":{"role":"user","content":text,"timestamp":1}})
    }
}

/// Runs one measurement in its own process; `{medianMs, runs, peakRssBytes}` or `{error}`.
fn measure(implementation: &str, op: &str, file: &Path) -> Value {
    if op == "e2e" {
        return measure_e2e(implementation, file);
    }
    let runs = if op.starts_with("append") {
        APPEND_RUNS
    } else {
        RUNS
    };
    let script = match implementation {
        "reference" => {
            let runs = if op.starts_with("append") {
                APPEND_RUNS
            } else {
                REFERENCE_RUNS
            };
            return measure_reference(op, file, runs);
        }
        real => real_script(real),
    };
    run(real_command(implementation, script, op, file, runs))
}

/// The command line of a real implementation's bench script.
fn real_script(implementation: &str) -> Vec<std::ffi::OsString> {
    let here = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    match implementation {
        "pi-mono" => vec![
            "node".into(),
            here.join("adapters/pi-mono/bench.mjs").into_os_string(),
        ],
        // omp 13.19.0 and 18.x share omp's bench script, each with its own Bun.
        omp => vec![
            here.join(format!(
                "adapters/{omp}/node_modules/@oven/bun-linux-x64/bin/bun"
            ))
            .into_os_string(),
            here.join("adapters/omp/bench.ts").into_os_string(),
        ],
    }
}

/// A real implementation's bench script for `op` on `file`, stopped by coreutils
/// `timeout` if it hangs; omp 18.x is pointed at its own package.
fn real_command(
    implementation: &str,
    script: Vec<std::ffi::OsString>,
    op: &str,
    file: &Path,
    runs: usize,
) -> Command {
    let here = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut command = Command::new("timeout");
    command
        .arg(TIMEOUT_SECS.to_string())
        .args(script)
        .arg(op)
        .arg(file)
        .arg(runs.to_string());
    if implementation == "omp-18" {
        command.env(
            "OMP_PKG_DIR",
            here.join("adapters/omp-18/node_modules/@oh-my-pi/pi-coding-agent"),
        );
    }
    command
}

/// End to end, as a user runs it, a fresh process per run: the CLI's `context FILE`
/// with its output (to /dev/null), timed from outside and its peak read by
/// `/usr/bin/time`; a real implementation's open + buildSessionContext, timed from its
/// process's start. The median time and the highest peak.
fn measure_e2e(implementation: &str, file: &Path) -> Value {
    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..RUNS {
        let result = if implementation == "reference" {
            cli_context(file)
        } else {
            run(real_command(
                implementation,
                real_script(implementation),
                "e2e",
                file,
                1,
            ))
        };
        let Some(ms) = result["medianMs"].as_f64() else {
            return result;
        };
        times.push(ms);
        peak = peak.max(result["peakRssBytes"].as_u64().unwrap_or(0));
    }
    times.sort_by(f64::total_cmp);
    json!({"impl": implementation, "op": "e2e", "runs": times, "medianMs": times[times.len() / 2], "peakRssBytes": peak})
}

/// One `session-conformance context FILE --profile omp > /dev/null` in a fresh process.
fn cli_context(file: &Path) -> Value {
    let mut command = Command::new("/usr/bin/time");
    command
        .args(["-f", "%M"])
        .arg(env!("CARGO_BIN_EXE_session-conformance"))
        .arg("context")
        .arg(file)
        .args(["--profile", "omp"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let output = match command.output() {
        Ok(output) => output,
        Err(e) => return json!({"error": format!("/usr/bin/time: {e}")}),
    };
    let ms = elapsed_ms(start);
    if !output.status.success() {
        return json!({"error": String::from_utf8_lossy(&output.stderr).trim().to_owned()});
    }
    let kb = String::from_utf8_lossy(&output.stderr)
        .lines()
        .last()
        .and_then(|l| l.trim().parse::<u64>().ok())
        .unwrap_or(0);
    json!({"medianMs": ms, "peakRssBytes": kb * 1024})
}

/// Each run of the reference in a fresh process, as a user's first load is: no run
/// reuses memory that an earlier one faulted in. The median time and the highest peak.
fn measure_reference(op: &str, file: &Path, runs: usize) -> Value {
    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..runs {
        let mut command = Command::new(std::env::current_exe().expect("bench binary"));
        command.args(["--child", op]).arg(file);
        let result = run(command);
        let Some(ms) = result["ms"].as_f64() else {
            return result;
        };
        times.push(ms);
        peak = peak.max(result["peakRssBytes"].as_u64().unwrap_or(0));
    }
    times.sort_by(f64::total_cmp);
    json!({"impl": "reference", "op": op, "runs": times, "medianMs": times[times.len() / 2], "peakRssBytes": peak})
}

/// Runs a measuring process and reads the JSON object on its last line of output.
fn run(mut command: Command) -> Value {
    let output = match command.stdin(Stdio::null()).output() {
        Ok(output) => output,
        Err(e) => return json!({"error": e.to_string()}),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str::<Value>(last)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let why = match output.status.code() {
                Some(124) => format!("timed out after {TIMEOUT_SECS} s"),
                _ => stderr
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("crashed")
                    .chars()
                    .take(80)
                    .collect(),
            };
            json!({ "error": why })
        })
}

/// Runs one measurement in this process and reports `{ms, peakRssBytes}`.
fn child(op: &str, file: &Path) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("s.jsonl");
    std::fs::copy(file, &copy).expect("copy");
    // The copy's pages are written out now, not by the first fsync of a timed append.
    std::fs::File::open(&copy)
        .and_then(|f| f.sync_all())
        .expect("sync");
    let mut options = Options::new(Profile::Omp, "/proj", dir.path().join("sessions"));
    options.fsync_appends = op == "append-fsync";
    // What an operation leaves behind is dropped after the clock stops: the
    // JavaScript implementations free theirs in a later garbage collection.
    let (ms, left) = match op {
        "floor" => {
            let text = std::fs::read_to_string(&copy).expect("read");
            let start = Instant::now();
            // Each value is dropped as soon as it is parsed: the strictest floor.
            let parsed = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .count();
            assert!(parsed > 0);
            (elapsed_ms(start), Box::new(text) as Box<dyn std::any::Any>)
        }
        "load" => {
            let start = Instant::now();
            let sm = SessionManager::open(&copy, options).expect("open");
            assert!(!sm.entries().is_empty());
            (elapsed_ms(start), Box::new(sm) as Box<dyn std::any::Any>)
        }
        "context" => {
            let sm = SessionManager::open(&copy, options).expect("open");
            let start = Instant::now();
            let context = sm.build_context();
            assert!(!context.messages.is_empty());
            let ms = elapsed_ms(start);
            drop(context);
            (ms, Box::new(sm) as Box<dyn std::any::Any>)
        }
        "tree" => {
            let sm = SessionManager::open(&copy, options).expect("open");
            let start = Instant::now();
            let nodes = sm.get_tree();
            assert!(!nodes.is_empty());
            let ms = elapsed_ms(start);
            drop(nodes);
            (ms, Box::new(sm) as Box<dyn std::any::Any>)
        }
        _ => {
            let mut sm = SessionManager::open(&copy, options).expect("open");
            let start = Instant::now();
            for _ in 0..APPENDS {
                sm.append_message(
                    json!({"role":"user","content":"benchmark append","timestamp":1}),
                )
                .expect("append");
            }
            sm.flush().expect("flush");
            (elapsed_ms(start), Box::new(sm) as Box<dyn std::any::Any>)
        }
    };
    drop(left);
    json!({"impl": "reference", "op": op, "ms": ms, "peakRssBytes": peak_rss()})
}

fn elapsed_ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn median_ms(rows: &[Row], session: &str, op: &str, implementation: &str) -> Option<f64> {
    find(rows, session, op, implementation).and_then(|r| r.result["medianMs"].as_f64())
}

fn find<'a>(rows: &'a [Row], session: &str, op: &str, implementation: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.session == session && r.op == op && r.implementation == implementation)
}

#[allow(clippy::cast_precision_loss)] // bytes to MB for display
fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// The results as Markdown: the table, the scaling and the figures against the targets.
fn report(rows: &[Row], sizes: &[(String, u64)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| session | op | reference ms | pi-mono ms (× ref) | omp 13 ms (× ref) | omp 18 ms (× ref) | reference peak MB (× file) | pi-mono / omp 13 / omp 18 peak MB |");
    let _ = writeln!(
        out,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for (session, file_bytes) in sizes {
        for op in OPS {
            let Some(reference) = find(rows, session, op, "reference") else {
                continue;
            };
            let ms = reference.result["medianMs"].as_f64();
            let cell = |implementation: &str| match find(rows, session, op, implementation) {
                None => String::new(),
                Some(row) => match (row.result["medianMs"].as_f64(), ms) {
                    (Some(m), Some(r)) => format!("{m:.1} ({:.1}×)", m / r.max(1e-9)),
                    _ => describe_failure(&row.result),
                },
            };
            let peak = |row: Option<&Row>| {
                row.and_then(|r| r.result["peakRssBytes"].as_u64())
                    .map_or_else(|| "-".to_owned(), |b| format!("{:.0}", megabytes(b)))
            };
            let reference_peak = reference.result["peakRssBytes"].as_u64().map_or_else(
                || "-".to_owned(),
                |b| {
                    format!(
                        "{:.0} ({:.1}×)",
                        megabytes(b),
                        megabytes(b) / megabytes(*file_bytes).max(1e-9)
                    )
                },
            );
            let _ = writeln!(
                out,
                "| {session} | {op} | {} | {} | {} | {} | {reference_peak} | {} / {} / {} |",
                ms.map_or_else(
                    || describe_failure(&reference.result),
                    |m| format!("{m:.1}")
                ),
                cell("pi-mono"),
                cell("omp"),
                cell("omp-18"),
                peak(find(rows, session, op, "pi-mono")),
                peak(find(rows, session, op, "omp")),
                peak(find(rows, session, op, "omp-18")),
            );
        }
    }
    out.push('\n');
    out.push_str(&scaling(rows, sizes));
    out.push_str(&targets(rows, sizes));
    out
}

fn describe_failure(result: &Value) -> String {
    if result["unsupported"].as_bool() == Some(true) {
        "unsupported".to_owned()
    } else {
        let error = result["error"].as_str().unwrap_or("-");
        format!("error: {}", error.replace('|', "/"))
    }
}

/// How each operation's time grows with the session: each size against the one before.
fn scaling(rows: &[Row], sizes: &[(String, u64)]) -> String {
    let mut out =
        String::from("Growth with the session (time at this size ÷ time at the size before):\n\n");
    let steps: Vec<_> = sizes
        .windows(2)
        .filter(|w| w[1].0.ends_with("MB") && w[0].0.ends_with("MB"))
        .collect();
    for implementation in IMPLS {
        for op in &OPS[1..] {
            let growth: Vec<String> = steps
                .iter()
                .filter_map(|w| {
                    let before = median_ms(rows, &w[0].0, op, implementation)?;
                    let after = median_ms(rows, &w[1].0, op, implementation)?;
                    #[allow(clippy::cast_precision_loss)] // sizes, for a ratio
                    let size = w[1].1 as f64 / w[0].1.max(1) as f64;
                    Some(format!(
                        "{} → {} ({size:.0}× size): {:.1}×",
                        w[0].0,
                        w[1].0,
                        after / before.max(1e-9)
                    ))
                })
                .collect();
            if !growth.is_empty() {
                let _ = writeln!(out, "- {implementation} {op}: {}", growth.join("; "));
            }
        }
    }
    out.push('\n');
    out
}

/// The issue's targets, for each session the reference and a real implementation both ran.
fn targets(rows: &[Row], sizes: &[(String, u64)]) -> String {
    let mut out = String::from("Against the targets:\n\n");
    for (session, file_bytes) in sizes {
        out.push_str(&e2e_targets(rows, session, *file_bytes));
        let sum = |implementation: &str| {
            Some(
                median_ms(rows, session, "load", implementation)?
                    + median_ms(rows, session, "context", implementation)?,
            )
        };
        let Some(reference) = sum("reference") else {
            continue;
        };
        let best = ["pi-mono", "omp"]
            .iter()
            .filter_map(|i| sum(i).map(|ms| (ms, *i)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((ms, implementation)) = best {
            let _ = writeln!(
                out,
                "- {session}: load + context {reference:.1} ms against {ms:.1} ms ({implementation}): {:.1}× faster (target 5×)",
                ms / reference.max(1e-9)
            );
        }
        if let (Some(load), Some(floor)) = (
            median_ms(rows, session, "load", "reference"),
            median_ms(rows, session, "floor", "reference"),
        ) {
            let _ = writeln!(
                out,
                "- {session}: load {load:.1} ms is {:.2}× the floor {floor:.1} ms (target ≤ 1.5×)",
                load / floor.max(1e-9)
            );
        }
        if let Some(peak) =
            find(rows, session, "load", "reference").and_then(|r| r.result["peakRssBytes"].as_u64())
        {
            let _ = writeln!(
                out,
                "- {session}: load peak {:.0} MB is {:.2}× the file's {:.0} MB (target ≤ 2.5×)",
                megabytes(peak),
                megabytes(peak) / megabytes(*file_bytes).max(1e-9),
                megabytes(*file_bytes)
            );
        }
    }
    out
}

/// The end-to-end targets of #18: the CLI's `context` at most a third of omp 18.x's
/// open + buildSessionContext and a sixth of pi-mono's, its peak at most 1.25× the file.
fn e2e_targets(rows: &[Row], session: &str, file_bytes: u64) -> String {
    let mut out = String::new();
    let Some(cli) = median_ms(rows, session, "e2e", "reference") else {
        return out;
    };
    for (implementation, most) in [("omp-18", 1.0 / 3.0), ("pi-mono", 1.0 / 6.0)] {
        if let Some(real) = median_ms(rows, session, "e2e", implementation) {
            let ratio = cli / real.max(1e-9);
            let _ = writeln!(
                out,
                "- {session}: CLI context {cli:.0} ms against {implementation} {real:.0} ms: {ratio:.2}× (target ≤ {most:.2}×)"
            );
        }
    }
    if let Some(peak) =
        find(rows, session, "e2e", "reference").and_then(|r| r.result["peakRssBytes"].as_u64())
    {
        let _ = writeln!(
            out,
            "- {session}: CLI context peak {:.0} MB is {:.2}× the file (target ≤ 1.25×)",
            megabytes(peak),
            megabytes(peak) / megabytes(file_bytes).max(1e-9)
        );
    }
    out
}
