//! What a crash run reports: each [`Trial`]'s outcome (with the [`PowerPoint`] of a
//! power-loss trial), the run's [`Summary`], and the expected-divergence list
//! (`--expect`, [`Expected`]) that tells divergent trials from failed ones.

use std::path::{Path, PathBuf};
use std::time::Duration;

use session_conformance::protocol::Hello;

use super::check::{self, Counts, Finding};
use super::plan::KillPoint;
use super::{io_error, CrashError};

/// One trial's outcome.
#[derive(Debug, Clone)]
pub struct Trial {
    /// Its number in the seed's sequence (`None` for the calibration run).
    pub index: Option<usize>,
    /// Where it was to be killed (`None`: not killed).
    pub kill: Option<KillPoint>,
    /// The delay after the anchor.
    pub delay: Duration,
    /// Acknowledgements received (the open and steps).
    pub acks: usize,
    /// The `apply` answered before the kill.
    pub completed: bool,
    /// Counts of the check.
    pub counts: Counts,
    /// What is wrong (empty: the trial passed).
    pub findings: Vec<Finding>,
    /// The case file written for it, if it failed.
    pub case: Option<PathBuf>,
    /// Where the power went out, for a power-loss trial.
    pub power: Option<PowerPoint>,
}

/// The moment a power-loss trial's power went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PowerPoint {
    /// Its number among the run's points.
    pub point: usize,
    /// File-system calls made before it.
    pub after_calls: usize,
    /// File-system calls of the whole run.
    pub calls: usize,
    /// Bytes written but not synced at that moment (any prefix of them survives).
    pub unsynced: usize,
}

impl Trial {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }

    /// Findings of `kind`'s name.
    pub fn count(&self, name: &str) -> usize {
        self.findings
            .iter()
            .filter(|f| f.kind.name() == name)
            .count()
    }

    /// Findings that lose acknowledged data.
    pub fn losses(&self) -> usize {
        self.findings.iter().filter(|f| f.kind.is_loss()).count()
    }
}

/// Finding kinds an implementation is known to produce, each with its reason (`--expect`):
/// a trial whose findings are all of listed kinds is divergent, not failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// (kind name, reason), in the list's order.
    pub kinds: Vec<(String, String)>,
}

impl Expected {
    /// Reads a list: `# comment` lines, blank lines, and `KIND reason` lines, KIND one of
    /// [`check::KIND_NAMES`].
    pub fn read(path: &Path) -> Result<Expected, CrashError> {
        let text = std::fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
        let mut kinds = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (kind, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let bad = |message: String| CrashError::Expect {
                path: path.to_path_buf(),
                line: n + 1,
                message,
            };
            if !check::KIND_NAMES.contains(&kind) {
                return Err(bad(format!(
                    "unknown finding kind {kind:?}; one of {}",
                    check::KIND_NAMES.join(", ")
                )));
            }
            if reason.trim().is_empty() {
                return Err(bad(format!(
                    "{kind} has no reason; write `{kind} why it is expected`"
                )));
            }
            kinds.push((kind.to_owned(), reason.trim().to_owned()));
        }
        Ok(Expected { kinds })
    }

    /// Whether `trial` failed only with listed kinds.
    pub fn covers(&self, trial: &Trial) -> bool {
        !trial.passed()
            && trial
                .findings
                .iter()
                .all(|f| self.kinds.iter().any(|(k, _)| k == f.kind.name()))
    }
}

/// A whole run.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The adapter's hello.
    pub hello: Hello,
    /// The run without a kill.
    pub calibration: Trial,
    /// The trials.
    pub trials: Vec<Trial>,
}

impl Summary {
    /// Trials that failed with a finding `expected` does not list (the calibration run
    /// counts as one).
    pub fn failed(&self, expected: &Expected) -> usize {
        self.all()
            .filter(|t| !t.passed() && !expected.covers(t))
            .count()
    }

    /// Trials whose findings `expected` lists.
    pub fn divergent(&self, expected: &Expected) -> usize {
        self.all().filter(|t| expected.covers(t)).count()
    }

    /// The calibration run, then the trials.
    pub fn all(&self) -> impl Iterator<Item = &Trial> {
        std::iter::once(&self.calibration).chain(&self.trials)
    }

    /// The sum of `f` over the calibration run and every trial.
    pub fn total(&self, f: impl Fn(&Trial) -> usize) -> usize {
        self.all().map(f).sum()
    }
}
