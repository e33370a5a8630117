//! A storage for looking at a session without changing it: the CLI's `load`, `context`
//! and `tree` open files through the reference's SessionManager, which may want to
//! migrate, recover or rename them; here those writes stay in memory.

use std::io;
use std::path::Path;

use session_reference::storage::{read_regular, FileStorage, MemoryStorage, Storage};

/// Reads from the real filesystem and keeps every write in memory: for inspecting a
/// file with the session manager without changing anything on disk.
#[derive(Debug, Default)]
pub struct ReadOnlyStorage {
    /// The writes that were kept in memory.
    pub overlay: MemoryStorage,
}

impl Storage for ReadOnlyStorage {
    /// The overlay's copy, else the file on disk (nothing on disk is removed).
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match self.overlay.read(path)? {
            Some(bytes) => Ok(Some(bytes)),
            None => read_regular(path),
        }
    }

    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match self.overlay.read(path)? {
            Some(bytes) => Ok(Some(bytes)),
            None => FileStorage::default().read_blob(path),
        }
    }

    fn append(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        if !self.overlay.exists(path) {
            let existing = self.read(path)?.unwrap_or_default();
            self.overlay.files.insert(path.to_owned(), existing);
        }
        self.overlay.append(path, bytes)
    }

    fn sync(&mut self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn write_atomic(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.overlay.write_atomic(path, bytes)
    }

    /// Moves the overlay's copy of `from`; a file that is only on disk is not read
    /// (it may be a pipe, read once already): `to` is recorded as empty.
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let bytes = self.overlay.files.remove(from).unwrap_or_default();
        self.overlay.files.insert(to.to_owned(), bytes);
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        self.overlay.exists(path) || path.exists()
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
