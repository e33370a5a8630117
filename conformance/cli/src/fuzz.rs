//! Generated cases: `generate` writes them as a corpus, `fuzz` runs them against an
//! adapter and the reference and shrinks the first disagreement.
//!
//! Invariant: the same seed produces byte-identical cases.
//!
//! Here: a fuzz run ([`fuzz`]) and its options and results. `generate` makes the cases,
//! `compare` runs one through the adapter and the reference, `shrink` makes a
//! disagreement small; their public items are re-exported here.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use session_reference::model::Profile;

use self::compare::{compare, Verdict};
pub use self::generate::{generate, Generated};
use self::generate::{make_case, reference_output, tag_from_golden, write_case};
use self::shrink::shrink;
use session_conformance::adapter::{Adapter, Failure, ProcessAdapter};
use session_conformance::corpus::{Case, CorpusError};
use session_conformance::divergences::{Divergences, Excuse};
use session_conformance::runner::Status;

mod compare;
mod generate;
mod shrink;

/// The first generated case id (far above the hand-written corpus).
pub const FIRST_ID: u32 = 100_000;

/// Why `generate` or a fuzz run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum FuzzError {
    /// The adapter did not start, or did not say hello.
    AdapterStart(Failure),
    /// A generated case's file or folder could not be written.
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The reference gave no output for a generated case (a bug of the reference or
    /// of the generator).
    Reference {
        /// How the case ended.
        status: Status,
        /// What the reference said.
        message: String,
    },
    /// The corpus a finding is numbered for could not be read.
    Corpus {
        /// The corpus folder.
        corpus: PathBuf,
        /// Why it could not be read.
        error: CorpusError,
    },
}

impl std::fmt::Display for FuzzError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FuzzError::AdapterStart(failure) => write!(f, "the adapter did not start: {failure}"),
            FuzzError::Write { path, error } => write!(f, "{}: {error}", path.display()),
            FuzzError::Reference { status, message } => {
                write!(f, "reference: {}: {message}", status.name())
            }
            FuzzError::Corpus { corpus, error } => write!(
                f,
                "cannot number the finding for {}: {error}",
                corpus.display()
            ),
        }
    }
}

