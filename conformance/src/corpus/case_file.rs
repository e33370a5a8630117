//! `case.json`: its fields ([`CaseFile`]), the vocabularies they draw on (tags, seed
//! sources, safety checks, the argument keys that name paths), and reading it.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::problems::{message_of, CaseError, CaseProblem};
use crate::protocol::Operation;

/// `case.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// Stable id, never reused (independent of the path).
    pub id: u32,
    /// Kebab-case name; equals the case directory's name.
    pub name: String,
    /// What the case checks, in a sentence.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The profiles it applies to.
    pub profiles: Vec<String>,
    /// The clauses of the specification (`docs/spec/`) the case pins, e.g. `context.4`;
    /// at least one. Where each rule comes from is the clause's business, not the case's.
    #[schemars(length(min = 1))]
    pub clauses: Vec<String>,
    // The schema's description (schemas/ is generated from this comment): the list is
    // `Operation::ALL`.
    /// The operation: `load`, `context`, `tree`, `apply`, `persist`, `list`, `recent`,
    /// `continue`, `resolve`, `history`, `switch`, `search`, `compaction` or `branch_summary`.
    #[schemars(with = "String")]
    pub op: Operation,
    /// The operation's arguments (may use `$repeat`/`$concat` templates).
    #[serde(default)]
    pub args: Value,
    /// What must survive, whatever the output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub safety: Vec<SafetyCheck>,
    /// Modification times the runner gives input files before the request:
    /// input path → ISO time (`2026-01-01T00:00:00.000Z`). Listing orders by them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mtimes: BTreeMap<String, String>,
    /// Input files in which the runner replaces the text `<dir>` with the case's working
    /// directory before the request (files that must hold absolute paths, e.g. breadcrumbs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dir_inputs: Vec<String>,
    /// Categories the case belongs to ([`TAGS`]), which expected-divergence lists can name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Faults the implementation's storage raises during the request (`PROTOCOL.md`
    /// "Faults"); a case with faults is skipped by an adapter without the `faults` capability.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<crate::faults::Fault>,
}

/// The tags a case may carry (`corpus/README.md` "Tags"), with what each means.
pub const TAGS: [(&str, &str); 10] = [
    ("legacy-v1", "an input session file is version 1 (`version ?? 1` read as a number is below 2): migrated on load"),
    ("legacy-v2", "an input session file is version 2 (read as a number, from 2 to below 3): migrated on load"),
    ("torn-line", "an input session file ends in a line that is not complete JSON"),
    ("bad-line", "an input session file has a line that is not JSON, or not an object, before its last"),
    ("bad-header", "an input session file has no valid header: empty, or its first value is not a session header"),
    ("file-naming", "the golden names a file the implementation creates (`<ftime>_<session:N>.jsonl`)"),
    ("missing-file", "the operation names a session file that does not exist"),
    ("cycle", "an input session file's parent links form a cycle"),
    ("cut-at-other-role", "the golden cuts at a message whose role is neither user nor assistant (a bash execution, a custom or hook message), where document 004's literal rule cuts elsewhere"),
    ("lenient-message", "a message is one the real implementations' types refuse (`message_types`), as the point of the case; its description says which and why"),
];

/// A data-safety check.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(tag = "check", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SafetyCheck {
    /// The input file's exact bytes still exist in the working directory, as a whole file or the start of one.
    BytesKept {
        /// The input file.
        file: String,
    },
    /// Every JSON line of the input file is still a line of it, and every new line parses.
    LinesKept {
        /// The input file.
        file: String,
    },
    /// No `.jsonl` file holds more than one `type:"session"` line.
    SingleHeader,
}

/// The argument keys whose values name a file or folder inside the case directory.
pub const PATH_ARGS: [&str; 5] = ["file", "open", "fork_from", "agent_dir", "session_dir"];

/// Reads `case.json` (`path`): a regular file of at most [`crate::guard::MAX_FILE_BYTES`],
/// UTF-8, nested at most [`crate::guard::MAX_NESTING`] deep (serde_json's own limit of
/// 128 is lifted, so `args` may nest as deep as the rest of the harness reads), and a
/// case. Returns the case and its text.
pub(super) fn read_case_file(path: &Path) -> Result<(CaseFile, String), CaseError> {
    use crate::guard::{read_regular, Contents, MAX_FILE_BYTES};
    let error = |line, kind| CaseError {
        path: path.to_path_buf(),
        line,
        kind,
    };
    let not_a_case = |message: String| error(None, CaseProblem::NotACase(message));
    // A link could lead out of the corpus: `case.json` is read only as a file of its own.
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(not_a_case(
            "is a link; a case file is a regular file".to_owned(),
        ));
    }
    let bytes = match read_regular(path, MAX_FILE_BYTES) {
        Ok(Contents::Bytes(bytes)) => bytes,
        Ok(Contents::Special(kind)) => {
            return Err(not_a_case(format!("is a {kind}, not a regular file")))
        }
        Ok(Contents::TooLarge(bytes)) => {
            return Err(not_a_case(format!(
                "{bytes} bytes, more than the limit of {MAX_FILE_BYTES}"
            )))
        }
        Err(e) => return Err(not_a_case(e.to_string())),
    };
    let text = String::from_utf8(bytes).map_err(|_| not_a_case("not UTF-8".to_owned()))?;
    crate::guard::check_nesting(&text).map_err(|e| error(None, CaseProblem::TooDeep(e)))?;
    let mut reader = serde_json::Deserializer::from_str(&text);
    reader.disable_recursion_limit();
    let file = CaseFile::deserialize(&mut reader)
        .and_then(|file| reader.end().map(|()| file))
        .map_err(|e| error(Some(e.line()), CaseProblem::NotACase(message_of(&e))))?;
    Ok((file, text))
}
