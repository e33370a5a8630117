//! Opening a session: a new one, a file (lenient parse, migration with an atomic rewrite,
//! recovery of a file with no readable header) or a fork (000 "SessionManager",
//! "Loading and compatibility"; 001 "forkFrom"; pi-mono §6).

use std::path::{Path, PathBuf};

use super::{ForkParent, LoadReport, OnDisk, Options, Rules, SessionError, SessionManager};
use crate::entries;
use crate::ids::{file_timestamp, iso_timestamp};
use crate::migrate::migrate;
use crate::model::{Entry, SessionHeader, CURRENT_VERSION};
use crate::parse::{parse_owned, DiagnosticKind};
use crate::raw::{self, to_raw, RawObject};
use crate::tree::Tree;

impl SessionManager {
    /// A session that is never written.
    /// Clauses: persistence.7.
    pub fn in_memory(options: Options) -> SessionManager {
        let mut sm = SessionManager::blank(options, None);
        sm.file = None;
        sm
    }

    /// A new persisted session in the session directory; written at the first assistant message.
    pub fn create(options: Options) -> SessionManager {
        SessionManager::blank(options, None)
    }

    /// Opens a session file as a user resuming it would: lenient parse, migration
    /// (with an atomic rewrite), recovery of a file with no readable header. What killed
    /// rewrites left in the session directory goes first (a killed
    /// `createBranchedSession` leaves the temp file of a session that never came to be).
    /// Clauses: loading.10, persistence.3, persistence.9, persistence.20.
    pub fn open(path: &Path, mut options: Options) -> Result<SessionManager, SessionError> {
        options.storage.remove_stale_temps(&options.session_dir);
        let bytes = options.storage.read(path).map_err(|e| SessionError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let Some(bytes) = bytes else {
            let profile = options.profile;
            let mut sm = SessionManager::blank(options, Some(path.to_owned()));
            if Rules::for_profile(profile).writes_missing_file_on_open {
                sm.write_all()?;
            }
            return Ok(sm);
        };
        SessionManager::open_bytes(path, bytes, options)
    }

    /// [`SessionManager::open`] of a file whose `bytes` the caller has read (once).
    /// Clauses: loading.9, persistence.4.
    pub fn open_bytes(
        path: &Path,
        bytes: Vec<u8>,
        options: Options,
    ) -> Result<SessionManager, SessionError> {
        let profile = options.profile;
        let has_content = bytes.iter().any(|b| !b.is_ascii_whitespace());
        let mut parsed = parse_owned(bytes, profile);
        let mut report = LoadReport {
            diagnostics: std::mem::take(&mut parsed.diagnostics),
            unlisted: std::mem::take(&mut parsed.unlisted),
            ..LoadReport::default()
        };
        let mut header = match parsed.header.clone() {
            Ok(header) => header,
            Err(error) => {
                let mut sm = SessionManager::blank(options, Some(path.to_owned()));
                if has_content {
                    let keep = sibling(path, "corrupt", sm.clock.now_ms());
                    sm.storage.rename(path, &keep).map_err(|e| sm.latch(&e))?;
                    report.preserved = Some(keep);
                }
                report.header_error = Some(error);
                sm.report = report;
                sm.write_all()?;
                return Ok(sm);
            }
        };
        let mut entries = std::mem::take(&mut parsed.entries);
        let mut sm = SessionManager::blank(options, Some(path.to_owned()));
        report.migrated = migrate(&mut header, &mut entries, sm.ids.as_mut());
        if let Some(cwd) = &header.cwd {
            sm.cwd.clone_from(cwd);
        }
        sm.header = header;
        sm.has_assistant = entries.iter().any(Entry::is_assistant);
        sm.tree = Tree::new(entries);
        sm.on_disk = OnDisk {
            header: true,
            entries: sm.tree.entries().len(),
            needs_newline: !parsed.ends_with_newline,
        };
        if !report.migrated.is_empty() {
            sm.rewrite_migrated(path, parsed.bytes(), &mut report);
        }
        sm.report = report;
        Ok(sm)
    }

    /// The rewrite of a migrated file, after the migration in memory (000 "Versioning and
    /// migrations": memory first, then persist; clause persistence.20). Where the rewrite
    /// would drop a line the loader skipped, the `original` bytes are first kept as
    /// `NAME.pre-migration-<time>`. A write that fails (the copy, or the rewrite, which
    /// leaves the file as it was: persistence.19) does not fail the open: the error is
    /// latched (persistence.10), the session stays open in memory, and nothing is written
    /// until a reopen migrates the untouched file again.
    /// Clauses: migrations.5.
    fn rewrite_migrated(&mut self, path: &Path, original: &[u8], report: &mut LoadReport) {
        self.on_disk = OnDisk::default();
        if report.loses_data() {
            let keep = sibling(path, "pre-migration", self.clock.now_ms());
            if let Err(e) = self.storage.write_text(&keep, original) {
                self.latch(&e);
                return;
            }
            report.preserved = Some(keep);
        }
        // An error is latched by `write_all` itself.
        let _ = self.write_all();
    }

    /// Starts a new persisted session forked from `source`: its (migrated) entries
    /// under a new header whose `parentSession` is the source path (pi) or id (omp); written at once.
    /// Clauses: format.5, tree.13.
    pub fn fork_from(
        source: &Path,
        target_cwd: &str,
        mut options: Options,
    ) -> Result<SessionManager, SessionError> {
        let bytes = options
            .storage
            .read(source)
            .ok()
            .flatten()
            .ok_or_else(|| SessionError::InvalidSource(source.to_owned()))?;
        let parsed = parse_owned(bytes, options.profile);
        let mut header = parsed
            .header
            .map_err(|_| SessionError::InvalidSource(source.to_owned()))?;
        let mut entries = parsed.entries;
        migrate(&mut header, &mut entries, options.ids.as_mut());
        let (parent, title) = match Rules::for_profile(options.profile).fork_parent {
            ForkParent::SourcePath => (source.to_string_lossy().into_owned(), None),
            ForkParent::SourceId => (header.id.clone(), super::rewrite::title(&header)),
        };
        target_cwd.clone_into(&mut options.cwd);
        let mut sm = SessionManager::blank(options, None);
        sm.header = sm.make_header(Some(&parent));
        if let Some(title) = title {
            sm.set_header_field("title", title);
        }
        sm.file = Some(sm.default_file());
        sm.has_assistant = entries.iter().any(Entry::is_assistant);
        sm.tree = Tree::new(entries);
        sm.write_all()?;
        Ok(sm)
    }

    pub(super) fn blank(options: Options, file: Option<PathBuf>) -> SessionManager {
        let mut sm = SessionManager {
            profile: options.profile,
            storage: options.storage,
            ids: options.ids,
            clock: options.clock,
            cwd: options.cwd,
            session_dir: options.session_dir,
            blob_dir: options.blob_dir,
            fsync_appends: options.fsync_appends,
            file: None,
            header: SessionHeader {
                raw: to_raw("{}"),
                id: String::new(),
                version: 3.0,
                cwd: None,
                timestamp: None,
            },
            tree: Tree::default(),
            on_disk: OnDisk::default(),
            has_assistant: false,
            pending_blobs: Vec::new(),
            persist_error: None,
            writer: None,
            report: LoadReport::default(),
        };
        sm.header = sm.make_header(None);
        sm.file = Some(file.unwrap_or_else(|| sm.default_file()));
        sm
    }

    /// Clauses: format.2, format.3, format.5.
    pub(super) fn make_header(&mut self, parent_session: Option<&str>) -> SessionHeader {
        let now = self.clock.now_ms();
        let keys = self.profile.keys();
        let header = entries::Header {
            kind: entries::SessionTag::Session,
            version: keys.versioned.then_some(CURRENT_VERSION),
            id: (Rules::for_profile(self.profile).new_session_id)(self.ids.as_mut(), now),
            timestamp: iso_timestamp(now),
            cwd: self.cwd.clone(),
            title: None,
            parent_session: parent_session.map(str::to_owned),
        };
        let mut line = super::append::named(keys, &header);
        line.insert("type".to_owned(), keys.name("session").into());
        let text = serde_json::Value::Object(line).to_string();
        let parsed = RawObject::parse(&text).unwrap_or_default();
        SessionHeader::from_object(&parsed, &text, keys)
            .unwrap_or_else(|| unreachable_header(&text))
    }

    /// Clauses: format.15.
    pub(super) fn default_file(&self) -> PathBuf {
        let time = self.header.timestamp.as_deref().unwrap_or_default();
        let name = (Rules::for_profile(self.profile).file_name)(time, &self.header.id);
        self.session_dir.join(name)
    }
}

impl LoadReport {
    /// Whether rewriting the file would drop a line the loader skipped (listed or only
    /// counted).
    /// Clauses: migrations.5.
    pub(super) fn loses_data(&self) -> bool {
        let listed = self.diagnostics.iter().map(|d| d.kind);
        listed
            .chain(self.unlisted.0.keys().copied())
            .any(loses_data)
    }
}

/// Whether rewriting a file would drop a line with this diagnostic.
fn loses_data(kind: DiagnosticKind) -> bool {
    !matches!(
        kind,
        DiagnosticKind::BlankLine
            | DiagnosticKind::ByteOrderMark
            | DiagnosticKind::MissingId
            | DiagnosticKind::ExtraHeader
    )
}

/// `NAME.<what>-<file timestamp>` beside `path`.
/// Clauses: loading.9.
pub(super) fn sibling(path: &Path, what: &str, now_ms: i64) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{what}-{}", file_timestamp(now_ms)));
    path.with_file_name(name)
}

fn unreachable_header(text: &str) -> SessionHeader {
    // make_header always writes type "session" and a string id; keep a value anyway.
    SessionHeader {
        raw: raw::raw(text.to_owned()),
        id: String::new(),
        version: 3.0,
        cwd: None,
        timestamp: None,
    }
}
