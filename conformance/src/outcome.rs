//! The outcome of a run: each case's [`Status`] and [`CaseResult`], and a profile's
//! [`ProfileRun`]. A leaf below the runner, the reports and the divergence lists, which
//! all read it.

use std::fmt::Write as _;
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
    /// A safety check failed: the implementation destroyed data. No divergence line
    /// turns this into anything else, but one that says `unsafe` ([`Status::UnsafeListed`]).
    Unsafe,
    /// A safety check failed, and the case's id line in the divergence list records
    /// exactly that loss (its signature is the case's `unsafe: …` signature, and its
    /// reason is not the `UNREVIEWED` placeholder): the implementation destroys data
    /// on purpose. Still shown as unsafe everywhere; it does not fail the run.
    UnsafeListed,
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
            Status::UnsafeListed => "unsafe-listed",
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
            Status::Pass
                | Status::Skipped
                | Status::Divergent
                | Status::DivergentChanged
                | Status::UnsafeListed
        )
    }

    /// Whether a safety check failed: the implementation destroyed data, listed or not.
    pub fn is_unsafe(self) -> bool {
        matches!(self, Status::Unsafe | Status::UnsafeListed)
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
    /// `protocol-error`); for a failed safety check `unsafe: WHAT WAS LOST` whatever
    /// else differs; `None` for a pass or a skip. Expected-divergence lists record it,
    /// so it holds no control characters and no ` ## ` (`divergences::signature_text`).
    pub signature: Option<String>,
    /// How long the case took, adapter and comparison included.
    pub elapsed: Duration,
}

/// The most bytes of each text a [`CaseResult`] keeps (`diff`, `actual`, `expected`):
/// 64 KiB. A run keeps every result until its report is written, and an adapter's answer
/// may be 100 MiB: the texts are cut ([`bounded`]), so what a run keeps and writes is
/// bounded per case.
pub const MAX_KEPT_TEXT: usize = 64 << 10;

/// `text` when it is at most [`MAX_KEPT_TEXT`] bytes; else its first lines within the
/// limit (cut inside a line only when the first line alone is longer), then a line
/// `… (N more bytes)` that says how much was left out.
pub fn bounded(text: String) -> String {
    bounded_to(text, MAX_KEPT_TEXT)
}

/// [`bounded`] with a limit of `max` bytes.
fn bounded_to(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(newline) = text[..end].rfind('\n') {
        end = newline + 1;
    }
    let more = text.len() - end;
    text.truncate(end);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let _ = writeln!(text, "… ({more} more bytes)");
    text
}

/// JSON text (`actual`, `expected`) when it is at most [`MAX_KEPT_TEXT`] bytes; else a
/// JSON string of its [`bounded`] text: still JSON where a report embeds it, and saying
/// it was cut.
pub fn bounded_json(text: String) -> String {
    if text.len() <= MAX_KEPT_TEXT {
        return text;
    }
    // A string always serialises; the empty string stands in for the impossible failure.
    serde_json::to_string(&bounded(text)).unwrap_or_default()
}

impl CaseResult {
    /// Cuts the result's `diff`, `actual` and `expected` to [`MAX_KEPT_TEXT`] bytes
    /// each ([`bounded`], [`bounded_json`]): called on each result as its case ends.
    pub fn bound_texts(&mut self) {
        self.diff = self.diff.take().map(bounded);
        self.actual = self.actual.take().map(bounded_json);
        self.expected = self.expected.take().map(bounded_json);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_at_a_line_with_a_note() {
        let cases = [
            ("short\n", 10, "short\n"),
            ("line one\nline two\n", 12, "line one\n… (9 more bytes)\n"),
            ("abcdefghij", 4, "abcd\n… (6 more bytes)\n"),
            ("ééé", 3, "é\n… (4 more bytes)\n"),
        ];
        for (text, max, expected) in cases {
            assert_eq!(bounded_to(text.to_owned(), max), expected, "{text:?}");
        }
    }

    /// What a result keeps of a huge answer is bounded, and an `actual` that was cut is
    /// still JSON (a string that says so).
    #[test]
    fn a_result_keeps_bounded_texts() {
        let huge = format!("[\n{}0\n]\n", "0,\n".repeat(1_000_000));
        let mut result = CaseResult {
            id: "0001".into(),
            name: "g/n".into(),
            description: String::new(),
            clauses: Vec::new(),
            tags: Vec::new(),
            status: Status::Fail,
            pointer: None,
            diff: Some(huge.clone()),
            notes: Vec::new(),
            actual: Some(huge.clone()),
            expected: Some("[]\n".into()),
            signature: None,
            elapsed: Duration::ZERO,
        };
        result.bound_texts();
        let diff = result.diff.unwrap_or_default();
        assert!(diff.len() <= MAX_KEPT_TEXT + 40, "{}", diff.len());
        assert!(diff.ends_with(" more bytes)\n"), "{diff:.40}");
        let actual = result.actual.unwrap_or_default();
        assert!(actual.len() <= 2 * MAX_KEPT_TEXT, "{}", actual.len());
        let note: String = serde_json::from_str(&actual).expect("a JSON string");
        assert!(note.ends_with(" more bytes)\n"));
        assert_eq!(result.expected.as_deref(), Some("[]\n"));
    }
}
