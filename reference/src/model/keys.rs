//! The names of keys and entry types in each dialect (000 "Entry types"; 002 "Entry Types";
//! 003 "Storage format").
//!
//! The session layer speaks the camelCase names of documents 000 and 002; [`Keys::name`]
//! turns one into the dialect's own, and [`Keys::camel`] turns a dialect's name back.

use serde_json::Value;

use super::Profile;

/// The names a dialect gives to the keys and entry types the session layer reads and
/// writes.
#[derive(Debug)]
pub struct Keys {
    /// `(camelCase name, the dialect's name)` for every key and type named differently.
    pub renames: &'static [(&'static str, &'static str)],
    /// The header carries a `version` and older files are migrated (000, 002); else
    /// every file is read as the current version (003 has no `version`).
    pub versioned: bool,
    /// The type of a durable navigation entry, whose target becomes the leaf (003 `LeafEntry`).
    pub leaf_type: Option<&'static str>,
}

impl Keys {
    /// The names of documents 000 and 002 (pi and omp): camelCase keys, a versioned
    /// `session` header, no `leaf` entries.
    pub const CAMEL: Keys = Keys {
        renames: &[],
        versioned: true,
        leaf_type: None,
    };

    /// 003 "Storage format": every field is snake_case; the header's type is
    /// `session_header` and it has no `version`; `branch` is the BranchEntry and
    /// `custom_info` the CustomInfoEntry; `leaf` entries move the leaf.
    pub const OPERATOR: Keys = Keys {
        renames: &[
            ("session", "session_header"),
            ("parentId", "parent_id"),
            ("parentSession", "parent_session"),
            ("firstKeptEntryId", "first_kept_entry_id"),
            ("tokensBefore", "tokens_before"),
            ("targetId", "target_id"),
            ("fromId", "from_id"),
            ("thinkingLevel", "thinking_level"),
            ("modelId", "model_id"),
            ("customType", "custom_type"),
            ("fromHook", "from_hook"),
            ("branch_summary", "branch"),
            ("custom", "custom_info"),
        ],
        versioned: false,
        leaf_type: Some("leaf"),
    };

    /// The dialect's name for the camelCase key or type `camel`.
    pub fn name<'a>(&self, camel: &'a str) -> &'a str {
        self.renames
            .iter()
            .find(|(from, _)| *from == camel)
            .map_or(camel, |(_, to)| to)
    }

    /// The camelCase name of the dialect's key or type `name`; `None` when `name` is
    /// a camelCase name the dialect spells otherwise (a foreign key or type).
    pub fn camel<'a>(&self, name: &'a str) -> Option<&'a str> {
        if let Some((from, _)) = self.renames.iter().find(|(_, to)| *to == name) {
            return Some(from);
        }
        (!self.renames.iter().any(|(from, _)| *from == name)).then_some(name)
    }

    /// An entry held as a JSON object with its keys and its `type` in camelCase names
    /// (003's `parent_id`, `first_kept_entry_id`, `branch`, … renamed; camelCase
    /// dialects' entries unchanged): compaction planning reads entries as pi writes them.
    pub fn camel_entry(&self, entry: Value) -> Value {
        let Value::Object(map) = entry else {
            return entry;
        };
        map.into_iter()
            .map(|(key, value)| {
                let value = match (key.as_str(), value) {
                    ("type", Value::String(t)) => Value::from(self.camel(&t).unwrap_or(&t)),
                    (_, value) => value,
                };
                (self.camel(&key).unwrap_or(&key).to_owned(), value)
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

impl Profile {
    /// The names of this profile's keys and entry types.
    pub fn keys(self) -> &'static Keys {
        match self {
            Profile::Pi | Profile::Omp => &Keys::CAMEL,
            Profile::Operator => &Keys::OPERATOR,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{Entry, EntryKind, Profile};

    fn entry(text: &str) -> Entry {
        Entry::from_text(text.to_owned(), 1, Profile::Operator)
    }

    #[test]
    fn operator_keys_are_read_in_snake_case() {
        let e = entry(
            r#"{"type":"compaction","id":"c","parent_id":"a","first_kept_entry_id":"a","parentId":"x"}"#,
        );
        assert_eq!(e.parent_id.as_deref(), Some("a"));
        assert_eq!(e.first_kept_entry_id().as_deref(), Some("a"));
        let leaf = entry(r#"{"type":"leaf","id":"l","parent_id":"c","target_id":"a"}"#);
        assert_eq!(leaf.kind, EntryKind::Leaf);
        assert_eq!(leaf.leaf_target().as_deref(), Some("a"));
        assert_eq!(
            entry(r#"{"type":"branch","id":"b"}"#).kind,
            EntryKind::BranchSummary
        );
        assert_eq!(
            entry(r#"{"type":"branch_summary","id":"b"}"#).kind,
            EntryKind::Unknown
        );
        assert_eq!(
            entry(r#"{"type":"custom_info","id":"b"}"#).type_name(),
            "custom_info"
        );
    }
}
