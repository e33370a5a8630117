//! Strict names (`docs/spec/format.md` format.3 "Session ids", format.15 "Session file
//! names"): the names of the session files an implementation creates, and the session
//! ids it creates, checked against the profile's form on the raw output, before the
//! normaliser turns every time spelling into `<ftime>` and every id form into
//! `<session:N>` (`PROTOCOL.md` "Comparison").
//!
//! A file is *created* when it is not one of the case's inputs. A created `.jsonl` file
//! whose name holds a created token (a time or an id the case did not give) must be
//! named `<time>_<id>.jsonl`, with the profile's time spelling; an id the case did not
//! give, in that name or in the `id` of the session header a written file starts with,
//! must have the profile's form; and the name's id and time must be the header's `id`
//! and `timestamp`, the time spelled as the reference names a file from it
//! (`session_reference::session::Rules::file_name`). An adapter that declares
//! `own-file-names` is not checked (`runner` leaves the check out).

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use serde_json::Value;
use session_reference::model::Profile;

/// A session id's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdForm {
    /// A UUID in lowercase, 8-4-4-4-12 hex digits (any version): `pi`, `operator`.
    Uuid,
    /// 16 lowercase hex digits: `omp`.
    Hex16,
}

impl IdForm {
    /// Whether `id` has this form.
    pub fn admits(self, id: &str) -> bool {
        let shape: &[u8] = match self {
            IdForm::Uuid => b"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
            IdForm::Hex16 => b"xxxxxxxxxxxxxxxx",
        };
        id.len() == shape.len()
            && id.bytes().zip(shape).all(|(b, &s)| {
                if s == b'-' {
                    b == b'-'
                } else {
                    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
                }
            })
    }

    /// The form in words: `a lowercase UUID (8-4-4-4-12 hex digits)`.
    pub fn describe(self) -> &'static str {
        match self {
            IdForm::Uuid => "a lowercase UUID (8-4-4-4-12 hex digits)",
            IdForm::Hex16 => "16 lowercase hex digits",
        }
    }
}

/// A profile's naming rules: the time spelling of a session file's name, the form of
/// the session ids it creates, and the `type` of its session header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// The file name's form, as the message shows it: `YYYY-MM-DDTHH-MM-SS-sssZ_<id>.jsonl`.
    pub file_name: &'static str,
    /// The created session id's form.
    pub id: IdForm,
    /// The `type` of the session header line.
    pub header_type: &'static str,
    /// The time's shape at the start of the name, `D` for an ASCII digit and every
    /// other character as itself: `DDDD-DD-DDTDD-DD-DD-DDDZ`.
    pub time: &'static str,
}

impl Rules {
    /// The rules of `profile`.
    pub fn for_profile(profile: Profile) -> Rules {
        match profile {
            Profile::Pi => Rules {
                file_name: "YYYY-MM-DDTHH-MM-SS-sssZ_<id>.jsonl",
                id: IdForm::Uuid,
                header_type: "session",
                time: MILLISECONDS,
            },
            Profile::Omp => Rules {
                file_name: "YYYY-MM-DDTHH-MM-SS-sssZ_<id>.jsonl",
                id: IdForm::Hex16,
                header_type: "session",
                time: MILLISECONDS,
            },
            Profile::Operator => Rules {
                file_name: "YYYY-MM-DDTHH-MM-SS-ffffff_<id>.jsonl",
                id: IdForm::Uuid,
                header_type: "session_header",
                time: MICROSECONDS,
            },
        }
    }

    /// The id part of a session file's name (`name` without its folder), or `None`
    /// when the name is not `<time>_<id>.jsonl` with this profile's time.
    pub fn name_id(self, name: &str) -> Option<&str> {
        let time = name.get(..self.time.len())?;
        let fits = time.bytes().zip(self.time.bytes()).all(|(b, s)| {
            if s == b'D' {
                b.is_ascii_digit()
            } else {
                b == s
            }
        });
        name[time.len()..]
            .strip_prefix('_')?
            .strip_suffix(".jsonl")
            .filter(|id| fits && !id.is_empty())
    }
}

