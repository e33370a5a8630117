use super::*;
use crate::entries;
use crate::ids::{file_timestamp, FixedClock, SequentialIds};
use crate::parse::parse;
use crate::storage::MemoryStorage;
use serde_json::json;

const NOW: i64 = 1_764_000_000_000;

/// Options over a shared in-memory filesystem snapshot.
fn options(profile: Profile, files: &[(&str, &str)]) -> Options {
    let storage = MemoryStorage::default();
    for (path, text) in files {
        storage.insert(PathBuf::from(path), text.as_bytes());
    }
    Options {
        profile,
        cwd: "/proj".into(),
        session_dir: "/s".into(),
        blob_dir: "/blobs".into(),
        storage: Box::new(storage),
        ids: Box::new(SequentialIds::default()),
        clock: Box::new(FixedClock(NOW)),
        fsync_appends: false,
    }
}

fn file(sm: &SessionManager, path: &str) -> Option<String> {
    sm.storage
        .read(Path::new(path))
        .unwrap()
        .map(|b| String::from_utf8(b).unwrap())
}

fn lines(sm: &SessionManager) -> Vec<Value> {
    let text = file(sm, sm.session_file().unwrap().to_str().unwrap()).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.to_owned())))
        .collect()
}

fn user(text: &str) -> Value {
    json!({"role":"user","content":text,"timestamp":1})
}

fn assistant(text: &str) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":text}],"provider":"p","model":"m","timestamp":2})
}

const H: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/hdr"}"#;
const U0: &str = r#"{"type":"message","id":"u0","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x"}}"#;

#[test]
fn nothing_is_written_before_the_first_assistant() {
    for profile in Profile::ALL {
        let mut sm = SessionManager::create(options(profile, &[]));
        sm.append_message(user("hi")).unwrap();
        sm.append(&entries::ThinkingLevelChange {
            thinking_level: json!("high"),
        })
        .unwrap();
        assert!(lines(&sm).is_empty(), "{profile}");
        sm.append_message(assistant("ok")).unwrap();
        assert_eq!(lines(&sm).len(), 4, "{profile}: header + 3 entries at once");
        sm.append_message(user("more")).unwrap();
        assert_eq!(lines(&sm).len(), 5, "{profile}: then one line per append");
        assert_eq!(lines(&sm)[0]["type"], profile.keys().name("session"));
    }
}

#[test]
fn reopened_session_never_writes_the_header_twice() {
    let text = format!("{H}\n{U0}\n");
    let mut sm = SessionManager::open(
        Path::new("/f.jsonl"),
        options(Profile::Pi, &[("/f.jsonl", &text)]),
    )
    .unwrap();
    sm.append_message(user("u1")).unwrap();
    assert_eq!(
        lines(&sm).len(),
        2,
        "pi holds the user message until an assistant"
    );
    sm.append_message(assistant("a1")).unwrap();
    let types: Vec<_> = lines(&sm)
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["session", "message", "message", "message"]);
}

#[test]
fn omp_appends_to_a_loaded_file_at_once() {
    let text = format!("{H}\n{U0}\n");
    let mut sm = SessionManager::open(
        Path::new("/f.jsonl"),
        options(Profile::Omp, &[("/f.jsonl", &text)]),
    )
    .unwrap();
    sm.append_message(user("u1")).unwrap();
    assert_eq!(lines(&sm).len(), 3);
}

#[test]
fn append_after_torn_or_newline_less_line_starts_a_new_line() {
    for tail in ["{\"type\":\"mess", ""] {
        let text = if tail.is_empty() {
            format!("{H}\n{U0}")
        } else {
            format!("{H}\n{U0}\n{tail}")
        };
        let mut sm = SessionManager::open(
            Path::new("/f.jsonl"),
            options(Profile::Omp, &[("/f.jsonl", &text)]),
        )
        .unwrap();
        sm.append_message(assistant("a")).unwrap();
        let written = file(&sm, "/f.jsonl").unwrap();
        assert!(written.starts_with(&text), "existing bytes are untouched");
        let reparsed = parse(written.as_bytes(), Profile::Omp);
        assert_eq!(reparsed.entries.len(), 2, "{tail:?}: both entries survive");
    }
}

