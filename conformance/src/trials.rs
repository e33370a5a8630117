//! The corpus as libtest trials, one per case, named `group/name [profile]`
//! ([`Harness::test`]): for a test target with `harness = false`, so that `cargo test`
//! lists, filters and reports the cases as it does its own tests.
//!
//! The arguments read are those cargo and its users pass to a test binary: filters
//! (substrings of a trial's name; `--exact` for whole names; `--skip`), `--list`,
//! `--ignored` (show only the ignored trials), `-q`/`--quiet`. Others (`--nocapture`,
//! `--include-ignored`, which is what a run does anyway,
//! `--test-threads`, `--format`, `--color`, …) are accepted and have no effect; the
//! harness's own `jobs` sets the parallelism.
//!
//! A case passes, or is `divergent` as its divergence list says: both are `ok`. A case
//! of an operation the implementation does not offer is `ignored`. Every other status
//! (a failure, an unsafe result, a timeout, a crash, a stale list entry) is `FAILED`,
//! with the case's description, first difference, notes and diff under `failures:`.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use crate::adapter::Adapter;
use crate::harness::{Harness, HarnessError};
use crate::outcome::{CaseResult, Status};

/// The arguments of a libtest-style test binary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // libtest's own flags, one field each
pub struct Arguments {
    /// Run trials whose name contains one of these (all when empty).
    pub filters: Vec<String>,
    /// Leave out trials whose name contains one of these.
    pub skip: Vec<String>,
    /// Filters and skips match whole names.
    pub exact: bool,
    /// List the trials instead of running them.
    pub list: bool,
    /// Show only the ignored trials.
    pub ignored: bool,
    /// One character per trial instead of one line.
    pub quiet: bool,
}

/// Options that take a value (which is skipped with them).
const WITH_VALUE: [&str; 8] = [
    "--test-threads",
    "--format",
    "--color",
    "--logfile",
    "--report-time",
    "-Z",
    "--shuffle-seed",
    "--skip",
];

impl Arguments {
    /// The arguments of this process.
    pub fn from_env() -> Arguments {
        Arguments::parse(std::env::args().skip(1))
    }

    /// Reads libtest's arguments; unknown flags are ignored.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Arguments {
        let mut out = Arguments::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--exact" => out.exact = true,
                "--list" => out.list = true,
                "--ignored" => out.ignored = true,
                "-q" | "--quiet" => out.quiet = true,
                "--skip" => out.skip.extend(args.next()),
                flag if WITH_VALUE.contains(&flag) => {
                    args.next();
                }
                flag if flag.starts_with('-') => {}
                _ => out.filters.push(arg),
            }
        }
        out
    }

    /// Whether a trial named `name` is selected by the filters and skips.
    pub fn selects(&self, name: &str) -> bool {
        let matches = |pattern: &String| {
            if self.exact {
                name == pattern
            } else {
                name.contains(pattern.as_str())
            }
        };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skip.iter().any(matches)
    }
}

/// How a trial ended, in libtest's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    Failed,
    Ignored,
}

fn verdict(status: Status) -> Verdict {
    match status {
        Status::Pass | Status::Divergent | Status::DivergentChanged => Verdict::Ok,
        Status::Skipped => Verdict::Ignored,
        _ => Verdict::Failed,
    }
}

/// A failed trial's story: description, first difference, notes and diff.
fn failure_text(result: &CaseResult) -> String {
    let mut out = String::new();
    if !result.description.is_empty() {
        let _ = writeln!(out, "{}", result.description);
    }
    if !result.clauses.is_empty() {
        let _ = writeln!(out, "rule: docs/spec/ clause {}", result.clauses.join(", "));
    }
    let _ = writeln!(
        out,
        "case {} is {}{}",
        result.id,
        result.status.name(),
        result
            .pointer
            .as_ref()
            .map(|p| format!(" at {p}"))
            .unwrap_or_default()
    );
    for note in &result.notes {
        let _ = writeln!(out, "  {note}");
    }
    if let Some(diff) = &result.diff {
        out.push_str(diff);
    }
    out
}

impl Harness {
    /// Runs the selected cases as libtest trials against adapters made by `make` (one per
    /// job), reading the process's arguments, and prints what libtest prints. Call it as
    /// the `main` of a test target with `harness = false`:
    ///
    /// ```no_run
    /// use session_conformance::{adapter::ReferenceAdapter, Harness, Profile};
    ///
    /// fn main() -> std::process::ExitCode {
    ///     let corpus = session_conformance::corpus_dir().expect("the corpus unpacks");
    ///     Harness::new(corpus)
    ///         .profile(Profile::Pi)
    ///         .test(&|| Box::new(ReferenceAdapter::new(Profile::Pi)))
    /// }
    /// ```
    pub fn test(&self, make: &(dyn Fn() -> Box<dyn Adapter> + Sync)) -> ExitCode {
        self.test_with(&Arguments::from_env(), make)
    }

