//! Where bytes go: a storage trait with a file backend and an in-memory backend (000 "Storage abstraction").
//!
//! Invariant: a full rewrite is atomic (temp file in the same directory, write,
//! fsync, rename), so a reader sees the old file or the new one, never half of one.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The filesystem operations the session manager needs.
pub trait Storage {
    /// Reads a whole file; `Ok(None)` when it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// Appends bytes to a file, creating it when missing.
    fn append(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Makes appended bytes durable (`fsync`).
    fn sync(&mut self, path: &Path) -> io::Result<()>;
    /// Replaces a file atomically: temp file, fsync, rename.
    fn write_atomic(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Renames a file.
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()>;
    /// Whether a file exists.
    fn exists(&self, path: &Path) -> bool;
    /// Reads a blob: as [`Storage::read`], except that a file backend never follows a
    /// link (a blob is a regular file in the store, or it is missing).
    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.read(path)
    }
    /// Removes what killed rewrites left in `dir` (a file backend: [`remove_dead_writers_temps`]);
    /// nothing by default.
    fn remove_stale_temps(&mut self, _dir: &Path) {}
}

/// The real filesystem.
#[derive(Debug, Default)]
pub struct FileStorage {
    open: Option<(PathBuf, File)>,
}

impl FileStorage {
    fn writer(&mut self, path: &Path) -> io::Result<&mut File> {
        if self.open.as_ref().is_none_or(|(p, _)| p != path) {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                fs::create_dir_all(dir)?;
            }
            let file = OpenOptions::new().create(true).append(true).open(path)?;
            self.open = Some((path.to_owned(), file));
        }
        match &mut self.open {
            Some((_, file)) => Ok(file),
            None => Err(io::Error::other("no open file")),
        }
    }
}

/// Reads a regular file (following a link to one); anything else is an error, so
/// that a FIFO or a device is never waited on or read without end.
pub fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )),
        Ok(_) => fs::read(path).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Removes the temp files (`.NAME.jsonl.PID.tmp`) that rewrites of session files in
/// `dir` left when their writer was killed: those whose process is gone. Any session's:
/// a killed `createBranchedSession` leaves the temp file of a session that never came
/// to exist, which no read of its own would find. A live writer's file is kept, and
/// where processes cannot be looked up (no `/proc`), every file is kept.
pub fn remove_dead_writers_temps(dir: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(items) = fs::read_dir(dir) else {
        return;
    };
    for item in items.flatten() {
        let file_name = item.file_name();
        let file_name = file_name.to_string_lossy();
        let pid = file_name
            .strip_prefix('.')
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|rest| rest.rsplit_once(".jsonl."))
            .map(|(_, pid)| pid)
            .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
        let regular = item.file_type().is_ok_and(|t| t.is_file());
        if let (Some(pid), true) = (pid, regular) {
            if !proc.join(pid).exists() {
                let _ = fs::remove_file(item.path());
            }
        }
    }
}

