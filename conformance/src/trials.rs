//! The corpus as libtest trials, one per case, named `group/name [profile]`
//! ([`Harness::test`]): for a test target with `harness = false`, so that `cargo test`
//! lists, filters and reports the cases as it does its own tests.
//!
//! The arguments are libtest's, each option with its value as the next argument or
//! after `=` (`--skip=tree/`), and an option libtest does not have is an error, as
//! libtest makes it ([`Arguments::parse`], [`USAGE`]). Those with an effect: filters
//! (substrings of a trial's name; `--exact` for whole names; `--skip`), `--list`,
//! `--ignored` (show only the ignored trials), `-q`/`--quiet`/`--format terse`, `--bench`
//! (nothing to run), `--help`. The others (`--nocapture`, `--include-ignored`, which is
//! what a run does anyway, `--test-threads`, `--color`, …) are checked and have no
//! effect; the harness's own `jobs` sets the parallelism.
//!
//! An implementation that panics or does not return fails its case only (`crash` with
//! the panic's message, `timeout`; [`crate::watch`]): the other trials run, and the run
//! ends with its `test result:` line.
//!
//! A case passes, or is `divergent` as its divergence list says: both are `ok`. A case
//! of an operation the implementation does not offer is `ignored`. Every other status
//! (a failure, an unsafe result, a timeout, a crash, a stale list entry) is `FAILED`,
//! with the case's description, first difference, notes and diff under `failures:`.

use std::fmt::Write as _;
use std::io::Write;
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
    /// One character per trial instead of one line (`-q`, `--format terse`).
    pub quiet: bool,
    /// Run no trial: `--bench` asks for benchmarks, and the corpus has none.
    pub bench: bool,
    /// Print the usage instead of running anything.
    pub help: bool,
}

/// Why the arguments were not read: libtest refuses the same.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgumentError {
    /// An option libtest does not have.
    Unknown(String),
    /// An option that takes a value, given none.
    MissingValue(String),
    /// An option that takes no value, given one (`--exact=yes`).
    UnexpectedValue(String),
    /// A value the option does not take.
    BadValue {
        /// The option.
        option: String,
        /// The value given.
        value: String,
        /// What it takes.
        expected: &'static str,
    },
}

impl std::fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgumentError::Unknown(option) => write!(
                f,
                "unrecognized option {:?}; `--help` lists the options",
                crate::guard::printable(option)
            ),
            ArgumentError::MissingValue(option) => {
                write!(f, "option {option} takes a value")
            }
            ArgumentError::UnexpectedValue(option) => {
                write!(f, "option {option} takes no value")
            }
            ArgumentError::BadValue {
                option,
                value,
                expected,
            } => write!(
                f,
                "option {option}: {:?} is not {expected}",
                crate::guard::printable(value)
            ),
        }
    }
}

impl std::error::Error for ArgumentError {}

/// libtest's options that take no value. `--include-ignored`, `--nocapture`,
/// `--show-output`, `--test`, `--fail-fast`, `--force-run-in-process`,
/// `--exclude-should-panic`, `--report-time`, `--ensure-time` and `--shuffle` have no
/// effect here: every case runs, its output is never captured, and cases run in the
/// harness's order.
const FLAGS: [&str; 19] = [
    "--include-ignored",
    "--ignored",
    "--force-run-in-process",
    "--exclude-should-panic",
    "--test",
    "--bench",
    "--list",
    "--fail-fast",
    "-h",
    "--help",
    "--nocapture",
    "--no-capture",
    "-q",
    "--quiet",
    "--exact",
    "--show-output",
    "--report-time",
    "--ensure-time",
    "--shuffle",
];

/// libtest's options that take a value, as `--option VALUE` or `--option=VALUE`
/// (`-ZVALUE` too). Only `--skip` and `--format terse` have an effect here: the
/// harness's own `jobs` sets the parallelism, and it writes no log file and no colour.
const WITH_VALUE: [&str; 7] = [
    "--skip",
    "--format",
    "--test-threads",
    "--color",
    "--logfile",
    "-Z",
    "--shuffle-seed",
];

