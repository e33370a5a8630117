//! The in-memory [`Storage`]: for tests and for sessions that are never written.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{pattern_parts, Latch, Stat, Storage, Writer};

/// The files of a [`MemoryStorage`]: bytes and modification time by path.
type Files = BTreeMap<PathBuf, (Vec<u8>, i64)>;

/// Files in memory, for tests and sessions that are never written. Clones share the
/// same files, so a test can keep one and look at what a session wrote.
/// Clauses: persistence.18.
#[derive(Debug, Default, Clone)]
pub struct MemoryStorage {
    files: Rc<RefCell<Files>>,
    /// When set, every write fails with this message (to test error latching).
    pub fail_writes: Option<String>,
}

impl MemoryStorage {
    /// Puts a file in place (modification time 0).
    pub fn insert(&self, path: impl Into<PathBuf>, bytes: impl Into<Vec<u8>>) {
        self.files
            .borrow_mut()
            .insert(path.into(), (bytes.into(), 0));
    }

    /// Sets a file's modification time.
    pub fn set_mtime(&self, path: &Path, mtime_ms: i64) {
        if let Some(file) = self.files.borrow_mut().get_mut(path) {
            file.1 = mtime_ms;
        }
    }

    /// Every file's path, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.borrow().keys().cloned().collect()
    }

    fn check(&self) -> io::Result<()> {
        match &self.fail_writes {
            Some(message) => Err(io::Error::other(message.clone())),
            None => Ok(()),
        }
    }
}

/// A [`Writer`] into a [`MemoryStorage`]'s files.
#[derive(Debug)]
struct MemoryWriter {
    storage: MemoryStorage,
    path: PathBuf,
    latch: Latch,
}

impl Writer for MemoryWriter {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        let (storage, path) = (&self.storage, &self.path);
        self.latch.run(|| {
            storage.check()?;
            let mut files = storage.files.borrow_mut();
            let bytes = &mut files.entry(path.clone()).or_default().0;
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
            Ok(())
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        let storage = &self.storage;
        self.latch.run(|| storage.check())
    }

    fn fsync(&mut self) -> io::Result<()> {
        self.flush()
    }

    fn close(&mut self) -> io::Result<()> {
        self.flush()
    }

    fn error(&self) -> Option<String> {
        self.latch.0.clone()
    }
}

impl Storage for MemoryStorage {
    fn ensure_dir(&mut self, _dir: &Path) -> io::Result<()> {
        self.check()
    }

    fn exists(&self, path: &Path) -> bool {
        self.files.borrow().contains_key(path)
    }

    fn write_text(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.check()?;
        self.insert(path, bytes);
        Ok(())
    }

    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        Ok(self.files.borrow().get(path).map(|(bytes, mtime_ms)| Stat {
            size: bytes.len() as u64,
            mtime_ms: *mtime_ms,
        }))
    }

    fn list_files(&self, dir: &Path, pattern: &str) -> io::Result<Vec<PathBuf>> {
        let (folders, suffix) = pattern_parts(pattern);
        let in_dir = |path: &Path| {
            let parent = path.parent();
            let parent = if folders {
                parent.and_then(Path::parent)
            } else {
                parent
            };
            parent == Some(dir)
        };
        Ok(self
            .files
            .borrow()
            .keys()
            .filter(|path| in_dir(path))
            .filter(|path| {
                path.file_name()
                    .is_some_and(|n| n.to_string_lossy().ends_with(suffix))
            })
            .cloned()
            .collect())
    }

    /// Clauses: persistence.18.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        Ok(self
            .files
            .borrow()
            .get(path)
            .map(|(bytes, _)| bytes.clone()))
    }

    fn read_prefix(&self, path: &Path, max: usize) -> io::Result<Option<Vec<u8>>> {
        Ok(self
            .files
            .borrow()
            .get(path)
            .map(|(bytes, _)| bytes[..bytes.len().min(max)].to_vec()))
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.check()?;
        let mut files = self.files.borrow_mut();
        let file = files
            .remove(from)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        files.insert(to.to_owned(), file);
        Ok(())
    }

    fn unlink(&mut self, path: &Path) -> io::Result<()> {
        self.check()?;
        self.files
            .borrow_mut()
            .remove(path)
            .map(drop)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// Clauses: persistence.18.
    fn open_writer(&mut self, path: &Path) -> io::Result<Box<dyn Writer>> {
        self.check()?;
        self.files.borrow_mut().entry(path.to_owned()).or_default();
        Ok(Box::new(MemoryWriter {
            storage: self.clone(),
            path: path.to_owned(),
            latch: Latch::default(),
        }))
    }
}
