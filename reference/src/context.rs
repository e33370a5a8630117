//! `buildSessionContext`: from a leaf to the messages and settings sent to the model, per profile (000 "Context reconstruction"; 002 "Context Building"; pi-mono §5; omp H, I).
//!
//! The output is the exact JSON shape each profile's implementation returns:
//! - pi: `{messages, thinkingLevel, model}`;
//! - omp: `{messages, thinkingLevel, models, injectedTtsrRules, mode, modeData?}`.
//!
//! Stored messages pass through as their raw JSON text. Synthetic messages
//! (compaction summary, branch summary, custom message) are built with the keys
//! and values the real code uses; their `timestamp` is the entry's ISO time in
//! milliseconds, `null` when it does not parse (JavaScript's NaN).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::ids::parse_iso_ms;
use crate::model::{Entry, EntryKind, Profile};
use crate::raw::{as_string, is_truthy, raw, to_raw, RawObject};
use crate::tree::Tree;

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

/// The context of one profile, ready to serialise.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Context<'a> {
    /// pi-mono's shape.
    Pi(PiContext<'a>),
    /// oh-my-pi's shape.
    Omp(OmpContext<'a>),
}

/// pi-mono's `SessionContext`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PiContext<'a> {
    /// Messages in order; a `message` entry's payload is borrowed from the entry.
    pub messages: Vec<Cow<'a, RawValue>>,
    /// The latest thinking level, verbatim (absent when the entry has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<Box<RawValue>>,
    /// The latest model: `{provider, modelId}` (fields absent when undefined), or `null`.
    pub model: Option<Box<RawValue>>,
}

/// oh-my-pi's `SessionContext` (the fields document 000 names).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OmpContext<'a> {
    /// Messages in order; a `message` entry's payload is borrowed from the entry.
    pub messages: Vec<Cow<'a, RawValue>>,
    /// The latest thinking level (`"off"` by default or when null).
    pub thinking_level: Box<RawValue>,
    /// Model per role (`role ?? "default"`); `default` falls back to the last assistant's provider/model.
    pub models: BTreeMap<String, String>,
    /// Every injected TTSR rule on the path, first-seen order, no duplicates.
    pub injected_ttsr_rules: Vec<String>,
    /// The latest mode (`"none"` by default).
    pub mode: Box<RawValue>,
    /// The latest mode's `data`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode_data: Option<Box<RawValue>>,
}

impl Context<'_> {
    /// The messages, whichever the profile.
    pub fn messages(&self) -> &[Cow<'_, RawValue>] {
        match self {
            Context::Pi(c) => &c.messages,
            Context::Omp(c) => &c.messages,
        }
    }
}

/// Builds the context for `leaf` over `tree`'s entries.
///
/// Only the entries that give the context something are read again: the messages
/// it keeps, the latest settings, the compaction. The others are passed over by kind.
pub fn build_context<'a>(tree: &'a Tree, leaf: LeafChoice<'_>, profile: Profile) -> Context<'a> {
    let entries = tree.entries();
    let start = match leaf {
        LeafChoice::Null => None,
        LeafChoice::Id(id) => tree.index_of(id).or(entries.len().checked_sub(1)),
        LeafChoice::Last => entries.len().checked_sub(1),
    };
    let path: Vec<&'a Entry> = start
        .map(|s| tree.path_from_index(s))
        .unwrap_or_default()
        .into_iter()
        .map(|i| &entries[i])
        .collect();
    let messages = messages(&path, profile);
    match profile {
        Profile::Pi => Context::Pi(pi_settings(&path, messages)),
        Profile::Omp => Context::Omp(omp_settings(&path, messages)),
    }
}