#[test]
fn unreadable_header_is_kept_beside_the_new_session() {
    let text = format!("{{\"type\":\"sess\n{U0}\n");
    let sm = SessionManager::open(
        Path::new("/f.jsonl"),
        options(Profile::Pi, &[("/f.jsonl", &text)]),
    )
    .unwrap();
    let kept = sm.report().preserved.clone().unwrap();
    assert_eq!(
        kept,
        PathBuf::from(format!("/f.jsonl.corrupt-{}", file_timestamp(NOW)))
    );
    assert_eq!(file(&sm, kept.to_str().unwrap()).unwrap(), text);
    assert_eq!(lines(&sm).len(), 1, "a fresh header at the path");
    assert!(sm.report().header_error.is_some());
}

#[test]
fn missing_file_is_a_new_session_written_at_once_only_for_omp() {
    let pi = SessionManager::open(Path::new("/new.jsonl"), options(Profile::Pi, &[])).unwrap();
    assert!(file(&pi, "/new.jsonl").is_none());
    let omp = SessionManager::open(Path::new("/new.jsonl"), options(Profile::Omp, &[])).unwrap();
    assert_eq!(lines(&omp).len(), 1);
}

#[test]
fn migration_rewrites_atomically_and_keeps_lossy_originals() {
    let v1 = "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/p\"}\nnot json\n{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n";
    let sm = SessionManager::open(
        Path::new("/f.jsonl"),
        options(Profile::Pi, &[("/f.jsonl", v1)]),
    )
    .unwrap();
    assert_eq!(sm.report().migrated, [Step::V1ToV2, Step::V2ToV3]);
    let written = lines(&sm);
    assert_eq!(written.len(), 2);
    assert_eq!(written[0]["version"], 3);
    assert_eq!(written[1]["id"].as_str().map(str::len), Some(8));
    let kept = sm.report().preserved.clone().unwrap();
    assert_eq!(file(&sm, kept.to_str().unwrap()).unwrap(), v1);
}

#[test]
fn v3_files_load_and_save_byte_identical() {
    let text = format!("{H}\n{}\n", U0.replace("\"x\"", "\"\\u00e9 spaced  \""));
    let sm = SessionManager::open(
        Path::new("/f.jsonl"),
        options(Profile::Omp, &[("/f.jsonl", &text)]),
    )
    .unwrap();
    assert_eq!(file(&sm, "/f.jsonl").unwrap(), text);
    let mut rewritten = String::from(sm.header().raw.get());
    rewritten.push('\n');
    for e in sm.entries() {
        rewritten.push_str(e.raw.get());
        rewritten.push('\n');
    }
    assert_eq!(rewritten, text);
}

