//! The spec's nouns: profiles, the session header and entries (000 "Session header", "Entry base", "Entry types"; 002 "Entry Types").
//!
//! An [`Entry`] keeps the exact JSON text of its line ([`Entry::raw`]) and the few
//! fields the session layer interprets, parsed once. Everything else in the line,
//! known or unknown, is carried unchanged.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde_json::value::RawValue;

use crate::ids::parse_iso_ms;
use crate::raw::{as_str, as_string, JsonText, RawObject};

mod keys;

pub use keys::{camel_step, snake_step, Keys};

/// The current session format version (000 "Versioning and migrations").
pub const CURRENT_VERSION: u32 = 3;

/// A dialect of the format, with the published implementation that decides where documents are silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Profile {
    /// pi-mono (`@mariozechner/pi-coding-agent` 0.73.1; document 002 for shapes).
    Pi,
    /// oh-my-pi (`@oh-my-pi/pi-coding-agent` 13.19.0; document 000 is its source of truth).
    Omp,
    /// The snake_case port of document 003 (`session_header`, `parent_id`, `leaf` entries; no published implementation).
    Operator,
}

impl Profile {
    /// Every profile, in a stable order.
    pub const ALL: [Profile; 3] = [Profile::Pi, Profile::Omp, Profile::Operator];

    /// The profile's name as used on the command line and in the corpus.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Pi => "pi",
            Profile::Omp => "omp",
            Profile::Operator => "operator",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pi" => Ok(Profile::Pi),
            "omp" => Ok(Profile::Omp),
            "operator" => Ok(Profile::Operator),
            other => Err(format!(
                "unknown profile {other:?}; expected pi, omp or operator"
            )),
        }
    }
}

/// Line 1 of a session file: `{"type":"session","version":3,"id":…,"timestamp":…,"cwd":…}`.
#[derive(Debug, Clone)]
pub struct SessionHeader {
    /// The header line as JSON text (after migration, when one ran).
    pub raw: Box<RawValue>,
    /// The session id (any string; pi writes a UUID, omp 13.19.0 16 hex digits).
    pub id: String,
    /// The header's version as JavaScript reads it (`version ?? 1`, coerced to a number).
    pub version: f64,
    /// The working directory the session belongs to, when it is a string.
    pub cwd: Option<String>,
    /// The ISO timestamp of creation, when it is a string.
    pub timestamp: Option<String>,
}

impl SessionHeader {
    /// Reads a header from a parsed object; `None` unless `type` is the dialect's
    /// header type (`"session"`, 003 `"session_header"`) and `id` a string.
    /// Clauses: format.4, loading.7, migrations.7.
    pub fn from_object(obj: &RawObject<'_>, text: &str, keys: &Keys) -> Option<SessionHeader> {
        if obj.str("type").as_deref() != Some(keys.name("session")) {
            return None;
        }
        let id = obj.str("id")?;
        Some(SessionHeader {
            raw: crate::raw::raw(text.to_owned()),
            id,
            version: if keys.versioned {
                js_version(obj.get("version"))
            } else {
                f64::from(CURRENT_VERSION)
            },
            cwd: obj.str("cwd"),
            timestamp: obj.str("timestamp"),
        })
    }
}

/// A parsed entry line.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The entry's JSON text: byte-exact as read (a slice of the loaded file), or as written by this implementation.
    pub raw: JsonText,
    /// The entry id, when it is a string (8 lowercase hex digits when generated).
    pub id: Option<String>,
    /// The parent id; `None` for a root (`null`, absent, `""` or not a string).
    pub parent_id: Option<Box<str>>,
    /// What sibling entries are sorted by: the timestamp in milliseconds since the
    /// epoch when it is a valid ISO string (as `Date.parse` reads it) or a finite
    /// number (whole milliseconds, as `Date` keeps them); [`NO_TIME`] otherwise, which
    /// sorts first (JavaScript's NaN comparisons, settled). Eight bytes, not an
    /// `Option`'s sixteen: a million-entry session keeps a million of them.
    pub time_ms: i64,
    /// The entry's type and the fields the session layer reads.
    pub kind: EntryKind,
    /// The position among all JSON values of the file, header = 0 (what v1 `firstKeptEntryIndex` counts).
    pub ordinal: usize,
    /// The profile it was read in: its dialect's keys name the fields read from [`Entry::raw`].
    pub profile: Profile,
}

