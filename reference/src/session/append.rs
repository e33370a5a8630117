//! Appending entries: one entry per call, its parent the leaf, then the new leaf
//! (000 "Entry types", "Tree semantics"; 002 "SessionManager API").
//!
//! Every `append*` of 002 is [`SessionManager::append`] with one of the line shapes of
//! [`crate::entries`]; the two below check or clean their input first.

use serde_json::{Map, Value};

use super::{Rules, SessionError, SessionManager};
use crate::entries::{self, Base, Payload};
use crate::ids::{iso_timestamp, new_entry_id};
use crate::model::Entry;
use crate::model::Keys;
use crate::persisted_form::prepare;

impl SessionManager {
    /// Appends an entry of `payload`'s type whose parent is the leaf; it becomes the
    /// leaf. Returns its id. Written at once when the session is persisted (see
    /// [`SessionManager::flush`]); a write error is latched and returned from then on.
    /// Clauses: persistence.10, tree.3.
    pub fn append<P: Payload>(&mut self, payload: &P) -> Result<String, SessionError> {
        let entry = self.make_entry(payload, None);
        let id = entry.id.clone().unwrap_or_default();
        self.has_assistant |= entry.is_assistant();
        self.tree.push(entry);
        self.write_pending()?;
        Ok(id)
    }

    /// Appends a `message` entry (`appendMessage`).
    /// Clauses: format.13.
    pub fn append_message(&mut self, message: Value) -> Result<String, SessionError> {
        self.append(&entries::Message { message })
    }

    /// Sets (`Some` non-empty) or clears the label of `target` (`appendLabelChange`);
    /// an unknown target is an error and appends nothing.
    pub fn append_label_change(
        &mut self,
        target: &str,
        label: Option<Value>,
    ) -> Result<String, SessionError> {
        if !self.tree.contains(target) {
            return Err(SessionError::NotFound(target.to_owned()));
        }
        let target_id = target.to_owned();
        self.append(&entries::Label { target_id, label })
    }

    /// Appends a `session_info` entry with the trimmed name (pi `appendSessionInfo`).
    /// Clauses: format.14.
    pub fn append_session_info(&mut self, name: &str) -> Result<String, SessionError> {
        let name = name.trim().to_owned();
        self.append(&entries::SessionInfo { name })
    }

    /// A new entry whose parent is the leaf, written as the dialect names its keys;
    /// `timestamp` defaults to now.
    /// Clauses: format.1, format.6, format.11, tree.3.
    pub(super) fn make_entry<P: Payload>(
        &mut self,
        payload: &P,
        timestamp: Option<String>,
    ) -> Entry {
        let tree = &self.tree;
        let base = Base {
            id: new_entry_id(self.ids.as_mut(), |c| tree.contains(c)),
            parent_id: self.tree.leaf().map(str::to_owned),
            timestamp: timestamp.unwrap_or_else(|| iso_timestamp(self.clock.now_ms())),
        };
        let keys = self.profile.keys();
        let (first, then) = (named(keys, &base), named(keys, payload));
        let (first, then) = if P::BASE_LAST {
            (then, first)
        } else {
            (first, then)
        };
        let mut line = Map::with_capacity(first.len() + then.len() + 1);
        line.insert("type".to_owned(), Value::from(keys.name(P::TYPE)));
        line.extend(first.into_iter().chain(then));
        let mut value = Value::Object(line);
        if Rules::for_profile(self.profile).prepares_entries {
            prepare(&mut value, &mut self.pending_blobs);
        }
        let ordinal = self.tree.entries().len() + 1;
        Entry::from_text(value.to_string(), ordinal, self.profile)
    }
}

/// A line shape's fields as a JSON object, in declaration order, named as the dialect names them.
pub(super) fn named(keys: &Keys, shape: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(shape) {
        Ok(Value::Object(fields)) => fields
            .into_iter()
            .map(|(key, value)| (keys.name(&key).to_owned(), value))
            .collect(),
        // Every line shape is a struct: it serialises to an object.
        _ => Map::new(),
    }
}
