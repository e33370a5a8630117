//! What a killed trial left, read with the reference (`session_reference::parse`) and
//! checked against what the adapter acknowledged (issue #24, item 2):
//! every acknowledged entry present and identical, the file parses, a torn final line
//! only if never acknowledged, no entries fused on one line, no second header, the
//! migration rewrite all or nothing, no temp file left after a later open.
//!
//! Nothing here writes: files are read (regular files only, at most
//! [`session_conformance::guard::MAX_FILE_BYTES`]) and never opened with a `SessionManager`, whose
//! recovery would change what is checked.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde_json::Value;
use session_reference::model::Profile;
use session_reference::parse::{self, DiagnosticKind};

use super::plan::{Plan, StepKind};
use super::process::Ack;

/// The session file the trial's `apply` opens, relative to the trial directory.
pub const MAIN_FILE: &str = "session.jsonl";

/// One thing wrong with what a trial left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file, relative to the trial directory (empty when none is concerned).
    pub file: String,
    /// The 1-based line, when one line is concerned.
    pub line: Option<usize>,
    /// What is wrong.
    pub kind: FindingKind,
}

/// Kinds of [`Finding`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FindingKind {
    /// An acknowledged entry (durable, or followed by an acknowledged flush) is not in its file.
    Lost {
        /// The entry id the step returned.
        id: String,
        /// The step that appended it.
        step: usize,
    },
    /// An acknowledged entry is not in its file but was written to another session file.
    Misplaced {
        /// The entry id.
        id: String,
        /// The step that appended it.
        step: usize,
        /// The file it was written to instead.
        found_in: String,
    },
    /// The file ends in a torn line that holds an acknowledged entry.
    TornAcknowledged {
        /// The entry id.
        id: String,
        /// The step that appended it.
        step: usize,
    },
    /// An acknowledged entry is present but differs from what was acknowledged.
    Altered {
        /// The entry id.
        id: String,
        /// The step that appended it.
        step: usize,
    },
    /// Two entries share one line (a torn line continued by the next write, or two objects).
    Fused,
    /// A second `type:"session"` line.
    SecondHeader,
    /// A line the reference skips, other than a torn final line never acknowledged.
    BadLine {
        /// The reference's diagnostic (`not_json`, `blank_line`, …).
        diagnostic: &'static str,
    },
    /// The file has no session header.
    NoHeader {
        /// The reference's reason.
        reason: String,
    },
    /// The migration rewrite left neither the old file nor the complete new one.
    Migration {
        /// What was found instead.
        reason: String,
    },
    /// The branched session lacks an entry of the path it copies.
    BranchedIncomplete {
        /// The missing entry.
        id: String,
    },
    /// One entry id on two lines of one file.
    Duplicate {
        /// The id.
        id: String,
    },
    /// A file that is neither a session file nor a kept copy is left after a later open.
    StaleTemp,
    /// The adapter named a file outside the trial directory (not read).
    Escaped {
        /// The path it named.
        path: String,
    },
    /// The adapter misbehaved (a reopen failed, no answer, a protocol error).
    Adapter {
        /// What happened.
        reason: String,
    },
}

/// Every [`FindingKind`]'s name (what an expected-divergence list may name).
pub const KIND_NAMES: [&str; 14] = [
    "lost",
    "misplaced",
    "torn_acknowledged",
    "altered",
    "fused",
    "second_header",
    "bad_line",
    "no_header",
    "migration",
    "branched_incomplete",
    "duplicate",
    "stale_temp",
    "escaped",
    "adapter",
];

