//! `buildSessionContext`: from a leaf to the messages and settings sent to the model, per profile (000 "Context reconstruction"; 002 "Context Building"; pi-mono §5; omp H, I).
//!
//! The output is the exact JSON shape each profile's implementation returns: the
//! messages, then the settings each profile scans the path for ([`settings`]). What differs
//! between profiles is in [`Rules`].
//!
//! Stored messages pass through as their raw JSON text. Synthetic messages
//! (compaction summary, branch summary, custom message) are built with the keys
//! and values the real code uses; their `timestamp` is the entry's ISO time in
//! milliseconds, `null` when it does not parse (JavaScript's NaN).

use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

use crate::model::{time_ms, Entry, EntryKind, Profile};
use crate::raw::{as_string, is_truthy, raw, to_raw, RawObject};
use crate::tree::Tree;

pub mod settings;

pub use settings::Settings;

/// The per-profile rules of `buildSessionContext`.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The fields of a `custom_message` entry copied into its context message, after `role`.
    pub custom_message_fields: &'static [&'static str],
    /// The fields of a compaction copied into its summary message, after `role`.
    pub compaction_summary_fields: &'static [&'static str],
    /// The fields of a branch summary copied into its message, after `role`.
    pub branch_summary_fields: &'static [&'static str],
    /// `custom_message` entries join the context (000, 002); 003 lists only messages and branch entries.
    pub custom_messages_in_context: bool,
    /// The context's fields after `messages`, in the profile's order ([`settings`]).
    pub settings: fn(&[&Entry]) -> Settings,
    /// [`Rules::settings`] scans every entry in file order (003 step 1), else the path.
    pub settings_over_all_entries: bool,
    /// A leaf id that names no entry gives the empty path (003 `get_branch`), rather
    /// than falling back to the last entry.
    pub unknown_leaf_is_empty: bool,
}

impl Rules {
    /// The rules of `profile`: pi-mono 0.73.1 and 002 "Context Building"
    /// (`{messages, thinkingLevel, model}`); omp and 000 "Context reconstruction"
    /// (`{messages, thinkingLevel, models, injectedTtsrRules, mode, modeData?}`; custom
    /// messages carry `attribution`, compaction summaries `shortSummary`); 003 "Context
    /// reconstruction" (messages and branch entries in path order; the compaction summary
    /// as pi's `compactionSummary` message, in snake_case; the newest thinking level and
    /// model over all entries; an unknown leaf is the empty path).
    /// Clauses: context.1, context.7.
    pub fn for_profile(profile: Profile) -> Rules {
        match profile {
            Profile::Pi => Rules {
                custom_message_fields: &[
                    "customType",
                    "content",
                    "display",
                    "details",
                    "timestamp",
                ],
                compaction_summary_fields: &["summary", "tokensBefore", "timestamp"],
                branch_summary_fields: &["summary", "fromId", "timestamp"],
                custom_messages_in_context: true,
                settings: settings::pi,
                settings_over_all_entries: false,
                unknown_leaf_is_empty: false,
            },
            Profile::Omp => Rules {
                custom_message_fields: &[
                    "customType",
                    "content",
                    "display",
                    "details",
                    "attribution",
                    "timestamp",
                ],
                compaction_summary_fields: &[
                    "summary",
                    "shortSummary",
                    "tokensBefore",
                    "timestamp",
                ],
                branch_summary_fields: &["summary", "fromId", "timestamp"],
                custom_messages_in_context: true,
                settings: settings::omp,
                settings_over_all_entries: false,
                unknown_leaf_is_empty: false,
            },
            Profile::Operator => Rules {
                custom_message_fields: &[
                    "custom_type",
                    "content",
                    "display",
                    "details",
                    "timestamp",
                ],
                compaction_summary_fields: &["summary", "tokens_before", "timestamp"],
                branch_summary_fields: &["summary", "from_id", "timestamp"],
                custom_messages_in_context: false,
                settings: settings::operator,
                settings_over_all_entries: true,
                unknown_leaf_is_empty: true,
            },
        }
    }
}

/// Which entry the context is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafChoice<'a> {
    /// `leafId === null`: the empty context.
    Null,
    /// An explicit id; an unknown id or `""` falls back to the last entry.
    Id(&'a str),
    /// No leaf given: the last entry in file order.
    Last,
}

/// What `buildSessionContext` returns: the messages, then the profile's settings.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// Messages in order; a `message` entry's payload is borrowed from the entry.
    pub messages: Vec<Cow<'a, RawValue>>,
    /// The profile's fields after `messages`, in its order (see [`Rules::settings`]).
    pub settings: Settings,
}

