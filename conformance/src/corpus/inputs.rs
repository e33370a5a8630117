//! A case's input files: the regular files under its `input/` folder, read by name,
//! with links that stay inside the case folder read through.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::problems::{CaseError, CaseProblem};

/// The files under the case's `input/` folder, by path relative to it (`/`-separated).
/// An input must be a regular file of at most [`crate::guard::MAX_FILE_BYTES`], whose
/// name reaches the adapter unchanged (UTF-8, no `\`); a link to one is read through when
/// it stays inside the case folder. Links to folders are skipped, not followed.
pub(super) fn read_inputs(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, CaseError> {
    let input_dir = dir.join("input");
    let mut inputs = BTreeMap::new();
    if !input_dir.is_dir() {
        return Ok(inputs);
    }
    let error = |path: &Path, kind| CaseError {
        path: path.to_path_buf(),
        line: None,
        kind,
    };
    let unreadable = |e: &dyn fmt::Display| CaseProblem::InputUnreadable(e.to_string());
    let folder = dir.canonicalize().map_err(|e| error(dir, unreadable(&e)))?;
    let root = inside_folder(&folder, &input_dir).map_err(|kind| error(&input_dir, kind))?;
    for item in walkdir::WalkDir::new(&root).min_depth(1) {
        let item = item.map_err(|e| error(e.path().unwrap_or(&input_dir), unreadable(&e)))?;
        if item.file_type().is_dir() {
            continue;
        }
        let relative = item.path().strip_prefix(&root).unwrap_or(item.path());
        let shown = input_dir.join(relative);
        let name =
            input_name(relative).map_err(|why| error(&shown, CaseProblem::InputName(why)))?;
        let target = if item.file_type().is_symlink() {
            // A link to a folder is not followed, wherever it leads.
            if item.path().is_dir() {
                continue;
            }
            inside_folder(&folder, item.path()).map_err(|kind| error(&shown, kind))?
        } else {
            item.path().to_path_buf()
        };
        let bytes = read_input(&target).map_err(|kind| error(&shown, kind))?;
        inputs.insert(name, bytes);
    }
    Ok(inputs)
}

/// Where `path` leads (links resolved), when that is inside `folder` (canonical).
fn inside_folder(folder: &Path, path: &Path) -> Result<PathBuf, CaseProblem> {
    let target = path
        .canonicalize()
        .map_err(|e| CaseProblem::InputUnreadable(e.to_string()))?;
    if target.starts_with(folder) {
        Ok(target)
    } else {
        Err(CaseProblem::LinkLeaves)
    }
}

/// An input's name as the adapter's request and the snapshot spell it: its parts joined
/// by `/`. Refused (why) when a part is not UTF-8 or holds a `\`: such a name would
/// reach the case directory changed, and two of them could merge into one.
fn input_name(relative: &Path) -> Result<String, &'static str> {
    let mut parts = Vec::new();
    for component in relative.components() {
        let std::path::Component::Normal(part) = component else {
            return Err("is not a plain relative path");
        };
        let part = part.to_str().ok_or("is not UTF-8")?;
        if part.contains('\\') {
            return Err("holds a `\\`, which the runner would read as a folder separator");
        }
        parts.push(part);
    }
    Ok(parts.join("/"))
}

/// An input file's bytes: a regular file within the size limit.
fn read_input(path: &Path) -> Result<Vec<u8>, CaseProblem> {
    use crate::guard::{read_regular, Contents, MAX_FILE_BYTES};
    match read_regular(path, MAX_FILE_BYTES) {
        Ok(Contents::Bytes(bytes)) => Ok(bytes),
        Ok(Contents::Special(kind)) => Err(CaseProblem::InputNotRegular(kind)),
        Ok(Contents::TooLarge(bytes)) => Err(CaseProblem::InputTooLarge(bytes)),
        Err(e) => Err(CaseProblem::InputUnreadable(e.to_string())),
    }
}
