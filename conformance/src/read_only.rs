//! A storage for looking at a session without changing it: the CLI's `load`, `context`
//! and `tree` open files through the reference's SessionManager, which may want to
//! migrate, recover or rename them; here those writes stay in memory.

use std::io;
use std::path::{Path, PathBuf};

use session_reference::storage::{read_regular, FileStorage, MemoryStorage, Stat, Storage, Writer};

/// Reads from the real filesystem and keeps every write in memory: for inspecting a
/// file with the session manager without changing anything on disk.
#[derive(Debug, Default, Clone)]
pub struct ReadOnlyStorage {
    /// The writes that were kept in memory.
    pub overlay: MemoryStorage,
}

impl Storage for ReadOnlyStorage {
    fn ensure_dir(&mut self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        self.overlay.exists(path) || path.exists()
    }

    fn write_text(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.overlay.write_text(path, bytes)
    }

    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        match self.overlay.stat(path)? {
            Some(stat) => Ok(Some(stat)),
            None => FileStorage.stat(path),
        }
    }

    /// The files on disk and the overlay's, together.
    fn list_files(&self, dir: &Path, pattern: &str) -> io::Result<Vec<PathBuf>> {
        let mut files = FileStorage.list_files(dir, pattern)?;
        files.extend(self.overlay.list_files(dir, pattern)?);
        files.sort();
        files.dedup();
        Ok(files)
    }

    /// The overlay's copy, else the file on disk (nothing on disk is removed).
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match self.overlay.read(path)? {
            Some(bytes) => Ok(Some(bytes)),
            None => read_regular(path),
        }
    }

    fn read_prefix(&self, path: &Path, max: usize) -> io::Result<Option<Vec<u8>>> {
        match self.overlay.read_prefix(path, max)? {
            Some(bytes) => Ok(Some(bytes)),
            None => FileStorage.read_prefix(path, max),
        }
    }

    /// Moves the overlay's copy of `from`; a file that is only on disk is not read
    /// (it may be a pipe, read once already): `to` is recorded as empty.
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let bytes = self.overlay.read(from)?.unwrap_or_default();
        let _ = self.overlay.unlink(from);
        self.overlay.insert(to, bytes);
        Ok(())
    }

    /// Forgets the overlay's copy; the file on disk stays.
    fn unlink(&mut self, path: &Path) -> io::Result<()> {
        let _ = self.overlay.unlink(path);
        Ok(())
    }

    /// A writer into the overlay, which first takes a copy of the file on disk.
    fn open_writer(&mut self, path: &Path) -> io::Result<Box<dyn Writer>> {
        if !self.overlay.exists(path) {
            let existing = self.read(path)?.unwrap_or_default();
            self.overlay.insert(path, existing);
        }
        self.overlay.open_writer(path)
    }

    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match self.overlay.read(path)? {
            Some(bytes) => Ok(Some(bytes)),
            None => FileStorage.read_blob(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_read_only_view_removes_nothing_and_follows_no_blob_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        fs::write(&path, b"a\n").unwrap();
        let dead = dir.path().join(".s.jsonl.4000000000.tmp");
        fs::write(&dead, b"half").unwrap();
        let storage = ReadOnlyStorage::default();
        assert_eq!(storage.read(&path).unwrap().unwrap(), b"a\n");
        assert!(dead.exists(), "a dead writer's temp file stays");
        let blob = dir.path().join("blob");
        std::os::unix::fs::symlink(&path, &blob).unwrap();
        assert!(storage.read_blob(&blob).is_err());
    }
}
