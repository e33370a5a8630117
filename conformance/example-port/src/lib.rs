//! A small implementation of the pi session format, version 3 only: it opens a session
//! file and builds the context at a leaf. What it leaves out is declared in
//! `expected-divergences`, each with its reason.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Value};

/// A session as loaded: its header, its entries in file order, and its leaf.
pub struct Session {
    /// The header line, when the first line is one.
    pub header: Option<Value>,
    /// Every line that is an object with a string `id` (blank and bad lines are skipped).
    pub entries: Vec<Value>,
    /// The last entry's id.
    pub leaf: Option<String>,
}

impl Session {
    /// Reads `path`; a missing file is an empty session.
    pub fn open(path: &Path) -> std::io::Result<Session> {
        let text = match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            read => read?,
        };
        let mut lines = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok());
        let header = lines.next().filter(|h| h["type"] == "session");
        let entries: Vec<Value> = lines.filter(|e| e["id"].is_string()).collect();
        let leaf = entries
            .last()
            .and_then(|e| e["id"].as_str())
            .map(str::to_owned);
        Ok(Session {
            header,
            entries,
            leaf,
        })
    }

    /// The path from the root to `leaf` (the last entry when `leaf` is unknown).
    fn path(&self, leaf: &str) -> Vec<&Value> {
        let by_id: HashMap<&str, &Value> = self
            .entries
            .iter()
            .filter_map(|e| Some((e["id"].as_str()?, e)))
            .collect();
        let mut at = by_id.get(leaf).copied().or(self.entries.last());
        let (mut path, mut seen) = (Vec::new(), std::collections::HashSet::new());
        while let Some(entry) = at {
            if !seen.insert(entry["id"].as_str()) {
                break; // a cycle
            }
            path.push(entry);
            at = entry["parentId"]
                .as_str()
                .and_then(|p| by_id.get(p).copied());
        }
        path.reverse();
        path
    }

    /// `buildSessionContext(entries, leaf)`: the messages along the path (from the last
    /// compaction's kept entry on, after its summary), the thinking level and the model.
    pub fn context(&self, leaf: Option<&str>) -> Value {
        let (mut messages, mut thinking, mut model) = (Vec::new(), json!("off"), Value::Null);
        let Some(leaf) = leaf else {
            return json!({"messages": messages, "thinkingLevel": thinking, "model": model});
        };
        let path = self.path(leaf);
        for entry in &path {
            match entry["type"].as_str() {
                Some("thinking_level_change") => thinking = entry["thinkingLevel"].clone(),
                Some("model_change") => {
                    model = fields(&[
                        ("provider", &entry["provider"]),
                        ("modelId", &entry["modelId"]),
                    ]);
                }
                Some("message") if entry["message"]["role"] == "assistant" => {
                    let m = &entry["message"];
                    model = fields(&[("provider", &m["provider"]), ("modelId", &m["model"])]);
                }
                _ => {}
            }
        }
        let compaction = path.iter().rposition(|e| e["type"] == "compaction");
        let start = match compaction {
            Some(at) => {
                let c = path[at];
                messages.push(json!({"role": "compactionSummary", "summary": c["summary"],
                    "tokensBefore": c["tokensBefore"], "timestamp": millis(&c["timestamp"])}));
                let kept = path[..at]
                    .iter()
                    .position(|e| e["id"] == c["firstKeptEntryId"]);
                let mut from: Vec<&Value> = kept.map_or(vec![], |k| path[k..at].to_vec());
                from.extend(&path[at + 1..]);
                from
            }
            None => path,
        };
        messages.extend(start.iter().filter_map(|e| message(e)));
        json!({"messages": messages, "thinkingLevel": thinking, "model": model})
    }
}

/// The message an entry puts in the context, if any.
fn message(entry: &Value) -> Option<Value> {
    match entry["type"].as_str()? {
        "message" => entry.get("message").cloned(),
        "custom_message" => {
            let keys = ["customType", "content", "display", "details"].map(|k| (k, &entry[k]));
            let mut m = fields(&keys);
            m["role"] = json!("custom");
            m["timestamp"] = millis(&entry["timestamp"]);
            Some(m)
        }
        "branch_summary" if entry["summary"].as_str().is_some_and(|s| !s.is_empty()) => {
            Some(json!({"role": "branchSummary", "summary": entry["summary"],
                "fromId": entry["fromId"], "timestamp": millis(&entry["timestamp"])}))
        }
        _ => None,
    }
}

/// An object of the fields that are present (JavaScript leaves `undefined` ones out).
fn fields(pairs: &[(&str, &Value)]) -> Value {
    let present = pairs.iter().filter(|(_, v)| !v.is_null());
    Value::Object(
        present
            .map(|(k, v)| ((*k).to_owned(), (*v).clone()))
            .collect(),
    )
}

/// An ISO 8601 UTC time (`2025-06-01T12:00:04.000Z`) in milliseconds since 1970.
fn millis(time: &Value) -> Value {
    let t = time.as_str().unwrap_or("");
    let num = |r: std::ops::Range<usize>| t.get(r).and_then(|s| s.parse::<i64>().ok());
    let parts = (
        num(0..4),
        num(5..7),
        num(8..10),
        num(11..13),
        num(14..16),
        num(17..19),
    );
    let (Some(y), Some(m), Some(d), Some(h), Some(min), Some(s)) = parts else {
        return Value::Null;
    };
    let ms = num(20..23).unwrap_or(0);
    // Days from 1970-01-01 to the date (the civil-from-days inverse).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let days =
        era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + (153 * m + 2) / 5 + d - 1 - 719_468;
    json!(((days * 24 + h) * 60 + min) * 60_000 + s * 1000 + ms)
}