/// The entry types of both profiles. The fields a type carries are read from the
/// entry's text when they are needed ([`Entry::role`], [`Entry::first_kept_entry_id`], …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryKind {
    /// `message`: an AgentMessage, stored verbatim.
    Message,
    /// `thinking_level_change`.
    ThinkingLevelChange,
    /// `model_change` (omp: `model` "provider/id" + `role`; pi: `provider` + `modelId`).
    ModelChange,
    /// `compaction`: a summary of the path before `firstKeptEntryId`.
    Compaction,
    /// `branch_summary`.
    BranchSummary,
    /// `custom`: extension state, never in the context.
    Custom,
    /// `custom_message`: extension message that joins the context.
    CustomMessage,
    /// `label`: sets (a truthy `label`) or clears the label of `targetId`.
    Label,
    /// `ttsr_injection` (omp).
    TtsrInjection,
    /// `session_init` (omp).
    SessionInit,
    /// `mode_change` (omp).
    ModeChange,
    /// `session_info` (pi): the session's display name.
    SessionInfo,
    /// A second header line after the first.
    ExtraHeader,
    /// `leaf` (003): a durable navigation pointer; its `target_id` becomes the leaf.
    Leaf,
    /// Any other type, carried as an ordinary tree node (its name is in the text).
    Unknown,
}

impl Entry {
    /// Builds an entry from its line, read as an object, and the line's text.
    /// Clauses: format.6, format.10.
    pub fn from_object(
        obj: &RawObject<'_>,
        text: JsonText,
        ordinal: usize,
        profile: Profile,
    ) -> Entry {
        let keys = profile.keys();
        Entry {
            id: obj.str("id"),
            parent_id: obj
                .str(keys.name("parentId"))
                .filter(|p| !p.is_empty())
                .map(String::into_boxed_str),
            time_ms: obj.get("timestamp").and_then(time_ms).unwrap_or(NO_TIME),
            kind: kind_of(obj, keys),
            raw: text,
            ordinal,
            profile,
        }
    }

    /// Reads an entry from JSON text of its own (written by `serde_json` or this crate).
    pub fn from_text(text: String, ordinal: usize, profile: Profile) -> Entry {
        let source = Arc::new(text);
        let obj = RawObject::parse(&source).unwrap_or_default();
        Entry::from_object(
            &obj,
            JsonText::slice(&source, 0..source.len()),
            ordinal,
            profile,
        )
    }

    /// The names of the keys read from [`Entry::raw`], in the entry's dialect.
    pub fn keys(&self) -> &'static Keys {
        self.profile.keys()
    }

    /// Re-reads the entry's fields (borrowed from [`Entry::raw`]).
    pub fn object(&self) -> RawObject<'_> {
        RawObject::parse(self.raw.get()).unwrap_or_default()
    }

    /// The entry's `timestamp`, when it is a string.
    pub fn timestamp(&self) -> Option<String> {
        self.object().str("timestamp")
    }

    /// The entry's `type` string, as written.
    pub fn type_name(&self) -> String {
        self.object().str("type").unwrap_or_default()
    }

    /// A `message` entry's `message.role`, when it is a string.
    pub fn role(&self) -> Option<String> {
        if self.kind != EntryKind::Message {
            return None;
        }
        let obj = self.object();
        obj.get("message")
            .and_then(|m| RawObject::parse(m.get()))
            .and_then(|m| m.str("role"))
    }

    /// Whether this is a `message` entry whose role is `assistant` (what triggers the first write).
    pub fn is_assistant(&self) -> bool {
        self.role().as_deref() == Some("assistant")
    }

    /// A compaction's `firstKeptEntryId`, when it is a string.
    pub fn first_kept_entry_id(&self) -> Option<String> {
        (self.kind == EntryKind::Compaction)
            .then(|| self.object().str(self.keys().name("firstKeptEntryId")))
            .flatten()
    }

    /// A `leaf` entry's target (003 `LeafEntry.target_id`), when it is a string. A `leaf`
    /// entry without one leaves the session without a leaf.
    /// Clauses: tree.15.
    pub fn leaf_target(&self) -> Option<String> {
        (self.kind == EntryKind::Leaf)
            .then(|| self.object().str(self.keys().name("targetId")))
            .flatten()
    }

    /// What a `label` entry does to its target (`targetId`, when a string): sets the
    /// label (`Some`: a truthy `label`, as its text; a non-string as its JSON) or clears it.
    pub fn label_change(&self) -> Option<(String, Option<String>)> {
        if self.kind != EntryKind::Label {
            return None;
        }
        let obj = self.object();
        let label = obj
            .get("label")
            .filter(|v| crate::raw::is_truthy(Some(v)))
            .map(|v| as_string(v).unwrap_or_else(|| v.get().to_owned()));
        Some((obj.str(self.keys().name("targetId"))?, label))
    }
}

/// [`Entry::time_ms`] of an entry without a valid timestamp. No valid time is this
/// far from the epoch (`Date` stops at ±8.64e15 ms).
pub const NO_TIME: i64 = i64::MIN;

