//! Starting over in the same manager and rewriting the whole file: `newSession`,
//! `fork`, `setSessionName` and `rewriteEntries` (002 "newSession({ parentSession })";
//! 000 "Atomic full rewrites … Used for migrations, setSessionName, rewriteEntries";
//! omp 13.19.0 `fork`; pi-mono §6.7).

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{LoadReport, OnDisk, SessionError, SessionManager};
use crate::model::SessionHeader;
use crate::raw::RawObject;
use crate::tree::Tree;

/// What `newSession(options)` is given.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// The new session's id (pi-mono `{id}`); a fresh one when absent.
    pub id: Option<String>,
    /// The header's `parentSession`.
    pub parent_session: Option<String>,
}

impl SessionManager {
    /// `newSession(options)`: drops every entry and starts a new session (new header,
    /// leaf `null`) in the session directory, written at its first assistant message
    /// like any new session. The old file stays as it is. Returns the new file
    /// (`None` in memory). An id that is not a plain file-name word ([`is_safe_id`]) is
    /// refused and nothing changes: pi-mono 0.73.1 joins it into the path as given, so
    /// `/../x` leaves the session directory; pi 1.5 refuses it, as here.
    pub fn new_session(&mut self, options: NewSession) -> Result<Option<PathBuf>, SessionError> {
        if let Some(id) = options.id.as_deref().filter(|id| !is_safe_id(id)) {
            return Err(SessionError::InvalidName(id.to_owned()));
        }
        self.header = self.make_header(options.parent_session.as_deref());
        if let Some(id) = options.id {
            self.set_header_field("id", Value::from(id));
        }
        self.tree = Tree::default();
        self.has_assistant = false;
        self.on_disk = OnDisk::default();
        self.persist_error = None;
        self.report = LoadReport::default();
        if self.file.is_some() {
            self.file = Some(self.default_file());
        }
        Ok(self.file.clone())
    }

    /// omp `fork()`: the same entries under a new header (a new id, the title kept,
    /// `parentSession` the old session's id), written at once to a new file in the
    /// session directory. Returns the old file and the new one; `None` in memory.
    /// Clauses: tree.14.
    pub fn fork(&mut self) -> Result<Option<(PathBuf, PathBuf)>, SessionError> {
        let Some(old) = self.file.clone() else {
            return Ok(None);
        };
        let title = title(&self.header);
        let parent = self.header.id.clone();
        self.header = self.make_header(Some(&parent));
        if let Some(title) = title {
            self.set_header_field("title", title);
        }
        self.file = Some(self.default_file());
        self.persist_error = None;
        self.on_disk = OnDisk::default();
        self.write_all()?;
        Ok(self.file.clone().map(|new| (old, new)))
    }

    /// omp 13.19.0 `setSessionName(name)`: the header's `title` becomes `name` as
    /// given, and a file already written is rewritten with it.
    /// Clauses: persistence.11.
    pub fn set_session_name(&mut self, name: &str) -> Result<(), SessionError> {
        self.set_header_field("title", Value::from(name));
        if self.on_disk.header {
            self.rewrite_in_place()?;
        }
        Ok(())
    }

    /// omp `rewriteEntries()`: the whole session rewritten from memory, at once, also
    /// before the first assistant message (nothing happens in memory).
    /// Clauses: persistence.11.
    pub fn rewrite_entries(&mut self) -> Result<(), SessionError> {
        if self.file.is_some() {
            self.rewrite_in_place()?;
        }
        Ok(())
    }

    /// Sets one field of the header line (in place, or last when it is new).
    pub(super) fn set_header_field(&mut self, key: &str, value: Value) {
        let keys = self.profile.keys();
        let mut line: Map<String, Value> =
            serde_json::from_str(self.header.raw.get()).unwrap_or_default();
        line.insert(keys.name(key).to_owned(), value);
        let text = Value::Object(line).to_string();
        if let Some(header) = RawObject::parse(&text)
            .and_then(|object| SessionHeader::from_object(&object, &text, keys))
        {
            self.header = header;
        }
    }

    /// omp `moveTo(newCwd)`: the session moves to `session_dir` (the new cwd's project
    /// folder, which the caller names as `forkFrom`'s `sessionDir`): a written file is
    /// renamed into it, the header's `cwd` becomes `new_cwd`, and the file is rewritten
    /// there when it existed or an assistant message is held (a session never written
    /// stays unwritten). The same cwd changes nothing.
    /// Clauses: persistence.11.
    pub fn move_to(&mut self, new_cwd: &str, session_dir: PathBuf) -> Result<(), SessionError> {
        if new_cwd == self.cwd {
            return Ok(());
        }
        let mut had_file = false;
        if let Some(old) = self.file.clone() {
            let new = session_dir.join(old.file_name().unwrap_or_default());
            had_file = self.storage.exists(&old);
            self.close_writer()?;
            if had_file {
                self.storage
                    .rename(&old, &new)
                    .map_err(|e| SessionError::Io {
                        path: old.clone(),
                        message: e.to_string(),
                    })?;
            }
            self.file = Some(new);
            self.persist_error = None;
        }
        new_cwd.clone_into(&mut self.cwd);
        self.session_dir = session_dir;
        self.set_header_field("cwd", Value::from(new_cwd));
        if had_file || self.has_assistant {
            self.rewrite_in_place()?;
        }
        Ok(())
    }

    /// A full rewrite of the loaded file. Lines the loader skipped would be gone: the
    /// original is first kept beside it as `NAME.pre-rewrite-<time>` (never lose data).
    fn rewrite_in_place(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        if self.report.preserved.is_none() && self.report.loses_data() {
            if let Some(bytes) = self.storage.read(&path).ok().flatten() {
                let keep = super::open::sibling(&path, "pre-rewrite", self.clock.now_ms());
                self.storage
                    .write_text(&keep, &bytes)
                    .map_err(|e| self.latch(&e))?;
                self.report.preserved = Some(keep);
            }
        }
        self.write_all()
    }
}

/// The header's `title`, when it has one.
pub(super) fn title(header: &SessionHeader) -> Option<Value> {
    let object = RawObject::parse(header.raw.get())?;
    crate::raw::parse_value(object.get("title")?.get()).ok()
}

/// Whether a session id given to `newSession` is a plain file-name word (pi 1.5
/// `assertValidSessionId`): ASCII letters and digits, with `.`, `_` and `-` inside, never
/// first or last. So `<time>_<id>.jsonl` stays one file name in its folder on every
/// system: no separator, no NUL, no `..`, no leading dot.
/// Clauses: persistence.6.
pub fn is_safe_id(id: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric();
    let bytes = id.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            word(first) && word(last) && bytes.iter().all(|&b| word(b) || b"._-".contains(&b))
        }
        _ => false,
    }
}
