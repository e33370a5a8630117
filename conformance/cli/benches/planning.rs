//! Compaction planning on one session file (BENCHMARKS.md, "Compaction planning"): the reference's
//! open, the entries as planning reads them (`planning_tree`), and the plan (`execute::compaction::plan`: context tokens,
//! shouldCompact, findCutPoint, prepareCompaction, the requests and result with a stub model).
//!
//! `BENCH_FILE=session.jsonl cargo bench -p session-conformance-cli --bench planning`

use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use session_conformance::execute::compaction::{plan, planning_tree};
use session_conformance_cli::inspect;
use session_reference::compaction::Rules;
use session_reference::model::Profile;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let Ok(file) = std::env::var("BENCH_FILE").map(PathBuf::from) else {
        eprintln!("planning: set BENCH_FILE to a session file");
        return;
    };
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    for profile in Profile::ALL {
        let (mut open, mut values, mut planned) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            let Ok(sm) = inspect::open(&file, profile) else {
                eprintln!("planning: cannot open {}", file.display());
                return;
            };
            open.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            let tree = planning_tree(&sm);
            values.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            let args = json!({"contextWindow": 200_000, "stubSummary": "S"});
            let out = plan(&tree, sm.leaf_id(), &args, &Rules::for_profile(profile));
            planned.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(out["preparation"].is_object(), "no plan");
        }
        println!(
            "{{\"impl\":\"reference\",\"profile\":\"{}\",\"openMs\":{:.1},\"valuesMs\":{:.1},\"planMs\":{:.1}}}",
            profile.name(),
            median(open),
            median(values),
            median(planned)
        );
    }
}
