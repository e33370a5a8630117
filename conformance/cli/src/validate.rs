//! `validate`: check session files against the schemas and the tree rules no schema can express.
//!
//! Each line is checked against the schema of its `type` (profile and version from
//! the header); then the tree: header first and unique, duplicate ids, dangling
//! parents, cycles, labels on missing targets, `firstKeptEntryId` not an ancestor of
//! its compaction, `fromId` not found, legacy versions, blob references.
//! The file is read as the reference loads it (`parse`), and the tree rules are the
//! reference's own (`Tree`): one reader of lines and one cycle check in the kit.
//!
//! Reading the file and its lines is here; `findings` holds what is reported, `schemas`
//! the schema checks and `tree` the tree rules. Their public items are
//! re-exported here.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_reference::blobs::{BlobRef, BLOB_PREFIX};
use session_reference::model::{EntryKind, Profile};
use session_reference::parse::{parse, DiagnosticKind, HeaderErrorKind, Parsed};
use session_reference::tree::Tree;

use self::findings::Findings;
pub use self::findings::{Finding, Level, MAX_LISTED_FINDINGS};
use self::schemas::check_schema;
pub use self::schemas::Schemas;
use self::tree::{tree_rules, Ancestry};

mod findings;
mod schemas;
mod tree;

/// Options of a validation run.
pub struct Options {
    /// The profile; `None` decides from the content.
    pub profile: Option<Profile>,
    /// The blob store to resolve references in (omp).
    pub blob_dir: Option<PathBuf>,
}

/// Validates one session file read from `reader`; returns its findings and the profile used.
///
/// The file is read as the reference loads it ([`session_reference::parse`]): what
/// the loader skips or repairs is a finding of its line. The tree rules are asked of
/// the reference's [`Tree`]; the schemas check each line the loader keeps.
pub fn validate_reader(
    name: &str,
    mut reader: impl Read,
    schemas: &Schemas,
    options: &Options,
) -> (Vec<Finding>, Profile) {
    let mut findings = Findings::new(name);
    let mut bytes = Vec::new();
    if let Err(e) = reader.read_to_end(&mut bytes) {
        findings.add(0, Level::Error, format!("cannot read: {e}"), None, None);
        let profile = options.profile.unwrap_or(Profile::Omp);
        return (findings.into_list(), profile);
    }
    let (profile, parsed, shift) = read_session(&bytes, options.profile);
    // Binary data (a NUL byte) with no JSON line: one finding for the file, not one per line.
    if matches!(&parsed.header, Err(e) if e.kind == HeaderErrorKind::NotJson) && bytes.contains(&0)
    {
        let what = "not a session file: it holds binary data and no line of it is JSON";
        findings.add(0, Level::Error, what.into(), None, None);
        return (findings.into_list(), profile);
    }
    let lines = LineIndex::new(&parsed.text);
    for diagnostic in &parsed.diagnostics {
        if let Some(message) = loader_finding(diagnostic.kind) {
            let line = diagnostic.line.saturating_sub(shift);
            findings.add(line, Level::Error, message.into(), None, None);
        }
    }
    for (&kind, &count) in &parsed.unlisted.0 {
        if loader_finding(kind).is_some() {
            findings.unlisted_errors += count;
        }
    }
    let version = match &parsed.header {
        Ok(header) if shift == 0 => {
            let version = legacy_version(header.version);
            if version < 3 {
                let steps = if version == 1 {
                    "v1→v2→v3"
                } else {
                    "v2→v3"
                };
                findings.add(1, Level::Warning, format!("legacy version {version}; loading migrates it ({steps}) and rewrites the file"), None, Some("/version".into()));
            }
            let header_line = lines.line_of(header_offset(&parsed.text));
            if let Ok(value) = session_reference::raw::parse_value(header.raw.get()) {
                check_schema(
                    schemas,
                    profile,
                    version,
                    header_line,
                    &value,
                    &mut findings,
                );
            }
            version
        }
        Ok(_) => {
            let message = "entry before the session header; the header must be the first line";
            let id = parsed.entries.first().and_then(|e| e.id.clone());
            findings.add(1, Level::Error, message.into(), id, None);
            3
        }
        Err(_) => {
            findings.add(
                0,
                Level::Error,
                "no session header; the file is not a session".into(),
                None,
                None,
            );
            3
        }
    };
    let tree = Tree::new(parsed.entries);
    let keys = profile.keys();
    // What the tree says of a line comes after what its own text says.
    let mut later = Findings::new(name);
    let mut first_line: HashMap<&str, usize> = HashMap::new();
    let ancestry = Ancestry::new(&tree);
    for (index, entry) in tree.entries().iter().enumerate() {
        let line = lines.line_of(entry.raw.offset()).saturating_sub(shift);
        let id = entry.id.clone();
        if let Some(id) = entry
            .id
            .as_deref()
            .filter(|_| entry.kind != EntryKind::ExtraHeader)
        {
            if let Some(first) = first_line.insert(id, line) {
                first_line.insert(id, first);
                findings.add(
                    line,
                    Level::Error,
                    format!("duplicate id (first on line {first}); the later entry wins"),
                    Some(id.to_owned()),
                    Some("/id".into()),
                );
            }
            if let Some(parent) = entry.parent_id.as_deref().filter(|p| !tree.contains(p)) {
                later.add(line, Level::Error, format!("parentId {parent:?} is not an entry of this session; the entry becomes a root"), Some(id.to_owned()), Some("/parentId".into()));
            }
        }
        if entry.kind == EntryKind::ExtraHeader {
            let message = "a second session header; it is not part of the tree";
            findings.add(line, Level::Error, message.into(), id, None);
            continue;
        }
        tree_rules(&tree, &ancestry, index, entry, keys, line, &mut later);
        let text = entry.raw.get();
        if let Err(e) = session_conformance::guard::check_nesting(text) {
            findings.add(
                line,
                Level::Error,
                format!("the line is {e}; not checked"),
                id,
                None,
            );
            continue;
        }
        let Ok(value) = session_reference::raw::parse_value(text) else {
            continue;
        };
        if text.contains(BLOB_PREFIX) {
            check_blobs(&value, line, id.as_ref(), options, &mut findings);
        }
        let line_profile = options.profile.unwrap_or(match entry.kind {
            _ if profile == Profile::Operator => Profile::Operator,
            EntryKind::SessionInfo => Profile::Pi,
            EntryKind::ModelChange if value.get("modelId").is_some() => Profile::Pi,
            _ => Profile::Omp,
        });
        check_schema(schemas, line_profile, version, line, &value, &mut findings);
    }
    for entry in tree.cycles() {
        let line = lines.line_of(entry.raw.offset()).saturating_sub(shift);
        later.add(
            line,
            Level::Error,
            "parentId chain returns to this entry (a cycle)".into(),
            entry.id.clone(),
            Some("/parentId".into()),
        );
    }
    findings.unlisted_errors += later.unlisted_errors;
    findings.unlisted_warnings += later.unlisted_warnings;
    findings.list.append(&mut later.list);
    findings.list.sort_by_key(|f| f.line);
    (findings.into_list(), profile)
}