/// `pi` and `omp`'s time: the ISO time with `:` and `.` as `-`.
const MILLISECONDS: &str = "DDDD-DD-DDTDD-DD-DD-DDDZ";

/// `operator`'s time (003): microseconds, no zone.
const MICROSECONDS: &str = "DDDD-DD-DDTDD-DD-DD-DDDDDD";

/// A created name or id that breaks the profile's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameProblem {
    /// The file, as the snapshot names it (relative to the case directory).
    pub file: String,
    /// What is wrong.
    pub kind: NameProblemKind,
}

/// What is wrong with a created name or id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameProblemKind {
    /// The file's name is not `<time>_<id>.jsonl` in the profile's time spelling.
    FileName {
        /// The name written (without its folder).
        written: String,
        /// The form expected.
        expected: &'static str,
    },
    /// A created session id, in the file's name or in its header, is not of the
    /// profile's form.
    SessionId {
        /// Where it is: `file name` or `header`.
        place: Place,
        /// The id written.
        written: String,
        /// The form expected.
        expected: IdForm,
    },
    /// The time in the file's name is not its header's `timestamp` in the profile's
    /// spelling.
    Time {
        /// The name written (without its folder).
        written: String,
        /// The name the header's `timestamp` and the name's id make.
        expected: String,
    },
    /// The id in the file's name is not the id of its header.
    Mismatch {
        /// The id in the name.
        name: String,
        /// The header's id.
        header: String,
    },
}

/// Where a session id is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the session file's name.
    FileName,
    /// In the `id` of its session header.
    Header,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Place::FileName => "file name",
            Place::Header => "header",
        })
    }
}

impl NameProblem {
    /// The clause broken: `format.3` (the id's form) or `format.15` (the file's name).
    pub fn clause(&self) -> &'static str {
        match self.kind {
            NameProblemKind::SessionId { .. } => "format.3",
            NameProblemKind::FileName { .. }
            | NameProblemKind::Time { .. }
            | NameProblemKind::Mismatch { .. } => "format.15",
        }
    }

    /// The problem in a line that does not depend on the run (no created name or id):
    /// a failed case's signature in a divergence list.
    pub fn signature(&self) -> String {
        let what = match &self.kind {
            NameProblemKind::FileName { expected, .. } => format!("file name is not {expected}"),
            NameProblemKind::SessionId {
                place, expected, ..
            } => format!("{place} id is not {}", expected.describe()),
            NameProblemKind::Time { .. } => "file name time is not the header timestamp".to_owned(),
            NameProblemKind::Mismatch { .. } => "file name id is not the header id".to_owned(),
        };
        format!("name {}: {what}", self.clause())
    }
}

impl fmt::Display for NameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = &self.file;
        let clause = self.clause();
        match &self.kind {
            NameProblemKind::FileName { written, expected } => {
                write!(
                    f,
                    "{file}: file name {written:?} is not {expected} ({clause})"
                )
            }
            NameProblemKind::SessionId {
                place,
                written,
                expected,
            } => write!(
                f,
                "{file}: created session id {written:?} in the {place} is not {} ({clause})",
                expected.describe()
            ),
            NameProblemKind::Time { written, expected } => write!(
                f,
                "{file}: file name {written:?} is not named from the header's timestamp: {expected:?} ({clause})"
            ),
            NameProblemKind::Mismatch { name, header } => write!(
                f,
                "{file}: the file name's id {name:?} is not the header's id {header:?} ({clause})"
            ),
        }
    }
}

/// What the case gave: a string it gave is not created, so its form is not checked.
pub struct Given<'a> {
    /// The case directory's path, as the request gave it (a response's paths start with it).
    pub dir: &'a str,
    /// The known tokens of the case (`normalize::known_tokens` of inputs and arguments).
    pub known: &'a HashSet<String>,
    /// The request's arguments as JSON text.
    pub args: &'a str,
    /// The input files, by name.
    pub inputs: &'a BTreeMap<String, Vec<u8>>,
}

