//! Property tests of the reference over generated sessions, named as claims.

use std::collections::HashSet;
use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;
use session_conformance::execute::{run_step, substitute};
use session_generators::{damage, damages, legacy, ops, rewire, steps, Op};
use session_reference::compaction::{self, messages::compaction_message};
use session_reference::context::{build_context, LeafChoice};
use session_reference::ids::{FixedClock, SequentialIds};
use session_reference::migrate::{migrate, v1_to_v2, v2_to_v3};
use session_reference::model::{Entry, EntryKind, Profile};
use session_reference::parse::parse;
use session_reference::session::{Options, SessionManager};
use session_reference::storage::MemoryStorage;
use session_reference::tree::Tree;

fn options(profile: Profile, files: &[(&str, &str)]) -> Options {
    let storage = MemoryStorage::default();
    for (path, text) in files {
        storage.insert(Path::new(path), text.as_bytes());
    }
    Options {
        profile,
        cwd: "/proj".into(),
        session_dir: "/s".into(),
        blob_dir: "/blobs".into(),
        storage: Box::new(storage),
        ids: Box::new(SequentialIds::default()),
        clock: Box::new(FixedClock(1_764_000_000_000)),
        fsync_appends: false,
    }
}

/// Runs generated ops on an in-memory session; returns its file text (header and every entry).
fn session_text(ops: &[Op], profile: Profile) -> String {
    let mut sm = SessionManager::in_memory(options(profile, &[]));
    let mut results: Vec<Value> = Vec::new();
    for step in steps(ops, profile) {
        let step = substitute(&step, &results);
        results.push(
            run_step(&mut sm, &step, profile, std::path::Path::new("/")).unwrap_or(Value::Null),
        );
    }
    let mut text = format!("{}\n", sm.header().raw.get());
    for entry in sm.entries() {
        text.push_str(entry.raw.get());
        text.push('\n');
    }
    text
}

fn profiles() -> impl Strategy<Value = Profile> {
    prop::sample::select(Profile::ALL.to_vec())
}

fn session() -> impl Strategy<Value = (Profile, String)> {
    profiles().prop_flat_map(|p| ops(p, 0..30).prop_map(move |o| (p, session_text(&o, p))))
}

