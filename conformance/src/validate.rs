//! `validate`: check session files against the schemas and the tree rules no schema can express.
//!
//! Each line is checked against the schema of its `type` (profile and version from
//! the header); then the tree: header first and unique, duplicate ids, dangling
//! parents, cycles, labels on missing targets, `firstKeptEntryId` not an ancestor of
//! its compaction, `fromId` not found, legacy versions, blob references.
//! Files are read line by line; memory holds one line and an index of ids.

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use jsonschema::Validator;
use serde_json::{json, Value};
use session_reference::blobs::{BlobRef, BLOB_PREFIX};
use session_reference::dialect::Keys;
use session_reference::model::{js_version, Profile};

use crate::schema;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Worth knowing; the file still loads as intended.
    Warning,
    /// The file breaks the format.
    Error,
}

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file (`-` for stdin).
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// Error or warning.
    pub level: Level,
    /// What is wrong.
    pub message: String,
    /// The entry id concerned.
    pub id: Option<String>,
    /// JSON Pointer inside the line.
    pub pointer: Option<String>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Warning => "warning",
            Level::Error => "error",
        };
        write!(f, "{}:{}: {level}: {}", self.file, self.line, self.message)?;
        if let Some(id) = &self.id {
            write!(f, " [{id}]")?;
        }
        if let Some(pointer) = &self.pointer {
            write!(f, " ({pointer})")?;
        }
        Ok(())
    }
}

impl Finding {
    /// The finding as a JSON record.
    pub fn to_json(&self) -> Value {
        let level = if self.level == Level::Error {
            "error"
        } else {
            "warning"
        };
        json!({"file": self.file, "line": self.line, "level": level, "message": self.message, "id": self.id, "pointer": self.pointer})
    }
}

/// Compiled schemas per profile and version: entry type → validator.
pub struct Schemas {
    by_key: HashMap<(Profile, u32), HashMap<String, Validator>>,
}

impl Schemas {
    /// Compiles the schemas of both profiles and the three versions.
    ///
    /// # Panics
    /// Never for the schemas this crate generates (a test compiles them).
    pub fn new() -> Schemas {
        let mut by_key = HashMap::new();
        for profile in Profile::ALL {
            for version in 1..=3 {
                let union = schema::line_union(profile, version);
                let defs = union["$defs"].clone();
                let mut validators = HashMap::new();
                for branch in union["oneOf"].as_array().into_iter().flatten() {
                    let name = branch["properties"]["type"]["const"]
                        .as_str()
                        .map_or("*", |t| t)
                        .to_owned();
                    let name = if branch["properties"]["type"]["$ref"].is_string() {
                        "session".to_owned()
                    } else {
                        name
                    };
                    let mut schema = branch.clone();
                    schema["$defs"] = defs.clone();
                    schema["$schema"] = json!(schema::META_SCHEMA);
                    let validator =
                        jsonschema::validator_for(&schema).expect("generated schemas compile");
                    validators.insert(name, validator);
                }
                by_key.insert((profile, version), validators);
            }
        }
        Schemas { by_key }
    }

    fn validator(&self, profile: Profile, version: u32, type_name: &str) -> Option<&Validator> {
        let set = self.by_key.get(&(profile, version))?;
        set.get(type_name).or_else(|| set.get("*"))
    }
}

impl Default for Schemas {
    fn default() -> Self {
        Schemas::new()
    }
}

/// Options of a validation run.
pub struct Options {
    /// The profile; `None` decides from the content.
    pub profile: Option<Profile>,
    /// The blob store to resolve references in (omp).
    pub blob_dir: Option<PathBuf>,
}

/// What a file's index keeps per entry.
struct Node {
    line: usize,
    parent: Option<String>,
}

