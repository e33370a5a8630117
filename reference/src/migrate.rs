//! Migrations v1→v2→v3, one function per step (000 "Versioning and migrations"; pi-mono §3; omp E).
//!
//! The version is read as JavaScript compares it (`version ?? 1`, coerced to a
//! number), so `"2"` runs only v2→v3, `"abc"` runs nothing and `4` is left alone.
//! Migrating twice changes nothing: the second run sees version 3.
//!
//! One deliberate difference from the real code: a v1 `firstKeptEntryIndex` that
//! points *forward* (at a later entry) is resolved, because ids are assigned to
//! every entry before indices are mapped. The real code loses that reference.

use std::collections::{HashMap, HashSet};

use crate::ids::{new_entry_id, IdSource};
use crate::model::{Entry, EntryKind, SessionHeader, CURRENT_VERSION};
use crate::raw::{to_raw, RawObject};

/// A migration step that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// v1→v2: ids and a linear parent chain; `firstKeptEntryIndex` → `firstKeptEntryId`.
    V1ToV2,
    /// v2→v3: `message.role` `hookMessage` → `custom`.
    V2ToV3,
}

/// Runs every step the header's version needs; returns the steps that ran.
/// Clauses: migrations.1, migrations.6, migrations.7.
pub fn migrate(
    header: &mut SessionHeader,
    entries: &mut [Entry],
    ids: &mut dyn IdSource,
) -> Vec<Step> {
    let mut steps = Vec::new();
    if header.version < 2.0 {
        v1_to_v2(entries, ids);
        steps.push(Step::V1ToV2);
    }
    if header.version < f64::from(CURRENT_VERSION) {
        v2_to_v3(entries);
        steps.push(Step::V2ToV3);
    }
    if !steps.is_empty() {
        set_header_version(header, CURRENT_VERSION);
        // Every header line gets the new version, a second one too (clause migrations.5).
        for entry in entries
            .iter_mut()
            .filter(|e| e.kind == EntryKind::ExtraHeader)
        {
            let mut obj = entry.object();
            obj.set("version", to_raw(&CURRENT_VERSION));
            *entry = Entry::from_text(obj.to_json(), entry.ordinal, entry.profile);
        }
    }
    steps
}

/// v1→v2: gives every entry a fresh id and its file-order predecessor as parent
/// (existing ids and parents are replaced, as in the real code), then maps numeric
/// `firstKeptEntryIndex` (0 = the header) to `firstKeptEntryId` and drops the index.
/// Clauses: migrations.2, migrations.3, migrations.6.
pub fn v1_to_v2(entries: &mut [Entry], ids: &mut dyn IdSource) {
    // A second header line is not an entry: it gets no id and is not in the chain.
    let chain: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].kind != EntryKind::ExtraHeader)
        .collect();
    let mut taken = HashSet::with_capacity(chain.len());
    let mut new_ids: Vec<Option<String>> = vec![None; entries.len()];
    for &i in &chain {
        let id = new_entry_id(ids, |candidate| taken.contains(candidate));
        taken.insert(id.clone());
        new_ids[i] = Some(id);
    }
    let by_ordinal: HashMap<usize, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.ordinal, i))
        .collect();
    let mut parent: Option<String> = None;
    for &i in &chain {
        let entry = &entries[i];
        let mut obj = entry.object();
        obj.set("id", to_raw(&new_ids[i]));
        obj.set("parentId", to_raw(&parent));
        if entry.kind == EntryKind::Compaction {
            if let Some(index) = obj
                .get("firstKeptEntryIndex")
                .and_then(|v| v.get().parse::<f64>().ok())
            {
                if let Some(kept) = whole_index(index)
                    .and_then(|k| by_ordinal.get(&k))
                    .and_then(|&t| new_ids[t].as_ref())
                {
                    obj.set("firstKeptEntryId", to_raw(kept));
                }
                obj.remove("firstKeptEntryIndex");
            }
        }
        entries[i] = Entry::from_text(obj.to_json(), entry.ordinal, entry.profile);
        parent.clone_from(&new_ids[i]);
    }
}