impl std::error::Error for FuzzError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FuzzError::Write { error, .. } => Some(error),
            FuzzError::Corpus { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// What a fuzz run found.
pub struct Finding {
    /// The shrunk case, written under the output folder.
    pub dir: PathBuf,
    /// Steps before and after shrinking.
    pub steps: (usize, usize),
    /// Expected (reference) → actual (adapter).
    pub diff: String,
}

/// Options of a fuzz run.
pub struct FuzzOptions {
    /// The adapter command.
    pub argv: Vec<String>,
    /// The profile.
    pub profile: Profile,
    /// How many cases at most.
    pub cases: usize,
    /// The seed.
    pub seed: u64,
    /// Stop after this long (the adapter's start and hello included).
    pub budget: Duration,
    /// Where the shrunk case goes (`<out>/<name>/`).
    pub out: PathBuf,
    /// Per-case timeout, and the longest wait for the adapter's hello.
    pub timeout: Duration,
    /// Object keys removed from both outputs before comparing (known divergences to look past).
    pub ignore_keys: Vec<String>,
    /// Expected divergences ([`session_conformance::divergences`]): a generated case that disagrees
    /// and falls in a declared category (`generated/*`, `tag:file-naming`, …) is looked
    /// past, and lines of a declared `entry-type:TYPE` are left out of written files
    /// before comparing.
    pub divergences: Divergences,
    /// The corpus a finding is numbered for: it gets the id after the corpus's highest.
    pub corpus: PathBuf,
}

/// What a fuzz run did.
pub struct FuzzRun {
    /// How many generated cases ran.
    pub ran: usize,
    /// The generated cases that disagreed only as the expected divergences declare:
    /// each case's name and what excused it (`SELECTOR: REASON`).
    pub looked_past: Vec<(String, String)>,
    /// The first disagreement no declared divergence covers, shrunk.
    pub finding: Option<Finding>,
}

/// What excuses a disagreement of `case`: the expected-divergences entry that covers it
/// (`SELECTOR: REASON`), if any.
fn excuse(case: &Case, divergences: &Divergences) -> Option<String> {
    divergences.excuse(case).map(|excuse| match excuse {
        Excuse::Id(known) => format!("{}: {}", case.id(), known.reason),
        Excuse::Category(line) => format!("{}: {}", line.text, line.reason),
    })
}

/// Runs generated cases through the adapter and the reference; shrinks and writes the first disagreement.
/// A disagreement in a category of `options.divergences` is looked past (see [`FuzzRun`]).
pub fn fuzz(options: &FuzzOptions, progress: &mut dyn Write) -> Result<FuzzRun, FuzzError> {
    let start = Instant::now();
    // The hello is waited for as long as a case, and never past the budget.
    let mut adapter = ProcessAdapter::new(options.argv.clone(), options.profile, false)
        .with_timeout(options.timeout.min(options.budget));
    let hello = adapter.hello().map_err(FuzzError::AdapterStart)?;
    let mut ran = 0;
    let mut looked_past = Vec::new();
    let mut generated = Generated::new(options.seed, options.profile);
    while ran < options.cases && start.elapsed() < options.budget {
        let Some((n, steps, leaf)) = generated.parts() else {
            break;
        };
        let mut case = make_case(options.profile, options.seed, n, &steps, leaf);
        ran += 1;
        let _ = write!(progress, "\r[{ran}/{}] {}", options.cases, case.file.name);
        let _ = progress.flush();
        match compare(&case, options, &mut adapter, &hello)? {
            Verdict::Agree => continue,
            Verdict::Covered(lines) => {
                looked_past.push((case.file.name.clone(), lines.join("; ")));
                continue;
            }
            Verdict::AgreeWithout => {
                let types: Vec<String> = options
                    .divergences
                    .extra_entry_types()
                    .map(|(kind, reason)| format!("entry-type:{kind}: {reason}"))
                    .collect();
                looked_past.push((case.file.name.clone(), types.join("; ")));
                continue;
            }
            Verdict::Disagree(_) => {
                let golden = reference_output(&case, options.profile)?;
                tag_from_golden(&mut case, &golden);
                if let Some(why) = excuse(&case, &options.divergences) {
                    looked_past.push((case.file.name.clone(), why));
                    continue;
                }
            }
        }
        let small = shrink(
            steps.clone(),
            |s| make_case(options.profile, options.seed, n, s, leaf),
            options,
            &mut adapter,
            &hello,
        )?;
        let case = make_case(options.profile, options.seed, n, &small, leaf);
        let diff = compare(&case, options, &mut adapter, &hello)?
            .diff()
            .unwrap_or_default();
        let mut written = case.clone();
        written.file.id = next_free_id(&options.corpus)?;
        written.file.name = format!("fuzz-{}-seed-{}-case-{n}", options.profile, options.seed);
        written.dir = options.out.join(&written.file.name);
        written.derived = session_conformance::corpus::Derived::default();
        write_case(&mut written, options.profile)?;
        let _ = writeln!(progress);
        return Ok(FuzzRun {
            ran,
            looked_past,
            finding: Some(Finding {
                dir: written.dir,
                steps: (steps.len(), small.len()),
                diff,
            }),
        });
    }
    let _ = writeln!(progress);
    Ok(FuzzRun {
        ran,
        looked_past,
        finding: None,
    })
}

/// The id after the highest of the hand-written cases in `corpus` (generated ids left aside),
/// so a finding can move to `corpus/cases/regression/` as it is.
fn next_free_id(corpus: &Path) -> Result<u32, FuzzError> {
    let cases = session_conformance::corpus::load(corpus).map_err(|error| FuzzError::Corpus {
        corpus: corpus.to_owned(),
        error,
    })?;
    let highest = cases
        .iter()
        .map(|c| c.file.id)
        .filter(|&id| id < FIRST_ID)
        .max();
    Ok(highest.map_or(1, |id| id + 1))
}