impl Serialize for Context<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("messages", &self.messages)?;
        for (key, value) in &self.settings {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Builds the context for `leaf` over `tree`'s entries: the root-to-leaf path, cut at
/// its latest compaction, as messages; then the profile's settings from the path.
/// Clauses: context.1, context.2, context.3, context.4, context.14, context.20.
pub fn build_context<'a>(tree: &'a Tree, leaf: LeafChoice<'_>, profile: Profile) -> Context<'a> {
    let entries = tree.entries();
    let rules = Rules::for_profile(profile);
    let start = match leaf {
        LeafChoice::Null => None,
        LeafChoice::Id(id) if rules.unknown_leaf_is_empty => tree.index_of(id),
        LeafChoice::Id(id) => tree.index_of(id).or(entries.len().checked_sub(1)),
        LeafChoice::Last => entries.len().checked_sub(1),
    };
    let path: Vec<&'a Entry> = start
        .map(|s| tree.path_from_index(s))
        .unwrap_or_default()
        .into_iter()
        .map(|i| &entries[i])
        .collect();
    let settings = if rules.settings_over_all_entries {
        (rules.settings)(&entries.iter().collect::<Vec<_>>())
    } else {
        (rules.settings)(&path)
    };
    Context {
        messages: messages(&path, &rules),
        settings,
    }
}

/// The messages of `path`: with a compaction, its summary, then the kept entries
/// from `firstKeptEntryId` up to the compaction, then the entries after it (the
/// compaction itself makes no message). Compaction planning estimates pi's (`tokensBefore`).
/// Clauses: context.8, context.10.
pub fn messages<'a>(path: &[&'a Entry], rules: &Rules) -> Vec<Cow<'a, RawValue>> {
    let convert = |entry: &&'a Entry| convert(entry, rules);
    let compaction = path.iter().rposition(|e| e.kind == EntryKind::Compaction);
    let Some(c) = compaction else {
        return path.iter().filter_map(convert).collect();
    };
    let summary = synthetic_message(
        &path[c].object(),
        "compactionSummary",
        rules.compaction_summary_fields,
    );
    let kept = path[c].first_kept_entry_id();
    let first = path[..c]
        .iter()
        .rposition(|e| kept.is_some() && e.id == kept)
        .unwrap_or(c);
    let mut out = vec![Cow::Owned(summary)];
    out.extend(path[first..].iter().filter_map(convert));
    out
}

/// One path entry as a context message, if it makes one: a message's payload
/// verbatim, a custom message or a branch summary (with a truthy `summary`) as a
/// message of their own.
/// Clauses: context.5, context.6, context.7, context.9, context.12.
fn convert<'a>(entry: &'a Entry, rules: &Rules) -> Option<Cow<'a, RawValue>> {
    match entry.kind {
        EntryKind::Message => entry.object().take("message").filter(|m| m.get() != "null"),
        EntryKind::CustomMessage if rules.custom_messages_in_context => Some(Cow::Owned(
            synthetic_message(&entry.object(), "custom", rules.custom_message_fields),
        )),
        EntryKind::BranchSummary => {
            let obj = entry.object();
            is_truthy(obj.get("summary")).then(|| {
                Cow::Owned(synthetic_message(
                    &obj,
                    "branchSummary",
                    rules.branch_summary_fields,
                ))
            })
        }
        _ => None,
    }
}

/// A message the context makes up from an entry: `role`, then `fields` copied from
/// the entry where present; `timestamp` is the entry's time in milliseconds.
/// Clauses: context.6.
pub fn synthetic_message(obj: &RawObject<'_>, role: &str, fields: &[&str]) -> Box<RawValue> {
    let mut out = vec![("role", Some(to_raw(role)))];
    for &field in fields {
        let value = if field == "timestamp" {
            Some(js_time(obj))
        } else {
            obj.get(field).map(ToOwned::to_owned)
        };
        out.push((field, value));
    }
    object(&out)
}

/// The `message` object of a message entry (empty when it has none).
pub(crate) fn message_of<'a>(obj: &'a RawObject<'_>) -> RawObject<'a> {
    obj.get("message")
        .and_then(|m| RawObject::parse(m.get()))
        .unwrap_or_default()
}

/// `String(value)` for a JSON value as JavaScript's template literals print it.
pub fn js_string(value: Option<&RawValue>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(v) => as_string(v).unwrap_or_else(|| v.get().to_owned()),
    }
}

/// `new Date(entry.timestamp).getTime()`: milliseconds, or `null` for NaN.
/// Clauses: context.11.
fn js_time(obj: &RawObject<'_>) -> Box<RawValue> {
    obj.get("timestamp")
        .and_then(time_ms)
        .map_or_else(|| raw("null".to_owned()), |ms| to_raw(&ms))
}

