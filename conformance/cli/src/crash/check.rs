//! What a killed trial left, read with the reference (`session_reference::parse`) and
//! checked against what the adapter acknowledged (issue #24, item 2):
//! every acknowledged entry present and identical, the file parses, a torn final line
//! only if never acknowledged, no entries fused on one line, no second header, the
//! migration rewrite all or nothing, no temp file left after a later open.
//!
//! Nothing here writes: files are read (regular files only, at most
//! [`session_conformance::guard::MAX_FILE_BYTES`]) and never opened with a `SessionManager`, whose
//! recovery would change what is checked.
//!
//! Here: the check of the files a trial left. What it reports is in `findings`, what
//! the acknowledgements promise in `promises`; their public items are re-exported here.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;
use session_reference::model::Profile;
use session_reference::parse::{self, DiagnosticKind};

use super::findings::finding;
pub use super::findings::{Finding, FindingKind, KIND_NAMES};
use super::plan::Plan;
pub use super::promises::{promises, relative, Expected, Promises, MAIN_FILE};

/// Counts of one check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Acknowledged entries.
    pub acknowledged: usize,
    /// Acknowledged entries checked (durable or flushed).
    pub checked: usize,
    /// Acknowledged but not flushed entries that are missing (allowed; reported).
    pub unflushed_missing: usize,
    /// Torn final lines never acknowledged (allowed; reported).
    pub torn: usize,
}

/// Torn lines a kill left, as (file, text): they may stay in the middle of a file once
/// it was reopened.
pub type Allowed = HashSet<(String, String)>;

/// One session file as read.
struct FileView {
    /// Entries by id: (line, value).
    by_id: HashMap<String, Vec<(usize, Value)>>,
}

/// Checks the trial directory `dir`: the session files, against `promises`. `allowed`
/// holds torn lines a kill left (file, text) that may stay in the middle of a file
/// after it was reopened; the torn final lines seen now are added to it.
pub fn check(
    dir: &Path,
    profile: Profile,
    plan: &Plan,
    promises: &Promises,
    allowed: &mut Allowed,
) -> (Vec<Finding>, Counts) {
    let mut findings = promises.findings.clone();
    let mut counts = Counts {
        acknowledged: promises.entries.len(),
        checked: promises.entries.iter().filter(|e| e.checked).count(),
        ..Counts::default()
    };
    let mut files: Vec<String> = session_files(dir);
    for e in &promises.entries {
        if !files.contains(&e.file) {
            files.push(e.file.clone());
        }
    }
    let mut views: HashMap<String, FileView> = HashMap::new();
    let mut torn_ids: HashSet<String> = HashSet::new();
    for file in &files {
        let Some(bytes) = read(&dir.join(file)) else {
            continue;
        };
        if file == MAIN_FILE {
            if let Some(reason) = migration(&bytes, plan, profile, promises.open_checked) {
                findings.push(finding(file, None, FindingKind::Migration { reason }));
            }
        }
        let expected: Vec<&Expected> = promises
            .entries
            .iter()
            .filter(|e| &e.file == file)
            .collect();
        let view = read_lines(
            file,
            &bytes,
            profile,
            &expected,
            allowed,
            &mut findings,
            &mut counts,
            &mut torn_ids,
        );
        views.insert(file.clone(), view);
    }
    for e in &promises.entries {
        let found = views.get(&e.file).and_then(|v| v.by_id.get(&e.id));
        match found {
            None if torn_ids.contains(&e.id) => {}
            None if e.checked => {
                // Written to another session file: more often than a copy of the path
                // explains, or to a file that copies no path (not the branched one).
                let branched = promises.branched.as_ref().map(|b| b.0.as_str());
                let elsewhere = views.iter().find(|(file, view)| {
                    **file != e.file
                        && view
                            .by_id
                            .get(&e.id)
                            .is_some_and(|lines| lines.len() > 1 || Some(file.as_str()) != branched)
                });
                let kind = match elsewhere {
                    Some((file, _)) => FindingKind::Misplaced {
                        id: e.id.clone(),
                        step: e.step,
                        found_in: file.clone(),
                    },
                    None => FindingKind::Lost {
                        id: e.id.clone(),
                        step: e.step,
                    },
                };
                findings.push(finding(&e.file, None, kind));
            }
            None => counts.unflushed_missing += 1,
            Some(lines) => {
                let (line, value) = &lines[0];
                if e.checked && !same(e, value) {
                    findings.push(finding(
                        &e.file,
                        Some(*line),
                        FindingKind::Altered {
                            id: e.id.clone(),
                            step: e.step,
                        },
                    ));
                }
            }
        }
    }
    if let Some((file, true, leaf_step)) = &promises.branched {
        if let (Some(main), Some(branched)) = (views.get(MAIN_FILE), views.get(file)) {
            let leaf = promises.entries.iter().find(|e| e.step == *leaf_step);
            for id in leaf.map(|l| path_ids(main, &l.id)).unwrap_or_default() {
                if !branched.by_id.contains_key(&id) {
                    findings.push(finding(file, None, FindingKind::BranchedIncomplete { id }));
                }
            }
        }
    }
    (findings, counts)
}

