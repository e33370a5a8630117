//! Bytes → lines → header and entries, leniently, as each profile's loader does (000 "Loading and compatibility"; pi-mono `parseSessionEntries`).
//!
//! Parsing never fails: it returns what it could read and a [`Diagnostic`] for every
//! line it skipped. The header decides whether the file is a session at all; that
//! verdict is a [`HeaderError`], not a panic.
//!
//! The two loaders differ in small ways, and the reference follows each:
//! - Both drop a leading BOM and skip lines that are not JSON; the first *parsed*
//!   value must be the header (so garbage before the header is skipped).
//! - pi skips a line that is not exactly one JSON value; omp (Bun's JSONL reader)
//!   keeps the first value of a line with trailing data.
//!
//! Lines that are JSON but not objects (`null`, `5`, `[1]`, `"s"`) are skipped with a
//! diagnostic; the real loaders keep them as entries and then crash or lose the
//! leaf on them (the corpus records that divergence).

use std::fmt;

use serde_json::value::RawValue;

use crate::model::{Entry, EntryKind, Profile, SessionHeader};
use crate::raw::RawObject;

/// The result of reading a session file's text.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The header, or why the file has none.
    pub header: Result<SessionHeader, HeaderError>,
    /// Entry lines after the header, in file order.
    pub entries: Vec<Entry>,
    /// One record per skipped or suspicious line.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether the text is empty or ends with `\n` (an append may start right after it).
    pub ends_with_newline: bool,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// Parses a session file's bytes as `profile`'s loader does.
pub fn parse(bytes: &[u8], profile: Profile) -> Parsed {
    let mut diagnostics = Vec::new();
    let text = String::from_utf8_lossy(bytes);
    let mut text: &str = &text;
    let ends_with_newline = text.is_empty() || text.ends_with('\n');
    if let Some(rest) = text.strip_prefix('\u{feff}') {
        diagnostics.push(Diagnostic {
            line: 1,
            kind: DiagnosticKind::ByteOrderMark,
        });
        text = rest;
    }

    let mut header: Option<Result<SessionHeader, HeaderError>> = None;
    let mut entries = Vec::new();
    let mut ordinal = 0usize;
    let mut first_bad: Option<usize> = None;
    let line_count = text.split('\n').count();
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        if line.contains('\u{fffd}') && std::str::from_utf8(bytes).is_err() {
            diagnostics.push(Diagnostic {
                line: number,
                kind: DiagnosticKind::InvalidUtf8,
            });
        }
        if is_blank(line) {
            if index + 1 < line_count {
                diagnostics.push(Diagnostic {
                    line: number,
                    kind: DiagnosticKind::BlankLine,
                });
            }
            continue;
        }
        let torn = index + 1 == line_count && !ends_with_newline;
        let value = match read_value(line, profile) {
            Ok((value, trailing)) => {
                if trailing {
                    diagnostics.push(Diagnostic {
                        line: number,
                        kind: DiagnosticKind::TrailingData,
                    });
                }
                value
            }
            Err(kind) => {
                let kind = if torn && kind == DiagnosticKind::NotJson {
                    DiagnosticKind::TornLine
                } else {
                    kind
                };
                diagnostics.push(Diagnostic { line: number, kind });
                first_bad.get_or_insert(number);
                continue;
            }
        };
        let this_ordinal = ordinal;
        ordinal += 1;
        let object = if value.get().starts_with('{') {
            RawObject::parse(value.get())
        } else {
            None
        };
        match (&header, object) {
            (None, Some(obj)) => {
                header = Some(
                    SessionHeader::from_object(&obj, value.get()).ok_or(HeaderError {
                        line: number,
                        kind: HeaderErrorKind::NotAHeader,
                    }),
                );
            }
            (None, None) => {
                header = Some(Err(HeaderError {
                    line: number,
                    kind: HeaderErrorKind::NotAHeader,
                }));
            }
            (Some(_), None) => diagnostics.push(Diagnostic {
                line: number,
                kind: DiagnosticKind::NotObject,
            }),
            (Some(_), Some(obj)) => {
                let mut entry = Entry::from_object(&obj, value.clone(), this_ordinal);
                entry.line = number;
                if profile == Profile::Omp && has_invalid_blob_ref(value.get()) {
                    diagnostics.push(Diagnostic {
                        line: number,
                        kind: DiagnosticKind::InvalidBlobRef,
                    });
                }
                if entry.kind == EntryKind::ExtraHeader {
                    diagnostics.push(Diagnostic {
                        line: number,
                        kind: DiagnosticKind::ExtraHeader,
                    });
                } else if entry.id.is_none() {
                    diagnostics.push(Diagnostic {
                        line: number,
                        kind: DiagnosticKind::MissingId,
                    });
                }
                entries.push(entry);
            }
        }
        if matches!(header, Some(Err(_))) {
            break;
        }
    }
    let header = header.unwrap_or(Err(match first_bad {
        Some(line) => HeaderError {
            line,
            kind: HeaderErrorKind::NotJson,
        },
        None => HeaderError {
            line: 0,
            kind: HeaderErrorKind::Empty,
        },
    }));
    if header.is_err() {
        entries.clear();
    }
    Parsed {
        header,
        entries,
        diagnostics,
        ends_with_newline,
    }
}

/// Whether a line's text holds a string that starts like a blob reference but is not a valid one.
fn has_invalid_blob_ref(text: &str) -> bool {
    text.match_indices(crate::blobs::BLOB_PREFIX)
        .any(|(at, _)| {
            let rest = &text[at..];
            let token = rest.split(['"', '\\']).next().unwrap_or_default();
            crate::blobs::BlobRef::parse(token).is_err()
        })
}

