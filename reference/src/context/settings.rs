//! The settings a context carries after its messages, one function per profile: what the
//! path (003: every entry) says of the thinking level, the model and omp's mode and rules.

use std::collections::{BTreeMap, HashSet};

use serde_json::value::RawValue;

use super::{js_string, message_of, object};
use crate::model::{Entry, EntryKind};
use crate::raw::{as_string, is_truthy, to_raw};

/// A context's fields after `messages`: `(name, JSON value)` in the profile's order.
pub type Settings = Vec<(&'static str, Box<RawValue>)>;

/// pi (002 "Context Building"): `thinkingLevel` (the last change's, verbatim; `"off"` when there is none) and
/// `model`: the last model change's `{provider, modelId}`, or the last assistant
/// message's `{provider, model}` renamed, whichever comes later; `null` when neither.
/// Clauses: context.1, context.13, context.14, context.15, format.12.
pub fn pi(path: &[&Entry]) -> Settings {
    let mut thinking_level = Some(to_raw("off"));
    for entry in path {
        if entry.kind == EntryKind::ThinkingLevelChange {
            thinking_level = entry.object().get("thinkingLevel").map(ToOwned::to_owned);
        }
    }
    let model_source = path
        .iter()
        .rev()
        .find(|e| e.kind == EntryKind::ModelChange || e.is_assistant());
    let model = model_source.map_or_else(
        || to_raw(&()),
        |entry| {
            let obj = entry.object();
            let (source, model_key) = if entry.kind == EntryKind::ModelChange {
                (obj.clone(), "modelId")
            } else {
                (message_of(&obj), "model")
            };
            object(&[
                ("provider", source.get("provider").map(ToOwned::to_owned)),
                ("modelId", source.get(model_key).map(ToOwned::to_owned)),
            ])
        },
    );
    let mut out = Vec::new();
    if let Some(level) = thinking_level {
        out.push(("thinkingLevel", level));
    }
    out.push(("model", model));
    out
}

/// omp (000 "Context reconstruction"): the settings scanned along the path:
/// - `thinkingLevel`: the last change's (`"off"` by default or when `null`);
/// - `models`: per role (`role ?? "default"`), the last truthy `model`; `default`
///   falls back to the last assistant message's `provider/model`;
/// - `injectedTtsrRules`: every rule of every `ttsr_injection`, first-seen order, once;
/// - `mode` (`"none"` by default) and `modeData`: the last `mode_change`'s.
///
/// Clauses: context.1, context.13, context.14, context.16, context.17, context.18,
/// context.19, format.12.
pub fn omp(path: &[&Entry]) -> Settings {
    let mut thinking_level = to_raw("off");
    let mut models = BTreeMap::new();
    let mut rules = Vec::new();
    let mut seen_rules = HashSet::new();
    let mut mode = to_raw("none");
    let mut mode_data = None;
    for entry in path {
        // Only the entries that set something are read again.
        if !matches!(
            entry.kind,
            EntryKind::ThinkingLevelChange
                | EntryKind::ModelChange
                | EntryKind::TtsrInjection
                | EntryKind::ModeChange
        ) {
            continue;
        }
        let obj = entry.object();
        match &entry.kind {
            EntryKind::ThinkingLevelChange => {
                thinking_level = obj
                    .get("thinkingLevel")
                    .filter(|v| v.get() != "null")
                    .map_or_else(|| to_raw("off"), ToOwned::to_owned);
            }
            EntryKind::ModelChange => {
                if let Some(model) = obj.get("model").filter(|v| is_truthy(Some(v))) {
                    let role = obj.str("role").unwrap_or_else(|| "default".to_owned());
                    let model = as_string(model).unwrap_or_else(|| model.get().to_owned());
                    models.insert(role, model);
                }
            }
            EntryKind::TtsrInjection => {
                let injected: Vec<serde_json::Value> = obj
                    .get("injectedRules")
                    .and_then(|v| serde_json::from_str(v.get()).ok())
                    .unwrap_or_default();
                for rule in injected.iter().filter_map(serde_json::Value::as_str) {
                    if seen_rules.insert(rule.to_owned()) {
                        rules.push(rule.to_owned());
                    }
                }
            }
            EntryKind::ModeChange => {
                mode = obj
                    .get("mode")
                    .map_or_else(|| to_raw(&()), ToOwned::to_owned);
                mode_data = obj.get("data").map(ToOwned::to_owned);
            }
            _ => {}
        }
    }
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
    let mut out = vec![
        ("thinkingLevel", thinking_level),
        ("models", to_raw(&models)),
        ("injectedTtsrRules", to_raw(&rules)),
        ("mode", mode),
    ];
    if let Some(data) = mode_data {
        out.push(("modeData", data));
    }
    out
}

/// operator: 003 step 1: over `entries` (all of them, in file order), the newest
/// `thinking_level_change`'s `thinking_level` (`"off"` when there is none, as pi) and
/// the newest `model_change`'s `model_id` (`null` when there is none; 003 names no
/// fallback to the assistant message's model).
/// Clauses: context.1, context.13, context.20, format.12.
pub fn operator(entries: &[&Entry]) -> Settings {
    let mut thinking_level = Some(to_raw("off"));
    let mut model_id = to_raw(&());
    for entry in entries {
        match entry.kind {
            EntryKind::ThinkingLevelChange => {
                thinking_level = entry.object().get("thinking_level").map(ToOwned::to_owned);
            }
            EntryKind::ModelChange => {
                model_id = entry
                    .object()
                    .get("model_id")
                    .map_or_else(|| to_raw(&()), ToOwned::to_owned);
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(level) = thinking_level {
        out.push(("thinking_level", level));
    }
    out.push(("model_id", model_id));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> Entry {
        Entry::from_text(text.to_owned(), 1, crate::model::Profile::Operator)
    }

    #[test]
    fn settings_take_the_newest_change() {
        let a = entry(r#"{"type":"thinking_level_change","id":"t","thinking_level":"high"}"#);
        let b = entry(r#"{"type":"model_change","id":"m","model_id":"gpt"}"#);
        let out = operator(&[&a, &b]);
        let text: Vec<String> = out
            .iter()
            .map(|(k, v)| format!("{k}={}", v.get()))
            .collect();
        assert_eq!(text, ["thinking_level=\"high\"", "model_id=\"gpt\""]);
        let none = operator(&[]);
        assert_eq!(none[1].1.get(), "null");
    }
}
