//! `schema diff OLD NEW`: classify every change between two schema sets, so a format change is deliberate.
//!
//! - compatible: a new optional field, a new entry type, a widened type, a new enum value;
//! - narrowing: a field made required, a new required field, an enum value removed, a narrowed type;
//! - breaking: a field or entry type removed, a type changed, a constant changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// How a change affects existing files and readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Impact {
    /// Old files stay valid and old readers keep working.
    Compatible,
    /// Some old files become invalid.
    Narrowing,
    /// Old readers or files break.
    Breaking,
}

/// One classified change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Its impact.
    pub impact: Impact,
    /// The schema file.
    pub file: String,
    /// Where in it (a JSON-Pointer-like path of fields).
    pub at: String,
    /// What changed.
    pub message: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let impact = match self.impact {
            Impact::Compatible => "compatible",
            Impact::Narrowing => "narrowing",
            Impact::Breaking => "breaking",
        };
        write!(f, "{impact}: {}{}: {}", self.file, self.at, self.message)
    }
}

/// A schema set that cannot be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum SchemaSetError {
    /// The folder cannot be walked (the message names the path).
    Walk(walkdir::Error),
    /// A schema file is not a regular file.
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is: `fifo`, `socket`, ….
        kind: &'static str,
    },
    /// A schema file is larger than [`session_conformance::guard::MAX_FILE_BYTES`].
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// A schema file cannot be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// A schema file is not JSON (the parser's message names the line and column).
    NotJson {
        /// The file: a path, or `REV:PATH` for a file read with `git`.
        file: String,
        /// The parser's error.
        error: serde_json::Error,
    },
    /// A `git:REV` whose REV starts with `-`: git would read it as an option.
    OptionAsRevision(String),
    /// `git` cannot be started.
    GitStart(std::io::Error),
    /// `git` failed.
    Git {
        /// Its arguments.
        args: String,
        /// What it wrote on stderr.
        stderr: String,
    },
}

impl fmt::Display for SchemaSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaSetError::Walk(error) => error.fmt(f),
            SchemaSetError::NotRegular { path, kind } => {
                write!(f, "{}: a {kind}, not a regular file", path.display())
            }
            SchemaSetError::TooLarge { path, bytes } => write!(
                f,
                "{}: {bytes} bytes, more than {}",
                path.display(),
                session_conformance::guard::MAX_FILE_BYTES
            ),
            SchemaSetError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            SchemaSetError::NotJson { file, error } => write!(f, "{file}: {error}"),
            SchemaSetError::OptionAsRevision(rev) => write!(
                f,
                "git:{rev}: a revision cannot start with '-' (git would read it as an option)"
            ),
            SchemaSetError::GitStart(error) => write!(f, "git: {error}"),
            SchemaSetError::Git { args, stderr } => write!(f, "git {args}: {stderr}"),
        }
    }
}

