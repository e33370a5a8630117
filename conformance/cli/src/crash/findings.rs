//! What a crash trial's check reports: a [`Finding`], its [`FindingKind`] (each with the
//! name an expected-divergence list uses, [`KIND_NAMES`]), and how each reads.

use std::fmt;

/// One thing wrong with what a trial left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file, relative to the trial directory (empty when none is concerned).
    pub file: String,
    /// The 1-based line, when one line is concerned.
    pub line: Option<usize>,
    /// What is wrong.
    pub kind: FindingKind,
}

/// Kinds of [`Finding`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindingKind {
    /// An acknowledged entry (durable, or followed by an acknowledged flush) is not in its file.
    Lost {
        /// The entry id the step returned.
        id: String,
        /// The step that appended it.
        step: usize,
    },
    /// An acknowledged entry is not in its file but was written to another session file.
    Misplaced {
        /// The entry id.
        id: String,
        /// The step that appended it.
        step: usize,
        /// The file it was written to instead.
        found_in: String,
    },
    /// The file ends in a torn line that holds an acknowledged entry.
    TornAcknowledged {
        /// The entry id.
        id: String,
        /// The step that appended it.
        step: usize,
    },
    /// An acknowledged entry is present but differs from what was acknowledged.
    Altered {
        /// The entry id.
        id: String,
        /// The step that appended it.
        step: usize,
    },
    /// Two entries share one line (a torn line continued by the next write, or two objects).
    Fused,
    /// A second `type:"session"` line.
    SecondHeader,
    /// A line the reference skips, other than a torn final line never acknowledged.
    BadLine {
        /// The reference's diagnostic (`not_json`, `blank_line`, …).
        diagnostic: &'static str,
    },
    /// The file has no session header.
    NoHeader {
        /// The reference's reason.
        reason: String,
    },
    /// The migration rewrite left neither the old file nor the complete new one.
    Migration {
        /// What was found instead.
        reason: String,
    },
    /// The branched session lacks an entry of the path it copies.
    BranchedIncomplete {
        /// The missing entry.
        id: String,
    },
    /// One entry id on two lines of one file.
    Duplicate {
        /// The id.
        id: String,
    },
    /// A file that is neither a session file nor a kept copy is left after a later open.
    StaleTemp,
    /// The adapter named a file outside the trial directory (not read).
    Escaped {
        /// The path it named.
        path: String,
    },
    /// The adapter misbehaved (a reopen failed, no answer, a protocol error).
    Adapter {
        /// What happened.
        reason: String,
    },
}

/// Every [`FindingKind`]'s name (what an expected-divergence list may name).
pub const KIND_NAMES: [&str; 14] = [
    "lost",
    "misplaced",
    "torn_acknowledged",
    "altered",
    "fused",
    "second_header",
    "bad_line",
    "no_header",
    "migration",
    "branched_incomplete",
    "duplicate",
    "stale_temp",
    "escaped",
    "adapter",
];

impl FindingKind {
    /// The kind's stable snake_case name (reports and case files).
    pub fn name(&self) -> &'static str {
        match self {
            FindingKind::Lost { .. } => "lost",
            FindingKind::Misplaced { .. } => "misplaced",
            FindingKind::TornAcknowledged { .. } => "torn_acknowledged",
            FindingKind::Altered { .. } => "altered",
            FindingKind::Fused => "fused",
            FindingKind::SecondHeader => "second_header",
            FindingKind::BadLine { .. } => "bad_line",
            FindingKind::NoHeader { .. } => "no_header",
            FindingKind::Migration { .. } => "migration",
            FindingKind::BranchedIncomplete { .. } => "branched_incomplete",
            FindingKind::Duplicate { .. } => "duplicate",
            FindingKind::StaleTemp => "stale_temp",
            FindingKind::Escaped { .. } => "escaped",
            FindingKind::Adapter { .. } => "adapter",
        }
    }

    /// Whether it is a loss of acknowledged data (counted in the report's losses).
    pub fn is_loss(&self) -> bool {
        matches!(
            self,
            FindingKind::Lost { .. }
                | FindingKind::Misplaced { .. }
                | FindingKind::TornAcknowledged { .. }
                | FindingKind::Altered { .. }
                | FindingKind::BranchedIncomplete { .. }
        )
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindingKind::Lost { id, step } => {
                write!(f, "acknowledged entry {id} (step {step}) is missing")
            }
            FindingKind::Misplaced { id, step, found_in } => write!(
                f,
                "acknowledged entry {id} (step {step}) is missing; it was written to {found_in}"
            ),
            FindingKind::TornAcknowledged { id, step } => write!(
                f,
                "the torn final line holds acknowledged entry {id} (step {step})"
            ),
            FindingKind::Altered { id, step } => write!(
                f,
                "entry {id} (step {step}) differs from what was acknowledged"
            ),
            FindingKind::Fused => f.write_str("two entries fused on one line"),
            FindingKind::SecondHeader => f.write_str("a second session header"),
            FindingKind::BadLine { diagnostic } => {
                write!(f, "a line the reference skips ({diagnostic})")
            }
            FindingKind::NoHeader { reason } => write!(f, "no session header ({reason})"),
            FindingKind::Migration { reason } => write!(
                f,
                "the migration rewrite left neither the old file nor the complete new one; {reason}"
            ),
            FindingKind::BranchedIncomplete { id } => {
                write!(f, "the branched session lacks entry {id} of its path")
            }
            FindingKind::Duplicate { id } => write!(f, "entry {id} is written twice"),
            FindingKind::StaleTemp => f.write_str("a temp file is left after a later open"),
            FindingKind::Escaped { path } => write!(
                f,
                "the adapter named a path outside the trial directory: {path}"
            ),
            FindingKind::Adapter { reason } => write!(f, "adapter: {reason}"),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.file.is_empty() {
            write!(f, "{}: ", self.file)?;
        }
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

/// A finding about the adapter itself, in no file.
pub(super) fn adapter_finding(reason: String) -> Finding {
    finding("", None, FindingKind::Adapter { reason })
}

pub(super) fn finding(file: &str, line: Option<usize>, kind: FindingKind) -> Finding {
    Finding {
        file: file.to_owned(),
        line,
        kind,
    }
}