impl Given<'_> {
    /// Whether `text` is among what the case gave: a known token, or a part of the
    /// arguments or of an input.
    fn has(&self, text: &str) -> bool {
        self.known.contains(text)
            || memchr::memmem::find(self.args.as_bytes(), text.as_bytes()).is_some()
            || self
                .inputs
                .values()
                .any(|bytes| memchr::memmem::find(bytes, text.as_bytes()).is_some())
    }

    /// Whether `name` holds a created token: a time or an id the case did not give.
    fn has_created_token(&self, name: &str) -> bool {
        crate::normalize::known_tokens([name])
            .iter()
            .any(|token| !self.has(token))
    }
}

/// The name problems of a case's raw output under `profile`, before normalisation:
/// the `files` snapshot (`snapshot`) in its order, then the paths of `.jsonl` files the
/// `response` names that are not in the snapshot (a new session not written yet), shown
/// relative to the case directory.
pub fn check(
    profile: Profile,
    response: &Value,
    files: &Value,
    given: &Given<'_>,
) -> Vec<NameProblem> {
    let rules = Rules::for_profile(profile);
    let name_from = session_reference::session::Rules::for_profile(profile).file_name;
    let mut problems = Vec::new();
    let empty = serde_json::Map::new();
    let files = files.as_object().unwrap_or(&empty);
    for (path, file) in files {
        let header = header(file, rules.header_type);
        let header_id = header.and_then(|h| h.get("id")?.as_str());
        if let Some(id) = header_id.filter(|id| !given.has(id)) {
            if !rules.id.admits(id) {
                problems.push(NameProblem {
                    file: path.clone(),
                    kind: NameProblemKind::SessionId {
                        place: Place::Header,
                        written: id.to_owned(),
                        expected: rules.id,
                    },
                });
            }
        }
        if !given.inputs.contains_key(path) {
            let before = problems.len();
            check_name(rules, path, header_id, given, &mut problems);
            let timestamp = header.and_then(|h| h.get("timestamp")?.as_str());
            if let (true, Some(timestamp)) = (problems.len() == before, timestamp) {
                check_time(name_from, path, timestamp, given, &mut problems);
            }
        }
    }
    // Without recursion: a response may be nested 100,000 deep.
    let prefix = format!("{}/", given.dir);
    let mut stack = vec![response];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(path) => {
                let relative = path.strip_prefix(&prefix).unwrap_or(path);
                if !files.contains_key(relative) && !given.inputs.contains_key(relative) {
                    check_name(rules, relative, None, given, &mut problems);
                }
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(map) => stack.extend(map.values().rev()),
            _ => {}
        }
    }
    problems
}

/// Checks the name of a created file at `path` whose header id is `header_id`: when it
/// ends in `.jsonl` and holds a created token, it must be `<time>_<id>.jsonl` with the
/// profile's time, a created id of the profile's form, the header's.
fn check_name(
    rules: Rules,
    path: &str,
    header_id: Option<&str>,
    given: &Given<'_>,
    problems: &mut Vec<NameProblem>,
) {
    let name = path.rsplit('/').next().unwrap_or(path);
    // Lower case, as pi-mono reads session files (`UPPER.JSONL` is not one).
    let session_file = std::path::Path::new(name)
        .extension()
        .is_some_and(|e| e == "jsonl");
    if !session_file || !given.has_created_token(name) {
        return;
    }
    let mut problem = |kind| {
        problems.push(NameProblem {
            file: path.to_owned(),
            kind,
        });
    };
    let Some(name_id) = rules.name_id(name) else {
        problem(NameProblemKind::FileName {
            written: name.to_owned(),
            expected: rules.file_name,
        });
        return;
    };
    if !given.has(name_id) && !rules.id.admits(name_id) {
        problem(NameProblemKind::SessionId {
            place: Place::FileName,
            written: name_id.to_owned(),
            expected: rules.id,
        });
    }
    if let Some(header) = header_id.filter(|&header| header != name_id) {
        problem(NameProblemKind::Mismatch {
            name: name_id.to_owned(),
            header: header.to_owned(),
        });
    }
}

