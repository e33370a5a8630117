//! What a load reports besides its entries: a [`Diagnostic`] per line skipped or repaired,
//! the count of those past [`MAX_LISTED_DIAGNOSTICS`], and why a file has no header
//! ([`HeaderError`]) (000 "Loading and compatibility").

use std::fmt;

/// The most diagnostics a load lists one by one. Past it they are only counted by kind
/// ([`Unlisted`]): a file of millions of blank lines then costs the memory of its bytes,
/// not of a record per line.
pub const MAX_LISTED_DIAGNOSTICS: usize = 1_000;

/// Diagnostics past the first [`MAX_LISTED_DIAGNOSTICS`]: how many of each kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unlisted(pub std::collections::BTreeMap<DiagnosticKind, usize>);

impl Unlisted {
    /// How many diagnostics were counted and not listed.
    pub fn total(&self) -> usize {
        self.0.values().sum()
    }
}

/// A line the loader skipped or repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line number in the file.
    pub line: usize,
    /// What was wrong with it.
    pub kind: DiagnosticKind,
}

/// Kinds of [`Diagnostic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// The line is empty or whitespace only; skipped.
    BlankLine,
    /// The line is not JSON; skipped.
    NotJson,
    /// The last line is not JSON and has no final newline (a torn write); skipped.
    TornLine,
    /// The line is JSON but not an object (`null`, a number, a string, an array); skipped.
    NotObject,
    /// The line holds a JSON value followed by more text; the value is kept (omp) or the line skipped (pi).
    TrailingData,
    /// A UTF-8 byte-order mark before the first line; removed (pi) or fatal to the header (omp).
    ByteOrderMark,
    /// The line is not valid UTF-8; invalid bytes were read as U+FFFD.
    InvalidUtf8,
    /// A second `type:"session"` line; kept as an entry with no place in the tree.
    ExtraHeader,
    /// An object entry without a string `id`; kept, but it cannot be a parent or the leaf.
    MissingId,
    /// A `blob:sha256:` reference that is not 64 lowercase hex digits (omp); kept as text, never used as a path.
    InvalidBlobRef,
}

impl DiagnosticKind {
    /// The kind's stable snake_case name, as used in goldens.
    pub fn name(self) -> &'static str {
        match self {
            DiagnosticKind::BlankLine => "blank_line",
            DiagnosticKind::NotJson => "not_json",
            DiagnosticKind::TornLine => "torn_line",
            DiagnosticKind::NotObject => "not_object",
            DiagnosticKind::TrailingData => "trailing_data",
            DiagnosticKind::ByteOrderMark => "byte_order_mark",
            DiagnosticKind::InvalidUtf8 => "invalid_utf8",
            DiagnosticKind::ExtraHeader => "extra_header",
            DiagnosticKind::MissingId => "missing_id",
            DiagnosticKind::InvalidBlobRef => "invalid_blob_ref",
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {}",
            self.line,
            self.kind.name().replace('_', " ")
        )
    }
}

/// Why a file has no usable header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderError {
    /// 1-based line of the offending value (0 when the file has no content).
    pub line: usize,
    /// What was wrong.
    pub kind: HeaderErrorKind,
}

/// Kinds of [`HeaderError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderErrorKind {
    /// The file is empty or holds only whitespace.
    Empty,
    /// The first value is not JSON.
    NotJson,
    /// The first value is JSON but not a header (`type` is not `"session"` or `id` is not a string).
    NotAHeader,
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            HeaderErrorKind::Empty => f.write_str("empty file; no session header"),
            HeaderErrorKind::NotJson => write!(f, "line {}: session header is not JSON", self.line),
            HeaderErrorKind::NotAHeader => write!(
                f,
                "line {}: not a session header; the first line must be {{\"type\":\"session\",\"id\":…}}",
                self.line
            ),
        }
    }
}

impl std::error::Error for HeaderError {}
