//! The reference adapter's storage writes only inside the case directory: whatever path
//! the reference works out (a session file, a blob, a temp file, a rename's target),
//! a write outside the case folder is refused with an error, never made. A path
//! the reference gets wrong (an empty or relative session directory resolves against
//! the process's working directory) fails its case instead of leaving files behind.

use std::io;
use std::path::{Component, Path, PathBuf};

use session_reference::storage::{Stat, Storage, Writer};

/// A [`Storage`] that passes reads on to `inner` and refuses writes outside `root`.
#[derive(Debug)]
pub(super) struct Confined {
    /// The case directory (absolute).
    root: PathBuf,
    /// The storage that does the work.
    inner: Box<dyn Storage>,
}

impl Confined {
    /// `inner`, writing only inside `root`.
    pub(super) fn new(root: &Path, inner: Box<dyn Storage>) -> Confined {
        Confined {
            root: root.to_path_buf(),
            inner,
        }
    }

    /// `Ok` when `path` is inside the case directory, else the refusal.
    fn check(&self, path: &Path) -> io::Result<()> {
        if within(&self.root, path) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{:?} is outside the case directory {:?}: the reference adapter writes only inside it",
                    path.display().to_string(),
                    self.root.display().to_string()
                ),
            ))
        }
    }
}

/// Whether `path` is `root` or inside it as written: absolute, below `root`, no `..`.
pub(super) fn within(root: &Path, path: &Path) -> bool {
    path.is_absolute()
        && path.starts_with(root)
        && !path.components().any(|c| c == Component::ParentDir)
}

impl Storage for Confined {
    fn ensure_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.check(dir)?;
        self.inner.ensure_dir(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn write_text(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.check(path)?;
        self.inner.write_text(path, bytes)
    }

    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        self.inner.stat(path)
    }

    fn list_files(&self, dir: &Path, pattern: &str) -> io::Result<Vec<PathBuf>> {
        self.inner.list_files(dir, pattern)
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.inner.read(path)
    }

    fn read_prefix(&self, path: &Path, max: usize) -> io::Result<Option<Vec<u8>>> {
        self.inner.read_prefix(path, max)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(from)?;
        self.check(to)?;
        self.inner.rename(from, to)
    }

    fn unlink(&mut self, path: &Path) -> io::Result<()> {
        self.check(path)?;
        self.inner.unlink(path)
    }

    fn open_writer(&mut self, path: &Path) -> io::Result<Box<dyn Writer>> {
        self.check(path)?;
        self.inner.open_writer(path)
    }

    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.inner.read_blob(path)
    }

    fn remove_stale_temps(&mut self, dir: &Path) {
        if within(&self.root, dir) {
            self.inner.remove_stale_temps(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_is_below_the_root_as_written() {
        let root = Path::new("/w/sc-1");
        for (path, inside) in [
            ("/w/sc-1/sessions/a.jsonl", true),
            ("/w/sc-1/a", true),
            ("/w/sc-1", true),
            ("/w/sc-10/a", false),
            ("/w/sc-1/../x", false),
            ("sessions/a.jsonl", false),
            ("", false),
            ("/elsewhere/a", false),
        ] {
            assert_eq!(within(root, Path::new(path)), inside, "{path}");
        }
    }
}