/// Files left beside the session files (the trial directory, `sessions/`, and the
/// branched session's folder) after a later open that are neither session files nor the
/// copies the implementations keep on purpose (`.pre-migration-`, `.corrupt-`).
pub fn stale_temps(dir: &Path, branched: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut folders = vec![String::new(), "sessions".to_owned()];
    // The branched session's folder, where it is not one of those (inside `dir`: the
    // path was checked by `relative`).
    if let Some(parent) = branched.and_then(|b| Path::new(b).parent()) {
        let parent = parent.to_string_lossy().into_owned();
        if !folders.contains(&parent) {
            folders.push(parent);
        }
    }
    for folder in &folders {
        let Ok(list) = std::fs::read_dir(dir.join(folder)) else {
            continue;
        };
        let mut names: Vec<String> = list
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let kept = name.contains(".pre-migration-") || name.contains(".corrupt-");
            let session = is_jsonl(&name) && !name.starts_with('.');
            if !kept && !session {
                let file = Path::new(folder).join(&name).to_string_lossy().into_owned();
                out.push(finding(&file, None, FindingKind::StaleTemp));
            }
        }
    }
    out
}

/// `MAIN_FILE` when it exists, and every `*.jsonl` directly in `sessions/`, sorted
/// (regular files only: a link is not followed).
pub fn session_files(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    if std::fs::symlink_metadata(dir.join(MAIN_FILE)).is_ok_and(|m| m.is_file()) {
        files.push(MAIN_FILE.to_owned());
    }
    let mut more: Vec<String> = std::fs::read_dir(dir.join("sessions"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_jsonl(n) && !n.starts_with('.'))
        .map(|n| format!("sessions/{n}"))
        .collect();
    more.sort();
    files.extend(more);
    files
}

/// Whether a file name ends in `.jsonl` (as the implementations name session files).
fn is_jsonl(name: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
}

/// A regular file's bytes (up to the guard's limit), or `None`; a symbolic link is not
/// followed (it could lead out of the trial directory).
pub fn read(path: &Path) -> Option<Vec<u8>> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    match session_conformance::guard::read_regular(path, session_conformance::guard::MAX_FILE_BYTES)
    {
        Ok(session_conformance::guard::Contents::Bytes(bytes)) => Some(bytes),
        _ => None,
    }
}

/// Reads a file's lines with the reference; records findings and torn lines.
#[allow(clippy::too_many_arguments)]
fn read_lines(
    file: &str,
    bytes: &[u8],
    profile: Profile,
    expected: &[&Expected],
    allowed: &mut Allowed,
    findings: &mut Vec<Finding>,
    counts: &mut Counts,
    torn_ids: &mut HashSet<String>,
) -> FileView {
    let (skip, bytes) = session_conformance::snapshot::title_slot(bytes);
    let parsed = parse::parse(bytes, profile);
    if let Err(e) = &parsed.header {
        findings.push(finding(
            file,
            Some(e.line + skip).filter(|&l| l > skip),
            FindingKind::NoHeader {
                reason: e.to_string(),
            },
        ));
    }
    let legacy = parsed.header.as_ref().is_ok_and(|h| h.version < 2.0);
    let lines: Vec<String> = parsed.text.split('\n').map(str::to_owned).collect();
    let text_of = |line: usize| lines.get(line.wrapping_sub(1)).cloned().unwrap_or_default();
    for d in &parsed.diagnostics {
        let text = text_of(d.line);
        let kind = match d.kind {
            DiagnosticKind::TornLine => {
                let acked = expected
                    .iter()
                    .find(|e| text.contains(&format!("\"id\":\"{}\"", e.id)));
                if let Some(e) = acked {
                    torn_ids.insert(e.id.clone());
                    // Reported once: left in the middle by a later open, it is not a new bad line.
                    allowed.insert((file.to_owned(), text.clone()));
                    if e.checked {
                        Some(FindingKind::TornAcknowledged {
                            id: e.id.clone(),
                            step: e.step,
                        })
                    } else {
                        counts.unflushed_missing += 1;
                        None
                    }
                } else {
                    counts.torn += 1;
                    allowed.insert((file.to_owned(), text.clone()));
                    None
                }
            }
            DiagnosticKind::NotJson | DiagnosticKind::TrailingData if fused(&text) => {
                Some(FindingKind::Fused)
            }
            DiagnosticKind::NotJson if allowed.contains(&(file.to_owned(), text.clone())) => None,
            DiagnosticKind::ExtraHeader => Some(FindingKind::SecondHeader),
            // A v1 file's entries have no ids: the old file, before its migration.
            DiagnosticKind::MissingId if legacy => None,
            other => Some(FindingKind::BadLine {
                diagnostic: other.name(),
            }),
        };
        if let Some(kind) = kind {
            findings.push(finding(file, Some(d.line + skip), kind));
        }
    }
    let mut by_id: HashMap<String, Vec<(usize, Value)>> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        if session_conformance::guard::check_nesting(line).is_err() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if value["type"] == "session" {
            continue;
        }
        if let Some(id) = value["id"].as_str() {
            let seen = by_id.entry(id.to_owned()).or_default();
            if seen.len() == 1 {
                findings.push(finding(
                    file,
                    Some(i + 1 + skip),
                    FindingKind::Duplicate { id: id.to_owned() },
                ));
            }
            seen.push((i + 1 + skip, value));
        }
    }
    FileView { by_id }
}