/// What `--help` prints.
pub const USAGE: &str = "Usage: [OPTIONS] [FILTERS...]

The corpus as libtest trials, one per case, named `group/name [profile]`.

Options that have an effect:
    FILTERS            run the trials whose names contain one of these
    --skip FILTER      leave out the trials whose names contain FILTER (repeatable)
    --exact            filters and skips match whole names
    --list             list the trials instead of running them
    --ignored          show only the ignored trials (operations not offered)
    -q, --quiet, --format terse
                       one character per trial
    --bench            run nothing: the corpus has no benchmarks
Accepted with no effect: --include-ignored, --nocapture, --no-capture, --show-output,
--test, --fail-fast, --force-run-in-process, --exclude-should-panic, --report-time,
--ensure-time, --shuffle, --shuffle-seed N, --test-threads N (the harness's jobs set
the parallelism), --color auto|always|never, --logfile PATH (nothing is written),
-Z unstable-options.
Every option with a value may be written --option=VALUE.
";

impl Arguments {
    /// The arguments of this process.
    pub fn from_env() -> Result<Arguments, ArgumentError> {
        Arguments::parse(std::env::args().skip(1))
    }

    /// Reads libtest's arguments: every option libtest has, with its value as the next
    /// argument or after `=`; anything else that starts with `-` is an error.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Arguments, ArgumentError> {
        let mut out = Arguments::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if !arg.starts_with('-') || arg == "-" {
                out.filters.push(arg);
                continue;
            }
            let (option, attached) = split_option(&arg);
            if FLAGS.contains(&option) {
                if attached.is_some() {
                    return Err(ArgumentError::UnexpectedValue(option.to_owned()));
                }
                out.flag(option);
            } else if WITH_VALUE.contains(&option) {
                let value = match attached {
                    Some(value) => value.to_owned(),
                    None => args
                        .next()
                        .ok_or_else(|| ArgumentError::MissingValue(option.to_owned()))?,
                };
                out.value(option, value)?;
            } else {
                return Err(ArgumentError::Unknown(arg));
            }
        }
        Ok(out)
    }

    /// Sets a flag of [`FLAGS`].
    fn flag(&mut self, option: &str) {
        match option {
            "--exact" => self.exact = true,
            "--list" => self.list = true,
            "--ignored" => self.ignored = true,
            "-q" | "--quiet" => self.quiet = true,
            "--bench" => self.bench = true,
            "-h" | "--help" => self.help = true,
            _ => {}
        }
    }

    /// Reads the value of an option of [`WITH_VALUE`].
    fn value(&mut self, option: &str, value: String) -> Result<(), ArgumentError> {
        let bad = |expected| ArgumentError::BadValue {
            option: option.to_owned(),
            value: value.clone(),
            expected,
        };
        match option {
            "--skip" => self.skip.push(value),
            "--format" => match value.as_str() {
                "pretty" => {}
                "terse" => self.quiet = true,
                _ => return Err(bad("pretty or terse (json and junit are not written here)")),
            },
            "--color" if !["auto", "always", "never"].contains(&value.as_str()) => {
                return Err(bad("auto, always or never"));
            }
            "--test-threads" if value.parse::<usize>().map_or(true, |n| n == 0) => {
                return Err(bad("a number above 0"));
            }
            "--shuffle-seed" if value.parse::<u64>().is_err() => {
                return Err(bad("a number"));
            }
            "-Z" if value != "unstable-options" => return Err(bad("unstable-options")),
            _ => {}
        }
        Ok(())
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
        !self.bench
            && (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skip.iter().any(matches)
    }
}