fn messages<'a>(path: &[&'a Entry], profile: Profile) -> Vec<Cow<'a, RawValue>> {
    let convert = |entry: &&'a Entry| convert(entry, profile);
    let compaction = path
        .iter()
        .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let Some(c) = compaction else {
        return path.iter().filter_map(convert).collect();
    };
    let mut out = vec![Cow::Owned(compaction_summary(&path[c].object(), profile))];
    if let EntryKind::Compaction {
        first_kept_entry_id: Some(kept),
    } = &path[c].kind
    {
        // Searched back from the compaction, where the kept entry is, instead of
        // from the root: the same entry, as the entries before the compaction are
        // parents found by id, so no two of them share one.
        if let Some(first) = path[..c]
            .iter()
            .rposition(|e| e.id.as_deref() == Some(kept.as_str()))
        {
            out.extend(path[first..c].iter().filter_map(convert));
        }
    }
    out.extend(path[c + 1..].iter().filter_map(convert));
    out
}

/// One path entry as a context message, if it makes one.
fn convert(entry: &Entry, profile: Profile) -> Option<Cow<'_, RawValue>> {
    let obj = match entry.kind {
        EntryKind::Message { .. } | EntryKind::CustomMessage | EntryKind::BranchSummary => {
            entry.object()
        }
        _ => return None,
    };
    match entry.kind {
        EntryKind::Message { .. } => obj.take("message").filter(|m| m.get() != "null"),
        EntryKind::CustomMessage => {
            let mut fields = vec![
                ("role", Some(to_raw("custom"))),
                ("customType", obj.get("customType").map(ToOwned::to_owned)),
                ("content", obj.get("content").map(ToOwned::to_owned)),
                ("display", obj.get("display").map(ToOwned::to_owned)),
                ("details", obj.get("details").map(ToOwned::to_owned)),
            ];
            if profile == Profile::Omp {
                fields.push(("attribution", obj.get("attribution").map(ToOwned::to_owned)));
            }
            fields.push(("timestamp", Some(js_time(&obj))));
            Some(Cow::Owned(object(&fields)))
        }
        _ if is_truthy(obj.get("summary")) => Some(Cow::Owned(object(&[
            ("role", Some(to_raw("branchSummary"))),
            ("summary", obj.get("summary").map(ToOwned::to_owned)),
            ("fromId", obj.get("fromId").map(ToOwned::to_owned)),
            ("timestamp", Some(js_time(&obj))),
        ]))),
        _ => None,
    }
}

fn compaction_summary(obj: &RawObject<'_>, profile: Profile) -> Box<RawValue> {
    let mut fields = vec![
        ("role", Some(to_raw("compactionSummary"))),
        ("summary", obj.get("summary").map(ToOwned::to_owned)),
    ];
    if profile == Profile::Omp {
        fields.push((
            "shortSummary",
            obj.get("shortSummary").map(ToOwned::to_owned),
        ));
    }
    fields.push((
        "tokensBefore",
        obj.get("tokensBefore").map(ToOwned::to_owned),
    ));
    fields.push(("timestamp", Some(js_time(obj))));
    object(&fields)
}

fn pi_settings<'a>(path: &[&Entry], messages: Vec<Cow<'a, RawValue>>) -> PiContext<'a> {
    let mut thinking_level = Some(to_raw("off"));
    for entry in path {
        if entry.kind == EntryKind::ThinkingLevelChange {
            thinking_level = entry.object().get("thinkingLevel").map(ToOwned::to_owned);
        }
    }
    // The model comes from the last model change or assistant message: found from
    // the end, so a long path's messages are not all looked at.
    let model_source = path
        .iter()
        .rev()
        .find(|e| e.kind == EntryKind::ModelChange || e.is_assistant());
    let model = model_source.map(|entry| {
        let obj = entry.object();
        if entry.kind == EntryKind::ModelChange {
            object(&[
                ("provider", obj.get("provider").map(ToOwned::to_owned)),
                ("modelId", obj.get("modelId").map(ToOwned::to_owned)),
            ])
        } else {
            let message = message_of(&obj);
            object(&[
                ("provider", message.get("provider").map(ToOwned::to_owned)),
                ("modelId", message.get("model").map(ToOwned::to_owned)),
            ])
        }
    });
    PiContext {
        messages,
        thinking_level,
        model,
    }
}