/// Whether a line the reference skipped holds two entries: from some `{` after its
/// start, the rest of the line is one JSON object with a `type` (a torn line continued
/// by the next write, or two objects on one line).
pub fn fused(line: &str) -> bool {
    line.match_indices('{').skip(1).any(|(i, _)| {
        let rest = &line[i..];
        rest.starts_with("{\"")
            && session_conformance::guard::check_nesting(rest).is_ok()
            && serde_json::from_str::<Value>(rest)
                .is_ok_and(|v| v.get("type").is_some_and(Value::is_string))
    })
}

/// Whether the on-disk entry `value` is what `e` acknowledged.
fn same(e: &Expected, value: &Value) -> bool {
    match &e.entry {
        Some(entry) => entry == value,
        None => {
            value["type"] == e.entry_type
                && e.fields
                    .iter()
                    .all(|(k, v)| value.get(k).unwrap_or(&Value::Null) == v)
        }
    }
}

/// `None` when the main file is the old v1 file or the complete migrated one; else why not.
fn migration(bytes: &[u8], plan: &Plan, profile: Profile, open_checked: bool) -> Option<String> {
    if bytes == plan.v1.as_slice() {
        return open_checked
            .then(|| "the open was acknowledged but the file is the old one".into());
    }
    let parsed = parse::parse(session_conformance::snapshot::title_slot(bytes).1, profile);
    let version = parsed.header.as_ref().map_or(0.0, |h| h.version);
    if version < 2.0 {
        return Some(format!(
            "the file changed but its header is not migrated (version {version})"
        ));
    }
    for (i, old) in plan.v1_entries.iter().enumerate() {
        let Some(new) = parsed.entries.get(i) else {
            return Some(format!(
                "{i} of the {} old entries were rewritten",
                plan.v1_entries.len()
            ));
        };
        let Ok(new) = serde_json::from_str::<Value>(new.raw.get()) else {
            return Some(format!("entry {} is not JSON", i + 1));
        };
        let complete = old
            .as_object()
            .into_iter()
            .flatten()
            .all(|(k, v)| new.get(k) == Some(v));
        if !complete {
            return Some(format!(
                "old entry {} is not the rewritten entry {}",
                i + 1,
                i + 1
            ));
        }
    }
    None
}

/// The ids of the non-label entries on the path from the root to `leaf` in `view`.
fn path_ids(view: &FileView, leaf: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut at = Some(leaf.to_owned());
    while let Some(id) = at.take() {
        if !seen.insert(id.clone()) {
            break;
        }
        let Some((_, value)) = view.by_id.get(&id).and_then(|v| v.first()) else {
            break;
        };
        if value["type"] != "label" {
            out.push(id);
        }
        at = value["parentId"].as_str().map(str::to_owned);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_line_continued_by_a_whole_entry_is_fused() {
        let torn = r#"{"type":"message","id":"aaaa1111","message":{"content":[{"type":"text","te"#;
        let whole = r#"{"type":"message","id":"bbbb2222","parentId":null}"#;
        assert!(fused(&format!("{torn}{whole}")));
        assert!(fused(&format!("{whole}{whole}")));
        assert!(!fused(torn), "a torn line alone is not fused");
        assert!(!fused(r#"{"a":1} trailing"#));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::NamedTempFile::new().expect("file");
        std::os::unix::fs::symlink(outside.path(), dir.path().join(MAIN_FILE)).expect("link");
        assert_eq!(read(&dir.path().join(MAIN_FILE)), None);
        assert!(session_files(dir.path()).is_empty());
    }
}
