//! `load`, `context` and `tree`: look at a session file with the reference, without changing it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde_json::Value;
use session_conformance::read_only::ReadOnlyStorage;
use session_reference::context::LeafChoice;
use session_reference::model::Profile;
use session_reference::session::{Options, SessionError, SessionManager};

use session_conformance::execute;
use session_conformance::guard::printable;

/// An inspection error: `FILE: KIND`, the kind naming its line when it is about one
/// (`FILE: line 1: not a session header; …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectError {
    /// The file (or, for `sessions show`, the id or path asked for).
    pub file: String,
    /// What is wrong.
    pub kind: InspectErrorKind,
}

/// What is wrong with a file to inspect.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InspectErrorKind {
    /// The file cannot be read: the system's message.
    Io(String),
    /// Neither a file nor a pipe: `a directory`, `a special file`.
    NotAFileOrPipe(&'static str),
    /// A session of a store that is not a regular file: its kind (`fifo`, `socket`, …).
    NotRegular(&'static str),
    /// A line nested deeper than [`session_conformance::guard::MAX_NESTING`].
    TooDeep {
        /// The line (1-based).
        line: usize,
        /// How deep it nests.
        error: session_conformance::guard::GuardError,
    },
    /// The reference cannot open the file.
    Open(SessionError),
    /// The file has no usable header (the error names the line).
    Header(session_reference::parse::HeaderError),
    /// No session file or id prefix matches what `sessions show` was asked for.
    NoMatch,
}

impl std::fmt::Display for InspectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.file)?;
        match &self.kind {
            InspectErrorKind::Io(message) => f.write_str(message),
            InspectErrorKind::NotAFileOrPipe(what) => {
                write!(f, "is {what}; expected a session file or a pipe")
            }
            InspectErrorKind::NotRegular(kind) => {
                write!(f, "is a {kind}, not a regular file; not read")
            }
            InspectErrorKind::TooDeep { line, error } => write!(f, "line {line}: {error}"),
            InspectErrorKind::Open(error) => error.fmt(f),
            InspectErrorKind::Header(error) => error.fmt(f),
            InspectErrorKind::NoMatch => f.write_str("no session file or id prefix matches"),
        }
    }
}

impl std::error::Error for InspectError {}

/// Reads `file` once: a regular file, or a pipe read to its end, within the CLI's
/// limits (`guard::read_input`). Anything else (a directory, a device, a socket) is
/// refused by its kind, without reading it.
pub fn read_input(file: &Path) -> Result<Vec<u8>, InspectError> {
    let fail = |kind| InspectError {
        file: file.display().to_string(),
        kind,
    };
    let io = |e: std::io::Error| fail(InspectErrorKind::Io(e.to_string()));
    let kind = fs::metadata(file).map_err(io)?.file_type();
    if !(kind.is_file() || is_pipe(kind)) {
        let what = if kind.is_dir() {
            "a directory"
        } else {
            "a special file"
        };
        return Err(fail(InspectErrorKind::NotAFileOrPipe(what)));
    }
    session_conformance::guard::read_input(file)
        .map_err(|e| fail(InspectErrorKind::Io(e.to_string())))
}

#[cfg(unix)]
fn is_pipe(kind: fs::FileType) -> bool {
    std::os::unix::fs::FileTypeExt::is_fifo(&kind)
}

#[cfg(not(unix))]
fn is_pipe(_kind: fs::FileType) -> bool {
    false
}

/// Opens `file` with the reference over a read-only view of the disk, reading it once;
/// `profile` `None` decides it from the content ([`crate::validate::profile_of`]).
/// A line nested deeper than [`session_conformance::guard::MAX_NESTING`] is refused with its number.
pub fn open(
    file: &Path,
    profile: impl Into<Option<Profile>>,
) -> Result<SessionManager, InspectError> {
    let bytes = read_input(file)?;
    let profile = profile
        .into()
        .unwrap_or_else(|| crate::validate::profile_of(&bytes));
    let fail = |kind| InspectError {
        file: file.display().to_string(),
        kind,
    };
    if let Some((line, error)) = session_conformance::guard::deep_line(&bytes) {
        return Err(fail(InspectErrorKind::TooDeep { line, error }));
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut options = Options::new(profile, dir.to_string_lossy(), dir);
    options.storage = Box::new(ReadOnlyStorage::default());
    let sm = SessionManager::open_bytes(file, bytes, options)
        .map_err(|e| fail(InspectErrorKind::Open(e)))?;
    match &sm.report().header_error {
        Some(error) => Err(fail(InspectErrorKind::Header(error.clone()))),
        None => Ok(sm),
    }
}

/// `{header, entries, leafId, diagnostics, migrated}`.
pub fn load(file: &Path, profile: impl Into<Option<Profile>>) -> Result<Value, InspectError> {
    Ok(execute::load_output(&open(file, profile)?))
}

/// [`load`] written to `out` as canonical JSON, one entry at a time
/// ([`execute::write_load_output`]). An error writing `out` is returned as it is.
pub fn write_load(
    file: &Path,
    profile: impl Into<Option<Profile>>,
    out: &mut impl std::io::Write,
) -> Result<std::io::Result<()>, InspectError> {
    let sm = open(file, profile)?;
    Ok(execute::write_load_output(&sm, out))
}

/// Where to build a context: the session's leaf (`None`), the empty context (`Some(None)`),
/// or an entry. An id that names no entry is kept: `buildSessionContext` then builds at the
/// last entry (003: the empty context), and the second value says so, for stderr.
pub fn leaf_choice<'a>(
    sm: &'a SessionManager,
    leaf: Option<Option<&'a str>>,
) -> (LeafChoice<'a>, Option<String>) {
    match leaf {
        None => (sm.leaf_id().map_or(LeafChoice::Null, LeafChoice::Id), None),
        Some(None) => (LeafChoice::Null, None),
        Some(Some(id)) if sm.get_entry(id).is_none() => {
            let fallback = if session_reference::context::Rules::for_profile(sm.profile())
                .unknown_leaf_is_empty
            {
                "the empty context"
            } else {
                "the context at the last entry"
            };
            let note = format!(
                "entry {id} not found; this is {fallback}, as buildSessionContext gives it"
            );
            (LeafChoice::Id(id), Some(note))
        }
        Some(Some(id)) => (LeafChoice::Id(id), None),
    }
}