impl std::error::Error for SchemaSetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SchemaSetError::Walk(error) => Some(error),
            SchemaSetError::Io { error, .. } | SchemaSetError::GitStart(error) => Some(error),
            SchemaSetError::NotJson { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Reads every `*.json` file under `dir`: relative path → schema. Links to folders
/// are not followed; a file must be a regular file (a link to one is read through) of
/// at most [`session_conformance::guard::MAX_FILE_BYTES`].
pub fn read_dir(dir: &Path) -> Result<BTreeMap<String, Value>, SchemaSetError> {
    use session_conformance::guard::{read_regular, Contents, MAX_FILE_BYTES};
    let mut out = BTreeMap::new();
    for item in walkdir::WalkDir::new(dir).min_depth(1) {
        let item = item.map_err(SchemaSetError::Walk)?;
        let path = item.path();
        if item.file_type().is_dir() || path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let bytes = match read_regular(path, MAX_FILE_BYTES) {
            Ok(Contents::Bytes(bytes)) => bytes,
            Ok(Contents::Special(kind)) => {
                return Err(SchemaSetError::NotRegular {
                    path: path.to_owned(),
                    kind,
                })
            }
            Ok(Contents::TooLarge(bytes)) => {
                return Err(SchemaSetError::TooLarge {
                    path: path.to_owned(),
                    bytes,
                })
            }
            Err(error) => {
                return Err(SchemaSetError::Io {
                    path: path.to_owned(),
                    error,
                })
            }
        };
        let value = serde_json::from_slice(&bytes).map_err(|error| SchemaSetError::NotJson {
            file: path.display().to_string(),
            error,
        })?;
        let rel = path
            .strip_prefix(dir)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        out.insert(rel, value);
    }
    Ok(out)
}

/// Every change from `old` to `new` (files matched by relative path).
pub fn diff_sets(old: &BTreeMap<String, Value>, new: &BTreeMap<String, Value>) -> Vec<Change> {
    let mut changes = Vec::new();
    for (file, old_schema) in old {
        match new.get(file) {
            Some(new_schema) => diff(file, "", old_schema, new_schema, &mut changes),
            None => changes.push(Change {
                impact: Impact::Breaking,
                file: file.clone(),
                at: String::new(),
                message: "schema removed".into(),
            }),
        }
    }
    for file in new.keys().filter(|f| !old.contains_key(*f)) {
        changes.push(Change {
            impact: Impact::Compatible,
            file: file.clone(),
            at: String::new(),
            message: "schema added".into(),
        });
    }
    changes
}

/// Every change between two schemas (objects, their properties, union branches by `type`).
pub fn diff(file: &str, at: &str, old: &Value, new: &Value, out: &mut Vec<Change>) {
    let push = |out: &mut Vec<Change>, impact, at: String, message: String| {
        out.push(Change {
            impact,
            file: file.to_owned(),
            at,
            message,
        });
    };
    let (old_types, new_types) = (types(old), types(new));
    if !old_types.is_empty() && !new_types.is_empty() && old_types != new_types {
        let impact = if new_types.is_superset(&old_types) {
            Impact::Compatible
        } else if new_types.is_subset(&old_types) {
            Impact::Narrowing
        } else {
            Impact::Breaking
        };
        push(
            out,
            impact,
            at.to_owned(),
            format!("type {old_types:?} → {new_types:?}"),
        );
    }
    if old.get("const").is_some() && old.get("const") != new.get("const") {
        push(
            out,
            Impact::Breaking,
            at.to_owned(),
            format!(
                "constant {} → {}",
                old["const"],
                new.get("const").unwrap_or(&Value::Null)
            ),
        );
    }
    if let (Some(a), Some(b)) = (
        old.get("enum").and_then(Value::as_array),
        new.get("enum").and_then(Value::as_array),
    ) {
        for v in a.iter().filter(|v| !b.contains(v)) {
            push(
                out,
                Impact::Narrowing,
                at.to_owned(),
                format!("enum value {v} removed"),
            );
        }
        for v in b.iter().filter(|v| !a.contains(v)) {
            push(
                out,
                Impact::Compatible,
                at.to_owned(),
                format!("enum value {v} added"),
            );
        }
    }
    let (old_req, new_req) = (required(old), required(new));
    let empty = serde_json::Map::new();
    let old_props = old
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let new_props = new
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, old_prop) in old_props {
        let here = format!("{at}/{name}");
        let Some(new_prop) = new_props.get(name) else {
            push(out, Impact::Breaking, here, "field removed".into());
            continue;
        };
        if new_req.contains(name) && !old_req.contains(name) {
            push(
                out,
                Impact::Narrowing,
                here.clone(),
                "field made required".into(),
            );
        }
        if old_req.contains(name) && !new_req.contains(name) {
            push(
                out,
                Impact::Compatible,
                here.clone(),
                "field made optional".into(),
            );
        }
        diff(file, &here, old_prop, new_prop, out);
    }
    for name in new_props.keys().filter(|n| !old_props.contains_key(*n)) {
        let (impact, what) = if new_req.contains(name) {
            (Impact::Narrowing, "required field added")
        } else {
            (Impact::Compatible, "optional field added")
        };
        push(out, impact, format!("{at}/{name}"), what.into());
    }
    let (old_branches, new_branches) = (branches(old), branches(new));
    for (tag, branch) in &old_branches {
        match new_branches.get(tag) {
            Some(other) => diff(file, &format!("{at}[{tag}]"), branch, other, out),
            None => push(
                out,
                Impact::Breaking,
                format!("{at}[{tag}]"),
                "entry type removed".into(),
            ),
        }
    }
    for tag in new_branches
        .keys()
        .filter(|t| !old_branches.contains_key(*t))
    {
        push(
            out,
            Impact::Compatible,
            format!("{at}[{tag}]"),
            "entry type added".into(),
        );
    }
    if let (Some(a), Some(b)) = (
        old.get("$defs").and_then(Value::as_object),
        new.get("$defs").and_then(Value::as_object),
    ) {
        for (name, def) in a {
            if let Some(other) = b.get(name) {
                diff(file, &format!("{at}/$defs/{name}"), def, other, out);
            }
        }
    }
}