/// Validates one session file read from `reader`; returns its findings and the profile used.
pub fn validate_reader(
    name: &str,
    reader: impl Read,
    schemas: &Schemas,
    options: &Options,
) -> (Vec<Finding>, Profile) {
    let mut findings = Vec::new();
    let mut add = |line: usize,
                   level: Level,
                   message: String,
                   id: Option<String>,
                   pointer: Option<String>| {
        findings.push(Finding {
            file: name.to_owned(),
            line,
            level,
            message,
            id,
            pointer,
        });
    };
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    let mut number = 0;
    let mut header_seen = false;
    let mut version = 3;
    let mut votes = (0usize, 0usize); // (pi, omp)
                                      // The names of keys: the profile's; with --profile auto, 003's once its `session_header` is seen.
    let mut operator = options.profile == Some(Profile::Operator);
    let mut keys: &Keys = options.profile.map_or(&Keys::CAMEL, |p| p.dialect().keys);
    let mut nodes: HashMap<String, Node> = HashMap::new();
    let mut labels: Vec<(usize, String, String)> = Vec::new(); // line, label id, target
    let mut kept: Vec<(usize, String, String)> = Vec::new(); // line, compaction id, firstKeptEntryId
    let mut from_ids: Vec<(usize, String, String)> = Vec::new(); // line, summary id, fromId
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                add(
                    number,
                    Level::Error,
                    format!("cannot read: {e}"),
                    None,
                    None,
                );
                break;
            }
        }
        number += 1;
        if std::str::from_utf8(&buf).is_err() {
            add(
                number,
                Level::Error,
                "invalid UTF-8; loading reads the bad bytes as U+FFFD".into(),
                None,
                None,
            );
        }
        let text = String::from_utf8_lossy(&buf);
        // A byte-order mark is dropped before the first line only (a later one makes the line unreadable).
        let text = if number == 1 {
            text.strip_prefix('\u{feff}').unwrap_or(&text)
        } else {
            &text
        };
        if text.trim().is_empty() {
            continue;
        }
        // A line nested past the limit is not made a value (the schema checks recurse).
        if text.len() > crate::guard::MAX_NESTING {
            if let Err(e) = crate::guard::check_nesting(text) {
                add(
                    number,
                    Level::Error,
                    format!("the line is {e}; not checked"),
                    None,
                    None,
                );
                continue;
            }
        }
        let Ok(value) = session_reference::raw::parse_value(text.trim_end()) else {
            add(
                number,
                Level::Error,
                "not JSON; the line is skipped when loading".into(),
                None,
                None,
            );
            continue;
        };
        let Some(object) = value.as_object() else {
            add(
                number,
                Level::Error,
                "not a JSON object; the line is skipped when loading".into(),
                None,
                None,
            );
            continue;
        };
        let type_name = object
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let id = object.get("id").and_then(Value::as_str).map(str::to_owned);
        if options.profile.is_none() && !header_seen && type_name == "session_header" {
            operator = true;
            keys = Profile::Operator.dialect().keys;
        }
        if type_name == keys.name("session") {
            if header_seen {
                add(
                    number,
                    Level::Error,
                    "a second session header; it is not part of the tree".into(),
                    id,
                    None,
                );
                continue;
            }
            header_seen = true;
            // 003's header has no version: every file is read as the current one.
            let v = if keys.versioned {
                js_version(
                    object
                        .get("version")
                        .map(session_reference::raw::to_raw)
                        .as_deref(),
                )
            } else {
                3.0
            };
            version = if v < 2.0 {
                1
            } else if v < 3.0 {
                2
            } else {
                3
            };
            if version < 3 {
                let steps = if version == 1 {
                    "v1→v2→v3"
                } else {
                    "v2→v3"
                };
                add(number, Level::Warning, format!("legacy version {version}; loading migrates it ({steps}) and rewrites the file"), None, Some("/version".into()));
            }
            check_schema(
                schemas,
                options.profile.unwrap_or(if operator {
                    Profile::Operator
                } else {
                    Profile::Omp
                }),
                version,
                number,
                &value,
                &mut add,
            );
            continue;
        }
        if !header_seen {
            add(
                number,
                Level::Error,
                "entry before the session header; the header must be the first line".into(),
                id.clone(),
                None,
            );
            header_seen = true;
        }
        match type_name.as_str() {
            "model_change" if object.contains_key("modelId") => votes.0 += 1,
            "model_change" | "ttsr_injection" | "session_init" | "mode_change" => votes.1 += 1,
            "session_info" => votes.0 += 1,
            _ => {}
        }
        let parent = object
            .get(keys.name("parentId"))
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        if let Some(id) = &id {
            if let Some(first) = nodes.get(id) {
                add(
                    number,
                    Level::Error,
                    format!(
                        "duplicate id (first on line {}); the later entry wins",
                        first.line
                    ),
                    Some(id.clone()),
                    Some("/id".into()),
                );
            }
            nodes.insert(
                id.clone(),
                Node {
                    line: number,
                    parent,
                },
            );
        }
        let text_field = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        match (type_name.as_str(), &id) {
            ("label", Some(id)) => {
                labels.extend(text_field(keys.name("targetId")).map(|t| (number, id.clone(), t)));
            }
            ("compaction", Some(id)) => {
                kept.extend(
                    text_field(keys.name("firstKeptEntryId")).map(|k| (number, id.clone(), k)),
                );
            }
            (kind, Some(id)) if kind == keys.name("branch_summary") => {
                from_ids.extend(text_field(keys.name("fromId")).map(|f| (number, id.clone(), f)));
            }
            _ => {}
        }
        if text.contains(BLOB_PREFIX) {
            blob_refs(
                &value,
                "",
                &mut |pointer, reference| match BlobRef::parse(reference) {
                    Err(e) => add(
                        number,
                        Level::Error,
                        e.to_string(),
                        id.clone(),
                        Some(pointer.to_owned()),
                    ),
                    Ok(Some(blob)) => {
                        if let Some(dir) = &options.blob_dir {
                            if !blob.path_in(dir).is_file() {
                                add(
                                    number,
                                    Level::Warning,
                                    format!(
                                        "blob {} is not in the blob store {}",
                                        blob.hash(),
                                        dir.display()
                                    ),
                                    id.clone(),
                                    Some(pointer.to_owned()),
                                );
                            }
                        }
                    }
                    Ok(None) => {}
                },
            );
        }
        // With --profile auto, a line is checked with the profile its shape belongs to.
        let line_profile = match (options.profile, type_name.as_str()) {
            (Some(p), _) => p,
            (None, _) if operator => Profile::Operator,
            (None, "session_info") => Profile::Pi,
            (None, "model_change") if object.contains_key("modelId") => Profile::Pi,
            (None, _) => Profile::Omp,
        };
        check_schema(schemas, line_profile, version, number, &value, &mut add);
    }
    if !header_seen {
        add(
            0,
            Level::Error,
            "no session header; the file is not a session".into(),
            None,
            None,
        );
    }
    let profile = options.profile.unwrap_or(if operator {
        Profile::Operator
    } else if votes.0 > votes.1 {
        Profile::Pi
    } else {
        Profile::Omp
    });
    for (id, node) in &nodes {
        if let Some(parent) = &node.parent {
            if !nodes.contains_key(parent) {
                add(node.line, Level::Error, format!("parentId {parent:?} is not an entry of this session; the entry becomes a root"), Some(id.clone()), Some("/parentId".into()));
            }
        }
    }
    let index = Index::new(&nodes);
    for (line, id) in index.cycles() {
        add(
            line,
            Level::Error,
            "parentId chain returns to this entry (a cycle)".into(),
            Some(id),
            Some("/parentId".into()),
        );
    }
    for (line, id, target) in labels {
        if !nodes.contains_key(&target) {
            add(
                line,
                Level::Warning,
                format!("label on {target:?}, which is not an entry of this session"),
                Some(id),
                Some("/targetId".into()),
            );
        }
    }
    for (line, id, first) in kept {
        if !index.has_ancestor(&id, &first) {
            add(line, Level::Warning, format!("firstKeptEntryId {first:?} is not an ancestor of this compaction; nothing before it is kept"), Some(id), Some("/firstKeptEntryId".into()));
        }
    }
    for (line, id, from) in from_ids {
        if from != "root" && !nodes.contains_key(&from) {
            add(
                line,
                Level::Warning,
                format!("fromId {from:?} is not an entry of this session"),
                Some(id),
                Some("/fromId".into()),
            );
        }
    }
    findings.sort_by_key(|f| f.line);
    (findings, profile)
}