impl FindingKind {
    /// The kind's stable snake_case name (reports and case files).
    pub fn name(&self) -> &'static str {
        match self {
            FindingKind::Lost { .. } => "lost",
            FindingKind::Misplaced { .. } => "misplaced",
            FindingKind::TornAcknowledged { .. } => "torn_acknowledged",
            FindingKind::Altered { .. } => "altered",
            FindingKind::Fused => "fused",
            FindingKind::SecondHeader => "second_header",
            FindingKind::BadLine { .. } => "bad_line",
            FindingKind::NoHeader { .. } => "no_header",
            FindingKind::Migration { .. } => "migration",
            FindingKind::BranchedIncomplete { .. } => "branched_incomplete",
            FindingKind::Duplicate { .. } => "duplicate",
            FindingKind::StaleTemp => "stale_temp",
            FindingKind::Escaped { .. } => "escaped",
            FindingKind::Adapter { .. } => "adapter",
        }
    }

    /// Whether it is a loss of acknowledged data (counted in the report's losses).
    pub fn is_loss(&self) -> bool {
        matches!(
            self,
            FindingKind::Lost { .. }
                | FindingKind::Misplaced { .. }
                | FindingKind::TornAcknowledged { .. }
                | FindingKind::Altered { .. }
                | FindingKind::BranchedIncomplete { .. }
        )
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindingKind::Lost { id, step } => {
                write!(f, "acknowledged entry {id} (step {step}) is missing")
            }
            FindingKind::Misplaced { id, step, found_in } => write!(
                f,
                "acknowledged entry {id} (step {step}) is missing; it was written to {found_in}"
            ),
            FindingKind::TornAcknowledged { id, step } => write!(
                f,
                "the torn final line holds acknowledged entry {id} (step {step})"
            ),
            FindingKind::Altered { id, step } => write!(
                f,
                "entry {id} (step {step}) differs from what was acknowledged"
            ),
            FindingKind::Fused => f.write_str("two entries fused on one line"),
            FindingKind::SecondHeader => f.write_str("a second session header"),
            FindingKind::BadLine { diagnostic } => {
                write!(f, "a line the reference skips ({diagnostic})")
            }
            FindingKind::NoHeader { reason } => write!(f, "no session header ({reason})"),
            FindingKind::Migration { reason } => write!(
                f,
                "the migration rewrite left neither the old file nor the complete new one; {reason}"
            ),
            FindingKind::BranchedIncomplete { id } => {
                write!(f, "the branched session lacks entry {id} of its path")
            }
            FindingKind::Duplicate { id } => write!(f, "entry {id} is written twice"),
            FindingKind::StaleTemp => f.write_str("a temp file is left after a later open"),
            FindingKind::Escaped { path } => write!(
                f,
                "the adapter named a path outside the trial directory: {path}"
            ),
            FindingKind::Adapter { reason } => write!(f, "adapter: {reason}"),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.file.is_empty() {
            write!(f, "{}: ", self.file)?;
        }
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

/// An entry the trial expects to find, from an acknowledgement.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The id the step returned.
    pub id: String,
    /// The step.
    pub step: usize,
    /// The file it belongs in, relative to the trial directory.
    pub file: String,
    /// Checked (a loss is a finding): the ack was durable or a flush was acknowledged after it.
    pub checked: bool,
    /// The entry as the adapter held it, when the ack carried it.
    pub entry: Option<Value>,
    /// Else: its `type` and the fields the step gave (with `$result` substituted).
    pub entry_type: &'static str,
    /// The fields the step gave.
    pub fields: Vec<(String, Value)>,
}

/// What the acknowledgements of a trial promise.
#[derive(Debug, Clone, Default)]
pub struct Promises {
    /// Acknowledged entries.
    pub entries: Vec<Expected>,
    /// The open was acknowledged as durable or followed by an acknowledged flush: the
    /// migration rewrite must be complete.
    pub open_checked: bool,
    /// The branched session (relative path) and whether it is checked, with the step of its leaf.
    pub branched: Option<(String, bool, usize)>,
    /// Findings made while reading the acknowledgements (a path outside the trial).
    pub findings: Vec<Finding>,
}

