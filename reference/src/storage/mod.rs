//! Where bytes go: the storage of 000 "Storage abstraction", with a file backend and an
//! in-memory backend.
//!
//! 000's `SessionStorage` has twelve methods; its `exists` and `writeText` come in a
//! synchronous and an asynchronous form, which plain Rust code does not tell apart, so
//! the trait has ten:
//!
//! | 000 | here |
//! | --- | --- |
//! | `ensureDirSync` | [`Storage::ensure_dir`] |
//! | `existsSync`, `exists` | [`Storage::exists`] |
//! | `writeTextSync`, `writeText` | [`Storage::write_text`] (atomic) |
//! | `statSync` | [`Storage::stat`] |
//! | `listFilesSync` | [`Storage::list_files`] |
//! | `readText` | [`Storage::read`] |
//! | `readTextPrefix` | [`Storage::read_prefix`] |
//! | `rename`, `unlink` | [`Storage::rename`], [`Storage::unlink`] |
//! | `openWriter` | [`Storage::open_writer`], a [`Writer`] (`writeLine`, `flush`, `fsync`, `close`, `getError`) |
//!
//! The in-memory backend is [`memory`]; the small files the program keeps for itself
//! (breadcrumbs), read and replaced without following links, are [`own_files`].
//!
//! Invariant: a full rewrite is atomic (temp file in the same directory, write,
//! fsync, rename), so a reader sees the old file or the new one, never half of one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

mod memory;
mod own_files;

pub use memory::MemoryStorage;
pub use own_files::{read_own_file, replace_own_file};

/// A file's size and modification time (000 `SessionStorageStat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Bytes.
    pub size: u64,
    /// Milliseconds since the epoch.
    pub mtime_ms: i64,
}

/// The filesystem operations the session manager and the listings use.
/// Clauses: persistence.18.
pub trait Storage: std::fmt::Debug {
    /// Creates a folder and its parents (`ensureDirSync`).
    fn ensure_dir(&mut self, dir: &Path) -> io::Result<()>;
    /// Whether a file exists (`existsSync`, `exists`).
    fn exists(&self, path: &Path) -> bool;
    /// Replaces a file atomically: temp file, fsync, rename (`writeText`).
    fn write_text(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()>;
    /// Size and modification time of a regular file; `Ok(None)` when it does not exist (`statSync`).
    fn stat(&self, path: &Path) -> io::Result<Option<Stat>>;
    /// The regular files matching `pattern` under `dir`, sorted; empty when `dir` does
    /// not exist (`listFilesSync(dir, pattern)`). The listings use two patterns:
    /// `*.jsonl` (the files directly in `dir`) and `*/*.jsonl` (those one folder down,
    /// `listAll`); a folder reached through a link is not entered.
    fn list_files(&self, dir: &Path, pattern: &str) -> io::Result<Vec<PathBuf>>;
    /// Reads a whole file; `Ok(None)` when it does not exist (`readText`).
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// Reads at most `max` bytes from the start of a file (`readTextPrefix`).
    fn read_prefix(&self, path: &Path, max: usize) -> io::Result<Option<Vec<u8>>>;
    /// Renames a file, creating the folder it moves into.
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn unlink(&mut self, path: &Path) -> io::Result<()>;
    /// Opens a file for appending lines (`openWriter(path, {flags: "a"})`), creating
    /// it and its folder when missing.
    fn open_writer(&mut self, path: &Path) -> io::Result<Box<dyn Writer>>;
    /// Reads a blob: as [`Storage::read`], except that a file backend never follows a
    /// link (a blob is a regular file in the store, or it is missing).
    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.read(path)
    }
    /// Removes what killed rewrites left in `dir` (a file backend: [`remove_dead_writers_temps`]);
    /// nothing by default.
    fn remove_stale_temps(&mut self, _dir: &Path) {}
}

/// An open file that lines are appended to (000 `SessionStorageWriter`). The first
/// error is kept: every later call returns it.
pub trait Writer {
    /// Appends `line` and a newline (`writeLine`).
    fn write_line(&mut self, line: &str) -> io::Result<()>;
    /// Hands buffered bytes to the system (`flush`).
    fn flush(&mut self) -> io::Result<()>;
    /// Makes the bytes durable (`fsync`).
    fn fsync(&mut self) -> io::Result<()>;
    /// Flushes and closes (`close`).
    fn close(&mut self) -> io::Result<()>;
    /// The first error, if any (`getError`).
    fn error(&self) -> Option<String>;
}

/// A [`Writer`]'s first error, returned again by every later call.
#[derive(Debug, Default)]
struct Latch(Option<String>);

