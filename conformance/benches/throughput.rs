//! Throughput of the harness: the whole corpus through the reference, in process and
//! as an adapter process in persistent mode (`serve`), with 1 and 2 jobs.
//!
//! Run with `cargo bench -p session-conformance --bench throughput`.
//! Prints cases per second; the corpus is loaded once, outside the timed part.

use std::time::Instant;

use session_conformance::harness::Harness;
use session_reference::model::Profile;

fn main() {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/cases");
    let bin = env!("CARGO_BIN_EXE_session-conformance").to_owned();
    println!(
        "{:<34} {:>6} {:>9} {:>11}",
        "run", "cases", "seconds", "cases/s"
    );
    for profile in Profile::ALL {
        for jobs in [1, 2] {
            let harness = Harness::new(corpus)
                .profile(profile)
                .jobs(jobs)
                .preload()
                .expect("corpus loads");
            let cases = harness.cases().map_or(0, |c| c.len());
            let argv = vec![
                bin.clone(),
                "serve".to_owned(),
                "--profile".to_owned(),
                profile.name().to_owned(),
            ];
            for (label, run) in [("in process", false), ("serve, persistent mode", true)] {
                // One warm-up run, then the timed one.
                for timed in [false, true] {
                    let start = Instant::now();
                    let result = if run {
                        harness.run_process(&argv, false)
                    } else {
                        harness.run_reference()
                    };
                    let seconds = start.elapsed().as_secs_f64();
                    let failures = result.map_or(usize::MAX, |r| {
                        r.results.iter().filter(|c| c.status.is_failure()).count()
                    });
                    assert_eq!(failures, 0, "the corpus must pass against the reference");
                    if timed {
                        #[allow(clippy::cast_precision_loss)] // a case count
                        let rate = cases as f64 / seconds;
                        println!(
                            "{:<34} {cases:>6} {seconds:>9.3} {rate:>11.0}",
                            format!("{profile} {label}, {jobs} job(s)")
                        );
                    }
                }
            }
        }
    }
}
