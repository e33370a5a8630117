//! The SessionManager: open, append, branch, write (000 "SessionManager", "Persistence guarantees"; 002 "SessionManager API"; pi-mono §4, §6).
//!
//! Invariants:
//! - Every append creates exactly one entry whose parent is the leaf; it becomes the leaf.
//! - Nothing is written before the first assistant message (except: omp appends at
//!   once to a file it loaded); then the whole session, then one line per append.
//! - Nothing is lost. A file with no readable header is kept beside the new one as
//!   `NAME.corrupt-<time>`; a migration that would drop unreadable lines keeps the
//!   original as `NAME.pre-migration-<time>`; an append after a torn or
//!   newline-less last line starts on a new line; a header is never written twice.
//! - A write error is latched: every later append or flush returns it.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::context::{build_context, Context, LeafChoice};
use crate::dialect::ForkParent;
use crate::ids::{
    file_timestamp, iso_timestamp, new_entry_id, Clock, IdSource, RandomIds, SystemClock,
};
use crate::migrate::{migrate, Step};
use crate::model::{Entry, Profile, SessionHeader, CURRENT_VERSION};
use crate::parse::{parse_owned, Diagnostic, DiagnosticKind, HeaderError};
use crate::persist::{prepare, resolve_blobs, PendingBlob};
use crate::raw::{to_raw, RawObject};
use crate::storage::{FileStorage, Storage};
use crate::tree::{NotFound, Tree, TreeNode};
use crate::{blobs, raw};

/// How a session manager is set up.
pub struct Options {
    /// The dialect.
    pub profile: Profile,
    /// The working directory recorded in new headers.
    pub cwd: String,
    /// Where new session files are created.
    pub session_dir: PathBuf,
    /// The blob store directory (omp).
    pub blob_dir: PathBuf,
    /// The filesystem.
    pub storage: Box<dyn Storage>,
    /// The id source.
    pub ids: Box<dyn IdSource>,
    /// The clock.
    pub clock: Box<dyn Clock>,
    /// `fsync` after every append, not only on [`SessionManager::flush`].
    pub fsync_appends: bool,
}

impl Options {
    /// Real files, random ids and the system clock; blobs under `$HOME/.omp/agent/blobs`.
    pub fn new(
        profile: Profile,
        cwd: impl Into<String>,
        session_dir: impl Into<PathBuf>,
    ) -> Options {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
        Options {
            profile,
            cwd: cwd.into(),
            session_dir: session_dir.into(),
            blob_dir: home.join(".omp/agent/blobs"),
            storage: Box::new(FileStorage::default()),
            ids: Box::new(RandomIds::default()),
            clock: Box::new(SystemClock),
            fsync_appends: false,
        }
    }
}

