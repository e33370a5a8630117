//! Throughput of the harness: the whole corpus through the reference, in process and
//! as an adapter process in persistent mode (`serve`), with 1 and 2 jobs; with 1 job
//! also without pinning the job and its adapter to one CPU (the harness pins only
//! when there are fewer jobs than CPUs).
//!
//! Run with `cargo bench -p session-conformance --bench throughput`.
//! Prints cases per second, the median of 9 timed runs after one warm-up run; the
//! corpus is loaded once, outside the timed part. Each run starts its adapter
//! processes, so a persistent-mode figure includes starting them.
//!
//! The runs go round by round, one run of every configuration per round, so that a
//! machine that slows down or speeds up during the bench (shared virtual machines
//! drift by 20% over minutes) weighs on every configuration alike: the persistent-mode
//! configurations first, then the in-process ones. The last line is the whole corpus,
//! both profiles, in persistent mode with 2 jobs: the two profiles' medians added.

use std::time::Instant;

use session_conformance::harness::Harness;
use session_reference::model::Profile;

const RUNS: usize = 9;

// The allocator the `session-conformance` binary uses, with the same settings
// (`main` below), so that the runner side of this bench behaves as the CLI's does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One measured configuration.
struct Config {
    label: String,
    profile: Profile,
    jobs: usize,
    pin: bool,
    harness: Harness,
    /// The adapter's argv in persistent mode; `None` runs the reference in process.
    serve: Option<Vec<String>>,
    seconds: Vec<f64>,
}

impl Config {
    fn cases(&self) -> usize {
        self.harness.cases().map_or(0, |c| c.len())
    }

    /// Runs the corpus once; returns the seconds it took.
    fn run(&self) -> f64 {
        let start = Instant::now();
        let result = match &self.serve {
            Some(argv) => self.harness.run_process(argv, false),
            None => self.harness.run_reference(),
        };
        let seconds = start.elapsed().as_secs_f64();
        let failures = result.map_or(usize::MAX, |r| {
            r.results.iter().filter(|c| c.status.is_failure()).count()
        });
        assert_eq!(failures, 0, "the corpus must pass against the reference");
        seconds
    }

    fn median(&self) -> f64 {
        let mut times = self.seconds.clone();
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    }
}

/// Runs `configs` round by round, a warm-up round first.
fn measure(configs: &mut [Config]) {
    for round in 0..=RUNS {
        eprint!("\rround {round}/{RUNS}");
        for config in configs.iter_mut() {
            let seconds = config.run();
            if round > 0 {
                config.seconds.push(seconds);
            }
        }
    }
    eprintln!();
}

fn configs() -> Vec<Config> {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/cases");
    let bin = env!("CARGO_BIN_EXE_session-conformance").to_owned();
    let cpus = session_conformance::affinity::available().len();
    let mut out = Vec::new();
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
                if jobs >= cpus && !pin {
                    continue; // the harness does not pin this many jobs: the same run
                }
                let harness = Harness::new(corpus)
                    .profile(profile)
                    .jobs(jobs)
                    .pin_cpus(pin)
                    .preload()
                    .expect("corpus loads");
                out.push(Config {
                    label: format!("{profile} {label}, {jobs} job(s)"),
                    profile,
                    jobs,
                    pin,
                    harness,
                    serve: serve.then(|| argv.clone()),
                    seconds: Vec::new(),
                });
            }
        }
    }
    out
}

fn main() {
    #[allow(unsafe_code)]
    // SAFETY: the first thing `main` does, before any other thread runs.
    unsafe {
        session_conformance::allocator::keep_freed_memory();
    }
    let mut configs = configs();
    // Persistent mode first: in-process runs do the reference's work in this process,
    // and persistent-mode runs measured after them were 15-25% slower.
    let (mut serve, mut in_process): (Vec<Config>, Vec<Config>) =
        configs.drain(..).partition(|c| c.serve.is_some());
    measure(&mut serve);
    measure(&mut in_process);
    configs.extend(serve);
    configs.extend(in_process);
    println!(
        "{:<46} {:>6} {:>11} {:>11}",
        "run", "cases", "median ms", "cases/s"
    );
    for config in &configs {
        let (cases, median) = (config.cases(), config.median());
        #[allow(clippy::cast_precision_loss)] // a case count
        let rate = cases as f64 / median;
        println!(
            "{:<46} {cases:>6} {:>11.1} {rate:>11.0}",
            config.label,
            median * 1000.0
        );
    }
    // Both profiles' persistent-mode runs with 2 jobs, one after the other.
    let whole: Vec<&Config> = configs
        .iter()
        .filter(|c| c.serve.is_some() && c.jobs == 2 && c.pin)
        .collect();
    if whole.len() == Profile::ALL.len() {
        let cases: usize = whole.iter().map(|c| c.cases()).sum();
        let seconds: f64 = whole.iter().map(|c| c.median()).sum();
        #[allow(clippy::cast_precision_loss)] // a case count
        let rate = cases as f64 / seconds;
        let profiles: Vec<String> = whole.iter().map(|c| c.profile.to_string()).collect();
        println!(
            "{:<46} {cases:>6} {:>11.1} {rate:>11.0}",
            format!(
                "whole corpus ({} medians added), serve, 2 jobs",
                profiles.join(" + ")
            ),
            seconds * 1000.0
        );
    }
}