fn check_schema(
    schemas: &Schemas,
    profile: Profile,
    version: u32,
    line: usize,
    value: &Value,
    add: &mut dyn FnMut(usize, Level, String, Option<String>, Option<String>),
) {
    let type_name = value["type"].as_str().unwrap_or_default();
    if let Some(validator) = schemas.validator(profile, version, type_name) {
        for error in validator.iter_errors(value) {
            let pointer = error.instance_path().to_string();
            let id = value["id"].as_str().map(str::to_owned);
            add(
                line,
                Level::Error,
                format!("{type_name}: {error}"),
                id,
                Some(if pointer.is_empty() {
                    "/".into()
                } else {
                    pointer
                }),
            );
        }
    }
}

/// The entries as indices in line order, with parent indices: one hash lookup per entry.
struct Index<'a> {
    order: Vec<(&'a String, &'a Node)>,
    parent: Vec<Option<usize>>,
    position: HashMap<&'a str, usize>,
}

impl<'a> Index<'a> {
    fn new(nodes: &'a HashMap<String, Node>) -> Index<'a> {
        let mut order: Vec<(&String, &Node)> = nodes.iter().collect();
        order.sort_unstable_by_key(|(_, n)| n.line);
        let position: HashMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (id.as_str(), i))
            .collect();
        let parent = order
            .iter()
            .map(|(_, n)| n.parent.as_deref().and_then(|p| position.get(p).copied()))
            .collect();
        Index {
            order,
            parent,
            position,
        }
    }

