//! The safety checks of a case (`case.json` `safety`): what an implementation must not
//! have lost in the case directory, whatever its output.

use std::path::Path;

use serde_json::Value;

use crate::corpus::{Case, SafetyCheck};

/// What `check` finds lost in the case directory `dir`, if anything.
pub(super) fn safety(check: &SafetyCheck, case: &Case, dir: &Path) -> Option<String> {
    match check {
        SafetyCheck::BytesKept { file } => {
            let original = case.inputs.get(file)?;
            // A title slot before them is omp 18's format, not a loss (clause loading.8).
            let found = walk_files(dir).iter().any(|p| {
                read_left(p).is_some_and(|b| {
                    b.starts_with(original)
                        || crate::snapshot::title_slot(&b).1.starts_with(original)
                })
            });
            (!found).then(|| format!("the bytes of {file} are gone"))
        }
        SafetyCheck::LinesKept { file } => {
            let original = String::from_utf8_lossy(case.inputs.get(file)?).into_owned();
            let now = crate::guard::inside(dir, file)
                .ok()
                .and_then(|p| read_left(&p))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let now_lines: Vec<&str> = now.split('\n').map(|l| l.trim_end_matches('\r')).collect();
            let lost: Vec<&str> = original
                .split('\n')
                .map(|l| l.trim_end_matches('\r'))
                .filter(|l| serde_json::from_str::<Value>(l).is_ok())
                .filter(|l| !now_lines.contains(l))
                .collect();
            let orig_lines: Vec<&str> = original.split('\n').collect();
            let fused = now_lines
                .iter()
                .filter(|l| {
                    !l.trim().is_empty()
                        && !orig_lines.contains(l)
                        && serde_json::from_str::<Value>(l).is_err()
                })
                .count();
            match (lost.len(), fused) {
                (0, 0) => None,
                (lost, fused) => Some(format!(
                    "{file} lost {lost} line(s) and has {fused} new unreadable line(s)"
                )),
            }
        }
        SafetyCheck::SingleHeader => {
            let doubled: Vec<String> = walk_files(dir)
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .filter(|p| {
                    let bytes = read_left(p).unwrap_or_default();
                    let text = String::from_utf8_lossy(&bytes);
                    text.lines()
                        .filter(|l| {
                            serde_json::from_str::<Value>(l).is_ok_and(|v| v["type"] == "session")
                        })
                        .count()
                        > 1
                })
                .map(|p| {
                    p.strip_prefix(dir)
                        .unwrap_or(&p)
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            (!doubled.is_empty()).then(|| format!("header written twice in {}", doubled.join(", ")))
        }
    }
}

/// The files under `dir` that a safety check reads: regular files, and links that lead
/// to one; links to folders are not followed (no loops, nothing outside `dir`).
pub(super) fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|item| !item.file_type().is_dir())
        .map(walkdir::DirEntry::into_path)
        .collect()
}

/// A file the adapter left, when it is a regular file within the read limit (a FIFO
/// or a device is never opened, a 1 TiB sparse file never read).
pub(super) fn read_left(path: &Path) -> Option<Vec<u8>> {
    match crate::guard::read_regular(path, crate::guard::MAX_FILE_BYTES) {
        Ok(crate::guard::Contents::Bytes(bytes)) => Some(bytes),
        _ => None,
    }
}
