//! Throughput of the harness: the whole corpus through the reference, in process and
//! as an adapter process in persistent mode (`serve`), with 1 and 2 jobs; with 1 job
//! also without pinning the job and its adapter to one CPU (the harness pins only
//! when there are fewer jobs than CPUs).
//!
//! Run with `cargo bench -p session-conformance --bench throughput`.
//! Prints cases per second, the median of 7 timed runs after one warm-up run; the
//! corpus is loaded once, outside the timed part. Each run starts its adapter
//! processes, so a persistent-mode figure includes starting them.

use std::time::Instant;

use session_conformance::harness::Harness;
use session_reference::model::Profile;

const RUNS: usize = 7;

// The allocator the `session-conformance` binary uses, with the same settings
// (`main` below), so that the runner side of this bench behaves as the CLI's does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    session_conformance::allocator::keep_freed_memory();
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/cases");
    let bin = env!("CARGO_BIN_EXE_session-conformance").to_owned();
    println!(
        "{:<46} {:>6} {:>11} {:>11}",
        "run", "cases", "median ms", "cases/s"
    );
    for profile in Profile::ALL {
        let argv = vec![
            bin.clone(),
            "serve".to_owned(),
            "--profile".to_owned(),
            profile.name().to_owned(),
        ];
        for jobs in [1, 2] {
            for (label, serve, pin) in [
                ("in process", false, true),
                ("serve, persistent mode", true, true),
                ("serve, persistent mode, not pinned", true, false),
            ] {
                let cpus = session_conformance::affinity::available().len();
                if jobs >= cpus && !pin {
                    continue; // the harness does not pin this many jobs: the same run
                }
                let harness = Harness::new(corpus)
                    .profile(profile)
                    .jobs(jobs)
                    .pin_cpus(pin)
                    .preload()
                    .expect("corpus loads");
                let cases = harness.cases().map_or(0, |c| c.len());
                let mut times: Vec<f64> = (0..=RUNS)
                    .map(|_| {
                        let start = Instant::now();
                        let result = if serve {
                            harness.run_process(&argv, false)
                        } else {
                            harness.run_reference()
                        };
                        let seconds = start.elapsed().as_secs_f64();
                        let failures = result.map_or(usize::MAX, |r| {
                            r.results.iter().filter(|c| c.status.is_failure()).count()
                        });
                        assert_eq!(failures, 0, "the corpus must pass against the reference");
                        seconds
                    })
                    .skip(1)
                    .collect();
                times.sort_by(f64::total_cmp);
                let median = times[RUNS / 2];
                #[allow(clippy::cast_precision_loss)] // a case count
                let rate = cases as f64 / median;
                println!(
                    "{:<46} {cases:>6} {:>11.1} {rate:>11.0}",
                    format!("{profile} {label}, {jobs} job(s)"),
                    median * 1000.0
                );
            }
        }
    }
}
