//! Finding sessions on disk: the whole-file listing of seed 001 and the newest-file
//! lookup behind `--continue`.
//!
//! - [`list`] / [`list_all`] (`SessionManager.list` / `listAll`): whole files, a [`SessionInfo`] each.
//! - [`find_most_recent`]: the newest file with a valid header, by modification time.
//! - [`crate::recent`] holds the other pipeline, omp's `getRecentSessions` over 4 KB prefixes.
//!
//! Seed 001 "Recent-session discovery", "Metadata fallback behavior"; clauses stores.3–stores.9.
//! Profiles differ where their implementations do: pi keeps sessions without messages and
//! orders by the last message's time, omp (seed 001) drops them and orders by file time.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::ids::{iso_timestamp, parse_iso_ms};
use crate::locations;
use crate::model::Profile;
use crate::parse::is_js_whitespace;
use crate::raw::{as_string, is_truthy, RawObject};
use crate::storage::Storage;

/// The per-profile rules of listing (001; clauses stores.3–stores.9). 003 is silent on
/// everything but the file time order: operator lists as pi, without pi's title order.
// Each flag is one rule of one implementation, named after it.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// A listed session needs a non-empty header id (omp).
    pub needs_header_id: bool,
    /// A `message` entry without a truthy `message` is counted (pi) or passed over (omp).
    pub counts_empty_messages: bool,
    /// Sessions without messages are listed (pi) or dropped (omp, seed 001).
    pub lists_sessions_without_messages: bool,
    /// `title` is the header's `title`, else the latest compaction's `shortSummary`, and no
    /// `session_info` name is listed (omp); else there is no title.
    pub titles_from_header: bool,
    /// `modified` is the last user or assistant message's time when above 0, else the
    /// header's time, else the file's (clause stores.5); else the file's (omp; 003 "sorted by
    /// last modification time").
    pub modified_by_last_message: bool,
    /// How `--continue` reads a file's header: the first line of this many bytes, strictly
    /// (pi), or the first readable line (omp).
    pub header_window: usize,
    /// Whether the header must be the very first line of the window.
    pub header_on_first_line: bool,
}

impl Rules {
    /// The rules of `profile`.
    pub fn for_profile(profile: Profile) -> Rules {
        match profile {
            Profile::Pi | Profile::Operator => Rules {
                needs_header_id: false,
                counts_empty_messages: true,
                lists_sessions_without_messages: true,
                titles_from_header: false,
                modified_by_last_message: profile == Profile::Pi,
                header_window: 512,
                header_on_first_line: true,
            },
            Profile::Omp => Rules {
                needs_header_id: true,
                counts_empty_messages: false,
                lists_sessions_without_messages: false,
                titles_from_header: true,
                modified_by_last_message: false,
                header_window: 4096,
                header_on_first_line: false,
            },
        }
    }
}

/// One session of [`list`]: what the resume picker shows and `--resume` matches.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session file.
    pub path: PathBuf,
    /// `header.id` (pi lists a header without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `header.cwd` when it is a string, else `""`.
    pub cwd: String,
    /// omp: `header.title`, else the latest compaction's `shortSummary`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Value>,
    /// pi: the latest `session_info` name, trimmed; an empty one clears it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `header.parentSession`, verbatim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_path: Option<Value>,
    /// `header.timestamp` as an ISO time; `None` (JSON `null`) when it is not a date.
    pub created: Option<String>,
    /// pi: the last user or assistant message's time, else the header time, else the file's
    /// modification time; omp: the file's modification time.
    pub modified: String,
    /// The number of `message` entries on every branch, whatever their role.
    pub message_count: usize,
    /// The first user message's text, or `"(no messages)"`.
    pub first_message: String,
    /// Every non-empty user and assistant text, joined by a space.
    pub all_messages_text: String,
    /// `modified` in milliseconds, for sorting.
    #[serde(skip)]
    pub modified_ms: i64,
}

