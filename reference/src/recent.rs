//! omp's `getRecentSessions`: the newest sessions of a folder for the welcome screen,
//! each read from a 4 KB prefix and named by title → first user prompt → header id →
//! file name (seed 000 `readTextPrefix(…, 4096)`; seed 001 "Recent-session discovery"; clause stores.7).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::ids::iso_timestamp;
use crate::listing::{mtime_ms, objects, read_prefix, session_files, Message};
use crate::parse::is_js_whitespace;
use crate::raw::{as_string, is_truthy, RawObject};
use crate::storage::Storage;

/// How many bytes of each file [`recent`] reads (seed 000: `readTextPrefix(…, 4096)`).
pub const PREFIX_BYTES: usize = 4096;

/// The longest display name of [`recent`], in UTF-16 units; longer names end in `…`.
pub const NAME_LIMIT: usize = 40;

/// One session of [`recent`]: what a 4 KB prefix tells (a path, a time and a name for the
/// welcome screen; `getRecentSessions` serialises only those).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecentSession {
    /// The session file.
    pub path: PathBuf,
    /// The file's modification time, ISO.
    pub mtime: String,
    /// The display name, at most [`NAME_LIMIT`] UTF-16 units.
    pub name: String,
    /// The name before truncation.
    #[serde(rename = "fullName")]
    pub full_name: String,
    /// How long ago `mtime` was, at the clock [`recent`] was given ([`time_ago`]); `None`
    /// without a clock.
    #[serde(rename = "timeAgo", skip_serializing_if = "Option::is_none")]
    pub time_ago: Option<String>,
    /// `mtime` in milliseconds, for sorting.
    #[serde(skip)]
    pub mtime_ms: i64,
    /// The header id.
    #[serde(skip)]
    pub id: String,
    /// The header cwd, when it is a string.
    #[serde(skip)]
    pub cwd: Option<String>,
    /// `message` entries among the prefix's complete lines.
    #[serde(skip)]
    pub messages: usize,
    /// Whether the prefix held the whole file (so `messages` is the file's count).
    #[serde(skip)]
    pub complete: bool,
}

/// omp `getRecentSessions(dir, limit)`: the `limit` newest sessions by file time, each
/// from a 4 KB prefix, named by title → first user prompt → header id → file name.
/// With `now_ms` (the clock, milliseconds since the epoch) each also gets its
/// [`RecentSession::time_ago`].
/// Clauses: stores.7.
pub fn recent(
    storage: &dyn Storage,
    dir: &Path,
    limit: usize,
    now_ms: Option<i64>,
) -> Vec<RecentSession> {
    let mut sessions = summaries(storage, &session_files(storage, dir));
    sessions.truncate(limit);
    if let Some(now) = now_ms {
        for session in &mut sessions {
            session.time_ago = Some(time_ago(session.mtime_ms, now));
        }
    }
    sessions
}

/// omp's `formatTimeAgo` (13.19.0 `session-manager.ts`): whole minutes, hours and days
/// between `then_ms` and `now_ms`, rounded down: under a minute (or in the future)
/// `just now`, then `Nm ago`, `Nh ago`, `Nd ago`; from 7 days on the date as
/// `toLocaleDateString()` writes it in the `en-US` locale and UTC (`1/2/2026`).
/// Clauses: stores.9.
pub fn time_ago(then_ms: i64, now_ms: i64) -> String {
    let diff = now_ms.saturating_sub(then_ms);
    let (minutes, hours, days) = (
        diff.div_euclid(60_000),
        diff.div_euclid(3_600_000),
        diff.div_euclid(86_400_000),
    );
    if minutes < 1 {
        "just now".to_owned()
    } else if minutes < 60 {
        format!("{minutes}m ago")
    } else if hours < 24 {
        format!("{hours}h ago")
    } else if days < 7 {
        format!("{days}d ago")
    } else {
        us_date(then_ms)
    }
}

