//! The outcome of a run: each case's [`Status`] and [`CaseResult`], and a profile's
//! [`ProfileRun`]. A leaf below the runner, the reports and the divergence lists, which
//! all read it.

use std::time::Duration;

use session_reference::model::Profile;

use crate::protocol::Hello;

/// The outcome of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Output matched the golden and every safety check held.
    Pass,
    /// Output differed from the golden.
    Fail,
    /// A safety check failed: the implementation destroyed data.
    Unsafe,
    /// The operation is not supported by the adapter.
    Skipped,
    /// Failed, and listed as a known divergence.
    Divergent,
    /// Failed, listed as a known divergence, but in another way than its recorded
    /// signature: the reason may be stale.
    DivergentChanged,
    /// Passed, though listed as a known divergence (the list is stale).
    UnexpectedPass,
    /// No answer in time.
    Timeout,
    /// The adapter process died.
    Crash,
    /// The adapter answered something that is not the protocol.
    ProtocolError,
}

impl Status {
    /// The status's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Unsafe => "unsafe",
            Status::Skipped => "skipped",
            Status::Divergent => "divergent",
            Status::DivergentChanged => "divergent-changed",
            Status::UnexpectedPass => "unexpected-pass",
            Status::Timeout => "timeout",
            Status::Crash => "crash",
            Status::ProtocolError => "protocol-error",
        }
    }

    /// Whether the status makes the run fail.
    pub fn is_failure(self) -> bool {
        !matches!(
            self,
            Status::Pass | Status::Skipped | Status::Divergent | Status::DivergentChanged
        )
    }
}

/// The note of a case its divergence list excuses with the placeholder reason of
/// `--write-divergences` (`divergences::UNREVIEWED`).
pub const UNREVIEWED_NOTE: &str = "unreviewed: the divergence list gives no reason yet";

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// Case id.
    pub id: String,
    /// `group/name`.
    pub name: String,
    /// What the case checks: its `description` (empty when it has none).
    pub description: String,
    /// The clauses of the specification (`docs/spec/`) the case pins.
    pub clauses: Vec<String>,
    /// The case's tags (`case.json`'s `tags`): the JSON report carries them with the
    /// clauses, so that `report` labels each case as the corpus run did.
    pub tags: Vec<String>,
    /// Outcome.
    pub status: Status,
    /// JSON Pointer of the first difference.
    pub pointer: Option<String>,
    /// Unified diff, expected → actual.
    pub diff: Option<String>,
    /// Failed safety checks, timeouts, crashes, reasons.
    pub notes: Vec<String>,
    /// The canonical actual output, normalised (for bless and reports).
    pub actual: Option<String>,
    /// The canonical expected output as compared (the golden, less what is not compared),
    /// when the case differed.
    pub expected: Option<String>,
    /// How the case differs, in one line: the first difference
    /// (`POINTER: EXPECTED -> ACTUAL`), `error KIND`, or the status (`crash`, `timeout`,
    /// `protocol-error`); `None` for a pass or a skip. Expected-divergence lists record it.
    pub signature: Option<String>,
    /// How long the case took, adapter and comparison included.
    pub elapsed: Duration,
}

/// One profile's results.
pub struct ProfileRun {
    /// The profile.
    pub profile: Profile,
    /// What the adapter said of itself.
    pub hello: Hello,
    /// Results in corpus order.
    pub results: Vec<CaseResult>,
}