/// The `*.jsonl` regular files directly in `dir`, sorted by name; empty when `dir` is missing.
pub fn session_files(storage: &dyn Storage, dir: &Path) -> Vec<PathBuf> {
    storage.list_files(dir, "*.jsonl").unwrap_or_default()
}

/// A file's modification time in milliseconds since the epoch.
pub fn mtime_ms(storage: &dyn Storage, path: &Path) -> Option<i64> {
    Some(storage.stat(path).ok()??.mtime_ms)
}

/// Reads at most `limit` bytes from the start of `path`, decoded as UTF-8 with a cut
/// character replaced (as `TextDecoder` does).
pub fn read_prefix(storage: &dyn Storage, path: &Path, limit: usize) -> Option<String> {
    Some(utf8_lossy(storage.read_prefix(path, limit).ok()??))
}

/// Bytes as text without a copy when they are valid UTF-8 (the usual case); else with
/// each invalid sequence replaced by U+FFFD.
fn utf8_lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The JSON objects of a file's lines, leniently: blank and unreadable lines skipped,
/// a leading BOM removed.
pub(crate) fn objects(text: &str) -> impl Iterator<Item = RawObject<'_>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|line| line.trim_matches(is_js_whitespace))
        .filter(|line| !line.is_empty())
        .filter_map(RawObject::parse)
}

/// A `message` entry's payload fields the listing reads.
pub(crate) struct Message {
    pub(crate) role: Option<String>,
    pub(crate) content: Option<Value>,
    timestamp: Option<f64>,
}

impl Message {
    pub(crate) fn of(entry: &RawObject<'_>) -> Option<Message> {
        let message = RawObject::parse(entry.get("message")?.get())?;
        Some(Message {
            role: message.str("role"),
            content: message
                .get("content")
                .and_then(|c| crate::raw::parse_value(c.get()).ok()),
            timestamp: message
                .get("timestamp")
                .and_then(|t| serde_json::from_str::<f64>(t.get()).ok()),
        })
    }

    /// User or assistant text: a string as is; text blocks joined by a space (images skipped).
    fn text(&self) -> Option<String> {
        match self.content.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Array(blocks) => Some(
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        }
    }

    fn is_conversation(&self) -> bool {
        matches!(self.role.as_deref(), Some("user" | "assistant"))
    }
}

/// Builds the [`SessionInfo`] of one file; `None` when it cannot be read, its first
/// readable line is not a `type:"session"` object, or (omp) the header has no id.
/// Clauses: stores.4, stores.5.
pub fn session_info(storage: &dyn Storage, path: &Path, profile: Profile) -> Option<SessionInfo> {
    let text = utf8_lossy(storage.read(path).ok()??);
    let mut lines = objects(&text);
    let header = lines.next()?;
    let rules = Rules::for_profile(profile);
    let keys = profile.keys();
    if header.str("type").as_deref() != Some(keys.name("session")) {
        return None;
    }
    let id = header.str("id");
    if rules.needs_header_id && id.as_deref().is_none_or(str::is_empty) {
        return None;
    }
    let file_ms = mtime_ms(storage, path)?;
    let mut info = SessionInfo {
        path: path.to_path_buf(),
        id,
        cwd: header.str("cwd").unwrap_or_default(),
        title: header
            .get("title")
            .and_then(|t| serde_json::from_str(t.get()).ok())
            .filter(|t: &Value| !t.is_null()),
        name: None,
        parent_session_path: header
            .get(keys.name("parentSession"))
            .and_then(|p| serde_json::from_str(p.get()).ok()),
        created: header
            .str("timestamp")
            .and_then(|t| parse_iso_ms(&t))
            .map(iso_timestamp),
        modified: String::new(),
        message_count: 0,
        first_message: String::new(),
        all_messages_text: String::new(),
        modified_ms: file_ms,
    };
    let mut texts = Vec::new();
    let mut last_activity: Option<f64> = None;
    let mut short_summary = None;
    for entry in lines {
        match entry.str("type").as_deref() {
            Some("session_info") => {
                info.name = entry
                    .str("name")
                    .map(|n| n.trim_matches(is_js_whitespace).to_owned())
                    .filter(|n| !n.is_empty());
            }
            Some("compaction") => {
                if let Some(s) = entry
                    .get("shortSummary")
                    .filter(|s| s.get().starts_with('"'))
                {
                    short_summary = serde_json::from_str(s.get()).ok();
                }
            }
            Some("message") => {
                let message = Message::of(&entry);
                if !rules.counts_empty_messages && !is_truthy(entry.get("message")) {
                    continue;
                }
                info.message_count += 1;
                let Some(message) = message.filter(Message::is_conversation) else {
                    continue;
                };
                if message.content.is_some() {
                    let at = message.timestamp.or_else(|| {
                        entry
                            .str("timestamp")
                            .and_then(|t| parse_iso_ms(&t))
                            .map(js_number)
                    });
                    if let Some(at) = at {
                        last_activity = Some(last_activity.map_or(at, |l| l.max(at)));
                    }
                }
                if let Some(text) = message.text().filter(|t| !t.is_empty()) {
                    if info.first_message.is_empty() && message.role.as_deref() == Some("user") {
                        info.first_message.clone_from(&text);
                    }
                    texts.push(text);
                }
            }
            _ => {}
        }
    }
    if info.first_message.is_empty() {
        info.first_message = "(no messages)".into();
    }
    info.all_messages_text = texts.join(" ");
    if rules.titles_from_header {
        info.name = None;
        info.title = info.title.take().or(short_summary);
    } else {
        info.title = None;
    }
    if rules.modified_by_last_message {
        info.modified_ms = modified(last_activity, info.created.as_deref(), info.modified_ms);
    }
    info.modified = iso_timestamp(info.modified_ms);
    Some(info)
}

