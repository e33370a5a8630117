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

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::model::{Entry, EntryKind, Profile, SessionHeader};
use crate::raw::{JsonText, RawObject};

mod diagnostics;

pub use diagnostics::{
    Diagnostic, DiagnosticKind, HeaderError, HeaderErrorKind, Unlisted, MAX_LISTED_DIAGNOSTICS,
};

/// The per-profile rules of loading (000 "Loading and compatibility").
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// A line holding one JSON value followed by more text keeps the value (omp: Bun's
    /// JSONL reader), else the line is skipped (pi: `JSON.parse` of the line; 003 is
    /// silent: as pi).
    pub keeps_value_before_trailing_data: bool,
    /// Image data may be a `blob:sha256:` reference (omp): checked on load, resolved when
    /// read, and written out of the line on append (000 "Truncation and blob externalization").
    pub has_blob_refs: bool,
}

impl Rules {
    /// The rules of `profile`: omp's loader is Bun's and knows blobs; pi's and 003's are not.
    pub fn for_profile(profile: Profile) -> Rules {
        let omp = profile == Profile::Omp;
        Rules {
            keeps_value_before_trailing_data: omp,
            has_blob_refs: omp,
        }
    }
}

/// The result of reading a session file's text.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The header, or why the file has none.
    pub header: Result<SessionHeader, HeaderError>,
    /// Entry lines after the header, in file order.
    pub entries: Vec<Entry>,
    /// One record per skipped or suspicious line, for the first
    /// [`MAX_LISTED_DIAGNOSTICS`] of them.
    pub diagnostics: Vec<Diagnostic>,
    /// The diagnostics past those: how many of each kind, without their lines.
    pub unlisted: Unlisted,
    /// Whether the text is empty or ends with `\n` (an append may start right after it).
    pub ends_with_newline: bool,
    /// The text the entries are slices of: the bytes, read as UTF-8 (invalid bytes as U+FFFD).
    pub text: Arc<String>,
    /// The bytes, when they are not valid UTF-8 (and so differ from [`Parsed::text`]).
    pub invalid_utf8: Option<Vec<u8>>,
}

impl Parsed {
    /// The bytes that were parsed.
    pub fn bytes(&self) -> &[u8] {
        self.invalid_utf8
            .as_deref()
            .unwrap_or_else(|| self.text.as_bytes())
    }
}

/// Parses a session file's bytes as `profile`'s loader does.
/// Clauses: loading.1, loading.2, loading.5, loading.6.
pub fn parse(bytes: &[u8], profile: Profile) -> Parsed {
    parse_owned(bytes.to_vec(), profile)
}

/// [`parse`], keeping `bytes` as the text the entries are slices of (no copy when they are UTF-8).
/// Clauses: loading.4, loading.8.
pub fn parse_owned(bytes: Vec<u8>, profile: Profile) -> Parsed {
    let (text, invalid_utf8) = match String::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(e) => {
            let bytes = e.into_bytes();
            (String::from_utf8_lossy(&bytes).into_owned(), Some(bytes))
        }
    };
    let text = Arc::new(text);
    let mut reader = Reader {
        profile,
        lossy: invalid_utf8.is_some(),
        ends_with_newline: text.is_empty() || text.ends_with('\n'),
        header: None,
        entries: Vec::new(),
        diagnostics: Vec::new(),
        unlisted: Unlisted::default(),
        ordinal: 0,
        first_bad: None,
    };
    // "Both drop a leading BOM" (the header then decides, per profile).
    let mut start = 0;
    if text.starts_with('\u{feff}') {
        reader.report(1, DiagnosticKind::ByteOrderMark);
        start = '\u{feff}'.len_utf8();
    }
    let line_count = text[start..].split('\n').count();
    // Sized once: a vector grown by doubling holds up to three times its entries while
    // it moves them (the pages of lines that are not entries are never touched).
    reader.entries.reserve(line_count);
    for (index, line) in text[start..].split('\n').enumerate() {
        let number = index + 1;
        reader.line(&text, start, line, number, number == line_count);
        if matches!(reader.header, Some(Err(_))) {
            break;
        }
        start += line.len() + 1;
    }
    reader.finish(text, invalid_utf8)
}

/// JSON's whitespace (what `serde_json` skips around a value).
fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// The pass over the lines, in order: the header, ordinals, entries and diagnostics.
struct Reader {
    profile: Profile,
    /// The file is not UTF-8: a U+FFFD in a line replaced invalid bytes.
    lossy: bool,
    ends_with_newline: bool,
    header: Option<Result<SessionHeader, HeaderError>>,
    entries: Vec<Entry>,
    diagnostics: Vec<Diagnostic>,
    unlisted: Unlisted,
    /// The position of the next JSON value among all values of the file (header = 0).
    ordinal: usize,
    first_bad: Option<usize>,
}