fn types(schema: &Value) -> BTreeSet<String> {
    match schema.get("type") {
        Some(Value::String(t)) => BTreeSet::from([t.clone()]),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => BTreeSet::new(),
    }
}

fn required(schema: &Value) -> BTreeSet<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Union branches keyed by their `type` constant (the header's is `session`).
fn branches(schema: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for branch in schema
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let tag = match branch["properties"]["type"]["const"].as_str() {
            Some(tag) => tag.to_owned(),
            None if branch["properties"]["type"].get("$ref").is_some() => "session".to_owned(),
            None => "*".to_owned(),
        };
        out.insert(tag, branch.clone());
    }
    out
}

/// A schema set to compare: a folder, or `git:REV` (the schemas/ folder at that revision, read with `git`).
///
/// # Errors
/// The folder cannot be read, `git` fails, or a file is not JSON; the message names it.
pub fn schema_set(spec: &str) -> Result<BTreeMap<String, Value>, SchemaSetError> {
    let Some(rev) = spec.strip_prefix("git:") else {
        return read_dir(Path::new(spec));
    };
    if rev.starts_with('-') {
        return Err(SchemaSetError::OptionAsRevision(rev.to_owned()));
    }
    let git = |args: &[&str]| -> Result<String, SchemaSetError> {
        let output = std::process::Command::new("git")
            .args(args)
            .output()
            .map_err(SchemaSetError::GitStart)?;
        if !output.status.success() {
            return Err(SchemaSetError::Git {
                args: args.join(" "),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let mut set = BTreeMap::new();
    for file in git(&[
        "ls-tree",
        "-r",
        "--name-only",
        "--end-of-options",
        rev,
        "--",
        "schemas/",
    ])?
    .lines()
    .filter(|f| {
        Path::new(f)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    }) {
        let text = git(&["show", &format!("{rev}:{file}")])?;
        let value = serde_json::from_str(&text).map_err(|error| SchemaSetError::NotJson {
            file: format!("{rev}:{file}"),
            error,
        })?;
        set.insert(file.trim_start_matches("schemas/").to_owned(), value);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use session_conformance::schema::line_union;
    use session_reference::model::Profile;

    fn impacts(changes: &[Change]) -> Vec<String> {
        changes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_revision_that_reads_as_an_option_is_refused_before_git_runs() {
        for rev in ["--output=/tmp/x", "-h", "--format=%(objectname)"] {
            let error = schema_set(&format!("git:{rev}")).expect_err(rev);
            assert!(
                matches!(&error, SchemaSetError::OptionAsRevision(r) if r == rev),
                "{rev}: {error}"
            );
        }
    }

    #[test]
    fn field_changes_are_classified() {
        let old = json!({"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string", "enum": ["x", "y"]}}});
        let new = json!({"type": "object", "required": ["a", "c"], "properties": {"a": {"type": ["string", "null"]}, "c": {"type": "integer", "enum": ["x"]}, "d": {"type": "string"}}});
        let mut out = Vec::new();
        diff("f", "", &old, &new, &mut out);
        let got = impacts(&out);
        for expected in [
            "compatible: f/a: type",
            "breaking: f/b: field removed",
            "narrowing: f/c: field made required",
            "breaking: f/c: type",
            "narrowing: f/c: enum value \"y\" removed",
            "compatible: f/d: optional field added",
        ] {
            assert!(
                got.iter().any(|g| g.starts_with(expected)),
                "{expected}\n{got:#?}"
            );
        }
    }

    #[test]
    fn v2_to_v3_and_pi_to_omp() {
        let mut out = Vec::new();
        diff(
            "line",
            "",
            &line_union(Profile::Omp, 2),
            &line_union(Profile::Omp, 3),
            &mut out,
        );
        assert!(
            impacts(&out)
                .iter()
                .any(|c| c.starts_with("breaking: line[session]/version: constant 2")),
            "{out:#?}"
        );
        let mut out = Vec::new();
        diff(
            "line",
            "",
            &line_union(Profile::Pi, 3),
            &line_union(Profile::Omp, 3),
            &mut out,
        );
        let got = impacts(&out);
        for expected in [
            "breaking: line[session_info]: entry type removed",
            "breaking: line[model_change]/modelId: field removed",
            "narrowing: line[model_change]/model: required field added",
            "compatible: line[ttsr_injection]: entry type added",
        ] {
            assert!(
                got.iter().any(|g| g.starts_with(expected)),
                "{expected}\n{got:#?}"
            );
        }
    }
}