/// pi's `modified`: the latest message time when it is above 0, else the header time, else the file time.
#[allow(clippy::cast_possible_truncation)] // JavaScript's Date keeps whole milliseconds
fn modified(last_activity: Option<f64>, created: Option<&str>, file_ms: i64) -> i64 {
    match last_activity {
        Some(at) if at > 0.0 && at.is_finite() => at as i64,
        _ => created.and_then(parse_iso_ms).unwrap_or(file_ms),
    }
}

/// Milliseconds as a JavaScript number (exact until the year 285,000).
#[allow(clippy::cast_precision_loss)]
fn js_number(ms: i64) -> f64 {
    ms as f64
}

/// `SessionManager.list`: every session in `dir`, newest first (ties by path).
/// omp drops sessions without messages (seed 001); pi keeps them (clause stores.5).
/// Clauses: stores.3.
pub fn list(storage: &dyn Storage, dir: &Path, profile: Profile) -> Vec<SessionInfo> {
    collect(storage, &session_files(storage, dir), profile)
}

/// `SessionManager.listAll`: every session in the immediate subdirectories of the
/// sessions root, newest first. Files directly in the root and deeper ones are ignored.
/// In a flat store (003) every session is directly in the root.
/// Clauses: stores.6.
pub fn list_all(storage: &dyn Storage, sessions_root: &Path, profile: Profile) -> Vec<SessionInfo> {
    if locations::Rules::for_profile(profile).flat_sessions {
        return list(storage, sessions_root, profile);
    }
    collect(storage, &project_files(storage, sessions_root), profile)
}

/// The sessions of the project at `cwd` in `dir`: all of them, or in a flat store (003)
/// those whose header's cwd is `cwd` ("how per-project filtering is done at list/load time").
/// Clauses: stores.3.
pub fn list_project(
    storage: &dyn Storage,
    dir: &Path,
    cwd: &str,
    profile: Profile,
) -> Vec<SessionInfo> {
    let mut infos = list(storage, dir, profile);
    if locations::Rules::for_profile(profile).flat_sessions {
        infos.retain(|info| info.cwd == cwd);
    }
    infos
}