    /// Entries whose parent chain comes back to them: each cycle once, at its first line.
    fn cycles(&self) -> Vec<(usize, String)> {
        let mut state = vec![0u8; self.order.len()]; // 0 new, 1 on the current walk, 2 done
        let mut found = Vec::new();
        for start in 0..self.order.len() {
            let mut path = Vec::new();
            let mut current = Some(start);
            while let Some(i) = current {
                match state[i] {
                    2 => break,
                    1 => {
                        let from = path.iter().position(|&p| p == i).unwrap_or(0);
                        let first = path[from..].iter().copied().min().unwrap_or(i);
                        found.push((self.order[first].1.line, self.order[first].0.clone()));
                        break;
                    }
                    _ => {
                        state[i] = 1;
                        path.push(i);
                        current = self.parent[i];
                    }
                }
            }
            for p in path {
                state[p] = 2;
            }
        }
        found
    }

    /// Whether `ancestor` is on the parent chain of `id` (bounded: cycles end the walk).
    fn has_ancestor(&self, id: &str, ancestor: &str) -> bool {
        let mut current = self.position.get(id).and_then(|&i| self.parent[i]);
        for _ in 0..self.order.len() {
            let Some(i) = current else { return false };
            if self.order[i].0 == ancestor {
                return true;
            }
            current = self.parent[i];
        }
        false
    }
}

fn blob_refs(value: &Value, pointer: &str, found: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::String(s) if s.starts_with(BLOB_PREFIX) => found(pointer, s),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                blob_refs(v, &format!("{pointer}/{i}"), found);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                blob_refs(
                    v,
                    &format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1")),
                    found,
                );
            }
        }
        _ => {}
    }
}

/// The session files under `path`: the file itself, or every `*.jsonl` below a
/// directory, and a finding for each part of the tree that could not be listed. The walk
/// never follows a link to a folder (so it cannot loop or leave `path`); a link to a
/// file is listed, and read only when it leads to a regular file.
pub fn files(path: &Path) -> (Vec<PathBuf>, Vec<Finding>) {
    if !path.is_dir() {
        return (vec![path.to_owned()], Vec::new());
    }
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    for item in walkdir::WalkDir::new(path).min_depth(1) {
        match item {
            Ok(item) if item.file_type().is_dir() => {}
            Ok(item) if item.path().extension().is_some_and(|e| e == "jsonl") => {
                out.push(item.into_path());
            }
            Ok(_) => {}
            Err(e) => problems.push(unreadable(
                &e.path().unwrap_or(path).display().to_string(),
                &e.to_string(),
            )),
        }
    }
    out.sort();
    (out, problems)
}

/// Validates `path`, a file or every session file below a directory: one result per
/// file. A file that cannot be read, or is not a regular file, is a finding of its own
/// and the walk goes on. A `path` given by name may also be a pipe, read once; one that
/// does not exist is the error.
pub fn validate_path(
    path: &Path,
    schemas: &Schemas,
    options: &Options,
) -> std::io::Result<Vec<(Vec<Finding>, Profile)>> {
    std::fs::metadata(path)?;
    let given = !path.is_dir();
    let (list, problems) = files(path);
    let fallback = options.profile.unwrap_or(Profile::Omp);
    let mut results: Vec<(Vec<Finding>, Profile)> =
        problems.into_iter().map(|p| (vec![p], fallback)).collect();
    for file in list {
        let name = file.display().to_string();
        let result = match std::fs::metadata(&file) {
            Ok(meta) if meta.is_file() || (given && is_pipe(meta.file_type())) => {
                validate_file(&file, schemas, options)
                    .unwrap_or_else(|e| (vec![unreadable(&name, &e.to_string())], fallback))
            }
            Ok(meta) => {
                let kind = crate::guard::kind_name(meta.file_type());
                let message = format!("is a {kind}, not a regular file; not read");
                (vec![unreadable(&name, &message)], fallback)
            }
            Err(e) => (vec![unreadable(&name, &e.to_string())], fallback),
        };
        results.push(result);
    }
    Ok(results)
}

/// A finding for a file that could not be read at all.
fn unreadable(file: &str, message: &str) -> Finding {
    Finding {
        file: file.to_owned(),
        line: 0,
        level: Level::Error,
        message: format!("cannot read: {message}"),
        id: None,
        pointer: None,
    }
}

#[cfg(unix)]
fn is_pipe(kind: std::fs::FileType) -> bool {
    std::os::unix::fs::FileTypeExt::is_fifo(&kind)
}

