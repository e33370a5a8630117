//! Kill -9 trials (`session-conformance crash`, issue #24 item 2): what survives when an
//! implementation is killed in the middle of a long `apply`.
//!
//! A trial:
//! 1. writes a large v1 session file (`plan`) in a fresh directory under the run's root;
//! 2. starts the adapter, sends an `apply` in ack mode (`PROTOCOL.md` "Ack mode"): it
//!    opens the v1 file (a migration rewrite), then runs hundreds of appends with
//!    periodic flushes, a branch, a branch summary and a createBranchedSession, and
//!    acknowledges the open and each step as it returns;
//! 3. kills the adapter's process group with SIGKILL at the trial's kill point (a seeded
//!    anchor, "after the ack of step N", plus a seeded fraction of the time the
//!    calibration run took to its next line);
//! 4. reads every acknowledgement the adapter managed to write, and checks the files with
//!    the reference (`check`);
//! 5. reopens each session file with a second adapter process (a later open: a user and
//!    an assistant message, a flush), and checks again, temp files included.
//!
//! A calibration run first runs the same kind of plan without a kill: it measures the
//! times the kill points are drawn over and proves the adapter acknowledges.
//!
//! Invariants: every wait has a deadline; nothing the adapter writes or leaves can make
//! the command panic; the adapter's scratch directory (`TMPDIR`) and every file read are
//! inside the run's root; the same `--seed` and trial number give the same plan and kill
//! point (the delay in microseconds scales with the calibration's timing).
//!
//! By concern: `trials` runs them (the calibration, kill and power-loss trials, the
//! later open), `drive` reads one trial's adapter live and kills it, `results` holds
//! what a run reports, and `cases` writes failing trials as cases; [`check`] checks
//! what a trial left, with [`acks`], [`plan`], [`power`] and [`process`] below.
//! Here: what a run is asked to do ([`Config`]) and why it could not run
//! ([`CrashError`]).

pub mod acks;
mod cases;
pub mod check;
mod drive;
mod findings;
pub mod plan;
pub mod power;
pub mod process;
mod promises;
mod results;
mod trials;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use session_reference::model::Profile;

pub use check::{Counts, Finding, FindingKind};
pub use plan::{Anchor, KillPoint, Plan, Size, StepKind};
pub use results::{Expected, PowerPoint, Summary, Trial};
pub use trials::run;

/// What a crash run does.
#[derive(Debug, Clone)]
pub struct Config {
    /// The adapter command (no shell).
    pub argv: Vec<String>,
    /// The profile under test.
    pub profile: Profile,
    /// Trials to run (numbered from 0).
    pub trials: usize,
    /// The seed of every plan and kill point.
    pub seed: u64,
    /// Run only this trial of the seed's sequence (`--trial`).
    pub only_trial: Option<usize>,
    /// How big each trial is.
    pub size: Size,
    /// The longest wait for any one thing (a hello, the calibration run, a trial's
    /// `apply`, a reopen).
    pub timeout: Duration,
    /// Where failing trials are written as cases (`None`: not written).
    pub cases_dir: Option<PathBuf>,
    /// Keep every trial's directory (under the run's root, which is then kept too).
    pub keep: bool,
    /// The command line that reproduces a trial, without `--trial` (for case files).
    pub command_line: String,
    /// Simulated power loss instead of kills (`--power-loss`): each trial runs to the
    /// end with a journal, then is checked at this many moments the power went out.
    pub power_points: Option<usize>,
}

impl Config {
    /// Defaults for `argv` and `profile`: 20 trials of seed 1, 300 appends over a v1
    /// file of 2,000 entries, 60 s waits, no case files.
    pub fn new(argv: Vec<String>, profile: Profile) -> Config {
        Config {
            argv,
            profile,
            trials: 20,
            seed: 1,
            only_trial: None,
            size: Size {
                appends: 300,
                v1_entries: 2000,
            },
            timeout: Duration::from_mins(1),
            cases_dir: None,
            keep: false,
            command_line: String::new(),
            power_points: None,
        }
    }
}

/// Why a crash run could not run (a failing trial is not an error: it is a finding).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrashError {
    /// The adapter could not be started.
    Start {
        /// The command.
        command: String,
        /// The system's reason.
        message: String,
    },
    /// The adapter gave no usable hello.
    Hello {
        /// The command.
        command: String,
        /// What happened (with its stderr's tail).
        message: String,
    },
    /// The calibration run's `apply` was answered without a single acknowledgement.
    NoAcks {
        /// The implementation (from its hello).
        implementation: String,
    },
    /// A power-loss run (`--power-loss`) against an adapter without a journal.
    NoJournal {
        /// The implementation (from its hello).
        implementation: String,
    },
    /// The calibration run did not finish.
    Calibration {
        /// What happened.
        message: String,
    },
    /// An expected-divergence list (`--expect`) has a bad line.
    Expect {
        /// The list.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file or folder of the run could not be made or written.
    Io {
        /// The path.
        path: PathBuf,
        /// The system's reason.
        message: String,
    },
}

impl fmt::Display for CrashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashError::Start { command, message } => {
                write!(f, "cannot start adapter `{command}`: {message}")
            }
            CrashError::Hello { command, message } => {
                write!(f, "adapter `{command}`: {message}")
            }
            CrashError::NoAcks { implementation } => write!(
                f,
                "{implementation} answered the calibration apply without acknowledgements; the adapter has no ack mode (PROTOCOL.md \"Ack mode\")"
            ),
            CrashError::NoJournal { implementation } => write!(
                f,
                "{implementation} does not declare the `journal` capability: it cannot report its file-system calls, so a power loss cannot be simulated (PROTOCOL.md \"Journal\")"
            ),
            CrashError::Calibration { message } => {
                write!(f, "the calibration run failed: {message}")
            }
            CrashError::Expect {
                path,
                line,
                message,
            } => write!(f, "{}: line {line}: {message}", path.display()),
            CrashError::Io { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for CrashError {}

/// Replaces `{"$result": N}` in a step by what step N returned (as the adapters do).
pub fn substitute(step: &Value, results: &[Value]) -> Value {
    session_conformance::execute::substitute(step, results)
}

fn io_error(path: &Path, e: &std::io::Error) -> CrashError {
    CrashError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
