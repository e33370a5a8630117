//! The small files the program keeps for itself (a terminal's breadcrumb): read only
//! when regular and small, replaced by rename, never through a link.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

/// Reads `path` when it is itself a regular file (a link is not followed) of at most
/// `limit` bytes; `Ok(None)` when it is missing. A link, a FIFO, a device or a larger
/// file is an error: a small file the program keeps for itself (a breadcrumb) is never
/// waited on, read without end, or read through a link to somewhere else.
pub fn read_own_file(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (links are not followed)",
        ));
    }
    let mut bytes = Vec::new();
    File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(Some(bytes))
}

/// Replaces `path` with `bytes` without following a link: a new file is made beside it
/// (`.NAME.PID.tmp`, created anew, never opened through a link) and renamed over it, so
/// a link at `path` is replaced, not written through; a regular file's mode is kept. Its
/// folder must be a folder, not a link to one; it is created when missing.
pub fn replace_own_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    if !fs::symlink_metadata(dir)?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: a link, not a folder; not written through",
                dir.display()
            ),
        ));
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    match fs::remove_file(&temp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let permissions = fs::symlink_metadata(path)
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|m| m.permissions());
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.write_all(bytes)?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}