fn collect(storage: &dyn Storage, files: &[PathBuf], profile: Profile) -> Vec<SessionInfo> {
    let mut infos: Vec<SessionInfo> = files
        .iter()
        .filter_map(|f| session_info(storage, f, profile))
        .filter(|info| {
            Rules::for_profile(profile).lists_sessions_without_messages || info.message_count > 0
        })
        .collect();
    infos.sort_by(|a, b| {
        b.modified_ms
            .cmp(&a.modified_ms)
            .then_with(|| a.path.cmp(&b.path))
    });
    infos
}

/// The header of a session file as the newest-file lookup accepts it: pi reads the first
/// line of a 512-byte window strictly; omp the first readable line of a 4 KB prefix.
fn has_valid_header(storage: &dyn Storage, path: &Path, profile: Profile) -> bool {
    let rules = Rules::for_profile(profile);
    let Some(text) = read_prefix(storage, path, rules.header_window) else {
        return false;
    };
    let header = if rules.header_on_first_line {
        let first = text.split('\n').next().unwrap_or_default();
        serde_json::from_str::<&serde_json::value::RawValue>(first)
            .ok()
            .and_then(|raw| RawObject::parse(raw.get()))
    } else {
        objects(&text).next()
    };
    header.is_some_and(|h| {
        h.str("type").as_deref() == Some(profile.keys().name("session"))
            && h.get("id").and_then(as_string).is_some()
    })
}

/// `findMostRecentSession`: the newest `*.jsonl` file in `dir` (by modification time)
/// whose header is valid, ties by path; `None` when there is none.
/// Clauses: stores.10.
pub fn find_most_recent(storage: &dyn Storage, dir: &Path, profile: Profile) -> Option<PathBuf> {
    session_files(storage, dir)
        .into_iter()
        .filter(|p| has_valid_header(storage, p, profile))
        .filter_map(|p| Some((mtime_ms(storage, &p)?, p)))
        .min_by(|(ta, pa), (tb, pb)| tb.cmp(ta).then_with(|| pa.cmp(pb)))
        .map(|(_, p)| p)
}