#[test]
fn write_errors_are_latched() {
    // 000 "Persistence guarantees": the first error is latched and rethrown by every later
    // operation. The append whose write fails returns it itself where writes are
    // synchronous (pi-mono's appendFileSync, and 003, which follows pi), and returns its
    // id where they are queued (omp's #persistChain): the next operation sees it.
    // (profile, file to open or a new session, whether appending u then a returns errors)
    let cases = [
        (Profile::Pi, None, [false, true]),
        (Profile::Operator, None, [false, true]),
        (Profile::Omp, None, [false, false]),
        (Profile::Pi, Some(H), [false, true]),
        // omp writes every append to a loaded file: u's write fails, a sees the latch.
        (Profile::Omp, Some(H), [false, true]),
    ];
    for (profile, opened, errs) in cases {
        let what = format!("{profile}, opened: {}", opened.is_some());
        let mut opts = options(profile, &[]);
        let mut storage = MemoryStorage::default();
        if let Some(text) = opened {
            storage.insert("/f.jsonl", text.as_bytes());
        }
        storage.fail_writes = Some("disk full".into());
        opts.storage = Box::new(storage);
        let mut sm = match opened {
            Some(_) => SessionManager::open(Path::new("/f.jsonl"), opts).unwrap(),
            None => SessionManager::create(opts),
        };
        let appended = [
            sm.append_message(user("u")),
            sm.append_message(assistant("a")),
        ];
        assert_eq!(appended.each_ref().map(Result::is_err), errs, "{what}");
        let first = sm.flush().unwrap_err();
        assert!(matches!(first, SessionError::Persistence { .. }), "{what}");
        for error in appended.into_iter().filter_map(Result::err) {
            assert_eq!(error, first, "{what}: the first error, every time");
        }
        assert_eq!(
            sm.append_message(user("again")).unwrap_err(),
            first,
            "{what}"
        );
        assert_eq!(sm.flush().unwrap_err(), first, "{what}");
        let ids: Vec<_> = sm.entries().iter().map(|e| e.id.as_deref()).collect();
        assert_eq!(ids.len(), 3, "{what}: memory is updated regardless");
        assert_eq!(sm.leaf_id(), ids[2], "{what}");
    }
}

#[test]
fn tree_operations() {
    let mut sm = SessionManager::in_memory(options(Profile::Pi, &[]));
    let u1 = sm.append_message(user("u1")).unwrap();
    let a1 = sm.append_message(assistant("a1")).unwrap();
    assert_eq!(
        sm.get_entry(&a1).unwrap().parent_id.as_deref(),
        Some(u1.as_str())
    );
    sm.branch(&u1).unwrap();
    let a2 = sm.append_message(assistant("a2")).unwrap();
    assert_eq!(sm.get_children(Some(&u1)).len(), 2);
    assert_eq!(
        sm.branch("nope").unwrap_err().to_string(),
        "Entry nope not found"
    );
    sm.reset_leaf();
    let summary = entries::BranchSummary {
        from_id: String::new(),
        summary: json!("bs"),
        details: None,
        from_hook: None,
        from_extension: None,
    };
    let bs = sm.branch_with_summary(None, summary).unwrap();
    let bs_entry = sm.get_entry(&bs).unwrap();
    assert_eq!(
        (
            bs_entry.parent_id.as_deref(),
            sm.resolved(bs_entry)["fromId"].clone()
        ),
        (None, json!("root"))
    );
    sm.append_label_change(&a2, Some(json!("mark"))).unwrap();
    assert_eq!(sm.get_label(&a2), Some("mark"));
    sm.append_label_change(&a2, Some(json!(""))).unwrap();
    assert_eq!(sm.get_label(&a2), None);
    assert!(matches!(
        sm.append_label_change("zzz", Some(json!("x"))),
        Err(SessionError::NotFound(_))
    ));
    assert_eq!(sm.get_tree().len(), sm.entries().len());
}

#[test]
fn branched_session_keeps_the_path_and_its_labels() {
    let mut sm = SessionManager::create(options(Profile::Pi, &[]));
    let u1 = sm.append_message(user("u1")).unwrap();
    let a1 = sm.append_message(assistant("a1")).unwrap();
    sm.append_label_change(&u1, Some(json!("L1"))).unwrap();
    sm.branch(&u1).unwrap();
    sm.append_message(user("other")).unwrap();
    let old = sm.session_file().unwrap().to_owned();
    let new = sm.create_branched_session(Some(&a1)).unwrap().unwrap();
    assert_ne!(new, old);
    let written = lines(&sm);
    let types: Vec<_> = written
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["session", "message", "message", "label"]);
    assert_eq!(written[0]["parentSession"], old.to_string_lossy().as_ref());
    assert_eq!(written[3]["targetId"], u1.as_str());
}

