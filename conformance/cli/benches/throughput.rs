//! Throughput of the harness: the whole corpus through the reference, in process and
//! as an adapter process in persistent mode (`serve`), with 1 and 2 jobs; with 1 job
//! also without pinning the job and its adapter to one CPU (the harness pins only
//! when there are fewer jobs than CPUs).
//!
//! Run with `cargo bench -p session-conformance-cli --bench throughput`.
//! Prints cases per second, the median of 9 timed runs after one warm-up run. The
//! corpus is loaded afresh before each run, outside the timed part, so that every
//! timed run works out each case's arguments, known tokens and goldens as a real run
//! does. Each run starts its adapter processes, so a persistent-mode figure includes
//! starting them.
//!
//! The `CLI` lines time the command a user runs, as a new process each time:
//! `session-conformance run --profile P --adapter session-conformance -- serve --profile P`
//! with its default jobs (one per CPU), from start to exit: reading the corpus, the
//! report and the process's own start included.
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

/// How a configuration runs the corpus.
enum Mode {
    /// The reference, in the bench's process.
    InProcess,
    /// The reference as an adapter process in persistent mode: this argv.
    Serve(Vec<String>),
    /// The CLI as a new process: this argv (`run … --adapter … serve …`).
    Cli(Vec<String>),
}

/// One measured configuration.
struct Config {
    label: String,
    profile: Profile,
    jobs: usize,
    pin: bool,
    mode: Mode,
    cases: usize,
    seconds: Vec<f64>,
}

impl Config {
    fn harness(&self) -> Harness {
        Harness::new(CORPUS)
            .profile(self.profile)
            .jobs(self.jobs)
            .pin_cpus(self.pin)
            .preload()
            .expect("corpus loads")
    }

    /// Runs the corpus once; returns the seconds it took.
    fn run(&self) -> f64 {
        if let Mode::Cli(argv) = &self.mode {
            let start = Instant::now();
            let status = std::process::Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .expect("the CLI starts");
            let seconds = start.elapsed().as_secs_f64();
            assert!(
                status.success(),
                "the corpus must pass against the reference"
            );
            return seconds;
        }
        // A fresh load, untimed: what a case works out on its first run is timed.
        let harness = self.harness();
        let start = Instant::now();
        let result = match &self.mode {
            Mode::Serve(argv) => harness.run_process(argv, false),
            _ => harness.run_reference(),
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

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/cases");

fn configs() -> Vec<Config> {
    let bin = env!("CARGO_BIN_EXE_session-conformance").to_owned();
    let cpus = session_conformance::affinity::available().len();
    let mut out = Vec::new();
    for profile in Profile::ALL {
        let cases = Harness::new(CORPUS)
            .profile(profile)
            .cases()
            .expect("corpus loads")
            .len();
        let serve = [bin.as_str(), "serve", "--profile", profile.name()].map(str::to_owned);
        let config = |label: String, jobs: usize, pin: bool, mode: Mode| Config {
            label,
            profile,
            jobs,
            pin,
            mode,
            cases,
            seconds: Vec::new(),
        };
        for jobs in [1, 2] {
            for (label, in_process, pin) in [
                ("in process", true, true),
                ("serve, persistent mode", false, true),
                ("serve, persistent mode, not pinned", false, false),
            ] {
                if jobs >= cpus && !pin {
                    continue; // the harness does not pin this many jobs: the same run
                }
                let mode = if in_process {
                    Mode::InProcess
                } else {
                    Mode::Serve(serve.to_vec())
                };
                out.push(config(
                    format!("{profile} {label}, {jobs} job(s)"),
                    jobs,
                    pin,
                    mode,
                ));
            }
        }
        let mut cli = vec![bin.clone(), "run".into(), "--profile".into()];
        cli.extend([profile.name().to_owned(), "--adapter".into()]);
        cli.extend([bin.clone(), "--".into()]);
        cli.extend(serve[1..].iter().cloned());
        // The CLI's default: a job per CPU, as `available_parallelism` counts them.
        let jobs = std::thread::available_parallelism().map_or(1, usize::from);
        out.push(config(
            format!("{profile} CLI, serve, {jobs} job(s), new process"),
            jobs,
            true,
            Mode::Cli(cli),
        ));
    }
    out
}

fn main() {
    #[allow(unsafe_code)]
    // SAFETY: the first thing `main` does, before any other thread runs.
    unsafe {
        session_conformance_cli::allocator::keep_freed_memory();
    }
    let mut configs = configs();
    // Persistent mode first: in-process runs do the reference's work in this process,
    // and persistent-mode runs measured after them were 15-25% slower.
    let (mut serve, mut in_process): (Vec<Config>, Vec<Config>) = configs
        .drain(..)
        .partition(|c| !matches!(c.mode, Mode::InProcess));
    measure(&mut serve);
    measure(&mut in_process);
    configs.extend(serve);
    configs.extend(in_process);
    println!(
        "{:<46} {:>6} {:>11} {:>11}",
        "run", "cases", "median ms", "cases/s"
    );
    for config in &configs {
        let (cases, median) = (config.cases, config.median());
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
        .filter(|c| matches!(c.mode, Mode::Serve(_)) && c.jobs == 2 && c.pin)
        .collect();
    if whole.len() == Profile::ALL.len() {
        let cases: usize = whole.iter().map(|c| c.cases).sum();
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