/// A `timestamp` value in milliseconds since the epoch, as `new Date(value).getTime()`
/// gives them (see [`Entry::time_ms`]); `None` for NaN.
/// Clauses: tree.16.
pub(crate) fn time_ms(value: &RawValue) -> Option<i64> {
    if value.get().starts_with('"') {
        return as_str(value).and_then(|text| parse_iso_ms(&text));
    }
    value
        .get()
        .parse::<f64>()
        .ok()
        // `Date` holds ±8.64e15 ms at most; beyond, it is invalid (NaN), as here.
        .filter(|n| n.abs() <= 8.64e15)
        .map(|n| {
            // Whole milliseconds, as `Date` keeps them.
            #[allow(clippy::cast_possible_truncation)]
            let ms = n.trunc() as i64;
            ms
        })
}

/// Clauses: format.9, format.10.
fn kind_of(obj: &RawObject<'_>, keys: &Keys) -> EntryKind {
    let name = obj.str("type").unwrap_or_default();
    if keys.leaf_type == Some(name.as_str()) {
        return EntryKind::Leaf;
    }
    match keys.camel(&name).unwrap_or_default() {
        "message" => EntryKind::Message,
        "thinking_level_change" => EntryKind::ThinkingLevelChange,
        "model_change" => EntryKind::ModelChange,
        "compaction" => EntryKind::Compaction,
        "branch_summary" => EntryKind::BranchSummary,
        "custom" => EntryKind::Custom,
        "custom_message" => EntryKind::CustomMessage,
        "label" => EntryKind::Label,
        "ttsr_injection" => EntryKind::TtsrInjection,
        "session_init" => EntryKind::SessionInit,
        "mode_change" => EntryKind::ModeChange,
        "session_info" => EntryKind::SessionInfo,
        "session" => EntryKind::ExtraHeader,
        _ => EntryKind::Unknown,
    }
}

/// The header version as JavaScript compares it: `version ?? 1`, then `Number(..)`.
/// Clauses: js.2, migrations.1.
pub fn js_version(value: Option<&RawValue>) -> f64 {
    let Some(value) = value else { return 1.0 };
    let text = value.get();
    match text {
        "null" | "true" => 1.0,
        "false" => 0.0,
        _ if text.starts_with('"') => {
            let s = as_string(value).unwrap_or_default();
            let trimmed = s.trim();
            if trimmed.is_empty() {
                0.0
            } else {
                trimmed.parse().unwrap_or(f64::NAN)
            }
        }
        _ => text.parse().unwrap_or(f64::NAN),
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values: the coercion yields these numbers
mod tests {
    use super::*;
    use crate::raw::raw;

    #[test]
    fn version_coercion_follows_javascript() {
        let cases = [
            (None, 1.0),
            (Some("null"), 1.0),
            (Some("\"2\""), 2.0),
            (Some("3"), 3.0),
            (Some("1.5"), 1.5),
            (Some("\"\""), 0.0),
        ];
        for (json, expected) in cases {
            let value = json.map(|j| raw(j.to_owned()));
            assert_eq!(js_version(value.as_deref()), expected, "{json:?}");
        }
        assert!(js_version(Some(&raw("\"abc\"".to_owned()))).is_nan());
    }

    #[test]
    fn entry_kinds_are_read_from_type() {
        let text = r#"{"type":"label","id":"a","parentId":"","targetId":"t","label":"x"}"#;
        let obj = RawObject::parse(text).unwrap();
        let entry = Entry::from_object(&obj, JsonText::new(text.to_owned()), 1, Profile::Omp);
        assert_eq!(entry.parent_id, None);
        assert_eq!(entry.kind, EntryKind::Label);
        assert_eq!(entry.label_change(), Some(("t".into(), Some("x".into()))));
    }

    #[test]
    fn timestamps_read_as_date_does() {
        let cases = [
            (r#""2025-06-01T12:00:00.000Z""#, 1_748_779_200_000),
            ("1748779200000.9", 1_748_779_200_000),
            ("-1.5", -1),
            (r#""garbage""#, NO_TIME),
            ("1e400", NO_TIME),
            ("1e300", NO_TIME),
            ("8.64e15", 8_640_000_000_000_000),
            ("true", NO_TIME),
        ];
        for (json, expected) in cases {
            let text = format!(r#"{{"type":"message","id":"a","timestamp":{json}}}"#);
            let entry = Entry::from_text(text, 1, Profile::Omp);
            assert_eq!(entry.time_ms, expected, "{json}");
        }
    }

    #[test]
    fn profiles_parse_and_print() {
        for p in Profile::ALL {
            assert_eq!(p.name().parse::<Profile>(), Ok(p));
        }
        assert!("x".parse::<Profile>().is_err());
    }
}