/// Reads the acknowledgements `acks` of `plan`'s steps, made in the trial directory `dir`.
///
/// An entry is checked when its ack was durable or a later flush was acknowledged; after
/// a power loss (`power`) only the flush counts: a write that returned is in the page
/// cache, and only what a flush synced is promised to be on the disk.
pub fn promises(plan: &Plan, acks: &[Ack], dir: &Path, power: bool) -> Promises {
    let mut results: Vec<Value> = vec![Value::Null; plan.steps.len()];
    let mut acked: Vec<Option<&Ack>> = vec![None; plan.steps.len()];
    let mut open: Option<&Ack> = None;
    let mut out = Promises::default();
    for ack in acks {
        match ack.step {
            None if open.is_none() => open = Some(ack),
            Some(n) if n < plan.steps.len() && acked[n].is_none() => {
                results[n] = ack.result.clone();
                acked[n] = Some(ack);
            }
            // `acks::Ledger` refuses these as they come; acks from elsewhere are not trusted.
            _ => out.findings.push(adapter_finding(format!(
                "an ack out of place (step {})",
                ack.step.map_or("null".into(), |n| n.to_string())
            ))),
        }
    }
    // The last acknowledged flush that did not fail: everything before it is durable.
    let flushed_before = plan
        .kinds
        .iter()
        .enumerate()
        .filter(|(n, k)| {
            **k == StepKind::Flush && acked[*n].is_some_and(|a| a.result.get("error").is_none())
        })
        .map(|(n, _)| n)
        .max();
    let durable = |n: Option<usize>, ack: &Ack| {
        (ack.durable && !power) || flushed_before.is_some_and(|f| n.is_none_or(|n| n < f))
    };
    out.open_checked = open.is_some_and(|a| durable(None, a));
    let mut file = MAIN_FILE.to_owned();
    for (n, kind) in plan.kinds.iter().enumerate() {
        let Some(ack) = acked[n] else { continue };
        match kind {
            StepKind::Append { entry_type } => {
                let Some(id) = ack.result.as_str() else {
                    // A failed step appended nothing; any other result names no entry
                    // to look for, and so cannot be acknowledged.
                    if ack.result.get("error").is_none() {
                        out.findings.push(adapter_finding(format!(
                            "step {n} appends an entry, but its ack names no entry id"
                        )));
                    }
                    continue;
                };
                let step = super::substitute(&plan.steps[n], &results);
                let fields = step
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| !matches!(k.as_str(), "call" | "fromId" | "id"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                out.entries.push(Expected {
                    id: id.to_owned(),
                    step: n,
                    file: file.clone(),
                    checked: durable(Some(n), ack),
                    entry: ack.entry.clone(),
                    entry_type,
                    fields,
                });
            }
            StepKind::CreateBranchedSession { leaf_step } => {
                let Some(path) = ack.result.as_str() else {
                    continue;
                };
                let Some(rel) = relative(dir, path) else {
                    out.findings.push(Finding {
                        file: String::new(),
                        line: None,
                        kind: FindingKind::Escaped {
                            path: session_conformance::guard::printable(path).into_owned(),
                        },
                    });
                    return out;
                };
                file.clone_from(&rel);
                out.branched = Some((rel, durable(Some(n), ack), *leaf_step));
            }
            StepKind::Flush | StepKind::Branch => {}
        }
    }
    out
}

/// `path` (absolute, or relative to `dir`) as a relative path inside `dir`, or `None`
/// when it leads elsewhere (`..`, another root, a link out).
pub fn relative(dir: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    };
    if joined
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    // The folder must really be inside (no link out); the file itself may not exist.
    let parent = joined.parent()?.canonicalize().ok()?;
    let dir = dir.canonicalize().ok()?;
    let rest = parent.strip_prefix(&dir).ok()?;
    let name = joined.file_name()?;
    Some(rest.join(name).to_string_lossy().into_owned())
}

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

/// A finding about the adapter itself, in no file.
fn adapter_finding(reason: String) -> Finding {
    finding("", None, FindingKind::Adapter { reason })
}

fn finding(file: &str, line: Option<usize>, kind: FindingKind) -> Finding {
    Finding {
        file: file.to_owned(),
        line,
        kind,
    }
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

    #[test]
    fn acks_out_of_place_or_without_an_entry_id_are_findings() {
        use super::super::plan::{build, Rng, Size};
        let plan = build(
            &mut Rng::new(1, 0),
            Size {
                appends: 8,
                v1_entries: 2,
            },
        );
        assert_eq!(
            plan.kinds[0],
            StepKind::Append {
                entry_type: "message"
            }
        );
        let ack = |step, result| Ack {
            step,
            result,
            durable: true,
            entry: None,
        };
        let acks = [
            ack(None, Value::Null),
            ack(Some(0), Value::Null),
            ack(Some(0), Value::String("aaaa0001".into())),
            ack(Some(9999), Value::String("aaaa0002".into())),
            ack(None, Value::Null),
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let promises = promises(&plan, &acks, dir.path(), false);
        let reasons: Vec<String> = promises.findings.iter().map(ToString::to_string).collect();
        assert_eq!(
            reasons,
            [
                "adapter: an ack out of place (step 0)",
                "adapter: an ack out of place (step 9999)",
                "adapter: an ack out of place (step null)",
                "adapter: step 0 appends an entry, but its ack names no entry id",
            ]
        );
    }

    #[test]
    fn paths_outside_the_trial_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sessions")).expect("mkdir");
        let inside = dir.path().join("sessions/x.jsonl");
        assert_eq!(
            relative(dir.path(), &inside.to_string_lossy()).as_deref(),
            Some("sessions/x.jsonl")
        );
        assert_eq!(relative(dir.path(), "/etc/passwd"), None);
        assert_eq!(relative(dir.path(), "sessions/../../x"), None);
    }
}