/// Whether a line is blank as JavaScript's `String.prototype.trim` sees it.
fn is_blank(line: &str) -> bool {
    line.chars().all(is_js_whitespace)
}

/// JavaScript's WhiteSpace and LineTerminator characters (what `trim()` removes).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(c, '\u{9}'..='\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

/// Reads one JSON value from a line: `(value, had trailing data)`.
fn read_value(line: &str, profile: Profile) -> Result<(Box<RawValue>, bool), DiagnosticKind> {
    match serde_json::from_str::<&RawValue>(line) {
        Ok(value) => Ok((value.to_owned(), false)),
        Err(_) if profile == Profile::Omp => {
            let mut stream = serde_json::Deserializer::from_str(line).into_iter::<&RawValue>();
            match stream.next() {
                Some(Ok(value)) => Ok((value.to_owned(), true)),
                _ => Err(DiagnosticKind::NotJson),
            }
        }
        Err(_) => {
            let mut stream = serde_json::Deserializer::from_str(line).into_iter::<&RawValue>();
            match stream.next() {
                Some(Ok(_)) => Err(DiagnosticKind::TrailingData),
                _ => Err(DiagnosticKind::NotJson),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::type_complexity)] // table-driven cases
mod tests {
    use super::*;

    const H: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;
    const M: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#;

    fn kinds(p: &Parsed) -> Vec<(usize, &'static str)> {
        p.diagnostics
            .iter()
            .map(|d| (d.line, d.kind.name()))
            .collect()
    }

    #[test]
    fn lenient_lines_are_skipped_with_diagnostics() {
        let cases: &[(&str, Profile, usize, &[(usize, &str)])] = &[
            (
                "{H}\n\n   \n{M}\n",
                Profile::Pi,
                1,
                &[(2, "blank_line"), (3, "blank_line")],
            ),
            ("{H}\nnot json\n{M}\n", Profile::Pi, 1, &[(2, "not_json")]),
            (
                "{H}\n{M}\n{\"type\":\"mess",
                Profile::Pi,
                1,
                &[(3, "torn_line")],
            ),
            ("{H}\r\n{M}\r\n", Profile::Omp, 1, &[]),
            (
                "{H}\nnull\n5\n\"s\"\n[1]\n{M}\n",
                Profile::Omp,
                1,
                &[
                    (2, "not_object"),
                    (3, "not_object"),
                    (4, "not_object"),
                    (5, "not_object"),
                ],
            ),
            ("{H}\n{M}{M}\n", Profile::Pi, 0, &[(2, "trailing_data")]),
            ("{H}\n{M}{M}\n", Profile::Omp, 1, &[(2, "trailing_data")]),
            (
                "\u{feff}{H}\n{M}\n",
                Profile::Pi,
                1,
                &[(1, "byte_order_mark")],
            ),
        ];
        for (text, profile, entries, expected) in cases {
            let text = text.replace("{H}", H).replace("{M}", M);
            let parsed = parse(text.as_bytes(), *profile);
            assert!(parsed.header.is_ok(), "{text:?}");
            assert_eq!(parsed.entries.len(), *entries, "{text:?}");
            assert_eq!(kinds(&parsed), *expected, "{text:?}");
        }
    }

    #[test]
    fn header_problems_are_reported() {
        let cases: &[(&str, Profile, HeaderErrorKind, usize)] = &[
            ("", Profile::Pi, HeaderErrorKind::Empty, 0),
            ("garbage\n", Profile::Pi, HeaderErrorKind::NotJson, 1),
            ("  \n\n", Profile::Omp, HeaderErrorKind::Empty, 0),
            ("{M}\n{H}\n", Profile::Pi, HeaderErrorKind::NotAHeader, 1),
            ("null\n{H}\n", Profile::Pi, HeaderErrorKind::NotAHeader, 1),
            (
                "{\"type\":\"session\",\"id\":5}\n",
                Profile::Omp,
                HeaderErrorKind::NotAHeader,
                1,
            ),
        ];
        for (text, profile, kind, line) in cases {
            let text = text.replace("{H}", H).replace("{M}", M);
            let err = parse(text.as_bytes(), *profile).header.unwrap_err();
            assert_eq!((err.kind, err.line), (*kind, *line), "{text:?}");
        }
        // pi skips a garbage first line and accepts the header after it.
        assert!(parse(format!("garbage\n{H}\n").as_bytes(), Profile::Pi)
            .header
            .is_ok());
    }

    #[test]
    fn invalid_blob_refs_are_reported_for_omp() {
        let good = format!("blob:sha256:{}", "a".repeat(64));
        for (reference, reported) in [
            (good.as_str(), false),
            ("blob:sha256:../../etc/passwd", true),
            ("blob:sha256:ABC", true),
        ] {
            let line = format!("{{\"type\":\"message\",\"id\":\"a\",\"message\":{{\"content\":[{{\"type\":\"image\",\"data\":\"{reference}\"}}]}}}}");
            let parsed = parse(format!("{H}\n{line}\n").as_bytes(), Profile::Omp);
            assert_eq!(
                kinds(&parsed) == [(2, "invalid_blob_ref")],
                reported,
                "{reference}"
            );
            assert_eq!(parsed.entries.len(), 1);
        }
    }

    #[test]
    fn ordinals_count_every_value_from_the_header() {
        let text = format!("{H}\n5\n{M}\n");
        let parsed = parse(text.as_bytes(), Profile::Pi);
        assert_eq!(parsed.entries[0].ordinal, 2);
    }
}
