//! Writing: the deferred first write, one line per append, atomic rewrites, fsync and
//! the latched error (000 "Persistence guarantees").

use super::{OnDisk, SessionError, SessionManager};
use crate::blobs;

impl SessionManager {
    /// Writes pending bytes and `fsync`s the file; returns a latched error.
    pub fn flush(&mut self) -> Result<(), SessionError> {
        if let Some(error) = &self.persist_error {
            return Err(error.clone());
        }
        if let (Some(path), true) = (self.file.clone(), self.on_disk.header) {
            self.storage.sync(&path).map_err(|e| self.latch(&e))?;
        }
        Ok(())
    }

    /// Writes what the persistence rules allow: nothing yet, everything, or the new lines.
    pub(super) fn persist(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        if let Some(error) = &self.persist_error {
            return Err(error.clone());
        }
        let at_once = self.profile.dialect().appends_to_loaded_file_at_once && self.on_disk.header;
        if !(self.has_assistant || at_once) {
            return Ok(());
        }
        if !self.on_disk.header {
            return self.write_all();
        }
        self.write_blobs()?;
        let new = &self.tree.entries()[self.on_disk.entries..];
        let mut buffer = String::with_capacity(1 + lines_len(new.iter().map(|e| e.raw.get())));
        if self.on_disk.needs_newline {
            buffer.push('\n');
        }
        for entry in new {
            buffer.push_str(entry.raw.get());
            buffer.push('\n');
        }
        self.storage
            .append(&path, buffer.as_bytes())
            .map_err(|e| self.latch(&e))?;
        if self.fsync_appends {
            self.storage.sync(&path).map_err(|e| self.latch(&e))?;
        }
        self.on_disk.entries = self.tree.entries().len();
        self.on_disk.needs_newline = false;
        Ok(())
    }

    /// Writes the whole session atomically (header and every entry).
    pub(super) fn write_all(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        self.write_blobs()?;
        let lines = std::iter::once(self.header.raw.get())
            .chain(self.tree.entries().iter().map(|e| e.raw.get()));
        // Sized once: an entry may carry half a million characters.
        let mut text = String::with_capacity(lines_len(lines));
        text.push_str(self.header.raw.get());
        text.push('\n');
        for entry in self.tree.entries() {
            text.push_str(entry.raw.get());
            text.push('\n');
        }
        self.storage
            .write_atomic(&path, text.as_bytes())
            .map_err(|e| self.latch(&e))?;
        self.on_disk = OnDisk {
            header: true,
            entries: self.tree.entries().len(),
            needs_newline: false,
        };
        Ok(())
    }

    pub(super) fn write_blobs(&mut self) -> Result<(), SessionError> {
        for pending in std::mem::take(&mut self.pending_blobs) {
            blobs::put(self.storage.as_mut(), &self.blob_dir, &pending.bytes)
                .map_err(|e| self.latch(&e))?;
        }
        Ok(())
    }

    pub(super) fn latch(&mut self, error: &std::io::Error) -> SessionError {
        let path = self.file.clone().unwrap_or_default();
        let error = self.persist_error.get_or_insert(SessionError::Persistence {
            path,
            message: error.to_string(),
        });
        error.clone()
    }
}

/// The length of `lines` written one per line (each with its newline).
fn lines_len<'a>(lines: impl Iterator<Item = &'a str>) -> usize {
    lines.map(|line| line.len() + 1).sum()
}