#[test]
fn fork_copies_and_migrates_the_source() {
    let v2 = format!(
        "{}\n{}\n",
        H.replace("\"version\":3", "\"version\":2"),
        U0.replace("\"user\"", "\"hookMessage\"")
    );
    let sm = SessionManager::fork_from(
        Path::new("/src.jsonl"),
        "/target",
        options(Profile::Pi, &[("/src.jsonl", &v2)]),
    )
    .unwrap();
    let written = lines(&sm);
    assert_eq!(written[0]["parentSession"], "/src.jsonl");
    assert_eq!(written[0]["cwd"], "/target");
    assert_eq!(written[1]["message"]["role"], "custom");
    let missing =
        SessionManager::fork_from(Path::new("/none.jsonl"), "/t", options(Profile::Pi, &[]));
    assert!(matches!(missing, Err(SessionError::InvalidSource(_))));
}

#[test]
fn omp_externalises_large_images_and_truncates_long_strings() {
    let mut sm = SessionManager::create(options(Profile::Omp, &[]));
    let image = json!({"role":"assistant","content":[{"type":"image","data":"A".repeat(1024),"mimeType":"image/png"},{"type":"text","text":"x".repeat(500_001)}]});
    sm.append_message(image).unwrap();
    let line = &lines(&sm)[1];
    let data = line["message"]["content"][0]["data"].as_str().unwrap();
    assert_eq!(
        data,
        "blob:sha256:ef115a0e0c15cdc41958ca46b5b14b456115f4baec5e3ca68599d2a8f435e3b8"
    );
    assert!(sm.storage.exists(Path::new(
        "/blobs/ef115a0e0c15cdc41958ca46b5b14b456115f4baec5e3ca68599d2a8f435e3b8"
    )));
    assert_eq!(
        line["message"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .encode_utf16()
            .count(),
        500_000
    );
    let resolved = sm.resolved(&sm.entries()[0]);
    assert_eq!(resolved["message"]["content"][0]["data"], "A".repeat(1024));
}

#[test]
fn entry_key_order_follows_the_writers() {
    let mut sm = SessionManager::in_memory(options(Profile::Pi, &[]));
    sm.append(&entries::Custom {
        custom_type: json!("ext"),
        data: None,
    })
    .unwrap();
    assert_eq!(
        sm.entries()[0].object().keys().collect::<Vec<_>>(),
        ["type", "customType", "id", "parentId", "timestamp"]
    );
    sm.append(&entries::PiModelChange {
        provider: json!("openai"),
        model_id: json!("gpt"),
    })
    .unwrap();
    assert_eq!(
        sm.entries()[1].object().keys().collect::<Vec<_>>(),
        ["type", "id", "parentId", "timestamp", "provider", "modelId"]
    );
}

const OH: &str =
    r#"{"type":"session_header","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/hdr"}"#;

fn operator_file(lines: &[Value]) -> String {
    let mut text = format!("{OH}\n");
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text
}

#[test]
fn operator_branch_appends_a_leaf_entry_that_survives_a_reopen() {
    let mut sm = SessionManager::create(options(Profile::Operator, &[]));
    let u = sm.append_message(user("hi")).unwrap();
    sm.append_message(assistant("ok")).unwrap();
    sm.branch(&u).unwrap();
    assert_eq!(sm.tree.leaf(), Some(u.as_str()));
    let written = lines(&sm);
    assert_eq!(written[0]["type"], "session_header");
    assert!(written[0].get("version").is_none());
    assert_eq!(written[3]["type"], "leaf");
    assert_eq!(written[3]["target_id"], u.as_str());
    assert_eq!(written[2]["parent_id"], written[1]["id"]);
    let path = sm.session_file().unwrap().to_owned();
    let text = file(&sm, path.to_str().unwrap()).unwrap();
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        name.ends_with(&format!("000_{}.jsonl", sm.header.id)),
        "{name}"
    );
    let reopened =
        SessionManager::open_bytes(&path, text.into_bytes(), options(Profile::Operator, &[]))
            .unwrap();
    assert_eq!(
        reopened.tree.leaf(),
        Some(u.as_str()),
        "the leaf entry is replayed"
    );
    assert!(
        reopened.report.migrated.is_empty(),
        "003 files are never migrated"
    );
}