/// v2→v3: rewrites `message.role` `"hookMessage"` to `"custom"`; nothing else.
/// Clauses: migrations.4.
pub fn v2_to_v3(entries: &mut [Entry]) {
    for entry in entries.iter_mut() {
        if entry.role().as_deref() != Some("hookMessage") {
            continue;
        }
        let mut obj = entry.object();
        let Some(mut message) = obj.get("message").and_then(|m| RawObject::parse(m.get())) else {
            continue;
        };
        message.set("role", to_raw("custom"));
        let message = message.to_raw();
        obj.set("message", message);
        *entry = Entry::from_text(obj.to_json(), entry.ordinal, entry.profile);
    }
}

/// Sets the header's `version` field (in place, or appended at the end).
pub fn set_header_version(header: &mut SessionHeader, version: u32) {
    let mut obj = RawObject::parse(header.raw.get()).unwrap_or_default();
    obj.set("version", to_raw(&version));
    header.raw = obj.to_raw();
    header.version = f64::from(version);
}

fn whole_index(index: f64) -> Option<usize> {
    if index.fract() == 0.0 && (0.0..1e15).contains(&index) {
        // Checked above: a non-negative whole number well inside usize.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(index as usize)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::SequentialIds;
    use crate::model::Profile;
    use crate::parse::parse;

    fn load(text: &str) -> (SessionHeader, Vec<Entry>) {
        let parsed = parse(text.as_bytes(), Profile::Pi);
        (parsed.header.unwrap(), parsed.entries)
    }

    const V1: &str = concat!(
        "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/p\"}\n",
        "{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n",
        "{\"type\":\"compaction\",\"timestamp\":\"t\",\"summary\":\"S\",\"firstKeptEntryIndex\":3,\"tokensBefore\":1}\n",
        "{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":\"hookMessage\",\"content\":\"b\"}}\n",
    );

    #[test]
    fn v1_gets_ids_chain_and_forward_index() {
        let (mut header, mut entries) = load(V1);
        let steps = migrate(&mut header, &mut entries, &mut SequentialIds::default());
        assert_eq!(steps, [Step::V1ToV2, Step::V2ToV3]);
        let ids: Vec<_> = entries.iter().map(|e| e.id.clone().unwrap()).collect();
        assert_eq!(ids, ["00000001", "00000002", "00000003"]);
        assert_eq!(entries[1].parent_id.as_deref(), Some("00000001"));
        assert_eq!(entries[1].kind, EntryKind::Compaction);
        assert_eq!(
            entries[1].first_kept_entry_id().as_deref(),
            Some("00000003")
        );
        assert!(!entries[1].raw.get().contains("firstKeptEntryIndex"));
        assert!(entries[2].raw.get().contains(r#""role":"custom""#));
        assert!(header.raw.get().ends_with(r#""version":3}"#));
    }

    #[test]
    fn migrating_twice_changes_nothing() {
        let (mut header, mut entries) = load(V1);
        migrate(&mut header, &mut entries, &mut SequentialIds::default());
        let before: Vec<String> = entries.iter().map(|e| e.raw.get().to_owned()).collect();
        assert!(migrate(&mut header, &mut entries, &mut SequentialIds::default()).is_empty());
        let after: Vec<String> = entries.iter().map(|e| e.raw.get().to_owned()).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn index_at_header_or_out_of_range_sets_nothing() {
        for index in ["0", "99", "\"1\"", "1.5"] {
            let text = V1.replace(
                "\"firstKeptEntryIndex\":3",
                &format!("\"firstKeptEntryIndex\":{index}"),
            );
            let (mut header, mut entries) = load(&text);
            migrate(&mut header, &mut entries, &mut SequentialIds::default());
            assert_eq!(entries[1].first_kept_entry_id(), None, "{index}");
            // A string index is not a number: left untouched.
            assert_eq!(
                entries[1].raw.get().contains("firstKeptEntryIndex"),
                index == "\"1\"",
                "{index}"
            );
        }
    }

    #[test]
    fn version_strings_and_future_versions() {
        let v2 = V1.replace("\"id\":\"s\"", "\"version\":\"2\",\"id\":\"s\"");
        let (mut header, mut entries) = load(&v2);
        assert_eq!(
            migrate(&mut header, &mut entries, &mut SequentialIds::default()),
            [Step::V2ToV3]
        );
        let v4 = V1.replace("\"id\":\"s\"", "\"version\":4,\"id\":\"s\"");
        let (mut header, mut entries) = load(&v4);
        assert!(migrate(&mut header, &mut entries, &mut SequentialIds::default()).is_empty());
    }
}