/// The session files of every project folder under `sessions_root` (as [`list_all`]
/// reads them); a folder reached through a link is not entered.
/// Clauses: stores.16.
pub fn project_files(storage: &dyn Storage, sessions_root: &Path) -> Vec<PathBuf> {
    storage
        .list_files(sessions_root, "*/*.jsonl")
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recent::file_stem;
    use crate::storage::MemoryStorage;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

    /// The listings read through a [`Storage`]: these tests list files held in memory.
    fn write(storage: &MemoryStorage, dir: &Path, name: &str, text: &str, mtime_s: i64) -> PathBuf {
        let path = dir.join(name);
        storage.insert(&path, text);
        storage.set_mtime(&path, mtime_s * 1000);
        path
    }

    fn user(id: &str, content: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"2026-01-02T00:00:00.000Z","message":{{"role":"user","content":{content}}}}}"#
        )
    }

    #[test]
    fn session_info_reads_every_field_of_each_profile() {
        let (storage, dir) = (MemoryStorage::default(), Path::new("/s"));
        let text = [
            HEADER.replace(r#""cwd":"/p""#, r#""cwd":"/p","title":"T","parentSession":"/x.jsonl""#),
            user("u1", r#"[{"type":"text","text":"hello"},{"type":"image","data":"AA"},{"type":"text","text":"world"}]"#),
            r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-03T00:00:00.000Z","message":{"role":"assistant","content":"answer","timestamp":1767225600000}}"#.to_owned(),
            r#"{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-01-04T00:00:00.000Z","message":{"role":"toolResult","content":"r","timestamp":9000000000000}}"#.to_owned(),
            r#"{"type":"session_info","id":"i1","parentId":"t1","timestamp":"2026-01-04T00:00:00.000Z","name":"  Named  "}"#.to_owned(),
            r#"{"type":"compaction","id":"c1","parentId":"i1","timestamp":"2026-01-04T00:00:00.000Z","summary":"s","shortSummary":"short","firstKeptEntryId":"u1","tokensBefore":1}"#.to_owned(),
        ]
        .join("\n");
        let path = write(&storage, dir, "a.jsonl", &text, 1_000);
        let pi = session_info(&storage, &path, Profile::Pi).expect("listed");
        assert_eq!(pi.message_count, 3);
        assert_eq!(pi.first_message, "hello world");
        assert_eq!(pi.all_messages_text, "hello world answer");
        assert_eq!(pi.name.as_deref(), Some("Named"));
        assert_eq!(pi.title, None);
        assert_eq!(
            pi.modified, "2026-01-02T00:00:00.000Z",
            "the latest of the user's entry time and the assistant's numeric time; toolResult ignored"
        );
        assert_eq!(pi.created.as_deref(), Some("2026-01-01T00:00:00.000Z"));
        assert_eq!(pi.parent_session_path, Some(Value::from("/x.jsonl")));
        let omp = session_info(&storage, &path, Profile::Omp).expect("listed");
        assert_eq!(omp.title, Some(Value::from("T")));
        assert_eq!(omp.name, None);
        assert_eq!(omp.modified, iso_timestamp(1_000_000), "the file time");
    }

    #[test]
    fn list_orders_newest_first_and_omp_drops_sessions_without_messages() {
        let (storage, dir) = (MemoryStorage::default(), Path::new("/s"));
        write(
            &storage,
            dir,
            "old.jsonl",
            &format!("{HEADER}\n{}\n", user("u1", r#""old""#)),
            100,
        );
        write(&storage, dir, "empty.jsonl", &format!("{HEADER}\n"), 300);
        write(
            &storage,
            dir,
            "new.jsonl",
            &format!("{HEADER}\n{}\n", user("u1", r#""new""#)),
            200,
        );
        write(&storage, dir, "garbage.jsonl", "not json\n", 400);
        write(&storage, dir, "notes.txt", &format!("{HEADER}\n"), 500);
        let names = |infos: Vec<SessionInfo>| -> Vec<String> {
            infos.iter().map(|i| file_stem(&i.path)).collect()
        };
        assert_eq!(names(list(&storage, dir, Profile::Omp)), ["new", "old"]);
        // pi orders by the message time (equal here), then by path; the header-only file
        // falls back to the header time, which is older.
        assert_eq!(
            names(list(&storage, dir, Profile::Pi)),
            ["new", "old", "empty"]
        );
        assert!(list(&storage, &dir.join("missing"), Profile::Pi).is_empty());
    }

    #[test]
    fn list_all_reads_only_immediate_project_folders() {
        let (storage, dir) = (MemoryStorage::default(), Path::new("/s"));
        let body = format!("{HEADER}\n{}\n", user("u1", r#""x""#));
        write(&storage, dir, "top.jsonl", &body, 1);
        write(&storage, dir, "--p--/ok.jsonl", &body, 1);
        write(&storage, dir, "--p--/nested/deep.jsonl", &body, 1);
        let all = list_all(&storage, dir, Profile::Pi);
        assert_eq!(all.len(), 1);
        assert!(all[0].path.ends_with("--p--/ok.jsonl"));
    }

    #[test]
    fn most_recent_needs_a_valid_header_in_the_profile_window() {
        let (storage, dir) = (MemoryStorage::default(), Path::new("/s"));
        let long_cwd = HEADER.replace("/p", &format!("/{}", "c".repeat(600)));
        write(&storage, dir, "a.jsonl", &format!("{HEADER}\n"), 100);
        write(&storage, dir, "long.jsonl", &format!("{long_cwd}\n"), 200);
        write(
            &storage,
            dir,
            "bom.jsonl",
            &format!("\u{feff}{HEADER}\n"),
            300,
        );
        write(&storage, dir, "bad.jsonl", "garbage\n", 400);
        let pick = |p| find_most_recent(&storage, dir, p).map(|f| file_stem(&f));
        assert_eq!(pick(Profile::Pi).as_deref(), Some("a"));
        assert_eq!(pick(Profile::Omp).as_deref(), Some("bom"));
        assert_eq!(
            find_most_recent(&storage, &dir.join("none"), Profile::Pi),
            None
        );
    }
}