/// Errors of session operations.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionError {
    /// An entry id that does not exist.
    NotFound(String),
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// `fork_from` of a file that is missing, empty or has no valid header.
    InvalidSource(PathBuf),
    /// A write failed; latched and returned by every later operation.
    Persistence {
        /// The session file.
        path: PathBuf,
        /// The first error's message.
        message: String,
    },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::NotFound(id) => write!(f, "Entry {id} not found"),
            SessionError::Io { path, message } => write!(f, "{}: {message}", path.display()),
            SessionError::InvalidSource(path) => write!(
                f,
                "Cannot fork: source session file is empty or invalid: {}",
                path.display()
            ),
            SessionError::Persistence { path, message } => {
                write!(f, "{}: write failed: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for SessionError {}

impl From<NotFound> for SessionError {
    fn from(e: NotFound) -> Self {
        SessionError::NotFound(e.0)
    }
}

/// What happened when a file was opened.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Skipped or repaired lines.
    pub diagnostics: Vec<Diagnostic>,
    /// Why the header was rejected, when it was (the file was replaced by a new session).
    pub header_error: Option<HeaderError>,
    /// Migration steps that ran (the file was rewritten).
    pub migrated: Vec<Step>,
    /// Where the original bytes were kept, when a rewrite or replacement would have lost them.
    pub preserved: Option<PathBuf>,
}

/// What is already in the file.
#[derive(Debug, Clone, Copy, Default)]
struct OnDisk {
    header: bool,
    entries: usize,
    needs_newline: bool,
}

/// A session: header, entry tree, leaf, and the file it persists to.
pub struct SessionManager {
    profile: Profile,
    storage: Box<dyn Storage>,
    ids: Box<dyn IdSource>,
    clock: Box<dyn Clock>,
    cwd: String,
    session_dir: PathBuf,
    blob_dir: PathBuf,
    fsync_appends: bool,
    file: Option<PathBuf>,
    header: SessionHeader,
    tree: Tree,
    on_disk: OnDisk,
    has_assistant: bool,
    pending_blobs: Vec<PendingBlob>,
    persist_error: Option<SessionError>,
    report: LoadReport,
}

/// The model-change shapes of the two profiles.
#[derive(Debug, Clone)]
pub enum ModelChange {
    /// pi: `{provider, modelId}`.
    Pi {
        /// The provider.
        provider: Value,
        /// The model id.
        model_id: Value,
    },
    /// omp: `{model: "provider/id", role?}`.
    Omp {
        /// `"provider/id"`.
        model: Value,
        /// The role (`default` when absent).
        role: Option<Value>,
    },
}

impl SessionManager {
    /// A session that is never written.
    pub fn in_memory(options: Options) -> SessionManager {
        let mut sm = SessionManager::new_session(options, None);
        sm.file = None;
        sm
    }

    /// A new persisted session in the session directory; written at the first assistant message.
    pub fn create(options: Options) -> SessionManager {
        SessionManager::new_session(options, None)
    }

    /// Opens a session file as a user resuming it would: lenient parse, migration
    /// (with an atomic rewrite), recovery of a file with no readable header.
    pub fn open(path: &Path, options: Options) -> Result<SessionManager, SessionError> {
        let bytes = options.storage.read(path).map_err(|e| SessionError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let Some(bytes) = bytes else {
            let profile = options.profile;
            let mut sm = SessionManager::new_session(options, Some(path.to_owned()));
            if profile.dialect().writes_missing_file_on_open {
                sm.write_all()?;
            }
            return Ok(sm);
        };
        SessionManager::open_bytes(path, bytes, options)
    }

    /// [`SessionManager::open`] of a file whose `bytes` the caller has read (once).
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
            ..LoadReport::default()
        };
        let mut header = match parsed.header.clone() {
            Ok(header) => header,
            Err(error) => {
                let mut sm = SessionManager::new_session(options, Some(path.to_owned()));
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
        let mut sm = SessionManager::new_session(options, Some(path.to_owned()));
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
            if report.diagnostics.iter().any(|d| loses_data(d.kind)) {
                let keep = sibling(path, "pre-migration", sm.clock.now_ms());
                sm.storage
                    .write_atomic(&keep, parsed.bytes())
                    .map_err(|e| sm.latch(&e))?;
                report.preserved = Some(keep);
            }
            sm.on_disk = OnDisk::default();
            sm.write_all()?;
        }
        sm.report = report;
        Ok(sm)
    }

    /// Starts a new persisted session forked from `source`: its (migrated) entries
    /// under a new header whose `parentSession` is the source path (pi) or id (omp); written at once.
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
        let parent = match options.profile.dialect().fork_parent {
            ForkParent::SourcePath => source.to_string_lossy().into_owned(),
            ForkParent::SourceId => header.id.clone(),
        };
        target_cwd.clone_into(&mut options.cwd);
        let mut sm = SessionManager::new_session(options, None);
        sm.header = sm.make_header(Some(&parent));
        sm.file = Some(sm.default_file());
        sm.has_assistant = entries.iter().any(Entry::is_assistant);
        sm.tree = Tree::new(entries);
        sm.write_all()?;
        Ok(sm)
    }

    fn new_session(options: Options, file: Option<PathBuf>) -> SessionManager {
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
            report: LoadReport::default(),
        };
        sm.header = sm.make_header(None);
        sm.file = Some(file.unwrap_or_else(|| sm.default_file()));
        sm
    }

    fn make_header(&mut self, parent_session: Option<&str>) -> SessionHeader {
        let now = self.clock.now_ms();
        let id = (self.profile.dialect().new_session_id)(self.ids.as_mut(), now);
        let mut obj = RawObject::default();
        obj.set("type", to_raw("session"));
        obj.set("version", to_raw(&CURRENT_VERSION));
        obj.set("id", to_raw(&id));
        obj.set("timestamp", to_raw(&iso_timestamp(now)));
        obj.set("cwd", to_raw(&self.cwd));
        if let Some(parent) = parent_session {
            obj.set("parentSession", to_raw(parent));
        }
        let text = obj.to_json();
        let parsed = RawObject::parse(&text).unwrap_or_default();
        SessionHeader::from_object(&parsed, &text).unwrap_or_else(|| unreachable_header(&text))
    }

    fn default_file(&self) -> PathBuf {
        let time = self
            .header
            .timestamp
            .as_deref()
            .unwrap_or_default()
            .replace([':', '.'], "-");
        self.session_dir
            .join(format!("{time}_{}.jsonl", self.header.id))
    }

    // ----- reading -----

    /// The profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// The working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The session file (`None` in memory).
    pub fn session_file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// What happened on open.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// All entries in order (duplicates included), as stored (blob refs unresolved).
    pub fn entries(&self) -> &[Entry] {
        self.tree.entries()
    }

    /// The tree index.
    pub fn tree_index(&self) -> &Tree {
        &self.tree
    }

    /// The leaf id.
    pub fn leaf_id(&self) -> Option<&str> {
        self.tree.leaf()
    }

    /// The entry with `id`.
    pub fn get_entry(&self, id: &str) -> Option<&Entry> {
        self.tree.get(id)
    }

    /// Children of `parent` (`None`: the `parentId:null` roots).
    pub fn get_children(&self, parent: Option<&str>) -> Vec<&Entry> {
        self.tree.children(parent)
    }

    /// The root→`from` path (default: the leaf).
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        self.tree.branch_path(from)
    }

    /// The tree, flat, in pre-order.
    pub fn get_tree(&self) -> Vec<TreeNode<'_>> {
        self.tree.tree()
    }

    /// The current label of `id`.
    pub fn get_label(&self, id: &str) -> Option<&str> {
        self.tree.label(id)
    }

    /// The context at the leaf (`None` leaf: the empty context).
    pub fn build_context(&self) -> Context<'_> {
        let leaf = self.tree.leaf().map_or(LeafChoice::Null, LeafChoice::Id);
        build_context(&self.tree, leaf, self.profile)
    }

    /// The context for `leaf`, blob references in its messages resolved (omp), as a reader sees it.
    pub fn context(&self, leaf: LeafChoice<'_>) -> Context<'_> {
        let mut context = build_context(&self.tree, leaf, self.profile);
        if self.profile.dialect().has_blob_refs {
            for message in &mut context.messages {
                if message.get().contains(blobs::BLOB_PREFIX) {
                    let mut value = raw::parse_value(message.get()).unwrap_or(Value::Null);
                    resolve_blobs(
                        &mut value,
                        self.storage.as_ref(),
                        &self.blob_dir,
                        &mut Vec::new(),
                    );
                    *message = Cow::Owned(raw::to_raw(&value));
                }
            }
        }
        context
    }

    /// [`SessionManager::context`] as a JSON value (read as `JSON.parse` reads it).
    pub fn context_json(&self, leaf: LeafChoice<'_>) -> Value {
        let text = serde_json::to_string(&self.context(leaf)).unwrap_or_default();
        raw::parse_value(&text).unwrap_or(Value::Null)
    }

    /// An entry's JSON with blob references resolved (omp), as a reader sees it.
    pub fn resolved(&self, entry: &Entry) -> Value {
        let mut value: Value = raw::parse_value(entry.raw.get()).unwrap_or(Value::Null);
        if self.profile.dialect().has_blob_refs && entry.raw.get().contains(blobs::BLOB_PREFIX) {
            resolve_blobs(
                &mut value,
                self.storage.as_ref(),
                &self.blob_dir,
                &mut Vec::new(),
            );
        }
        value
    }

    // ----- appending -----

    /// Appends a `message` entry.
    pub fn append_message(&mut self, message: Value) -> Result<String, SessionError> {
        self.append("message", vec![("message", Some(message))], false)
    }

    /// Appends a `thinking_level_change` entry.
    pub fn append_thinking_level_change(&mut self, level: Value) -> Result<String, SessionError> {
        self.append(
            "thinking_level_change",
            vec![("thinkingLevel", Some(level))],
            false,
        )
    }

    /// Appends a `model_change` entry in the profile's shape.
    pub fn append_model_change(&mut self, change: ModelChange) -> Result<String, SessionError> {
        let payload = match change {
            ModelChange::Pi { provider, model_id } => {
                vec![("provider", Some(provider)), ("modelId", Some(model_id))]
            }
            ModelChange::Omp { model, role } => vec![("model", Some(model)), ("role", role)],
        };
        self.append("model_change", payload, false)
    }

    /// Appends a `compaction` entry; `fields` are the optional ones in the profile's order
    /// (pi: `details`, `fromHook`; omp: `shortSummary` first, then `details`, `preserveData`, `fromExtension`).
    pub fn append_compaction(
        &mut self,
        summary: Value,
        first_kept_entry_id: Value,
        tokens_before: Value,
        fields: Vec<(&'static str, Option<Value>)>,
    ) -> Result<String, SessionError> {
        let mut payload = vec![("summary", Some(summary))];
        let (short, rest): (Vec<_>, Vec<_>) =
            fields.into_iter().partition(|(k, _)| *k == "shortSummary");
        payload.extend(short);
        payload.push(("firstKeptEntryId", Some(first_kept_entry_id)));
        payload.push(("tokensBefore", Some(tokens_before)));
        payload.extend(rest);
        self.append("compaction", payload, false)
    }

    /// Appends a `custom` entry (extension state; not in the context).
    pub fn append_custom_entry(
        &mut self,
        custom_type: Value,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(
            "custom",
            vec![("customType", Some(custom_type)), ("data", data)],
            true,
        )
    }

    /// Appends a `custom_message` entry (in the context).
    pub fn append_custom_message_entry(
        &mut self,
        custom_type: Value,
        content: Value,
        display: Value,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        let payload = vec![
            ("customType", Some(custom_type)),
            ("content", Some(content)),
            ("display", Some(display)),
            ("details", details),
        ];
        self.append("custom_message", payload, true)
    }

    /// Sets (`Some` non-empty) or clears the label of `target`.
    pub fn append_label_change(
        &mut self,
        target: &str,
        label: Option<Value>,
    ) -> Result<String, SessionError> {
        if !self.tree.contains(target) {
            return Err(SessionError::NotFound(target.to_owned()));
        }
        self.append(
            "label",
            vec![("targetId", Some(Value::from(target))), ("label", label)],
            false,
        )
    }

    /// Appends a `session_info` entry with the trimmed name (pi).
    pub fn append_session_info(&mut self, name: &str) -> Result<String, SessionError> {
        self.append(
            "session_info",
            vec![("name", Some(Value::from(name.trim())))],
            false,
        )
    }

    /// Appends a `ttsr_injection` entry (omp).
    pub fn append_ttsr_injection(&mut self, rules: Value) -> Result<String, SessionError> {
        self.append(
            "ttsr_injection",
            vec![("injectedRules", Some(rules))],
            false,
        )
    }

    /// Appends a `session_init` entry (omp).
    pub fn append_session_init(
        &mut self,
        system_prompt: Value,
        task: Value,
        tools: Value,
        output_schema: Option<Value>,
    ) -> Result<String, SessionError> {
        let payload = vec![
            ("systemPrompt", Some(system_prompt)),
            ("task", Some(task)),
            ("tools", Some(tools)),
            ("outputSchema", output_schema),
        ];
        self.append("session_init", payload, false)
    }

    /// Appends a `mode_change` entry (omp).
    pub fn append_mode_change(
        &mut self,
        mode: Value,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(
            "mode_change",
            vec![("mode", Some(mode)), ("data", data)],
            false,
        )
    }

    // ----- moving the leaf -----

    /// Moves the leaf to `id`.
    pub fn branch(&mut self, id: &str) -> Result<(), SessionError> {
        Ok(self.tree.branch(id)?)
    }

    /// Sets the leaf to none; the next append is a new root.
    pub fn reset_leaf(&mut self) {
        self.tree.reset_leaf();
    }

    /// Moves the leaf to `from` (`None`: before the root) and appends a `branch_summary`
    /// whose `fromId` is `from` or `"root"`; `fields` are the optional ones (`details`, `fromHook`/`fromExtension`).
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: Value,
        fields: Vec<(&'static str, Option<Value>)>,
    ) -> Result<String, SessionError> {
        match from {
            Some(id) => self.tree.branch(id)?,
            None => self.tree.reset_leaf(),
        }
        let mut payload = vec![
            ("fromId", Some(Value::from(from.unwrap_or("root")))),
            ("summary", Some(summary)),
        ];
        payload.extend(fields);
        self.append("branch_summary", payload, false)
    }

    /// Starts a new session holding only the root→`leaf` path (default: the current
    /// leaf), labels re-applied after it; returns the new file (`None` in memory).
    pub fn create_branched_session(
        &mut self,
        leaf: Option<&str>,
    ) -> Result<Option<PathBuf>, SessionError> {
        let path: Vec<Entry> = self
            .tree
            .branch_path(leaf)
            .into_iter()
            .filter(|e| e.kind != crate::model::EntryKind::Label)
            .cloned()
            .collect();
        if path.is_empty() {
            return Err(SessionError::NotFound(
                leaf.or(self.tree.leaf()).unwrap_or_default().to_owned(),
            ));
        }
        let labels: Vec<(String, String, Option<String>)> = self
            .tree
            .labels_in_order()
            .into_iter()
            .filter(|(target, _)| path.iter().any(|e| e.id.as_deref() == Some(*target)))
            .map(|(target, label)| {
                (
                    target.to_owned(),
                    label.text.clone(),
                    label.timestamp.clone(),
                )
            })
            .collect();
        let parent = self.file.as_ref().map(|f| f.to_string_lossy().into_owned());
        let persisted = self.file.is_some();
        self.header = self.make_header(parent.as_deref());
        self.has_assistant = path.iter().any(Entry::is_assistant);
        self.tree = Tree::new(path);
        self.on_disk = OnDisk::default();
        self.file = persisted.then(|| self.default_file());
        for (target, text, timestamp) in labels {
            let entry = self.make_entry(
                "label",
                vec![
                    ("targetId", Some(Value::from(target))),
                    ("label", Some(Value::from(text))),
                ],
                false,
                timestamp,
            );
            self.tree.push(entry);
        }
        if self.has_assistant {
            self.write_all()?;
        }
        Ok(self.file.clone())
    }

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

    // ----- internals -----

    fn append(
        &mut self,
        type_name: &str,
        payload: Vec<(&str, Option<Value>)>,
        payload_first: bool,
    ) -> Result<String, SessionError> {
        let entry = self.make_entry(type_name, payload, payload_first, None);
        let id = entry.id.clone().unwrap_or_default();
        self.has_assistant |= entry.is_assistant();
        self.tree.push(entry);
        self.persist()?;
        Ok(id)
    }

    fn make_entry(
        &mut self,
        type_name: &str,
        payload: Vec<(&str, Option<Value>)>,
        payload_first: bool,
        timestamp: Option<String>,
    ) -> Entry {
        let tree = &self.tree;
        let id = new_entry_id(self.ids.as_mut(), |c| tree.contains(c));
        let timestamp = timestamp.unwrap_or_else(|| iso_timestamp(self.clock.now_ms()));
        let head = [
            ("id", Value::from(id)),
            (
                "parentId",
                self.tree.leaf().map_or(Value::Null, Value::from),
            ),
            ("timestamp", Value::from(timestamp)),
        ];
        let mut fields: Vec<(&str, Value)> = payload
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        if payload_first {
            fields.extend(head);
        } else {
            fields.splice(0..0, head);
        }
        let mut object = serde_json::Map::with_capacity(fields.len() + 1);
        object.insert("type".to_owned(), Value::from(type_name));
        object.extend(fields.into_iter().map(|(k, v)| (k.to_owned(), v)));
        let mut value = Value::Object(object);
        if self.profile.dialect().prepares_entries {
            prepare(&mut value, &mut self.pending_blobs);
        }
        let text = value.to_string();
        let ordinal = self.tree.entries().len() + 1;
        Entry::from_text(text, ordinal)
    }

    /// Writes what the persistence rules allow: nothing yet, everything, or the new lines.
    fn persist(&mut self) -> Result<(), SessionError> {
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
    fn write_all(&mut self) -> Result<(), SessionError> {
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

    fn write_blobs(&mut self) -> Result<(), SessionError> {
        for pending in std::mem::take(&mut self.pending_blobs) {
            blobs::put(self.storage.as_mut(), &self.blob_dir, &pending.bytes)
                .map_err(|e| self.latch(&e))?;
        }
        Ok(())
    }

    fn latch(&mut self, error: &std::io::Error) -> SessionError {
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
fn sibling(path: &Path, what: &str, now_ms: i64) -> PathBuf {
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

#[cfg(test)]
mod tests;
