//! `run`: the main job: corpus cases against an implementation, compared with the goldens.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use session_conformance::guard::printable;
use session_conformance::harness::{self, Harness};
use session_conformance::report::{self, ProfileRun};
use session_conformance::{bundle, corpus, runner};
use session_reference::model::Profile;

use super::{corpus_dir, parse_profile, status, write_stdout, AdapterArgs};

/// The report's format (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable lines and diffs.
    Text,
    /// JSON Lines: a header record, one record per case, a summary record.
    Json,
    /// JUnit XML.
    Junit,
}

/// Run corpus cases against an implementation and compare with the goldens.
///
/// Exit status: 0 when every selected case passed (or is a listed divergence),
/// 1 when any failed, 2 on usage errors (a corpus with no case, or none of the
/// profile's, among them) or when the adapter cannot start.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    adapter: AdapterArgs,
    /// Profile(s) to run (pi, omp, operator); default: every profile for the reference, required for an adapter.
    #[arg(long, value_parser = parse_profile)]
    profile: Vec<Profile>,
    /// Corpus directory (default: corpus/cases when it is here, else the corpus built into
    /// the binary).
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// Only cases whose group/name (e.g. `parse/*`) or id matches this glob.
    #[arg(long)]
    filter: Option<String>,
    /// Known divergences: lines of `CASE-ID reason`, `GROUP/NAME-GLOB reason`,
    /// `tag:TAG reason` or `entry-type:TYPE reason` (PROTOCOL.md "Expected divergences").
    #[arg(long)]
    expect: Option<PathBuf>,
    /// After the run, write each listed case's signature (how it differs now) into the
    /// `--expect` list, remove the ids that now pass under every profile run, and add
    /// each failure with the placeholder reason `UNREVIEWED` (later runs say so until a
    /// reason is written); a missing list is made, so one run seeds it. Such a run waits
    /// the whole --timeout for every case. A case that destroys data is never listed by
    /// this: its line stays `unsafe` until someone writes its reason.
    #[arg(long, requires = "expect")]
    write_divergences: bool,
    /// Cases run in parallel (one adapter process each); default: the number of CPUs.
    #[arg(long)]
    jobs: Option<usize>,
    /// Seconds an adapter may take per case; a case the `--expect` list signs
    /// `## timeout` gets about a second (PROTOCOL.md "Expected divergences").
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Start the adapter once per case (one request on stdin, one response on stdout).
    #[arg(long)]
    one_shot: bool,
    /// Let jobs and adapters move between CPUs. By default (Linux), when there are
    /// fewer jobs than CPUs, each job and its adapter stay on one CPU: a request and
    /// its answer then take turns on it instead of waking an idle CPU each time, which
    /// is slow on virtual machines.
    #[arg(long)]
    no_pin: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Colour in text reports.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

