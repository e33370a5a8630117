//! Writing: the deferred first write, one line per append, atomic rewrites, fsync and
//! the latched error (000 "Persistence guarantees").

use std::path::Path;

use super::{OnDisk, SessionError, SessionManager};
use crate::persist::{prepare, PendingBlob};
use crate::{blobs, raw};

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
        let written = if self.on_disk.header {
            self.append_new(&path)
        } else {
            self.write_all()
        };
        self.seen_by_caller(written)
    }

    /// Appends the entries that are not in the file yet, one line each.
    fn append_new(&mut self, path: &Path) -> Result<(), SessionError> {
        self.write_blobs()?;
        let new = &self.tree.entries()[self.on_disk.entries..];
        let mut buffer = String::new();
        if self.on_disk.needs_newline {
            buffer.push('\n');
        }
        for entry in new {
            buffer.push_str(entry.raw.get());
            buffer.push('\n');
        }
        self.storage
            .append(path, buffer.as_bytes())
            .map_err(|e| self.latch(&e))?;
        if self.fsync_appends {
            self.storage.sync(path).map_err(|e| self.latch(&e))?;
        }
        self.on_disk.entries = self.tree.entries().len();
        self.on_disk.needs_newline = false;
        Ok(())
    }

    /// A failed write (already latched) as the append that started it sees it: its own
    /// error where writes are synchronous (pi-mono's `appendFileSync` throws), nothing
    /// where they are queued (omp: the append returns before its write, whose error the
    /// next operation rethrows; 000 "Persistence errors are latched … and rethrown on
    /// subsequent operations").
    fn seen_by_caller(&self, written: Result<(), SessionError>) -> Result<(), SessionError> {
        match written {
            Err(_) if self.profile.dialect().queues_writes => Ok(()),
            written => written,
        }
    }

    /// Writes the whole session atomically (header and every entry). Where the
    /// dialect prepares entries for persistence, every entry is prepared, loaded ones
    /// too (000 "Truncation and blob externalization"; omp 13.19.0 `#rewriteFile`);
    /// an entry that needs nothing is written as its exact text. Entries in memory
    /// stay as they are.
    pub(super) fn write_all(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        let prepares = self.profile.dialect().prepares_entries;
        let mut blobs = Vec::new();
        let mut text = String::new();
        text.push_str(self.header.raw.get());
        text.push('\n');
        for entry in self.tree.entries() {
            match prepares
                .then(|| prepared(entry.raw.get(), &mut blobs))
                .flatten()
            {
                Some(line) => text.push_str(&line),
                None => text.push_str(entry.raw.get()),
            }
            text.push('\n');
        }
        self.pending_blobs.extend(blobs);
        self.write_blobs()?;
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

/// An entry's line prepared for persistence, when preparing changes it.
fn prepared(line: &str, blobs: &mut Vec<PendingBlob>) -> Option<String> {
    let mut value = raw::parse_value(line).ok()?;
    prepare(&mut value, blobs).then(|| value.to_string())
}