/// `M/D/YYYY` of a time in UTC (en-US `toLocaleDateString()`).
fn us_date(ms: i64) -> String {
    let iso = iso_timestamp(ms);
    let part = |range: std::ops::Range<usize>| {
        iso.get(range)
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or_default()
    };
    format!("{}/{}/{}", part(5..7), part(8..10), part(0..4))
}

/// The [`RecentSession`] of every file with a valid header, newest first (ties by path):
/// a 4 KB prefix each, so a store of thousands of sessions lists quickly.
pub fn summaries(storage: &dyn Storage, files: &[PathBuf]) -> Vec<RecentSession> {
    let mut sessions: Vec<RecentSession> =
        files.iter().filter_map(|p| summary(storage, p)).collect();
    sessions.sort_by(|a, b| {
        b.mtime_ms
            .cmp(&a.mtime_ms)
            .then_with(|| a.path.cmp(&b.path))
    });
    sessions
}

/// Clauses: stores.8.
fn summary(storage: &dyn Storage, path: &Path) -> Option<RecentSession> {
    let text = read_prefix(storage, path, PREFIX_BYTES)?;
    let complete = text.len() < PREFIX_BYTES;
    let mut lines = objects(&text);
    let header = lines.next()?;
    if header.str("type").as_deref() != Some("session") {
        return None;
    }
    let id = header.get("id").and_then(as_string)?;
    let title = header.get("title");
    let (mut messages, mut first_prompt) = (0, None);
    for entry in lines {
        if entry.str("type").as_deref() == Some("message") {
            messages += 1;
            if first_prompt.is_none() && !is_truthy(title) {
                first_prompt = first_user_prompt(&entry);
            }
        }
    }
    let full_name = title
        .and_then(as_string)
        .as_deref()
        .and_then(sanitize_name)
        .or_else(|| first_prompt.as_deref().and_then(sanitize_name))
        .or_else(|| sanitize_name(&id))
        .unwrap_or_else(|| file_stem(path));
    let mtime_ms = mtime_ms(storage, path)?;
    Some(RecentSession {
        path: path.to_path_buf(),
        mtime: iso_timestamp(mtime_ms),
        name: truncate_name(&full_name),
        full_name,
        time_ago: None,
        mtime_ms,
        cwd: header.str("cwd"),
        id,
        messages,
        complete,
    })
}

/// The text of a user `message` entry for [`recent`]: a string content, or the first block
/// with a string `text`.
fn first_user_prompt(entry: &RawObject<'_>) -> Option<String> {
    if entry.str("type").as_deref() != Some("message") {
        return None;
    }
    let message = Message::of(entry)?;
    if message.role.as_deref() != Some("user") {
        return None;
    }
    match message.content? {
        Value::String(s) => Some(s),
        Value::Array(blocks) => blocks
            .iter()
            .find_map(|b| b.get("text").and_then(Value::as_str).map(str::to_owned)),
        _ => None,
    }
}

/// The file name without its first `.jsonl` (the last fallback of the name chain).
pub(crate) fn file_stem(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.replacen(".jsonl", "", 1)
}

