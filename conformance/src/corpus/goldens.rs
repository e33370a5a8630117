//! A case's goldens (`expected.<profile>.json`, `expected.json`): the [`Golden`] a
//! run compares with, reading one, and the checks that refuse one before it is read.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use session_reference::model::Profile;

use super::problems::{CaseError, CaseProblem, GoldenProblem, GOLDEN_NESTING};

/// A case's expected output for one profile.
#[derive(Debug, Clone)]
pub struct Golden {
    /// `expected.<profile>.json` if present, else `expected.json`.
    pub path: PathBuf,
    /// Its text, or why it cannot be read (read as a regular file of at most
    /// [`crate::guard::MAX_FILE_BYTES`]).
    pub text: Result<String, GoldenProblem>,
}

/// Refuses a golden that is not a regular file or is larger than
/// [`crate::guard::MAX_FILE_BYTES`]: it is never read (a FIFO would hang a run, a huge
/// file take its memory). A missing golden is `corpus check`'s to report.
pub(super) fn check_goldens(dir: &Path) -> Result<(), CaseError> {
    let names = std::iter::once("expected.json".to_owned()).chain(
        Profile::ALL
            .iter()
            .map(|p| format!("expected.{}.json", p.name())),
    );
    for path in names.map(|name| dir.join(name)) {
        // Not followed: a link could lead out of the corpus, and `bless` would write there.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let problem = if meta.file_type().is_symlink() {
            GoldenProblem::Special("link")
        } else if !meta.is_file() {
            GoldenProblem::Special(crate::guard::kind_name(meta.file_type()))
        } else if meta.len() > crate::guard::MAX_FILE_BYTES {
            GoldenProblem::TooLarge(meta.len())
        } else {
            continue;
        };
        return Err(CaseError {
            path,
            line: None,
            kind: CaseProblem::Golden(problem),
        });
    }
    Ok(())
}

/// Reads a golden: a regular file of at most [`crate::guard::MAX_FILE_BYTES`], UTF-8.
pub(super) fn read_golden(path: &Path) -> Result<String, GoldenProblem> {
    use crate::guard::{read_regular, Contents, MAX_FILE_BYTES};
    // A link could lead out of the corpus (and `bless` would write through it).
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(GoldenProblem::Special("link"));
    }
    match read_regular(path, MAX_FILE_BYTES) {
        Ok(Contents::Bytes(bytes)) => {
            let text = String::from_utf8(bytes).map_err(|_| GoldenProblem::NotUtf8)?;
            // Never made a value past the depth the comparison walks.
            match crate::guard::nesting(&text) {
                depth if depth > GOLDEN_NESTING => Err(GoldenProblem::TooDeep { depth }),
                _ => Ok(text),
            }
        }
        Ok(Contents::Special(kind)) => Err(GoldenProblem::Special(kind)),
        Ok(Contents::TooLarge(bytes)) => Err(GoldenProblem::TooLarge(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(GoldenProblem::Missing),
        Err(e) => Err(GoldenProblem::Unreadable(e.to_string())),
    }
}

/// Whether a golden's text is JSON, without building its value: nested at most
/// [`GOLDEN_NESTING`] deep, then read by a parser that keeps nothing.
pub(super) fn check_golden_text(text: &str) -> Result<(), GoldenProblem> {
    let depth = crate::guard::nesting(text);
    if depth > GOLDEN_NESTING {
        return Err(GoldenProblem::TooDeep { depth });
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    reader.disable_recursion_limit();
    serde::de::IgnoredAny::deserialize(&mut reader)
        .and_then(|_| reader.end())
        .map_err(|e| GoldenProblem::not_json(&e))
}