/// A compact JSON object of the present fields, in order.
pub(crate) fn object(fields: &[(&str, Option<Box<RawValue>>)]) -> Box<RawValue> {
    let mut obj = RawObject::default();
    for (key, value) in fields {
        if let Some(value) = value {
            obj.set(key, value.clone());
        }
    }
    obj.to_raw()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn context(
        lines: &[serde_json::Value],
        leaf: LeafChoice<'_>,
        profile: Profile,
    ) -> serde_json::Value {
        let mut text = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/p"}"#.to_owned();
        for line in lines {
            text.push('\n');
            text.push_str(&line.to_string());
        }
        let parsed = parse(text.as_bytes(), profile);
        let tree = Tree::new(parsed.entries);
        serde_json::to_value(build_context(&tree, leaf, profile)).unwrap()
    }

    fn msg(id: &str, parent: Option<&str>, role: &str, text: &str) -> serde_json::Value {
        serde_json::json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-06-01T12:00:00.000Z","message":{"role":role,"content":text,"provider":"p","model":"m"}})
    }

    fn texts(ctx: &serde_json::Value) -> Vec<String> {
        ctx["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{}:{}",
                    m["role"].as_str().unwrap(),
                    m["content"]
                        .as_str()
                        .or(m["summary"].as_str())
                        .unwrap_or("")
                )
            })
            .collect()
    }

    #[test]
    fn null_leaf_gives_the_empty_context() {
        assert_eq!(
            context(
                &[msg("a", None, "user", "x")],
                LeafChoice::Null,
                Profile::Pi
            ),
            serde_json::json!({"messages":[],"thinkingLevel":"off","model":null})
        );
        assert_eq!(
            context(&[], LeafChoice::Last, Profile::Omp),
            serde_json::json!({"messages":[],"thinkingLevel":"off","models":{},"injectedTtsrRules":[],"mode":"none"})
        );
    }

    #[test]
    fn compaction_keeps_from_first_kept_and_summarises() {
        let lines = [
            msg("u1", None, "user", "u1"),
            msg("a1", Some("u1"), "assistant", "a1"),
            msg("u2", Some("a1"), "user", "u2"),
            serde_json::json!({"type":"compaction","id":"c1","parentId":"u2","timestamp":"2025-06-01T12:00:00.000Z","summary":"S","firstKeptEntryId":"a1","tokensBefore":5}),
            msg("u3", Some("c1"), "user", "u3"),
        ];
        let ctx = context(&lines, LeafChoice::Last, Profile::Pi);
        assert_eq!(
            texts(&ctx),
            ["compactionSummary:S", "assistant:a1", "user:u2", "user:u3"]
        );
        assert_eq!(
            ctx["messages"][0],
            serde_json::json!({"role":"compactionSummary","summary":"S","tokensBefore":5,"timestamp":1_748_779_200_000_i64})
        );
        let missing = lines
            .iter()
            .map(|l| {
                let mut l = l.clone();
                if l["type"] == "compaction" {
                    l["firstKeptEntryId"] = "zz".into();
                }
                l
            })
            .collect::<Vec<_>>();
        assert_eq!(
            texts(&context(&missing, LeafChoice::Last, Profile::Omp)),
            ["compactionSummary:S", "user:u3"]
        );
    }

    #[test]
    fn omp_settings_follow_document_000() {
        let lines = [
            msg("a0", None, "assistant", "x"),
            serde_json::json!({"type":"model_change","id":"m1","parentId":"a0","timestamp":"t","model":"openai/gpt-4o"}),
            serde_json::json!({"type":"model_change","id":"m2","parentId":"m1","timestamp":"t","model":"x/small","role":"smol"}),
            serde_json::json!({"type":"ttsr_injection","id":"t1","parentId":"m2","timestamp":"t","injectedRules":["b","a"]}),
            serde_json::json!({"type":"ttsr_injection","id":"t2","parentId":"t1","timestamp":"t","injectedRules":["a","c","b"]}),
            serde_json::json!({"type":"mode_change","id":"d1","parentId":"t2","timestamp":"t","mode":"plan","data":{"f":1}}),
            msg("a9", Some("d1"), "assistant", "y"),
        ];
        let ctx = context(&lines, LeafChoice::Last, Profile::Omp);
        assert_eq!(
            ctx["models"],
            serde_json::json!({"default":"openai/gpt-4o","smol":"x/small"})
        );
        assert_eq!(ctx["injectedTtsrRules"], serde_json::json!(["b", "a", "c"]));
        assert_eq!(
            (ctx["mode"].clone(), ctx["modeData"].clone()),
            (serde_json::json!("plan"), serde_json::json!({"f":1}))
        );
    }

    #[test]
    fn unknown_leaf_falls_back_to_last_entry() {
        let lines = [
            msg("a", None, "user", "a"),
            msg("b", Some("a"), "user", "b"),
            msg("c", Some("a"), "user", "c"),
        ];
        assert_eq!(
            texts(&context(&lines, LeafChoice::Id("nope"), Profile::Pi)),
            ["user:a", "user:c"]
        );
        assert_eq!(
            texts(&context(&lines, LeafChoice::Id("b"), Profile::Pi)),
            ["user:a", "user:b"]
        );
    }
}