fn ids(tree: &Tree) -> Vec<String> {
    tree.entries().iter().filter_map(|e| e.id.clone()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1700, ..ProptestConfig::default() })]

    #[test]
    fn load_then_save_is_identity((profile, text) in session()) {
        let sm = SessionManager::open(Path::new("/f.jsonl"), options(profile, &[("/f.jsonl", &text)])).unwrap();
        let mut saved = format!("{}\n", sm.header().raw.get());
        for entry in sm.entries() {
            saved.push_str(entry.raw.get());
            saved.push('\n');
        }
        prop_assert_eq!(saved, text);
    }

    #[test]
    fn migration_is_idempotent_and_v1_to_v3_equals_the_two_steps((profile, text) in session()) {
        // 003's files have no version and are never migrated.
        if !profile.keys().versioned {
            return Ok(());
        }
        let v1 = legacy(&text, 1);
        let parsed = parse(v1.as_bytes(), profile);
        let (mut header, mut once) = (parsed.header.clone().unwrap(), parsed.entries.clone());
        migrate(&mut header, &mut once, &mut SequentialIds::default());
        let mut stepwise = parsed.entries;
        let mut ids = SequentialIds::default();
        v1_to_v2(&mut stepwise, &mut ids);
        v2_to_v3(&mut stepwise);
        let raw = |entries: &[session_reference::model::Entry]| entries.iter().map(|e| e.raw.get().to_owned()).collect::<Vec<_>>();
        prop_assert_eq!(raw(&once), raw(&stepwise));
        let before = raw(&once);
        prop_assert!(migrate(&mut header, &mut once, &mut SequentialIds::default()).is_empty());
        prop_assert_eq!(raw(&once), before);
    }

    #[test]
    fn every_entry_on_the_path_is_an_ancestor_of_the_leaf((profile, text) in session()) {
        let tree = Tree::new(parse(text.as_bytes(), profile).entries);
        for id in ids(&tree) {
            let path = tree.branch_path(Some(&id));
            prop_assert_eq!(path.last().and_then(|e| e.id.clone()), Some(id.clone()));
            for pair in path.windows(2) {
                prop_assert_eq!(pair[1].parent_id.as_deref(), pair[0].id.as_deref());
            }
        }
    }

    #[test]
    fn context_after_a_compaction_starts_with_its_summary((profile, text) in session()) {
        let tree = Tree::new(parse(text.as_bytes(), profile).entries);
        for id in ids(&tree) {
            let compacted = tree.branch_path(Some(&id)).iter().any(|e| e.type_name() == "compaction");
            let context = build_context(&tree, LeafChoice::Id(&id), profile);
            if compacted {
                let first: Value = serde_json::from_str(context.messages[0].get()).unwrap();
                prop_assert_eq!(&first["role"], "compactionSummary");
            }
        }
    }

    #[test]
    fn get_tree_lists_every_entry_exactly_once((profile, text) in session()) {
        let tree = Tree::new(parse(text.as_bytes(), profile).entries);
        let listed: Vec<String> = tree.tree().into_iter().map(|n| n.id().to_owned()).collect();
        let unique: HashSet<&String> = listed.iter().collect();
        prop_assert_eq!(unique.len(), listed.len());
        let all: HashSet<String> = ids(&tree).into_iter().collect();
        prop_assert_eq!(unique.len(), all.len());
    }

    #[test]
    fn the_lenient_loader_keeps_every_valid_line((profile, text) in session(), damage_spec in damages()) {
        let damaged = damage(&text, &damage_spec);
        let original = parse(text.as_bytes(), profile);
        let loaded = parse(damaged.as_bytes(), profile);
        prop_assert!(loaded.header.is_ok());
        let kept: Vec<&str> = loaded.entries.iter().map(|e| e.raw.get()).collect();
        // Every original entry is still there, in order (a duplicated line may add one).
        let mut at = 0;
        for entry in &original.entries {
            let found = kept[at..].iter().position(|k| *k == entry.raw.get());
            prop_assert!(found.is_some(), "lost {}", entry.raw.get());
            at += found.unwrap_or(0) + 1;
        }
    }

    #[test]
    fn walks_terminate_on_dangling_parents_and_cycles((profile, text) in session(), dangling in proptest::option::of(any::<usize>()), cycle in proptest::option::of(any::<usize>())) {
        let rewired = rewire(&text, dangling, cycle);
        let tree = Tree::new(parse(rewired.as_bytes(), profile).entries);
        let listed: Vec<String> = tree.tree().into_iter().map(|n| n.id().to_owned()).collect();
        let unique: HashSet<&String> = listed.iter().collect();
        prop_assert_eq!(unique.len(), listed.len());
        prop_assert_eq!(unique.len(), ids(&tree).into_iter().collect::<HashSet<_>>().len());
        for id in ids(&tree) {
            let path = tree.branch_path(Some(&id));
            prop_assert!(path.len() <= tree.entries().len());
            let _ = build_context(&tree, LeafChoice::Id(&id), profile);
        }
    }

    #[test]
    fn the_kept_part_and_the_summarised_part_are_the_whole_path((profile, text) in session(), keep in 0i64..200) {
        // Document 004 "Compaction": a compaction summarises the messages before the cut (a
        // split turn's prefix separately) and keeps the rest; together they are every message
        // after the previous compaction's boundary, in order, none twice.
        // Planning reads entries in camelCase (003's renamed), as `execute::compaction` does.
        let keys = profile.keys();
        let entries: Vec<Entry> = text.lines().skip(1).filter_map(|l| serde_json::from_str(l).ok())
            .map(|v: Value| Entry::from_text(keys.camel_entry(v).to_string(), 0, Profile::Pi)).collect();
        let tree = Tree::new(entries);
        let last = tree.entries().len().checked_sub(1);
        let path: Vec<&Entry> = last.map(|i| tree.path_from_index(i)).unwrap_or_default().into_iter().map(|i| &tree.entries()[i]).collect();
        let rules = compaction::Rules::for_profile(profile);
        let mut settings = compaction::Settings::defaults(profile);
        settings.keep_recent_tokens = keep;
        let Some(prep) = compaction::prepare_compaction(&path, &settings, &rules) else { return Ok(()) };
        let mut parts = prep.messages_to_summarize.clone();
        parts.extend(prep.turn_prefix_messages.iter().cloned());
        parts.extend(path[prep.cut.first_kept_entry_index..].iter().filter_map(|e| compaction_message(e, &rules)));
        let whole: Vec<Value> = path.iter().filter_map(|e| compaction_message(e, &rules)).collect();
        prop_assert!(whole.ends_with(&parts), "not a suffix of the path's messages");
        if !path.iter().any(|e| e.kind == EntryKind::Compaction) {
            prop_assert_eq!(parts.len(), whole.len());
        }
    }
}