/// Parses the file as `profile`'s loader does; `None` decides the profile from the content
/// (003 by its `session_header`, else pi or omp by the entry types only one of them writes).
/// A file whose first value is not a header is read as if a header came before it, so its
/// other lines are checked too: the third value is then 1 (lines are one further down).
fn read_session(bytes: &[u8], profile: Option<Profile>) -> (Profile, Parsed, usize) {
    let profile = profile.unwrap_or_else(|| profile_of(bytes));
    let parsed = parse(bytes, profile);
    if !matches!(&parsed.header, Err(e) if e.kind == HeaderErrorKind::NotAHeader) {
        return (profile, parsed, 0);
    }
    let keys = profile.keys();
    let header =
        json!({"type": keys.name("session"), "version": 3, "id": "", "timestamp": "", "cwd": ""});
    let mut text = format!("{header}\n").into_bytes();
    text.extend_from_slice(bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes));
    (profile, parse(&text, profile), 1)
}

/// The profile a file's content belongs to (`--profile auto`): 003's when its header is
/// a `session_header`, else pi's when more of its entries are of types only pi writes
/// (`session_info`, a `model_change` with `modelId`) than only omp writes, else omp's.
pub fn profile_of(bytes: &[u8]) -> Profile {
    if parse(bytes, Profile::Operator).header.is_ok() {
        return Profile::Operator;
    }
    let (mut pi, mut omp) = (0usize, 0usize);
    for entry in parse(bytes, Profile::Omp).entries {
        match entry.kind {
            EntryKind::ModelChange if entry.object().get("modelId").is_some() => pi += 1,
            EntryKind::SessionInfo => pi += 1,
            EntryKind::ModelChange
            | EntryKind::TtsrInjection
            | EntryKind::SessionInit
            | EntryKind::ModeChange => omp += 1,
            _ => {}
        }
    }
    if pi > omp {
        Profile::Pi
    } else {
        Profile::Omp
    }
}

