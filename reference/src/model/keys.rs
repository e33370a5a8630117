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

/// An `apply` step (a SessionManager call and its arguments, PROTOCOL.md) in 003's names:
/// the call and each argument key in snake_case (`appendMessage` → `append_message`,
/// `firstKeptEntryId` → `first_kept_entry_id`); [`camel_step`] is its inverse.
pub fn snake_step(step: &Value) -> Value {
    rename_step(step, snake_case, snake_case)
}

/// A step in 003's names back in the call table's camelCase names. A call already in
/// camelCase is none of 003's names: it becomes `""`, an unknown call.
pub fn camel_step(step: &Value) -> Value {
    let call = |name: &str| {
        if name.contains(|c: char| c.is_ascii_uppercase()) {
            String::new()
        } else {
            camel_case(name)
        }
    };
    rename_step(step, camel_case, call)
}

/// `step` with every key renamed by `key` and a string `call` by `call`; values stay.
fn rename_step(step: &Value, key: fn(&str) -> String, call: impl Fn(&str) -> String) -> Value {
    let Some(map) = step.as_object() else {
        return step.clone();
    };
    map.iter()
        .map(|(name, value)| {
            let value = match (name.as_str(), value.as_str()) {
                ("call", Some(c)) => call(c).into(),
                _ => value.clone(),
            };
            (key(name), value)
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `camelCase` → `snake_case`.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `snake_case` → `camelCase`.
fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
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
    use super::{camel_step, snake_step};
    use crate::model::{Entry, EntryKind, Profile};
    use serde_json::json;

    #[test]
    fn steps_rename_both_ways() {
        let camel = json!({"call":"appendCompaction","firstKeptEntryId":"a","n":1});
        let snake = json!({"call":"append_compaction","first_kept_entry_id":"a","n":1});
        assert_eq!(snake_step(&camel), snake);
        assert_eq!(camel_step(&snake), camel);
        assert_eq!(
            camel_step(&json!({"call":"appendMessage"})),
            json!({"call":""})
        );
        assert_eq!(camel_step(&json!({"call":3})), json!({"call":3}));
    }

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
