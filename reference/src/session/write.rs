//! Writing: the deferred first write, one line per append, atomic rewrites, fsync and
//! the latched error (000 "Persistence guarantees").

use std::path::{Path, PathBuf};

use super::{OnDisk, Rules, SessionError, SessionManager};
use crate::persisted_form::{prepare, PendingBlob};
use crate::storage::{Storage, Writer};
use crate::{blobs, raw};

impl SessionManager {
    /// Writes pending bytes and `fsync`s the file; returns a latched error.
    /// Clauses: persistence.8.
    pub fn flush(&mut self) -> Result<(), SessionError> {
        if let Some(error) = &self.persist_error {
            return Err(error.clone());
        }
        if let Some((_, writer)) = &mut self.writer {
            let synced = writer.flush().and_then(|()| writer.fsync());
            synced.map_err(|e| self.latch(&e))?;
        }
        Ok(())
    }

    /// Writes what the persistence rules allow: nothing yet, everything, or the new lines.
    /// Clauses: format.1, persistence.1, persistence.2, persistence.10.
    pub(super) fn write_pending(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        if let Some(error) = &self.persist_error {
            return Err(error.clone());
        }
        let at_once =
            Rules::for_profile(self.profile).appends_to_loaded_file_at_once && self.on_disk.header;
        if !(self.has_assistant || at_once) {
            return Ok(());
        }
        let written = if self.on_disk.header {
            self.append_new(&path)
        } else {
            self.write_all()
        };
        self.append_result(written)
    }

    /// Appends the entries that are not in the file yet, one line each.
    /// Clauses: persistence.2, persistence.4.
    fn append_new(&mut self, path: &Path) -> Result<(), SessionError> {
        self.write_blobs()?;
        let (newline, fsync) = (self.on_disk.needs_newline, self.fsync_appends);
        let new = &self.tree.entries()[self.on_disk.entries..];
        let written =
            writer_for(&mut self.writer, self.storage.as_mut(), path).and_then(|writer| {
                if newline {
                    writer.write_line("")?;
                }
                for entry in new {
                    writer.write_line(entry.raw.get())?;
                }
                if fsync {
                    writer.fsync()?;
                }
                Ok(())
            });
        written.map_err(|e| self.latch(&e))?;
        self.on_disk.entries = self.tree.entries().len();
        self.on_disk.needs_newline = false;
        Ok(())
    }

    /// Syncs and closes the open writer, if any (before a rewrite, a move, or
    /// `createBranchedSession` switches to another file): a later [`Self::flush`] syncs
    /// only the current file, and it promises every append before it.
    pub(super) fn close_writer(&mut self) -> Result<(), SessionError> {
        if let Some((_, mut writer)) = self.writer.take() {
            let synced = writer.flush().and_then(|()| writer.fsync());
            let _ = writer.close();
            synced.map_err(|e| self.latch(&e))?;
        }
        Ok(())
    }

    /// What the append that started a write returns: the write's error where writes are
    /// synchronous (pi-mono's `appendFileSync` throws), nothing where they are queued (omp:
    /// the error is latched and the next operation returns it; 000 "Persistence errors are
    /// latched … and rethrown on subsequent operations").
    /// Clauses: persistence.10.
    fn append_result(&self, written: Result<(), SessionError>) -> Result<(), SessionError> {
        match written {
            Err(_) if Rules::for_profile(self.profile).queues_writes => Ok(()),
            written => written,
        }
    }

    /// Writes the whole session atomically (header and every entry). Where the
    /// dialect prepares entries for persistence, every entry is prepared, loaded ones
    /// too (000 "Truncation and blob externalization"; omp 13.19.0 `#rewriteFile`);
    /// an entry that needs nothing is written as its exact text. Entries in memory
    /// stay as they are.
    /// Clauses: format.1, persistence.19.
    pub(super) fn write_all(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        let prepares = Rules::for_profile(self.profile).prepares_entries;
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
        self.close_writer()?;
        self.storage
            .write_text(&path, text.as_bytes())
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

    /// Clauses: persistence.10, persistence.12.
    pub(super) fn latch(&mut self, error: &std::io::Error) -> SessionError {
        let path = self.file.clone().unwrap_or_default();
        let error = self.persist_error.get_or_insert(SessionError::Persistence {
            path,
            message: error.to_string(),
        });
        error.clone()
    }
}

/// The open writer of `path` (`slot`), opened when needed. A writer of another file
/// (the session before `createBranchedSession`) is synced before it is closed: a later
/// [`SessionManager::flush`] syncs only the current file, and it promises every append
/// before it.
/// Clauses: persistence.5.
fn writer_for<'a>(
    slot: &'a mut Option<(PathBuf, Box<dyn Writer>)>,
    storage: &mut dyn Storage,
    path: &Path,
) -> std::io::Result<&'a mut dyn Writer> {
    if slot.as_ref().is_none_or(|(open, _)| open != path) {
        if let Some((_, mut old)) = slot.take() {
            old.flush().and_then(|()| old.fsync())?;
            let _ = old.close();
        }
        *slot = Some((path.to_owned(), storage.open_writer(path)?));
    }
    match slot {
        Some((_, writer)) => Ok(writer.as_mut()),
        None => Err(std::io::Error::other("no writer")),
    }
}

/// An entry's line prepared for persistence, when preparing changes it.
fn prepared(line: &str, blobs: &mut Vec<PendingBlob>) -> Option<String> {
    let mut value = raw::parse_value(line).ok()?;
    prepare(&mut value, blobs).then(|| value.to_string())
}