#[test]
fn operator_leaf_entries_may_point_at_missing_ids() {
    let text = operator_file(&[
        json!({"type":"message","id":"a1","parent_id":null,"timestamp":"2025-01-01T00:00:01.000Z","message":user("x")}),
        json!({"type":"leaf","id":"l1","parent_id":"a1","timestamp":"2025-01-01T00:00:02.000Z","target_id":"zz"}),
    ]);
    let sm = SessionManager::open_bytes(
        Path::new("/s/a.jsonl"),
        text.into_bytes(),
        options(Profile::Operator, &[]),
    )
    .unwrap();
    assert_eq!(sm.tree.leaf(), Some("zz"));
    assert!(sm.tree.branch_path(None).is_empty());
}

#[test]
fn an_in_memory_session_never_writes_a_file() {
    // 000 and 002 "SessionManager.inMemory"; 003 "in_memory(cwd)": every profile keeps the
    // session in memory only, whatever is appended (an operator branch appends a leaf entry).
    for profile in Profile::ALL {
        let mut opts = options(profile, &[]);
        // Any write would fail, and latch the error every later append returns.
        let mut storage = MemoryStorage::default();
        storage.fail_writes = Some("an in-memory session wrote".into());
        opts.storage = Box::new(storage);
        let mut sm = SessionManager::in_memory(opts);
        let u1 = sm.append_message(user("u1")).unwrap();
        sm.append_message(assistant("a1")).unwrap();
        sm.branch(&u1).unwrap();
        sm.append_message(assistant("a2")).unwrap();
        sm.flush().unwrap();
        assert_eq!(sm.session_file(), None, "{profile}");
        assert_eq!(sm.cwd(), "/proj", "{profile}");
        assert!(sm.entries().len() >= 3, "{profile}");
    }
}

#[test]
fn new_session_refuses_an_id_that_is_not_one_file_name() {
    for id in [
        "/../../x", "a/b", "a\\b", "a\0b", "/", "", "..", ".hidden", "a b", "é",
    ] {
        let mut sm = SessionManager::create(options(Profile::Pi, &[]));
        let before = sm.session_file().map(Path::to_path_buf);
        let refused = sm.new_session(NewSession {
            id: Some(id.to_owned()),
            parent_session: None,
        });
        assert_eq!(
            refused,
            Err(SessionError::InvalidName(id.to_owned())),
            "{id:?}"
        );
        assert_eq!(
            sm.session_file().map(Path::to_path_buf),
            before,
            "{id:?}: nothing changes"
        );
    }
    let mut sm = SessionManager::create(options(Profile::Pi, &[]));
    let file = sm
        .new_session(NewSession {
            id: Some("custom-id_1.2".to_owned()),
            parent_session: None,
        })
        .expect("a plain word")
        .expect("a file");
    assert_eq!(file.parent(), Some(Path::new("/s")));
}

#[test]
fn a_skipped_line_past_the_listed_diagnostics_is_still_kept_before_a_migration() {
    let v1 = r#"{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/hdr"}"#;
    let blanks = "\n".repeat(crate::parse::MAX_LISTED_DIAGNOSTICS + 1);
    let text = format!("{v1}\n{blanks}not json\n{U0}\n");
    let sm = SessionManager::open(
        Path::new("/s/f.jsonl"),
        options(Profile::Pi, &[("/s/f.jsonl", &text)]),
    )
    .unwrap();
    assert_eq!(
        sm.report().unlisted.total(),
        2,
        "a blank line and the bad one"
    );
    let kept = sm.report().preserved.clone().expect("the original is kept");
    assert_eq!(
        file(&sm, kept.to_str().unwrap()).as_deref(),
        Some(text.as_str())
    );
}