#[cfg(not(unix))]
fn is_pipe(_kind: std::fs::FileType) -> bool {
    false
}

/// Validates a file by path.
pub fn validate_file(
    path: &Path,
    schemas: &Schemas,
    options: &Options,
) -> std::io::Result<(Vec<Finding>, Profile)> {
    let file = crate::guard::open_input(path)?;
    Ok(validate_reader(
        &path.display().to_string(),
        file,
        schemas,
        options,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str =
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/p"}"#;

    fn check(lines: &[&str]) -> Vec<String> {
        let text = format!("{H}\n{}\n", lines.join("\n"));
        let options = Options {
            profile: Some(Profile::Omp),
            blob_dir: None,
        };
        validate_reader("f", text.as_bytes(), &Schemas::new(), &options)
            .0
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn msg(id: &str, parent: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"t","message":{{"role":"user","content":"x"}}}}"#
        )
    }

    #[test]
    fn a_clean_file_has_no_findings() {
        assert_eq!(
            check(&[&msg("a", "null"), &msg("b", "\"a\"")]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_finding_names_its_line() {
        let cases: &[(&[&str], &str)] = &[
            (&["not json"], "f:2: error: not JSON"),
            (&["null"], "f:2: error: not a JSON object"),
            (
                &[r#"{"type":"message","id":"a","parentId":null,"timestamp":"t"}"#],
                "f:2: error: message: \"message\" is a required property [a] (/)",
            ),
            (
                &[&msg("a", "null"), &msg("a", "null")],
                "f:3: error: duplicate id (first on line 2)",
            ),
            (
                &[&msg("a", "\"zz\"")],
                "f:2: error: parentId \"zz\" is not an entry",
            ),
            (
                &[&msg("a", "\"b\""), &msg("b", "\"a\"")],
                "f:2: error: parentId chain returns",
            ),
            (
                &[
                    &msg("a", "null"),
                    r#"{"type":"label","id":"l","parentId":"a","timestamp":"t","targetId":"ghost","label":"x"}"#,
                ],
                "f:3: warning: label on \"ghost\"",
            ),
            (
                &[
                    &msg("a", "null"),
                    r#"{"type":"compaction","id":"c","parentId":"a","timestamp":"t","summary":"s","firstKeptEntryId":"zz","tokensBefore":1}"#,
                ],
                "f:3: warning: firstKeptEntryId \"zz\"",
            ),
            (
                &[
                    &msg("a", "null"),
                    r#"{"type":"branch_summary","id":"b","parentId":"a","timestamp":"t","fromId":"zz","summary":"s"}"#,
                ],
                "f:3: warning: fromId \"zz\"",
            ),
            (&[H], "f:2: error: a second session header"),
            (
                &[
                    r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"image","data":"blob:sha256:../x"}]}}"#,
                ],
                "f:2: error: invalid blob reference",
            ),
        ];
        for (lines, expected) in cases {
            let findings = check(lines);
            assert!(
                findings.iter().any(|f| f.starts_with(expected)),
                "{expected}\n{findings:#?}"
            );
        }
    }

    #[test]
    fn legacy_versions_warn_and_profile_is_decided_from_content() {
        let text = "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/p\"}\n{\"type\":\"model_change\",\"provider\":\"p\",\"modelId\":\"m\",\"timestamp\":\"t\"}\n";
        let (findings, profile) = validate_reader(
            "f",
            text.as_bytes(),
            &Schemas::new(),
            &Options {
                profile: None,
                blob_dir: None,
            },
        );
        assert_eq!(profile, Profile::Pi);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0]
            .to_string()
            .starts_with("f:1: warning: legacy version 1"));
    }

    #[test]
    fn auto_recognises_a_session_header_and_reads_snake_case_keys() {
        let text = concat!(
            r#"{"type":"session_header","id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","id":"a","parent_id":null,"timestamp":"t","message":{"role":"user","content":"x"}}"#,
            "\n",
            r#"{"type":"leaf","id":"l","parent_id":"a","timestamp":"t","target_id":"a"}"#,
            "\n",
            r#"{"type":"message","id":"b","parent_id":"zz","timestamp":"t","message":{"role":"user","content":"x"}}"#,
            "\n",
        );
        let options = Options {
            profile: None,
            blob_dir: None,
        };
        let (findings, profile) = validate_reader("f", text.as_bytes(), &Schemas::new(), &options);
        assert_eq!(profile, Profile::Operator);
        let findings: Vec<String> = findings.iter().map(ToString::to_string).collect();
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert!(
            findings[0].starts_with("f:4: error: parentId \"zz\""),
            "{findings:#?}"
        );
    }
}