/// The context JSON at `leaf` (`None`: the session's leaf).
pub fn context(
    file: &Path,
    profile: impl Into<Option<Profile>>,
    leaf: Option<Option<&str>>,
) -> Result<Value, InspectError> {
    let sm = open(file, profile)?;
    let (choice, _) = leaf_choice(&sm, leaf);
    Ok(sm.context_json(choice))
}

/// The tree as flat JSON nodes.
pub fn tree_json(file: &Path, profile: impl Into<Option<Profile>>) -> Result<Value, InspectError> {
    Ok(execute::tree_output(&open(file, profile)?)["nodes"].clone())
}

/// Branch levels drawn as indentation in [`tree_text`]; deeper ones are numbered.
const MAX_LEVELS: usize = 24;

/// The tree as an indented picture: a branch point indents its children; the leaf is marked.
pub fn tree_text(file: &Path, profile: impl Into<Option<Profile>>) -> Result<String, InspectError> {
    let sm = open(file, profile)?;
    let nodes = sm.get_tree();
    // Pre-order: a node's parent is printed first and leaves it its prefix and connector.
    // A chain stays in its column; a branch point gives each child a connector. Past
    // `MAX_LEVELS` branch levels the prefix stops growing and the line says how many
    // levels deeper it is (`[+N]`), so the picture grows linearly with the session.
    let mut layout: HashMap<&str, (String, &'static str, usize)> = HashMap::new();
    let mut out = String::new();
    let leaf = sm.leaf_id();
    for node in &nodes {
        let (prefix, connector, levels) = layout.remove(node.id()).unwrap_or_default();
        let indent = match connector {
            "├─ " => "│  ",
            "└─ " => "   ",
            _ => "",
        };
        let (child_prefix, child_levels) = if indent.is_empty() {
            (prefix.clone(), levels)
        } else if levels < MAX_LEVELS {
            (format!("{prefix}{indent}"), levels + 1)
        } else {
            (prefix.clone(), levels + 1)
        };
        let last = node.children.len().saturating_sub(1);
        for (i, child) in node.child_ids().enumerate() {
            let child_connector = match (node.children.len(), i == last) {
                (1, _) => "",
                (_, true) => "└─ ",
                (_, false) => "├─ ",
            };
            layout.insert(child, (child_prefix.clone(), child_connector, child_levels));
        }
        let deeper = levels.saturating_sub(MAX_LEVELS);
        let depth = if deeper > 0 {
            format!("[+{deeper}] ")
        } else {
            String::new()
        };
        let what = describe(&sm.resolved(node.entry));
        let label = node
            .label
            .map(|l| format!(" [{}]", printable(&l.text)))
            .unwrap_or_default();
        let marker = if Some(node.id()) == leaf {
            "  <- leaf"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{prefix}{depth}{connector}{} {}{what}{label}{marker}",
            printable(node.id()),
            printable(&node.entry_type())
        );
    }
    Ok(out)
}

fn describe(entry: &Value) -> String {
    let snippet = |v: &Value| -> String {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let short: String = one_line.chars().take(50).collect();
        if short.is_empty() {
            String::new()
        } else {
            format!(" {short:?}")
        }
    };
    match entry["type"].as_str() {
        Some("message") => format!(
            " {}{}",
            printable(entry["message"]["role"].as_str().unwrap_or("?")),
            snippet(&entry["message"]["content"])
        ),
        Some("compaction" | "branch_summary") => snippet(&entry["summary"]),
        Some("custom_message") => snippet(&entry["content"]),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comb: every entry is a branch point with one leaf child and one child that
    /// carries on, `teeth` levels deep.
    fn comb(teeth: usize) -> String {
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        );
        text.push('\n');
        let mut parent = "null".to_owned();
        for n in 0..teeth {
            for (id, ts) in [(format!("t{n:07}"), "01"), (format!("s{n:07}"), "02")] {
                let _ = writeln!(
                    text,
                    r#"{{"type":"custom","customType":"x","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:{ts}.000Z"}}"#
                );
            }
            parent = format!("\"s{n:07}\"");
        }
        text
    }

    #[test]
    fn the_text_tree_grows_linearly_with_depth() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("comb.jsonl");
        let teeth = 2_000;
        std::fs::write(&file, comb(teeth)).expect("write");
        let text = tree_text(&file, Profile::Omp).expect("tree");
        assert_eq!(text.lines().count(), 2 * teeth);
        let widest = text.lines().map(str::len).max().unwrap_or(0);
        assert!(widest < 3 * MAX_LEVELS * 4 + 80, "a line of {widest} bytes");
        assert!(
            text.contains(&format!("[+{}] ", teeth - 2 - MAX_LEVELS)),
            "the depth is numbered: {}",
            text.lines().last().unwrap_or_default()
        );
    }
}