/// A name made safe for one line: the first line only, control characters (`\x00–\x1F`,
/// `\x7F`) removed, trimmed; `None` when nothing is left.
/// Clauses: stores.8.
pub fn sanitize_name(value: &str) -> Option<String> {
    let first = value.split('\n').next().unwrap_or_default();
    let first = first.strip_suffix('\r').unwrap_or(first);
    let stripped: String = first
        .chars()
        .filter(|c| !matches!(*c, '\0'..='\x1f' | '\x7f'))
        .collect();
    let trimmed = stripped.trim_matches(is_js_whitespace);
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// Cuts a name longer than [`NAME_LIMIT`] UTF-16 units to 39 units and `…`, never
/// inside a character.
/// Clauses: stores.8.
pub fn truncate_name(name: &str) -> String {
    if crate::persisted_form::utf16_len(name) <= NAME_LIMIT {
        return name.to_owned();
    }
    let end = crate::persisted_form::utf16_prefix_end(name, NAME_LIMIT - 1);
    format!("{}…", &name[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::FileStorage;
    use std::fs;
    use std::time::{Duration, SystemTime};

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

    fn write(dir: &Path, name: &str, text: &str, mtime_s: u64) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, text).expect("write");
        let file = fs::File::options().write(true).open(&path).expect("open");
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime_s))
            .expect("set mtime");
        path
    }

    fn user(id: &str, content: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"2026-01-02T00:00:00.000Z","message":{{"role":"user","content":{content}}}}}"#
        )
    }

    #[test]
    fn names_are_sanitised_and_cut_at_forty_units() {
        let table = [
            ("plain", Some("plain")),
            ("  padded\t", Some("padded")),
            ("first\nsecond", Some("first")),
            ("first\r\nsecond", Some("first")),
            ("\n\nafter blanks", None),
            ("a\u{7}b\u{7f}c", Some("abc")),
            ("   ", None),
            ("", None),
        ];
        for (input, want) in table {
            assert_eq!(sanitize_name(input).as_deref(), want, "{input:?}");
        }
        let n39 = "x".repeat(39);
        let n40 = "x".repeat(40);
        let n41 = "x".repeat(41);
        assert_eq!(truncate_name(&n39), n39);
        assert_eq!(truncate_name(&n40), n40);
        assert_eq!(truncate_name(&n41), format!("{}…", "x".repeat(39)));
        let emoji = format!("{}😀x", "x".repeat(37));
        assert_eq!(truncate_name(&emoji), emoji, "40 units exactly");
        let cut = format!("{}😀xy", "x".repeat(38));
        assert_eq!(truncate_name(&cut), format!("{}…", "x".repeat(38)));
    }

    #[test]
    fn recent_names_fall_back_from_title_to_prompt_to_id_to_file_name() {
        let dir = tempfile::tempdir().expect("dir");
        let titled = HEADER.replace(r#""cwd""#, r#""title":"My\ntitle","cwd""#);
        let spaces = HEADER.replace(r#""cwd""#, r#""title":"   ","cwd""#);
        let blank_id = HEADER.replace(r#""id":"s1""#, r#""id":" ""#);
        write(dir.path(), "t.jsonl", &format!("{titled}\n"), 5);
        write(
            dir.path(),
            "p.jsonl",
            &format!("{HEADER}\n{}\n", user("u", r#""prompt here""#)),
            4,
        );
        write(
            dir.path(),
            "s.jsonl",
            &format!("{spaces}\n{}\n", user("u", r#""unused""#)),
            3,
        );
        write(dir.path(), "f.jsonl", &format!("{blank_id}\n"), 2);
        write(dir.path(), "x.jsonl", "{\"type\":\"session\"}\n", 1);
        let got: Vec<String> = recent(&FileStorage, dir.path(), 10, None)
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(got, ["My", "prompt here", "s1", "f"]);
        assert_eq!(recent(&FileStorage, dir.path(), 2, None).len(), 2);
        let ago: Vec<Option<String>> = recent(&FileStorage, dir.path(), 2, Some(5_000 + 120_000))
            .into_iter()
            .map(|r| r.time_ago)
            .collect();
        assert_eq!(ago, [Some("2m ago".to_owned()), Some("2m ago".to_owned())]);
    }

    #[test]
    fn time_ago_rounds_down_to_minutes_hours_days_then_a_date() {
        let now = 1_767_225_600_000; // 2026-01-01T00:00:00.000Z
        let table = [
            (now, "just now"),
            (now + 3_600_000, "just now"),
            (now - 59_999, "just now"),
            (now - 60_000, "1m ago"),
            (now - 3_599_999, "59m ago"),
            (now - 3_600_000, "1h ago"),
            (now - 86_399_999, "23h ago"),
            (now - 86_400_000, "1d ago"),
            (now - 7 * 86_400_000 + 1, "6d ago"),
            (now - 7 * 86_400_000, "12/25/2025"),
            (now - 400 * 86_400_000, "11/27/2024"),
        ];
        for (then, want) in table {
            assert_eq!(time_ago(then, now), want, "{then}");
        }
    }
}