/// Checks that a created session file at `path`, named `<time>_<id>.jsonl` in the
/// profile's form with its header's id, is named from its header's `timestamp`: the
/// name `name_from` (the reference's rule) makes from that time and the name's id.
fn check_time(
    name_from: fn(&str, &str) -> String,
    path: &str,
    timestamp: &str,
    given: &Given<'_>,
    problems: &mut Vec<NameProblem>,
) {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((_, id)) = name.strip_suffix(".jsonl").and_then(|n| n.split_once('_')) else {
        return;
    };
    let expected = name_from(timestamp, id);
    if name != expected && given.has_created_token(name) {
        problems.push(NameProblem {
            file: path.to_owned(),
            kind: NameProblemKind::Time {
                written: name.to_owned(),
                expected,
            },
        });
    }
}

/// The session header a snapshot's file starts with (after a BOM), when its first line
/// is a header of type `header_type`.
fn header<'v>(file: &'v Value, header_type: &str) -> Option<&'v Value> {
    let lines = file.get("lines")?.as_array()?;
    let bom = |line: &Value| line.get("$bom") == Some(&Value::Bool(true));
    let first = lines.iter().find(|line| !bom(line))?;
    (first.get("type")?.as_str()? == header_type).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const UUID: &str = "01a2148d-657a-7504-a693-e034265d393c";
    const OTHER_UUID: &str = "01a2148d-657a-7504-a693-e034265d393d";
    const HEX16: &str = "1f9d2a6b9c0d1234";

    /// A snapshot of one created file `sessions/NAME` whose header has `id`.
    fn snapshot(profile: Profile, name: &str, id: &str) -> Value {
        let header = json!({
            "type": Rules::for_profile(profile).header_type,
            "id": id,
            "timestamp": "2026-11-25T21:12:20.603Z",
        });
        json!({ format!("sessions/{name}"): { "lines": [{"$bom": true}, header] } })
    }

    /// The signatures of the problems of `sessions/NAME` with header `id` under `profile`,
    /// nothing given by the case but `args`.
    fn problems(profile: Profile, name: &str, id: &str, args: &str) -> Vec<String> {
        let (known, inputs) = (HashSet::new(), BTreeMap::new());
        let given = Given {
            dir: "/w",
            known: &known,
            args,
            inputs: &inputs,
        };
        check(profile, &Value::Null, &snapshot(profile, name, id), &given)
            .iter()
            .map(NameProblem::signature)
            .collect()
    }

    #[test]
    fn created_names_and_ids_have_the_profile_form() {
        use Profile::{Omp, Operator, Pi};
        let ms = "2026-11-25T21-12-20-603Z";
        let us = "2026-11-25T21-12-20-603000";
        let name = |time: &str, id: &str| format!("{time}_{id}.jsonl");
        let file_name = |form: &str| format!("name format.15: file name is not {form}");
        let (pi_name, operator_name) = (
            file_name("YYYY-MM-DDTHH-MM-SS-sssZ_<id>.jsonl"),
            file_name("YYYY-MM-DDTHH-MM-SS-ffffff_<id>.jsonl"),
        );
        let uuid_id = |place: &str| {
            format!("name format.3: {place} id is not a lowercase UUID (8-4-4-4-12 hex digits)")
        };
        let hex_id =
            |place: &str| format!("name format.3: {place} id is not 16 lowercase hex digits");
        let mismatch = "name format.15: file name id is not the header id".to_owned();
        let time = || vec!["name format.15: file name time is not the header timestamp".to_owned()];
        let rows: Vec<(Profile, String, &str, &str, Vec<String>)> = vec![
            // (profile, file name, header id, arguments, problems)
            (Pi, name(ms, UUID), UUID, "{}", vec![]),
            (Omp, name(ms, HEX16), HEX16, "{}", vec![]),
            (Operator, name(us, UUID), UUID, "{}", vec![]),
            // Another time spelling: no fraction, `_` for `T`, `.` for the last `-`,
            // ISO's basic format, microseconds where pi writes milliseconds.
            (
                Pi,
                name("2026-11-25T21-12-20Z", UUID),
                UUID,
                "{}",
                vec![pi_name.clone()],
            ),
            (
                Pi,
                name("2026-11-25_21-12-20-603Z", UUID),
                UUID,
                "{}",
                vec![pi_name.clone()],
            ),
            (
                Omp,
                name("2026-11-25T21-12-20.603Z", HEX16),
                HEX16,
                "{}",
                vec![pi_name.clone()],
            ),
            (
                Pi,
                name("20261125T211220603Z", UUID),
                UUID,
                "{}",
                vec![pi_name.clone()],
            ),
            (Pi, name(us, UUID), UUID, "{}", vec![pi_name.clone()]),
            (Pi, format!("{ms}-{UUID}.jsonl"), UUID, "{}", vec![pi_name]),
            // 003's microseconds: pi's milliseconds, or a zone, are not its form.
            (
                Operator,
                name(ms, UUID),
                UUID,
                "{}",
                vec![operator_name.clone()],
            ),
            (
                Operator,
                name(&format!("{us}Z"), UUID),
                UUID,
                "{}",
                vec![operator_name],
            ),
            // Another id form, in the name and the header.
            (
                Pi,
                name(ms, HEX16),
                HEX16,
                "{}",
                vec![uuid_id("header"), uuid_id("file name")],
            ),
            (
                Omp,
                name(ms, UUID),
                UUID,
                "{}",
                vec![hex_id("header"), hex_id("file name")],
            ),
            (
                Omp,
                name(ms, "1F9D2A6B9C0D1234"),
                "1F9D2A6B9C0D1234",
                "{}",
                vec![hex_id("header"), hex_id("file name")],
            ),
            (
                Operator,
                name(us, HEX16),
                HEX16,
                "{}",
                vec![uuid_id("header"), uuid_id("file name")],
            ),
            // The name's id is not the header's.
            (Pi, name(ms, UUID), OTHER_UUID, "{}", vec![mismatch.clone()]),
            (
                Omp,
                name(ms, "1f9d2a6b9c0d9999"),
                HEX16,
                "{}",
                vec![mismatch.clone()],
            ),
            // An id the case gives (`newSession({id})`) is written as given.
            (
                Pi,
                name(ms, "custom-id"),
                "custom-id",
                r#"{"id":"custom-id"}"#,
                vec![],
            ),
            (
                Omp,
                name(ms, "custom-id"),
                "custom-id",
                r#"{"id":"custom-id"}"#,
                vec![],
            ),
            (
                Pi,
                name(ms, "custom-id"),
                "other-id",
                r#"{"id":"custom-id","x":"other-id"}"#,
                vec![mismatch],
            ),
            // A time of the right shape that is not the header's `timestamp`
            // (2026-11-25T21:12:20.603Z), spelled the profile's way: operator's
            // microseconds are the clock's milliseconds followed by `000`.
            (
                Pi,
                name("0000-99-99T99-99-99-999Z", UUID),
                UUID,
                "{}",
                time(),
            ),
            (
                Pi,
                name("2026-11-25T21-12-20-604Z", UUID),
                UUID,
                "{}",
                time(),
            ),
            (
                Omp,
                name("2026-11-25T21-12-21-603Z", HEX16),
                HEX16,
                "{}",
                time(),
            ),
            (
                Operator,
                name("2026-11-25T21-12-20-603999", UUID),
                UUID,
                "{}",
                time(),
            ),
            (
                Operator,
                name("2026-11-25T21-12-20-000000", UUID),
                UUID,
                "{}",
                time(),
            ),
            (
                Operator,
                name("9999-11-25T21-12-20-603000", UUID),
                UUID,
                "{}",
                time(),
            ),
            // A time that is not the header's, with a given id: the time is still created.
            (
                Pi,
                name("2026-11-25T21-12-20-000Z", "custom-id"),
                "custom-id",
                r#"{"id":"custom-id"}"#,
                time(),
            ),
            // A name without a created token is not checked; its header id is.
            (Pi, "fork.jsonl".into(), UUID, "{}", vec![]),
            (Omp, "fork.jsonl".into(), UUID, "{}", vec![hex_id("header")]),
        ];
        for (profile, name, id, args, expected) in rows {
            assert_eq!(
                problems(profile, &name, id, args),
                expected,
                "{profile:?} {name} header {id}"
            );
        }
    }

    /// Inputs are not created: an input's name is not checked, nor a header id it holds;
    /// a created header id in a rewritten input is.
    #[test]
    fn inputs_are_given() {
        let (known, args) = (HashSet::new(), "{}");
        let name = "2026-11-25T21-12-20Z_x.jsonl";
        let inputs = BTreeMap::from([(
            format!("sessions/{name}"),
            format!(r#"{{"type":"session","id":"{UUID}"}}"#).into_bytes(),
        )]);
        let given = Given {
            dir: "/w",
            known: &known,
            args,
            inputs: &inputs,
        };
        assert_eq!(
            check(
                Profile::Omp,
                &Value::Null,
                &snapshot(Profile::Omp, name, UUID),
                &given
            ),
            []
        );
        let fresh = check(
            Profile::Omp,
            &Value::Null,
            &snapshot(Profile::Omp, name, OTHER_UUID),
            &given,
        );
        assert_eq!(fresh.len(), 1, "{fresh:?}");
    }

    /// A response's path to a `.jsonl` file not in the snapshot (a new session not
    /// written yet) is checked by its name; one in the snapshot is checked there once.
    #[test]
    fn paths_in_the_response_are_checked_by_name() {
        let (known, inputs) = (HashSet::new(), BTreeMap::new());
        let given = Given {
            dir: "/w",
            known: &known,
            args: "{}",
            inputs: &inputs,
        };
        let name = format!("2026-11-25T21-12-20-603Z_{UUID}.jsonl");
        let response =
            json!({"ok": {"file": format!("/w/agent/sessions/{name}"), "n": [1, "x.jsonl"]}});
        let signatures = |profile, files: &Value| -> Vec<String> {
            check(profile, &response, files, &given)
                .iter()
                .map(NameProblem::signature)
                .collect()
        };
        assert_eq!(signatures(Profile::Pi, &json!({})), Vec::<String>::new());
        assert_eq!(
            signatures(Profile::Omp, &json!({})),
            ["name format.3: file name id is not 16 lowercase hex digits"]
        );
        let written = json!({ format!("agent/sessions/{name}"): {"lines": []} });
        assert_eq!(
            signatures(Profile::Omp, &written),
            ["name format.3: file name id is not 16 lowercase hex digits"],
            "once"
        );
    }

    /// The message names the file, what was written, the form and the clause.
    #[test]
    fn messages_name_the_file_the_spelling_the_form_and_the_clause() {
        let (known, inputs) = (HashSet::new(), BTreeMap::new());
        let given = Given {
            dir: "/w",
            known: &known,
            args: "{}",
            inputs: &inputs,
        };
        let name = format!("2026-11-25T21-12-20-603Z_{UUID}.jsonl");
        let table = [
            (
                Profile::Operator,
                vec![format!(
                    "sessions/{name}: file name {name:?} is not YYYY-MM-DDTHH-MM-SS-ffffff_<id>.jsonl (format.15)"
                )],
            ),
            (
                Profile::Omp,
                vec![
                    format!("sessions/{name}: created session id \"{OTHER_UUID}\" in the header is not 16 lowercase hex digits (format.3)"),
                    format!("sessions/{name}: created session id \"{UUID}\" in the file name is not 16 lowercase hex digits (format.3)"),
                    format!("sessions/{name}: the file name's id \"{UUID}\" is not the header's id \"{OTHER_UUID}\" (format.15)"),
                ],
            ),
        ];
        for (profile, expected) in table {
            let files = snapshot(profile, &name, OTHER_UUID);
            let messages: Vec<String> = check(profile, &Value::Null, &files, &given)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(messages, expected, "{profile:?}");
        }
        let late = format!("2026-11-25T21-12-20-604Z_{UUID}.jsonl");
        let messages: Vec<String> = check(
            Profile::Pi,
            &Value::Null,
            &snapshot(Profile::Pi, &late, UUID),
            &given,
        )
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            messages,
            [format!("sessions/{late}: file name {late:?} is not named from the header's timestamp: \"{name}\" (format.15)")]
        );
    }
}
