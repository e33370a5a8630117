//! The read operations, `load`, `context` and `tree`: a case's session opened (and refused
//! when nested too deep), and what each answers, also used by the CLI's views of a file.

use std::path::Path;

use serde_json::{json, Value};
use session_reference::context::LeafChoice;
use session_reference::model::Profile;
use session_reference::session::{SessionError, SessionManager};

use super::setup::{inside, options};
use crate::normalize::object;

/// Opens the session `args.file` (default `session.jsonl`) of the case directory.
fn open(dir: &Path, args: &Value, profile: Profile) -> Result<SessionManager, SessionError> {
    let file = args["file"].as_str().unwrap_or("session.jsonl");
    let sm = SessionManager::open(&inside(dir, file)?, options(dir, profile))?;
    shallow(&sm)?;
    Ok(sm)
}

/// Refuses a session with a line nested past [`crate::guard::MAX_NESTING`]: its entries
/// become JSON values, which the harness walks with recursive code.
pub fn shallow(sm: &SessionManager) -> Result<(), SessionError> {
    let lines =
        std::iter::once(sm.header().raw.get()).chain(sm.entries().iter().map(|e| e.raw.get()));
    for text in lines {
        crate::guard::check_nesting(text).map_err(|message| SessionError::Io {
            path: sm.session_file().map(Path::to_path_buf).unwrap_or_default(),
            message: format!("an entry is {message}"),
        })?;
    }
    Ok(())
}

pub(super) fn load(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let sm = open(dir, args, profile)?;
    Ok(load_output(&sm))
}

/// `{header, entries, leafId, diagnostics, migrated}` for an opened session, and
/// `unlistedDiagnostics` (kind → count) when it has more diagnostics than it lists
/// (`session_reference::parse::MAX_LISTED_DIAGNOSTICS`).
pub fn load_output(sm: &SessionManager) -> Value {
    let mut output = load_summary(sm);
    let entries: Vec<Value> = sm.entries().iter().map(|e| sm.resolved(e)).collect();
    output["entries"] = Value::Array(entries);
    output
}

/// [`load_output`] written to `out` as canonical JSON (`crate::canonical`), numbers as
/// JavaScript writes them (`canonical::canonical_js`), one entry at a time: only one entry is a JSON value at once, so the output of
/// a file of millions of lines costs no memory beyond the session itself.
pub fn write_load_output(
    sm: &SessionManager,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let mut summary = load_summary(sm);
    summary["entries"] = json!([]);
    let text = crate::canonical::canonical_js(&summary);
    // Top-level keys are the only lines indented by exactly two spaces.
    let marker = "\n  \"entries\": []";
    let at = text
        .find(marker)
        .map_or(text.len(), |at| at + marker.len() - 2);
    out.write_all(&text.as_bytes()[..at])?;
    let mut first = true;
    for entry in sm.entries() {
        let entry = crate::canonical::canonical_js(&sm.resolved(entry));
        out.write_all(if first { b"[\n    " } else { b",\n    " })?;
        out.write_all(entry.trim_end().replace('\n', "\n    ").as_bytes())?;
        first = false;
    }
    out.write_all(if first { b"[]" } else { b"\n  ]" })?;
    out.write_all(text[at..].get(2..).unwrap_or_default().as_bytes())
}

/// Every field of [`load_output`] but the entries.
fn load_summary(sm: &SessionManager) -> Value {
    let header: Value =
        session_reference::raw::parse_value(sm.header().raw.get()).unwrap_or(Value::Null);
    let report = sm.report();
    let diagnostics: Vec<Value> = report
        .diagnostics
        .iter()
        .map(|d| json!({"line": d.line, "kind": d.kind.name()}))
        .collect();
    let mut output = object([
        ("header", header),
        ("leafId", sm.leaf_id().into()),
        ("diagnostics", Value::Array(diagnostics)),
        ("migrated", (!report.migrated.is_empty()).into()),
    ]);
    if report.unlisted.total() > 0 {
        let counts: serde_json::Map<String, Value> = report
            .unlisted
            .0
            .iter()
            .map(|(kind, n)| (kind.name().to_owned(), Value::from(*n)))
            .collect();
        output["unlistedDiagnostics"] = Value::Object(counts);
    }
    output
}

/// Clauses: context.4.
pub(super) fn context(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let sm = open(dir, args, profile)?;
    let leaf = match args.get("leafId") {
        None => sm.leaf_id().map_or(LeafChoice::Null, LeafChoice::Id),
        Some(Value::Null) => LeafChoice::Null,
        Some(Value::String(id)) => LeafChoice::Id(id),
        Some(_) => LeafChoice::Last,
    };
    Ok(sm.context_json(leaf))
}

pub(super) fn tree(dir: &Path, args: &Value, profile: Profile) -> Result<Value, SessionError> {
    let sm = open(dir, args, profile)?;
    Ok(tree_output(&sm))
}

/// `{nodes: [{id, parentId, type, label, children}]}` in pre-order.
pub fn tree_output(sm: &SessionManager) -> Value {
    let nodes: Vec<Value> = sm
        .get_tree()
        .into_iter()
        .map(|n| {
            // parentId and label as written, whatever their JSON type (a string
            // parentId is the one the entry holds already).
            let parent = match n.parent_id() {
                Some(id) => Value::from(id),
                None => n
                    .entry
                    .object()
                    .get(n.entry.keys().name("parentId"))
                    .and_then(|v| serde_json::from_str(v.get()).ok())
                    .unwrap_or(Value::Null),
            };
            let label = n
                .label
                .and_then(|l| serde_json::from_str(&l.value).ok())
                .unwrap_or(Value::Null);
            object([
                ("id", n.id().into()),
                ("parentId", parent),
                ("type", n.entry_type().into()),
                ("label", label),
                ("children", n.child_ids().collect::<Vec<_>>().into()),
            ])
        })
        .collect();
    object([("nodes", Value::Array(nodes))])
}