impl Reader {
    /// Reads line `number`, which starts at byte `start` of `text`.
    /// Clauses: loading.1, loading.2, loading.5, loading.8, loading.11, migrations.3.
    fn line(&mut self, text: &Arc<String>, start: usize, line: &str, number: usize, last: bool) {
        if self.lossy && line.contains('\u{fffd}') {
            self.report(number, DiagnosticKind::InvalidUtf8);
        }
        if is_blank(line) {
            if !last {
                self.report(number, DiagnosticKind::BlankLine);
            }
            return;
        }
        let trimmed = line.trim_matches(is_json_whitespace);
        let lead = line.len() - line.trim_start_matches(is_json_whitespace).len();
        // The usual line is exactly one object; anything else is classified by `read_value`.
        let (value, object) = match RawObject::parse(trimmed) {
            Some(object) => (trimmed, Some(object)),
            None => match read_value(line, self.profile) {
                Ok((value, trailing)) => {
                    if trailing {
                        self.report(number, DiagnosticKind::TrailingData);
                    }
                    let object = if value.starts_with('{') {
                        RawObject::parse(value)
                    } else {
                        None
                    };
                    (value, object)
                }
                Err(kind) => {
                    let torn = last && !self.ends_with_newline && kind == DiagnosticKind::NotJson;
                    self.report(number, if torn { DiagnosticKind::TornLine } else { kind });
                    self.first_bad.get_or_insert(number);
                    return;
                }
            },
        };
        let span = start + lead..start + lead + value.len();
        let ordinal = self.ordinal;
        self.ordinal += 1;
        match (&self.header, object) {
            (None, object) => {
                let header = object
                    .and_then(|obj| SessionHeader::from_object(&obj, value, self.profile.keys()));
                self.header = Some(header.ok_or(HeaderError {
                    line: number,
                    kind: HeaderErrorKind::NotAHeader,
                }));
            }
            (Some(_), None) => self.report(number, DiagnosticKind::NotObject),
            (Some(_), Some(object)) => {
                let entry =
                    Entry::from_object(&object, JsonText::slice(text, span), ordinal, self.profile);
                if Rules::for_profile(self.profile).has_blob_refs && has_invalid_blob_ref(value) {
                    self.report(number, DiagnosticKind::InvalidBlobRef);
                }
                if entry.kind == EntryKind::ExtraHeader {
                    self.report(number, DiagnosticKind::ExtraHeader);
                } else if entry.id.is_none() {
                    self.report(number, DiagnosticKind::MissingId);
                }
                self.entries.push(entry);
            }
        }
    }

    fn report(&mut self, line: usize, kind: DiagnosticKind) {
        if self.diagnostics.len() < MAX_LISTED_DIAGNOSTICS {
            self.diagnostics.push(Diagnostic { line, kind });
        } else {
            *self.unlisted.0.entry(kind).or_default() += 1;
        }
    }

    fn finish(self, text: Arc<String>, invalid_utf8: Option<Vec<u8>>) -> Parsed {
        let header = self.header.unwrap_or(Err(match self.first_bad {
            Some(line) => HeaderError {
                line,
                kind: HeaderErrorKind::NotJson,
            },
            None => HeaderError {
                line: 0,
                kind: HeaderErrorKind::Empty,
            },
        }));
        let entries = if header.is_ok() {
            self.entries
        } else {
            Vec::new()
        };
        Parsed {
            header,
            entries,
            diagnostics: self.diagnostics,
            unlisted: self.unlisted,
            ends_with_newline: self.ends_with_newline,
            text,
            invalid_utf8,
        }
    }
}

/// Whether a line's text holds a string that starts like a blob reference but is not a valid one.
fn has_invalid_blob_ref(text: &str) -> bool {
    // `contains` is the quick test for the usual answer (no reference at all).
    text.contains(crate::blobs::BLOB_PREFIX)
        && text
            .match_indices(crate::blobs::BLOB_PREFIX)
            .any(|(at, _)| {
                let rest = &text[at..];
                let token = rest.split(['"', '\\']).next().unwrap_or_default();
                crate::blobs::BlobRef::parse(token).is_err()
            })
}

/// Whether a line is blank as JavaScript's `String.prototype.trim` sees it.
/// Clauses: loading.1.
fn is_blank(line: &str) -> bool {
    line.chars().all(is_js_whitespace)
}

/// JavaScript's WhiteSpace and LineTerminator characters (what `trim()` removes).
/// Clauses: js.3, loading.1.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(c, '\u{9}'..='\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

/// Reads one JSON value from a line: `(value text, had trailing data)`.
/// Clauses: loading.2, loading.3.
fn read_value(line: &str, profile: Profile) -> Result<(&str, bool), DiagnosticKind> {
    match serde_json::from_str::<&RawValue>(line) {
        Ok(value) => Ok((value.get(), false)),
        Err(_) if Rules::for_profile(profile).keeps_value_before_trailing_data => {
            let mut stream = serde_json::Deserializer::from_str(line).into_iter::<&RawValue>();
            match stream.next() {
                Some(Ok(value)) => Ok((value.get(), true)),
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
    fn diagnostics_past_the_limit_are_counted_by_kind() {
        let text = format!(
            "{H}\n{}not json\n{{}}\n{M}\n",
            "\n".repeat(MAX_LISTED_DIAGNOSTICS + 5)
        );
        let p = parse(text.as_bytes(), Profile::Pi);
        assert_eq!(p.diagnostics.len(), MAX_LISTED_DIAGNOSTICS);
        assert!(p
            .diagnostics
            .iter()
            .all(|d| d.kind == DiagnosticKind::BlankLine));
        let counted: Vec<(DiagnosticKind, usize)> = p.unlisted.0.clone().into_iter().collect();
        assert_eq!(
            counted,
            [
                (DiagnosticKind::BlankLine, 5),
                (DiagnosticKind::NotJson, 1),
                (DiagnosticKind::MissingId, 1)
            ]
        );
        assert_eq!(p.unlisted.total(), 7);
        assert_eq!(
            p.entries.len(),
            2,
            "the entries past the limit are all read"
        );
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
