//! `sessions list` on a store of many session files: the 4 KB prefix path (the default)
//! and whole-file reads (`--full`), plus `--resume` prefix resolution.
//!
//! Run with `cargo bench -p session-conformance-cli --bench store`.
//! `BENCH_STORE_FILES` (default 10000) sets the number of files; each holds ~12 KB
//! (a header and a dozen ~1 KB messages), in 100 project folders.
//! Each figure is the median of 5 runs, with the files in the page cache.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use session_conformance_cli::sessions::{list_full, list_quick, resolve, Place};
use session_reference::model::Profile;

fn session_text(n: usize, cwd: &str) -> String {
    let mut text = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{n:08x}-0000-4000-8000-000000000000\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"{cwd}\"}}\n"
    );
    let filler = "lorem ipsum dolor sit amet ".repeat(36);
    let mut parent = "null".to_owned();
    for i in 0..12 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let id = format!("{:08x}", n * 16 + i);
        let _ = writeln!(
            text,
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-02T00:00:{i:02}.000Z\",\"message\":{{\"role\":\"{role}\",\"content\":\"prompt {n} {i} {filler}\"}}}}"
        );
        parent = format!("\"{id}\"");
    }
    text
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time(label: &str, files: usize, mut f: impl FnMut() -> usize) {
    let mut runs = Vec::new();
    let mut rows = 0;
    for _ in 0..5 {
        let start = Instant::now();
        rows = f();
        runs.push(start.elapsed());
    }
    let m = median(runs);
    #[allow(clippy::cast_precision_loss)] // file counts
    let per_s = files as f64 / m.as_secs_f64();
    println!(
        "{label:<44} {:>9.1} ms {per_s:>12.0} files/s  ({rows} lines of output)",
        m.as_secs_f64() * 1000.0
    );
}

fn main() {
    let count: usize = std::env::var("BENCH_STORE_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let agent = tmp.path();
    let projects = 100;
    for n in 0..count {
        let cwd = format!("/work/project-{}", n % projects);
        let dir = agent
            .join("sessions")
            .join(session_reference::locations::encode_cwd(&cwd));
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join(format!("{n:08}.jsonl")), session_text(n, &cwd)).expect("write");
    }
    let bytes: u64 = walk(&agent.join("sessions"));
    println!(
        "store: {count} session files, {} MB, in {projects} project folders",
        bytes / 1_000_000
    );
    for profile in Profile::ALL {
        let place = Place::new(
            Some(profile),
            Some(agent.to_path_buf()),
            "/work/project-0".into(),
            None,
        );
        time(
            &format!("{profile}: sessions list --all (4 KB prefixes)"),
            count,
            || list_quick(&place, true, false).lines().count(),
        );
        time(
            &format!("{profile}: sessions list --all --full"),
            count,
            || list_full(&place, true, false).lines().count(),
        );
        time(
            &format!("{profile}: sessions resolve <prefix> (global)"),
            count,
            || resolve(&place, "00000063").lines().count(),
        );
    }
}

fn walk(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                walk(&p)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}
