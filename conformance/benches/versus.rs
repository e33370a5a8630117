//! The reference side by side with the real implementations (pi-mono on Node, omp on Bun), on the same files.
//!
//! Run with `cargo bench -p session-conformance --bench versus` (the adapters' node_modules must be installed).
//! For each size it times load, context at the leaf and get_tree (median of 5 runs) and 10,000 appends,
//! with peak memory from the operating system (`VmHWM`), a bare serde_json parse of every line as the
//! floor, and ratios. Every measurement runs in its own process.
//! `BENCH_SIZES_MB=1,10` picks the sizes (default 1,10,100).

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};
use session_reference::context::LeafChoice;
use session_reference::model::Profile;
use session_reference::session::{Options, SessionManager};

const RUNS: usize = 5;

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
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut rows: Vec<(String, String, Value)> = Vec::new();
    for &mb in &sizes {
        let file = root.path().join(format!("session-{mb}mb.jsonl"));
        let entries = write_session(&file, mb * 1024 * 1024);
        eprintln!("{mb} MB: {entries} entries");
        for op in ["floor", "load", "context", "tree", "append"] {
            let label = format!("{mb} MB");
            rows.push((
                label.clone(),
                format!("{op}/reference"),
                run_child(op, &file),
            ));
            if op == "floor" {
                continue;
            }
            rows.push((
                label.clone(),
                format!("{op}/pi-mono"),
                run_script(
                    &[
                        "node",
                        &here.join("adapters/pi-mono/bench.mjs").to_string_lossy(),
                    ],
                    op,
                    &file,
                ),
            ));
            let bun = here.join("adapters/omp/node_modules/@oven/bun-linux-x64/bin/bun");
            rows.push((
                label,
                format!("{op}/omp"),
                run_script(
                    &[
                        &bun.to_string_lossy(),
                        &here.join("adapters/omp/bench.ts").to_string_lossy(),
                    ],
                    op,
                    &file,
                ),
            ));
        }
    }
    print_table(&rows, &sizes);
}

/// A session of about `bytes` bytes: ~1 KB entries, a branch every 50 entries, a compaction every 500.
fn write_session(path: &Path, bytes: usize) -> usize {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let _ = writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"0000000000000001","timestamp":"2025-06-01T12:00:00.000Z","cwd":"/proj"}}"#
    );
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
        } else if n % 2 == 0 {
            json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-06-01T12:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":text}],"provider":"anthropic","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}})
        } else {
            json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-06-01T12:00:00.000Z","message":{"role":"user","content":text,"timestamp":1}})
        };
        let line = line.to_string();
        let _ = writeln!(out, "{line}");
        written += line.len() + 1;
        ids.push(id);
    }
    n
}

fn run_child(op: &str, file: &Path) -> Value {
    let exe = std::env::current_exe().expect("bench binary");
    let output = Command::new(exe)
        .args(["--child", op])
        .arg(file)
        .output()
        .expect("child runs");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| json!({"error": String::from_utf8_lossy(&output.stderr)}))
}

fn run_script(argv: &[&str], op: &str, file: &Path) -> Value {
    let output = Command::new(argv[0])
        .args(&argv[1..])
        .arg(op)
        .arg(file)
        .arg(RUNS.to_string())
        .output();
    match output {
        Ok(o) => serde_json::from_slice(String::from_utf8_lossy(&o.stdout).lines().last().unwrap_or_default().as_bytes()).unwrap_or_else(|_| json!({"error": String::from_utf8_lossy(&o.stderr).chars().take(200).collect::<String>()})),
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// Runs one measurement in this process and reports `{medianMs, peakRssBytes}`.
fn child(op: &str, file: &Path) -> Value {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut runs = Vec::new();
    for _ in 0..if op == "append" { 1 } else { RUNS } {
        let copy = dir.path().join("s.jsonl");
        std::fs::copy(file, &copy).expect("copy");
        let options = || Options::new(Profile::Omp, "/proj", dir.path().join("sessions"));
        let start;
        match op {
            "floor" => {
                let text = std::fs::read_to_string(&copy).expect("read");
                start = Instant::now();
                let parsed = text
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .count();
                assert!(parsed > 0);
            }
            "load" => {
                start = Instant::now();
                let sm = SessionManager::open(&copy, options()).expect("open");
                assert!(!sm.entries().is_empty());
            }
            "context" | "tree" => {
                let sm = SessionManager::open(&copy, options()).expect("open");
                start = Instant::now();
                if op == "context" {
                    let leaf = sm.leaf_id().map_or(LeafChoice::Null, LeafChoice::Id);
                    let _ = session_reference::context::build_context(
                        sm.tree_index(),
                        leaf,
                        Profile::Omp,
                    );
                } else {
                    let _ = sm.get_tree();
                }
            }
            _ => {
                let mut sm = SessionManager::open(&copy, options()).expect("open");
                start = Instant::now();
                for _ in 0..10_000 {
                    let _ =
                        sm.append_message(json!({"role":"user","content":"more","timestamp":1}));
                }
                let _ = sm.flush();
            }
        }
        runs.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    runs.sort_by(f64::total_cmp);
    json!({"impl": "reference", "op": op, "runs": runs, "medianMs": runs[runs.len() / 2], "peakRssBytes": peak_rss()})
}

fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn print_table(rows: &[(String, String, Value)], sizes: &[usize]) {
    println!(
        "{:<8} {:<20} {:>12} {:>12} {:>10}",
        "size", "op/impl", "median ms", "peak MB", "vs ref"
    );
    for (size, what, value) in rows {
        let op = what.split('/').next().unwrap_or_default();
        let reference = rows
            .iter()
            .find(|(s, w, _)| s == size && *w == format!("{op}/reference"))
            .and_then(|(_, _, v)| v["medianMs"].as_f64());
        let ms = value["medianMs"].as_f64();
        #[allow(clippy::cast_precision_loss)] // bytes to MB for display
        let mb = value["peakRssBytes"]
            .as_u64()
            .map(|b| b as f64 / 1_048_576.0);
        let ratio = match (ms, reference) {
            (Some(m), Some(r)) if r > 0.0 => format!("{:.1}×", m / r),
            _ => "-".into(),
        };
        let ms = ms.map_or_else(
            || {
                value["error"].as_str().map_or("-".into(), |e| {
                    format!("error: {}", e.chars().take(40).collect::<String>())
                })
            },
            |m| format!("{m:.1}"),
        );
        println!(
            "{size:<8} {what:<20} {ms:>12} {:>12} {ratio:>10}",
            mb.map_or("-".into(), |m| format!("{m:.0}"))
        );
    }
    for op in ["load", "context", "tree"] {
        let times: Vec<f64> = sizes
            .iter()
            .filter_map(|mb| {
                rows.iter()
                    .find(|(s, w, _)| *s == format!("{mb} MB") && *w == format!("{op}/reference"))
                    .and_then(|(_, _, v)| v["medianMs"].as_f64())
            })
            .collect();
        let growth: Vec<String> = times
            .windows(2)
            .map(|w| format!("{:.1}×", w[1] / w[0].max(1e-9)))
            .collect();
        println!("scaling {op}/reference ×10 size: {}", growth.join(", "));
    }
}