/// An option and the value written with it: `--skip=x` is `("--skip", Some("x"))`,
/// `-Zunstable-options` is `("-Z", Some("unstable-options"))`, `--list` is
/// `("--list", None)`.
fn split_option(arg: &str) -> (&str, Option<&str>) {
    if let Some(long) = arg.strip_prefix("--") {
        return match long.split_once('=') {
            Some((name, value)) => (&arg[..2 + name.len()], Some(value)),
            None => (arg, None),
        };
    }
    match arg.get(..2) {
        Some(short) if arg.len() > 2 && arg.is_char_boundary(2) => {
            (short, Some(arg[2..].trim_start_matches('=')))
        }
        _ => (arg, None),
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
        // A listed loss is listed: the run's own verdict, `unsafe (listed)` in its note.
        Status::Pass | Status::Divergent | Status::DivergentChanged | Status::UnsafeListed => {
            Verdict::Ok
        }
        Status::Skipped => Verdict::Ignored,
        _ => Verdict::Failed,
    }
}

/// A failed trial's story: description, first difference, notes and diff, with the
/// control characters of corpus and adapter text escaped ([`crate::guard::printable`]).
fn failure_text(result: &CaseResult) -> String {
    use crate::guard::printable;
    let mut out = String::new();
    if !result.description.is_empty() {
        let _ = writeln!(out, "{}", printable(&result.description));
    }
    if !result.clauses.is_empty() {
        let _ = writeln!(
            out,
            "rule: docs/spec/ clause {}",
            printable(&result.clauses.join(", "))
        );
    }
    let _ = writeln!(
        out,
        "case {} is {}{}",
        result.id,
        result.status.name(),
        result
            .pointer
            .as_ref()
            .map(|p| format!(" at {}", printable(p)))
            .unwrap_or_default()
    );
    for note in &result.notes {
        let _ = writeln!(out, "  {}", printable(note));
    }
    if let Some(diff) = &result.diff {
        for line in diff.lines() {
            let _ = writeln!(out, "{}", printable(line));
        }
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
        match Arguments::from_env() {
            Ok(args) => self.test_with(&args, make),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(101)
            }
        }
    }

    /// [`Harness::test`] with the arguments given.
    pub fn test_with(
        &self,
        args: &Arguments,
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
    ) -> ExitCode {
        if args.help {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        match self.trials(args, make, &mut std::io::stdout()) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(101),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(101)
            }
        }
    }

    /// Runs the trials and writes what libtest writes on `out`; whether none failed.
    fn trials(
        &self,
        args: &Arguments,
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
        out: &mut dyn Write,
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
                let _ = writeln!(out, "{}: test", name(&case.full_name()));
            }
            return Ok(true);
        }
        let started = Instant::now();
        let results = if chosen.is_empty() {
            Vec::new()
        } else {
            self.run_ids(&chosen, make)?.results
        };
        let mut counts = [0usize; 3];
        let mut failures = Vec::new();
        let _ = writeln!(out, "\nrunning {} tests", results.len());
        let mut shown_count = 0;
        for result in &results {
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
            let _ = match (args.quiet, verdict) {
                (true, Verdict::Ok) => write!(out, "."),
                (true, Verdict::Failed) => write!(out, "F"),
                (true, Verdict::Ignored) => write!(out, "i"),
                (false, Verdict::Ok) => writeln!(out, "test {trial} ... ok"),
                (false, Verdict::Failed) => writeln!(out, "test {trial} ... FAILED"),
                (false, Verdict::Ignored) => writeln!(out, "test {trial} ... ignored"),
            };
        }
        if !failures.is_empty() {
            let _ = writeln!(out, "\nfailures:\n");
            for (trial, text) in &failures {
                let _ = writeln!(out, "---- {trial} ----\n{text}");
            }
            let _ = writeln!(out, "\nfailures:");
            for (trial, _) in &failures {
                let _ = writeln!(out, "    {trial}");
            }
        }
        let _ = writeln!(
            out,
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

    fn args(list: &[&str]) -> Result<Arguments, ArgumentError> {
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
            // Every option with a value, written with `=`.
            (
                vec![
                    "--skip=tree/",
                    "--format=terse",
                    "--test-threads=2",
                    "--color=never",
                    "--logfile=log",
                    "-Zunstable-options",
                    "--shuffle-seed=7",
                    "--skip=a=b",
                ],
                Arguments {
                    skip: vec!["tree/".into(), "a=b".into()],
                    quiet: true,
                    ..Arguments::default()
                },
            ),
            (
                vec!["--bench", "--help", "--show-output", "--shuffle"],
                Arguments {
                    bench: true,
                    help: true,
                    ..Arguments::default()
                },
            ),
        ];
        for (given, expected) in cases {
            assert_eq!(args(&given), Ok(expected), "{given:?}");
        }
    }

    /// An option libtest does not have, a missing value or a value an option does not
    /// take is an error, not ignored.
    #[test]
    fn arguments_libtest_refuses_are_refused() {
        let cases = [
            (vec!["--bogus"], "unrecognized option \"--bogus\""),
            (vec!["--skipp=x"], "unrecognized option \"--skipp=x\""),
            (vec!["-x"], "unrecognized option \"-x\""),
            (vec!["--skip"], "option --skip takes a value"),
            (vec!["--exact=yes"], "option --exact takes no value"),
            (
                vec!["--format=json"],
                "option --format: \"json\" is not pretty or terse",
            ),
            (
                vec!["--test-threads=0"],
                "option --test-threads: \"0\" is not a number above 0",
            ),
            (
                vec!["--color", "blue"],
                "option --color: \"blue\" is not auto, always or never",
            ),
        ];
        for (given, message) in cases {
            let error = args(&given).expect_err("refused");
            assert!(error.to_string().starts_with(message), "{given:?}: {error}");
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
            (vec!["parse/", "--skip=bom"], false),
            (vec!["parse/bom", "--exact"], false),
            (vec!["parse/bom [pi]", "--exact"], true),
            (vec!["--bench"], false),
        ];
        for (given, selected) in cases {
            let read = args(&given).expect("libtest's arguments");
            assert_eq!(read.selects(name), selected, "{given:?}");
        }
    }

    /// The README's template: `load` is `todo!()`. Each case is a failed trial, a crash
    /// with the panic's message, and the run ends with its `test result:` line.
    #[test]
    fn a_port_that_panics_fails_its_trials_and_the_run_ends() {
        use crate::protocol::Operation;
        use crate::typed::{Call, Implementation, Loaded, Outcome, Typed};
        use session_reference::model::Profile;

        struct Port;
        impl Implementation for Port {
            fn name(&self) -> (String, String) {
                ("my-port".into(), "0.1.0".into())
            }
            fn profile(&self) -> Profile {
                Profile::Pi
            }
            fn operations(&self) -> Vec<Operation> {
                vec![Operation::Load]
            }
            fn load(&mut self, _call: &Call, _file: &std::path::Path) -> Outcome<Loaded> {
                todo!("open `file` with your implementation")
            }
        }
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/cases");
        let harness = Harness::new(corpus).profile(Profile::Pi);
        let mut out = Vec::new();
        let read = args(&["parse/a", "--skip=parse/array-line"]).expect("arguments");
        let passed = harness
            .trials(&read, &|| Box::new(Typed::new(Port)), &mut out)
            .expect("the run ends");
        let out = String::from_utf8(out).expect("text");
        assert!(!passed);
        for expected in [
            "test parse/array-last-line [pi] ... FAILED",
            "test parse/assorted-malformed-lines [pi] ... FAILED",
            "panicked: not yet implemented: open `file` with your implementation",
            "test result: FAILED. 0 passed; 2 failed; 0 ignored;",
        ] {
            assert!(out.contains(expected), "{expected:?} in:\n{out}");
        }
        assert!(!out.contains("array-line-middle"), "skipped:\n{out}");
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
            (Status::UnsafeListed, Verdict::Ok),
            (Status::UnexpectedPass, Verdict::Failed),
            (Status::Timeout, Verdict::Failed),
        ];
        for (status, expected) in cases {
            assert_eq!(verdict(status), expected, "{status:?}");
        }
    }
}