/// When text reports are coloured.
#[derive(Clone, Copy, ValueEnum)]
enum Color {
    /// When stdout is a terminal and `NO_COLOR` is not set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Runs `run`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let reference = args.adapter.is_reference();
    let profiles = args.adapter.profiles(&args.profile, &Profile::ALL)?;
    let corpus_root = corpus_dir(args.corpus.as_deref())?;
    if !corpus_root.is_dir() {
        return Err(format!(
            "{}: corpus directory not found (use --corpus)",
            corpus_root.display()
        ));
    }
    let divergences = match &args.expect {
        // `--write-divergences` makes a missing list: one run seeds it.
        Some(path) if args.write_divergences && !path.exists() => runner::Divergences::new(),
        Some(path) => runner::read_divergences(path).map_err(shown)?,
        None => runner::Divergences::new(),
    };
    // Read once for every profile: a case of several profiles shares its goldens and
    // known tokens between their runs.
    let cases = Arc::new(corpus::load(&corpus_root).map_err(shown)?);
    if let Some(path) = &args.expect {
        warn_of_dead_ids(path, &divergences, &cases, &corpus_root);
    }
    // An emptied folder, a submodule not checked out or a wrong subfolder is the
    // loader's error (`corpus::load`): no case is no pass.
    if let Some(glob) = &args.filter {
        let matcher = globset::Glob::new(glob)
            .map_err(|e| format!("bad --filter {glob:?}: {e}"))?
            .compile_matcher();
        if !cases
            .iter()
            .any(|c| matcher.is_match(c.full_name()) || matcher.is_match(c.id()))
        {
            return Err(format!(
                "--filter {glob:?} matches no case of {} (it matches `group/name`, e.g. `parse/*`, or an id)",
                corpus_root.display()
            ));
        }
    }
    let mut runs: Vec<ProfileRun> = Vec::new();
    for profile in profiles {
        let mut harness = Harness::new(&corpus_root)
            .loaded(Arc::clone(&cases))
            .profile(profile)
            .ignore(divergences.clone().waiting_in_full(args.write_divergences))
            .jobs(
                args.jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
            )
            .timeout(Duration::from_secs(args.timeout))
            .pin_cpus(!args.no_pin)
            .progress(args.format == Format::Text);
        if let Some(glob) = &args.filter {
            harness = harness.filter(glob).map_err(shown)?;
        }
        let run = if reference {
            harness.run_reference().map_err(shown)?
        } else {
            let command: Vec<String> = args.adapter.command();
            harness
                .run_process(&command, args.one_shot)
                .map_err(shown)?
        };
        runs.push(run);
    }
    if runs.iter().all(|run| run.results.is_empty()) {
        let profiles: Vec<&str> = runs.iter().map(|run| run.profile.name()).collect();
        return Err(format!(
            "none of the {} case(s) of {} applies to profile {}; is it the right corpus?",
            cases.len(),
            printable(&corpus_root.display().to_string()),
            profiles.join(", ")
        ));
    }
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::env::var_os("NO_COLOR").is_none() && io::stdout().is_terminal(),
    };
    let version = corpus_version(&corpus_root, &cases);
    let text = match args.format {
        Format::Text => report::text(&runs, color, &version),
        Format::Json => report::json_lines(&runs, &version),
        Format::Junit => report::junit(&runs, &version),
    };
    write_stdout(&text)?;
    if let (true, Some(path)) = (args.write_divergences, &args.expect) {
        let changed =
            session_conformance::divergences::write_signatures(path, &runs).map_err(shown)?;
        eprintln!(
            "session-conformance: {}: {} signature(s) written, {} failure(s) added as UNREVIEWED, {} passing id(s) removed{}",
            path.display(),
            changed.signed.len(),
            changed.added.len(),
            changed.removed.len(),
            if changed.removed.is_empty() {
                String::new()
            } else {
                format!(" ({})", changed.removed.join(", "))
            }
        );
        if !changed.unsafe_kept.is_empty() {
            eprintln!(
                "session-conformance: {}: {} listed case(s) now destroy data and stay unsafe: {}; review each and sign its line with the case's `unsafe: …` signature only if the loss is by design",
                path.display(),
                changed.unsafe_kept.len(),
                changed.unsafe_kept.join(", ")
            );
        }
    }
    Ok(status(harness::all_good(&runs)))
}

/// The version of the corpus run. Its files are hashed after the run; when that fails (a
/// file gone or changed meanwhile), the results are kept: the report names the corpus
/// without a hash and says why, a warning says so, and the exit status stays the verdict's.
fn corpus_version(root: &std::path::Path, cases: &[corpus::Case]) -> bundle::CorpusVersion {
    bundle::version_of(root, cases).unwrap_or_else(|e| {
        let problem = printable(&e.to_string()).into_owned();
        eprintln!(
            "session-conformance: warning: the corpus could not be hashed ({problem}); the report names it without a hash"
        );
        bundle::CorpusVersion::unhashed(cases.len(), problem)
    })
}

/// An error's message for stderr, control characters escaped: it may quote an adapter
/// (its hello) or the corpus (a case's path).
#[allow(clippy::needless_pass_by_value)] // used as `map_err(shown)`
fn shown(error: impl std::fmt::Display) -> String {
    printable(&error.to_string()).into_owned()
}

/// Says on stderr which id lines of the list at `path` name no case of the corpus run:
/// a typo, or a case the corpus no longer has; such a line excuses nothing.
fn warn_of_dead_ids(
    path: &std::path::Path,
    divergences: &runner::Divergences,
    cases: &[session_conformance::corpus::Case],
    corpus_root: &std::path::Path,
) {
    let ids: std::collections::BTreeSet<String> = cases
        .iter()
        .map(session_conformance::corpus::Case::id)
        .collect();
    let dead: Vec<&str> = divergences
        .by_id
        .keys()
        .filter(|id| !ids.contains(*id))
        .map(String::as_str)
        .collect();
    if !dead.is_empty() {
        eprintln!(
            "session-conformance: {}: {} id line(s) name no case of {}: {}",
            printable(&path.display().to_string()),
            dead.len(),
            printable(&corpus_root.display().to_string()),
            dead.join(", ")
        );
    }
}