impl Latch {
    fn run(&mut self, call: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        if let Some(message) = &self.0 {
            return Err(io::Error::other(message.clone()));
        }
        call().inspect_err(|e| self.0 = Some(e.to_string()))
    }
}

/// The real filesystem.
#[derive(Debug, Default)]
pub struct FileStorage;

/// A [`Storage::list_files`] pattern (`*SUFFIX` or `*/*SUFFIX`): whether it goes one
/// folder down, and the file-name suffix it asks for.
fn pattern_parts(pattern: &str) -> (bool, &str) {
    let (folders, name) = match pattern.strip_prefix("*/") {
        Some(name) => (true, name),
        None => (false, pattern),
    };
    (folders, name.strip_prefix('*').unwrap_or(name))
}

/// The temp file of an atomic rewrite of `path`: `.NAME.PID.tmp` in its folder, which
/// is created when missing ([`remove_dead_writers_temps`] knows the name).
/// Clauses: persistence.9, persistence.19.
pub fn temp_beside(path: &Path) -> io::Result<PathBuf> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(dir.join(format!(".{name}.{}.tmp", std::process::id())))
}

/// The entries of `dir`; none when it does not exist.
fn read_dir_or_empty(dir: &Path) -> io::Result<Vec<fs::DirEntry>> {
    match fs::read_dir(dir) {
        Ok(items) => Ok(items.flatten().collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// A [`Writer`] over an open file.
#[derive(Debug)]
struct FileWriter {
    file: Option<File>,
    latch: Latch,
}

impl Writer for FileWriter {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        let file = &mut self.file;
        self.latch.run(|| {
            let file = file
                .as_mut()
                .ok_or_else(|| io::Error::other("Writer closed"))?;
            file.write_all(format!("{line}\n").as_bytes())
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        let file = &mut self.file;
        self.latch
            .run(|| file.as_mut().map_or(Ok(()), Write::flush))
    }

    fn fsync(&mut self) -> io::Result<()> {
        let file = &self.file;
        self.latch
            .run(|| file.as_ref().map_or(Ok(()), File::sync_all))
    }

    fn close(&mut self) -> io::Result<()> {
        let file = &mut self.file;
        self.latch
            .run(|| file.take().map_or(Ok(()), |mut f| f.flush()))
    }

    fn error(&self) -> Option<String> {
        self.latch.0.clone()
    }
}

/// Reads a regular file (following a link to one); anything else is an error, so
/// that a FIFO or a device is never waited on or read without end.
/// Clauses: loading.10.
pub fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    read_if_file(path, fs::metadata(path), "not a regular file")
}

/// Reads `path` when `meta` (its metadata, read following links or not) says it is a
/// regular file; `Ok(None)` when it is missing; else an error with `refusal`.
fn read_if_file(
    path: &Path,
    meta: io::Result<fs::Metadata>,
    refusal: &str,
) -> io::Result<Option<Vec<u8>>> {
    match meta {
        Ok(meta) if !meta.is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            refusal.to_owned(),
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
/// Clauses: persistence.9.
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
    fn ensure_dir(&mut self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    /// Writes a new file beside `path` and renames it over `path`: a reader sees the
    /// old file or the new one, whole. The new file keeps the old one's permissions, and
    /// a symbolic link is rewritten at its target, so the link stays a link.
    fn write_text(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let linked = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let target = if linked {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
        } else {
            path.to_owned()
        };
        let path = target.as_path();
        let permissions = fs::metadata(path).ok().map(|m| m.permissions());
        let temp = temp_beside(path)?;
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

    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        match fs::metadata(path) {
            Ok(meta) if meta.is_file() => {
                let mtime_ms = match meta.modified()?.duration_since(std::time::UNIX_EPOCH) {
                    Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
                    Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
                };
                Ok(Some(Stat {
                    size: meta.len(),
                    mtime_ms,
                }))
            }
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list_files(&self, dir: &Path, pattern: &str) -> io::Result<Vec<PathBuf>> {
        let (folders, suffix) = pattern_parts(pattern);
        let dirs = if folders {
            let mut dirs: Vec<PathBuf> = read_dir_or_empty(dir)?
                .into_iter()
                .filter(|item| item.file_type().is_ok_and(|t| t.is_dir()))
                .map(|item| item.path())
                .collect();
            dirs.sort();
            dirs
        } else {
            vec![dir.to_owned()]
        };
        let mut files = Vec::new();
        for dir in dirs {
            // One project folder that cannot be read hides only its own sessions.
            let items = match read_dir_or_empty(&dir) {
                Ok(items) => items,
                Err(_) if folders => continue,
                Err(e) => return Err(e),
            };
            let mut found: Vec<PathBuf> = items
                .into_iter()
                .filter(|item| item.file_name().to_string_lossy().ends_with(suffix))
                .map(|item| item.path())
                .filter(|path| fs::metadata(path).is_ok_and(|m| m.is_file()))
                .collect();
            found.sort();
            files.extend(found);
        }
        Ok(files)
    }

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

    fn read_prefix(&self, path: &Path, max: usize) -> io::Result<Option<Vec<u8>>> {
        if self.stat(path)?.is_none() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        File::open(path)?
            .take(u64::try_from(max).unwrap_or(u64::MAX))
            .read_to_end(&mut bytes)?;
        Ok(Some(bytes))
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        fs::rename(from, to)
    }

    fn unlink(&mut self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn open_writer(&mut self, path: &Path) -> io::Result<Box<dyn Writer>> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Box::new(FileWriter {
            file: Some(file),
            latch: Latch::default(),
        }))
    }

    /// A blob is read only when it is a regular file itself: a link is never followed.
    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        read_if_file(
            path,
            fs::symlink_metadata(path),
            "a blob must be a regular file, not a link or a special file",
        )
    }

    fn remove_stale_temps(&mut self, dir: &Path) {
        remove_dead_writers_temps(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both backends answer the listing calls alike: the `.jsonl` files directly in a
    /// folder, sorted, with their sizes; a missing folder lists nothing.
    #[test]
    fn both_backends_list_stat_and_read_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let memory = MemoryStorage::default();
        let mut backends: Vec<Box<dyn Storage>> = vec![Box::new(FileStorage), Box::new(memory)];
        for storage in &mut backends {
            for (name, text) in [
                ("b.jsonl", "bb\n"),
                ("a.jsonl", "a\n"),
                ("c.txt", "c"),
                ("sub/d.jsonl", "d"),
            ] {
                storage
                    .write_text(&root.join(name), text.as_bytes())
                    .unwrap();
            }
            let listed = storage.list_files(root, "*.jsonl").unwrap();
            assert_eq!(listed, vec![root.join("a.jsonl"), root.join("b.jsonl")]);
            let nested = storage.list_files(root, "*/*.jsonl").unwrap();
            assert_eq!(nested, vec![root.join("sub/d.jsonl")]);
            assert_eq!(
                storage.stat(&root.join("b.jsonl")).unwrap().map(|s| s.size),
                Some(3)
            );
            assert_eq!(storage.stat(&root.join("none.jsonl")).unwrap(), None);
            assert_eq!(
                storage
                    .read_prefix(&root.join("b.jsonl"), 1)
                    .unwrap()
                    .unwrap(),
                b"b"
            );
            assert!(storage
                .list_files(&root.join("missing"), "*.jsonl")
                .unwrap()
                .is_empty());
            storage.unlink(&root.join("a.jsonl")).unwrap();
            assert!(!storage.exists(&root.join("a.jsonl")));
        }
    }

    #[test]
    fn file_storage_appends_and_rewrites_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/s.jsonl");
        let mut storage = FileStorage;
        assert_eq!(storage.read(&path).unwrap(), None);
        let mut writer = storage.open_writer(&path).unwrap();
        writer.write_line("a").unwrap();
        writer.write_line("b").unwrap();
        writer.fsync().unwrap();
        writer.close().unwrap();
        assert!(writer.write_line("c").is_err(), "a closed writer refuses");
        assert_eq!(writer.error().as_deref(), Some("Writer closed"));
        assert_eq!(storage.read(&path).unwrap().unwrap(), b"a\nb\n");
        assert_eq!(storage.read_prefix(&path, 3).unwrap().unwrap(), b"a\nb");
        assert_eq!(storage.stat(&path).unwrap().map(|s| s.size), Some(4));
        storage.write_text(&path, b"c\n").unwrap();
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
        let mut storage = FileStorage;
        storage.write_text(&link, b"b\n").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"b\n");
        storage.write_text(&target, b"c\n").unwrap();
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
        assert_eq!(FileStorage.read(&path).unwrap().unwrap(), b"a\n");
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
        assert!(FileStorage.read_blob(&blob).is_err());
        fs::write(dir.path().join("plain"), b"x").unwrap();
        let plain = FileStorage.read_blob(&dir.path().join("plain"));
        assert_eq!(plain.unwrap().unwrap(), b"x");
    }

    #[test]
    fn memory_storage_can_fail() {
        let mut storage = MemoryStorage::default();
        storage.fail_writes = Some("disk full".into());
        assert!(storage.write_text(Path::new("x"), b"a").is_err());
        assert!(storage.open_writer(Path::new("x")).is_err());
        assert!(!storage.exists(Path::new("x")));
    }
}