fn omp_settings<'a>(path: &[&Entry], messages: Vec<Cow<'a, RawValue>>) -> OmpContext<'a> {
    let mut thinking_level = to_raw("off");
    let mut models = BTreeMap::new();
    let mut rules = Vec::new();
    let mut seen_rules = HashSet::new();
    let mut mode = to_raw("none");
    let mut mode_data = None;
    for entry in path {
        match &entry.kind {
            EntryKind::ThinkingLevelChange => {
                thinking_level = entry
                    .object()
                    .get("thinkingLevel")
                    .filter(|v| v.get() != "null")
                    .map_or_else(|| to_raw("off"), ToOwned::to_owned);
            }
            EntryKind::ModelChange => {
                let obj = entry.object();
                if let Some(model) = obj.get("model").filter(|v| is_truthy(Some(v))) {
                    let role = obj.str("role").unwrap_or_else(|| "default".to_owned());
                    models.insert(
                        role,
                        as_string(model).unwrap_or_else(|| model.get().to_owned()),
                    );
                }
            }
            EntryKind::TtsrInjection => {
                let injected: Vec<serde_json::Value> = entry
                    .object()
                    .get("injectedRules")
                    .and_then(|v| serde_json::from_str(v.get()).ok())
                    .unwrap_or_default();
                for rule in injected
                    .into_iter()
                    .filter_map(|r| r.as_str().map(str::to_owned))
                {
                    if seen_rules.insert(rule.clone()) {
                        rules.push(rule);
                    }
                }
            }
            EntryKind::ModeChange => {
                let obj = entry.object();
                mode = obj
                    .get("mode")
                    .map_or_else(|| raw("null".to_owned()), ToOwned::to_owned);
                mode_data = obj.get("data").map(ToOwned::to_owned);
            }
            _ => {}
        }
    }
    // Found from the end, so a long path's messages are not all looked at.
    if let Some(entry) = path.iter().rev().find(|e| e.is_assistant()) {
        let obj = entry.object();
        let message = message_of(&obj);
        let model = format!(
            "{}/{}",
            js_string(message.get("provider")),
            js_string(message.get("model"))
        );
        models.entry("default".to_owned()).or_insert(model);
    }
    OmpContext {
        messages,
        thinking_level,
        models,
        injected_ttsr_rules: rules,
        mode,
        mode_data,
    }
}

/// The `message` object of a message entry (empty when it has none).
fn message_of<'a>(obj: &'a RawObject<'_>) -> RawObject<'a> {
    obj.get("message")
        .and_then(|m| RawObject::parse(m.get()))
        .unwrap_or_default()
}

/// `String(value)` for a JSON value as JavaScript's template literals print it.
fn js_string(value: Option<&RawValue>) -> String {
    match value {
        None => "undefined".to_owned(),
        Some(v) => as_string(v).unwrap_or_else(|| v.get().to_owned()),
    }
}

/// `new Date(entry.timestamp).getTime()`: milliseconds, or `null` for NaN.
fn js_time(obj: &RawObject<'_>) -> Box<RawValue> {
    let ms = match obj.get("timestamp") {
        Some(v) if v.get().starts_with('"') => as_string(v).and_then(|s| parse_iso_ms(&s)),
        Some(v) => v
            .get()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && n.fract() == 0.0)
            .map(|n| {
                // A whole, finite number of milliseconds; JavaScript prints it as an integer.
                #[allow(clippy::cast_possible_truncation)]
                let ms = n as i64;
                ms
            }),
        None => None,
    };
    ms.map_or_else(|| raw("null".to_owned()), |ms| to_raw(&ms))
}

/// A compact JSON object of the present fields, in order.
fn object(fields: &[(&str, Option<Box<RawValue>>)]) -> Box<RawValue> {
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