impl Storage for FileStorage {
    /// Reads a regular file (following a link to one); anything else is an error,
    /// so that a FIFO or a device is never waited on or read without end. Reading a
    /// session file (`*.jsonl`) first removes what killed rewrites of it left
    /// ([`remove_dead_writers_temps`]).
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        if path.extension().is_some_and(|e| e == "jsonl") {
            match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => remove_dead_writers_temps(dir),
                _ => remove_dead_writers_temps(Path::new(".")),
            }
        }
        read_regular(path)
    }

    /// A blob is read only when it is a regular file itself: a link is never followed.
    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match fs::symlink_metadata(path) {
            Ok(meta) if !meta.is_file() => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a blob must be a regular file, not a link or a special file",
            )),
            Ok(_) => fs::read(path).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn remove_stale_temps(&mut self, dir: &Path) {
        remove_dead_writers_temps(dir);
    }

    fn append(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.writer(path)?.write_all(bytes)
    }

    fn sync(&mut self, path: &Path) -> io::Result<()> {
        if path.exists() {
            self.writer(path)?.sync_all()?;
        }
        Ok(())
    }

    /// Writes a new file beside `path` and renames it over `path`: a reader sees the
    /// old file or the new one, whole. The new file keeps the old one's permissions, and
    /// a symbolic link is rewritten at its target, so the link stays a link.
    fn write_atomic(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.open = None;
        let linked = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let target = if linked {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
        } else {
            path.to_owned()
        };
        let path = target.as_path();
        let permissions = fs::metadata(path).ok().map(|m| m.permissions());
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(dir)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let result = (|| {
            let mut file = File::create(&temp)?;
            if let Some(permissions) = permissions {
                file.set_permissions(permissions)?;
            }
            file.write_all(bytes)?;
            file.sync_all()?;
            drop(file);
            fs::rename(&temp, path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&temp);
        }
        result
    }

    /// Renames a file, creating the folder it moves into (000 `ensureDirSync`).
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.open = None;
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        fs::rename(from, to)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// A map from path to bytes, for tests and sessions that are never written.
#[derive(Debug, Default, Clone)]
pub struct MemoryStorage {
    /// The files.
    pub files: BTreeMap<PathBuf, Vec<u8>>,
    /// When set, every write fails with this message (to test error latching).
    pub fail_writes: Option<String>,
}

impl MemoryStorage {
    fn check(&self) -> io::Result<()> {
        match &self.fail_writes {
            Some(message) => Err(io::Error::other(message.clone())),
            None => Ok(()),
        }
    }
}

impl Storage for MemoryStorage {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        Ok(self.files.get(path).cloned())
    }

    fn append(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.check()?;
        self.files
            .entry(path.to_owned())
            .or_default()
            .extend_from_slice(bytes);
        Ok(())
    }

    fn sync(&mut self, _path: &Path) -> io::Result<()> {
        self.check()
    }

    fn write_atomic(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.check()?;
        self.files.insert(path.to_owned(), bytes.to_vec());
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.check()?;
        let bytes = self
            .files
            .remove(from)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        self.files.insert(to.to_owned(), bytes);
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        self.files.contains_key(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_storage_appends_and_rewrites_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/s.jsonl");
        let mut storage = FileStorage::default();
        assert_eq!(storage.read(&path).unwrap(), None);
        storage.append(&path, b"a\n").unwrap();
        storage.append(&path, b"b\n").unwrap();
        storage.sync(&path).unwrap();
        assert_eq!(storage.read(&path).unwrap().unwrap(), b"a\nb\n");
        storage.write_atomic(&path, b"c\n").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"c\n");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file is left behind");
    }

    #[cfg(unix)]
    #[test]
    fn rewrites_keep_the_mode_and_the_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.jsonl");
        fs::write(&target, b"a\n").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let mut storage = FileStorage::default();
        storage.write_atomic(&link, b"b\n").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"b\n");
        storage.write_atomic(&target, b"c\n").unwrap();
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::read(&link).unwrap(), b"c\n");
    }

    /// A rewrite killed before its rename leaves `.NAME.PID.tmp`; the next read of a
    /// session in the folder removes it when its writer is gone, and keeps a live writer's.
    #[cfg(target_os = "linux")]
    #[test]
    fn reading_a_session_removes_temps_of_dead_writers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        fs::write(&path, b"a\n").unwrap();
        let dead = dir.path().join(".s.jsonl.4000000000.tmp");
        let live = dir
            .path()
            .join(format!(".s.jsonl.{}.tmp", std::process::id()));
        let other = dir.path().join(".t.jsonl.4000000000.tmp");
        let not_a_session = dir.path().join(".notes.4000000000.tmp");
        for leftover in [&dead, &live, &other, &not_a_session] {
            fs::write(leftover, b"half").unwrap();
        }
        assert_eq!(read_regular(&path).unwrap().unwrap(), b"a\n");
        assert!(dead.exists(), "a plain read removes nothing");
        assert_eq!(FileStorage::default().read(&path).unwrap().unwrap(), b"a\n");
        assert!(!dead.exists(), "a dead writer's temp file is removed");
        assert!(live.exists(), "a live writer's is kept");
        assert!(
            !other.exists(),
            "another session's dead writer's too (a killed createBranchedSession's)"
        );
        assert!(
            not_a_session.exists(),
            "what is not a session's temp file stays"
        );
    }

    /// A `createBranchedSession` killed before its rename leaves the temp file of a
    /// session that never came to exist; the next open of any session with that session
    /// directory removes it (CRASH.md, the reference in profile pi).
    #[cfg(target_os = "linux")]
    #[test]
    fn opening_a_session_removes_dead_writers_temps_in_the_session_directory() {
        use crate::model::Profile;
        use crate::session::{Options, SessionManager};
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        fs::create_dir(&sessions).unwrap();
        let orphan = sessions.join(".2026-01-01T00-00-00-000Z_b.jsonl.4000000000.tmp");
        fs::write(&orphan, b"half").unwrap();
        let source = dir.path().join("a.jsonl");
        fs::write(&source, "{\"type\":\"session\",\"version\":3,\"id\":\"a\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n").unwrap();
        let options = Options::new(Profile::Pi, "/w", &sessions);
        SessionManager::open(&source, options).unwrap();
        assert!(!orphan.exists());
    }

    #[cfg(unix)]
    #[test]
    fn blob_reads_do_not_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("outside");
        fs::write(&target, b"secret").unwrap();
        let blob = dir.path().join("blob");
        std::os::unix::fs::symlink(&target, &blob).unwrap();
        assert!(FileStorage::default().read_blob(&blob).is_err());
        fs::write(dir.path().join("plain"), b"x").unwrap();
        let plain = FileStorage::default().read_blob(&dir.path().join("plain"));
        assert_eq!(plain.unwrap().unwrap(), b"x");
    }

    #[test]
    fn memory_storage_can_fail() {
        let mut storage = MemoryStorage {
            fail_writes: Some("disk full".into()),
            ..MemoryStorage::default()
        };
        assert!(storage.append(Path::new("x"), b"a").is_err());
        assert!(!storage.exists(Path::new("x")));
    }
}