    /// [`Harness::test`] with the arguments given.
    pub fn test_with(
        &self,
        args: &Arguments,
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
    ) -> ExitCode {
        match self.trials(args, make) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(101),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(101)
            }
        }
    }

    /// Runs the trials; whether none failed.
    fn trials(
        &self,
        args: &Arguments,
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
    ) -> Result<bool, HarnessError> {
        let profile = self.profile_under_test().name();
        let name = |group_name: &str| format!("{group_name} [{profile}]");
        let cases = self.cases()?;
        let total = cases.len();
        let chosen: Vec<String> = cases
            .iter()
            .filter(|c| args.selects(&name(&c.full_name())))
            .map(crate::corpus::Case::id)
            .collect();
        if args.list {
            for case in cases.iter().filter(|c| chosen.contains(&c.id())) {
                println!("{}: test", name(&case.full_name()));
            }
            return Ok(true);
        }
        let started = Instant::now();
        let run = self.run_ids(&chosen, make)?;
        let mut counts = [0usize; 3];
        let mut failures = Vec::new();
        println!("\nrunning {} tests", run.results.len());
        let mut shown_count = 0;
        for result in &run.results {
            let verdict = verdict(result.status);
            // `--ignored` shows only the cases the implementation does not offer.
            if args.ignored && verdict != Verdict::Ignored {
                continue;
            }
            shown_count += 1;
            let trial = name(&result.name);
            counts[verdict as usize] += 1;
            if verdict == Verdict::Failed {
                failures.push((trial.clone(), failure_text(result)));
            }
            match (args.quiet, verdict) {
                (true, Verdict::Ok) => print!("."),
                (true, Verdict::Failed) => print!("F"),
                (true, Verdict::Ignored) => print!("i"),
                (false, Verdict::Ok) => println!("test {trial} ... ok"),
                (false, Verdict::Failed) => println!("test {trial} ... FAILED"),
                (false, Verdict::Ignored) => println!("test {trial} ... ignored"),
            }
        }
        if !failures.is_empty() {
            println!("\nfailures:\n");
            for (trial, text) in &failures {
                println!("---- {trial} ----\n{text}");
            }
            println!("\nfailures:");
            for (trial, _) in &failures {
                println!("    {trial}");
            }
        }
        println!(
            "\ntest result: {}. {} passed; {} failed; {} ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
            if failures.is_empty() { "ok" } else { "FAILED" },
            counts[Verdict::Ok as usize],
            counts[Verdict::Failed as usize],
            counts[Verdict::Ignored as usize],
            total - shown_count,
            started.elapsed().as_secs_f64()
        );
        Ok(failures.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Arguments {
        Arguments::parse(list.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn arguments_are_read_as_libtest_reads_them() {
        let cases = [
            (vec![], Arguments::default()),
            (
                vec!["parse/", "--exact", "--test-threads", "4", "--nocapture"],
                Arguments {
                    filters: vec!["parse/".into()],
                    exact: true,
                    ..Arguments::default()
                },
            ),
            (
                vec!["--list", "--format", "terse", "--skip", "tree/", "-q"],
                Arguments {
                    list: true,
                    skip: vec!["tree/".into()],
                    quiet: true,
                    ..Arguments::default()
                },
            ),
            (
                vec!["--ignored", "--include-ignored"],
                Arguments {
                    ignored: true,
                    ..Arguments::default()
                },
            ),
        ];
        for (given, expected) in cases {
            assert_eq!(args(&given), expected, "{given:?}");
        }
    }

    #[test]
    fn filters_match_substrings_or_whole_names_and_skips_win() {
        let name = "parse/bom [pi]";
        let cases = [
            (vec![], true),
            (vec!["parse/"], true),
            (vec!["tree/"], false),
            (vec!["parse/", "--skip", "bom"], false),
            (vec!["parse/bom", "--exact"], false),
            (vec!["parse/bom [pi]", "--exact"], true),
        ];
        for (given, selected) in cases {
            assert_eq!(args(&given).selects(name), selected, "{given:?}");
        }
    }

    #[test]
    fn statuses_read_as_libtest_verdicts() {
        let cases = [
            (Status::Pass, Verdict::Ok),
            (Status::Divergent, Verdict::Ok),
            (Status::DivergentChanged, Verdict::Ok),
            (Status::Skipped, Verdict::Ignored),
            (Status::Fail, Verdict::Failed),
            (Status::Unsafe, Verdict::Failed),
            (Status::UnexpectedPass, Verdict::Failed),
            (Status::Timeout, Verdict::Failed),
        ];
        for (status, expected) in cases {
            assert_eq!(verdict(status), expected, "{status:?}");
        }
    }
}
