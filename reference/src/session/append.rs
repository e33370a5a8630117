//! Appending entries: one entry per call, its parent the leaf, then the new leaf
//! (000 "Entry types", "Tree semantics"; 002 "SessionManager API").

use serde_json::Value;

use super::{ModelChange, SessionError, SessionManager};
use crate::ids::{iso_timestamp, new_entry_id};
use crate::model::Entry;
use crate::persist::prepare;

impl SessionManager {
    /// Appends a `message` entry.
    pub fn append_message(&mut self, message: Value) -> Result<String, SessionError> {
        self.append("message", vec![("message", Some(message))], false)
    }

    /// Appends a `thinking_level_change` entry.
    pub fn append_thinking_level_change(&mut self, level: Value) -> Result<String, SessionError> {
        self.append(
            "thinking_level_change",
            vec![("thinkingLevel", Some(level))],
            false,
        )
    }

    /// Appends a `model_change` entry in the profile's shape.
    pub fn append_model_change(&mut self, change: ModelChange) -> Result<String, SessionError> {
        let payload = match change {
            ModelChange::Pi { provider, model_id } => {
                vec![("provider", Some(provider)), ("modelId", Some(model_id))]
            }
            ModelChange::Omp { model, role } => vec![("model", Some(model)), ("role", role)],
            ModelChange::Id { provider, model_id } => {
                vec![("provider", provider), ("modelId", Some(model_id))]
            }
        };
        self.append("model_change", payload, false)
    }

    /// Appends a `compaction` entry; `fields` are the optional ones in the profile's order
    /// (pi: `details`, `fromHook`; omp: `shortSummary` first, then `details`, `preserveData`, `fromExtension`).
    pub fn append_compaction(
        &mut self,
        summary: Value,
        first_kept_entry_id: Value,
        tokens_before: Value,
        fields: Vec<(&'static str, Option<Value>)>,
    ) -> Result<String, SessionError> {
        let mut payload = vec![("summary", Some(summary))];
        let (short, rest): (Vec<_>, Vec<_>) =
            fields.into_iter().partition(|(k, _)| *k == "shortSummary");
        payload.extend(short);
        payload.push(("firstKeptEntryId", Some(first_kept_entry_id)));
        payload.push(("tokensBefore", Some(tokens_before)));
        payload.extend(rest);
        self.append("compaction", payload, false)
    }

    /// Appends a `custom` entry (extension state; not in the context).
    pub fn append_custom_entry(
        &mut self,
        custom_type: Value,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(
            "custom",
            vec![("customType", Some(custom_type)), ("data", data)],
            true,
        )
    }

    /// Appends a `custom_message` entry (in the context).
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: Value,
        content: Value,
        display: Value,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        let payload = vec![
            ("customType", Some(custom_type)),
            ("content", Some(content)),
            ("display", Some(display)),
            ("details", details),
        ];
        self.append("custom_message", payload, true)
    }

    /// Sets (`Some` non-empty) or clears the label of `target`.
    pub fn append_label_change(
        &mut self,
        target: &str,
        label: Option<Value>,
    ) -> Result<String, SessionError> {
        if !self.tree.contains(target) {
            return Err(SessionError::NotFound(target.to_owned()));
        }
        self.append(
            "label",
            vec![("targetId", Some(Value::from(target))), ("label", label)],
            false,
        )
    }

    /// Appends a `session_info` entry with the trimmed name (pi).
    pub fn append_session_info(&mut self, name: &str) -> Result<String, SessionError> {
        self.append(
            "session_info",
            vec![("name", Some(Value::from(name.trim())))],
            false,
        )
    }

    /// Appends a `ttsr_injection` entry (omp).
    pub fn append_ttsr_injection(&mut self, rules: Value) -> Result<String, SessionError> {
        self.append(
            "ttsr_injection",
            vec![("injectedRules", Some(rules))],
            false,
        )
    }

    /// Appends a `session_init` entry (omp).
    pub fn append_session_init(
        &mut self,
        system_prompt: Value,
        task: Value,
        tools: Value,
        output_schema: Option<Value>,
    ) -> Result<String, SessionError> {
        let payload = vec![
            ("systemPrompt", Some(system_prompt)),
            ("task", Some(task)),
            ("tools", Some(tools)),
            ("outputSchema", output_schema),
        ];
        self.append("session_init", payload, false)
    }

    /// Appends a `mode_change` entry (omp).
    pub fn append_mode_change(
        &mut self,
        mode: Value,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(
            "mode_change",
            vec![("mode", Some(mode)), ("data", data)],
            false,
        )
    }

    pub(super) fn append(
        &mut self,
        type_name: &'static str,
        payload: Vec<(&'static str, Option<Value>)>,
        payload_first: bool,
    ) -> Result<String, SessionError> {
        let entry = self.make_entry(type_name, payload, payload_first, None);
        let id = entry.id.clone().unwrap_or_default();
        self.has_assistant |= entry.is_assistant();
        self.tree.push(entry);
        self.persist()?;
        Ok(id)
    }

    /// A new entry whose parent is the leaf; `type_name` and the payload's keys are
    /// the camelCase names, written as the dialect names them.
    pub(super) fn make_entry(
        &mut self,
        type_name: &'static str,
        payload: Vec<(&'static str, Option<Value>)>,
        payload_first: bool,
        timestamp: Option<String>,
    ) -> Entry {
        let keys = self.profile.dialect().keys;
        let tree = &self.tree;
        let id = new_entry_id(self.ids.as_mut(), |c| tree.contains(c));
        let timestamp = timestamp.unwrap_or_else(|| iso_timestamp(self.clock.now_ms()));
        let head = [
            ("id", Value::from(id)),
            (
                keys.name("parentId"),
                self.tree.leaf().map_or(Value::Null, Value::from),
            ),
            ("timestamp", Value::from(timestamp)),
        ];
        let mut fields: Vec<(&str, Value)> = payload
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (keys.name(k), v)))
            .collect();
        if payload_first {
            fields.extend(head);
        } else {
            fields.splice(0..0, head);
        }
        let mut object = serde_json::Map::with_capacity(fields.len() + 1);
        object.insert("type".to_owned(), Value::from(keys.name(type_name)));
        object.extend(fields.into_iter().map(|(k, v)| (k.to_owned(), v)));
        let mut value = Value::Object(object);
        if self.profile.dialect().prepares_entries {
            prepare(&mut value, &mut self.pending_blobs);
        }
        let text = value.to_string();
        let ordinal = self.tree.entries().len() + 1;
        Entry::from_text(text, ordinal, self.profile)
    }
}