/// What a line the loader skipped or repaired is reported as; `None` for what loading
/// takes in its stride (blank lines, a byte-order mark, a missing id, which the schema
/// reports, and blob references, checked with their pointers).
fn loader_finding(kind: DiagnosticKind) -> Option<&'static str> {
    Some(match kind {
        DiagnosticKind::NotJson | DiagnosticKind::TornLine => {
            "not JSON; the line is skipped when loading"
        }
        DiagnosticKind::NotObject => "not a JSON object; the line is skipped when loading",
        DiagnosticKind::TrailingData => {
            "a JSON value followed by more text; pi skips the line, omp keeps the value"
        }
        DiagnosticKind::InvalidUtf8 => "invalid UTF-8; loading reads the bad bytes as U+FFFD",
        _ => return None,
    })
}

/// Every `blob:sha256:` string of an entry: a malformed reference is an error, one
/// missing from the blob store a warning.
fn check_blobs(
    value: &Value,
    line: usize,
    id: Option<&String>,
    options: &Options,
    findings: &mut Findings,
) {
    blob_refs(
        value,
        "",
        &mut |pointer, reference| match BlobRef::parse(reference) {
            Err(e) => findings.add(
                line,
                Level::Error,
                e.to_string(),
                id.cloned(),
                Some(pointer.to_owned()),
            ),
            Ok(Some(blob)) => {
                if let Some(dir) = options
                    .blob_dir
                    .as_ref()
                    .filter(|d| !blob.path_in(d).is_file())
                {
                    let message = format!(
                        "blob {} is not in the blob store {}",
                        blob.hash(),
                        dir.display()
                    );
                    findings.add(
                        line,
                        Level::Warning,
                        message,
                        id.cloned(),
                        Some(pointer.to_owned()),
                    );
                }
            }
            Ok(None) => {}
        },
    );
}

/// A header's `version` as the loaders compare it: 1 below 2, 2 below 3, else 3.
fn legacy_version(version: f64) -> u32 {
    if version < 2.0 {
        1
    } else if version < 3.0 {
        2
    } else {
        3
    }
}

/// Where the header starts: the first character that is not a BOM or whitespace.
fn header_offset(text: &str) -> usize {
    text.len()
        - text
            .trim_start_matches(|c: char| c == '\u{feff}' || c.is_whitespace())
            .len()
}

/// Line numbers of byte offsets in a text.
struct LineIndex {
    /// The offset of every `\n`.
    newlines: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        LineIndex {
            newlines: text.match_indices('\n').map(|(at, _)| at).collect(),
        }
    }

    /// The 1-based line holding `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&at| at < offset) + 1
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
                let kind = session_conformance::guard::kind_name(meta.file_type());
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
    let bytes = session_conformance::guard::read_input(path).map_err(|e| match e {
        session_conformance::guard::InputError::Io(e) => e,
        other => std::io::Error::other(other.to_string()),
    })?;
    Ok(validate_reader(
        &path.display().to_string(),
        bytes.as_slice(),
        schemas,
        options,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const H: &str =
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
    fn findings_past_the_limit_are_counted_in_one_last_finding() {
        let bad: Vec<&str> = vec!["not json"; MAX_LISTED_FINDINGS + 5];
        let findings = check(&bad);
        assert_eq!(findings.len(), MAX_LISTED_FINDINGS + 1);
        assert_eq!(
            findings.last().map(String::as_str),
            Some("f:0: error: 5 more finding(s) not listed (5 error(s), 0 warning(s)); the first 1000 of each pass are")
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

    #[test]
    fn a_binary_file_is_one_finding_and_a_text_file_one_per_line() {
        let options = Options {
            profile: None,
            blob_dir: None,
        };
        let mut binary: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
        binary.extend(b"\nmore\n");
        let lines = |bytes: &[u8]| -> Vec<String> {
            let (findings, _) = validate_reader("f", bytes, &Schemas::new(), &options);
            findings.iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            lines(&binary),
            ["f:0: error: not a session file: it holds binary data and no line of it is JSON"]
        );
        let text = lines(b"hello\nworld\n");
        assert!(
            text.iter().any(|l| l.starts_with("f:1: error: not JSON")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|l| l.starts_with("f:2: error: not JSON")),
            "{text:?}"
        );
    }
}
