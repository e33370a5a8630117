//! Faults as case data (`PROTOCOL.md` "Faults", issue #24): what a case's `faults` say,
//! and the reference's faulty storage, a [`Storage`] that wraps [`FileStorage`] and
//! fails the calls the faults name.
//!
//! A fault fires once, on the `nth` call of its kind (`open`, `write`, `fsync`,
//! `rename`) to a file its `path` pattern matches, and is lifted after: calls before
//! and after it reach the file system. A rewrite (`write_text`: temp file, write,
//! fsync, rename) counts as one call of each kind on its target file.
//!
//! The same storage keeps the journal of a request in journal mode (`PROTOCOL.md`
//! "Journal", `crash --power-loss`): every call that changed a file, as the journal
//! line the adapter reports, so that the harness can rebuild what a power loss leaves.

use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use session_reference::storage::{temp_beside, FileStorage, Stat, Storage, Writer};

/// The call a fault fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FaultOn {
    /// Opening a file for writing: an append writer, or a rewrite's temp file.
    Open,
    /// One write call: one appended line, or a rewrite's whole text.
    Write,
    /// An `fsync`: a writer's, or a rewrite's before its rename.
    Fsync,
    /// A rename: a rewrite's temp file over its target, or a move.
    Rename,
}

/// The error a fault raises: an `errno` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Errno {
    /// No space left on device.
    #[serde(rename = "ENOSPC")]
    Enospc,
    /// Input/output error.
    #[serde(rename = "EIO")]
    Eio,
    /// Cross-device link.
    #[serde(rename = "EXDEV")]
    Exdev,
    /// Permission denied.
    #[serde(rename = "EACCES")]
    Eacces,
}

impl Errno {
    /// The error number (the same on Linux and macOS).
    pub fn number(self) -> i32 {
        match self {
            Errno::Enospc => 28,
            Errno::Eio => 5,
            Errno::Exdev => 18,
            Errno::Eacces => 13,
        }
    }

    /// The error as the system reports it.
    pub fn error(self) -> io::Error {
        io::Error::from_raw_os_error(self.number())
    }
}

/// One fault of a case (`PROTOCOL.md` "Faults").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// The call it fails: `open`, `write`, `fsync` or `rename`.
    pub on: FaultOn,
    /// The files it applies to: a pattern relative to the case directory, where `*`
    /// matches any characters but `/` (`sessions/*`); every file when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The matching call it fires on, counted from 1 per fault (1 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub nth: Option<u32>,
    /// The error the call fails with; required unless `short`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Errno>,
    /// `write` only: how many of the call's bytes reach the file before it fails (0
    /// when absent), or, with `short`, before it returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_bytes: Option<u64>,
    /// `write` only: a short write, not an error: the call writes `after_bytes` bytes
    /// (1 when absent) and returns that count; the caller must write the rest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short: bool,
}

impl Fault {
    /// Why the fault cannot be applied, if it cannot: its path must stay inside the
    /// case directory and its fields fit its kind.
    pub fn refusal(&self) -> Option<String> {
        let kind = self.on;
        let problem = if let Some(e) = self
            .path
            .as_deref()
            .and_then(|p| crate::guard::inside(Path::new(""), p).err())
        {
            format!("path: {e}")
        } else if let Some(p) = self
            .path
            .as_deref()
            .filter(|p| p.contains(['[', ']', '{', '}', '?']) || p.contains("**"))
        {
            format!("path {p:?}: only `*` is a wildcard")
        } else if let Some(e) = self.path.as_deref().and_then(|p| matcher(p).err()) {
            format!("path: {e}")
        } else if self.nth == Some(0) {
            "nth counts from 1".into()
        } else if kind != FaultOn::Write && (self.short || self.after_bytes.is_some()) {
            format!("{kind:?} fault with short or after_bytes (write only)")
        } else if self.short && self.error.is_some() {
            "a short write has no error".into()
        } else if !self.short && self.error.is_none() {
            "error is required (ENOSPC, EIO, EXDEV, EACCES) unless short".into()
        } else {
            return None;
        };
        Some(format!("fault {problem}"))
    }
}

/// The glob of a fault's path: `*` stops at `/`.
fn matcher(pattern: &str) -> Result<globset::GlobMatcher, globset::Error> {
    Ok(globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()?
        .compile_matcher())
}

/// A fault and how many matching calls it has seen.
#[derive(Debug)]
struct Armed {
    on: FaultOn,
    path: Option<globset::GlobMatcher>,
    nth: u32,
    seen: u32,
    action: Action,
}

/// What a fault does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Writes the first `bytes` bytes (for a write), then fails with `errno`.
    Fail {
        /// The error.
        errno: Errno,
        /// Bytes that reach the file first.
        bytes: u64,
    },
    /// Writes the first `bytes` bytes and returns that count.
    Short {
        /// Bytes written.
        bytes: u64,
    },
}

/// The faults of one request, shared by the storages that clone it (a reopen in the
/// same request sees the faults that fired as lifted).
#[derive(Debug, Clone)]
pub struct FaultyStorage {
    root: PathBuf,
    inner: Rc<RefCell<FileStorage>>,
    armed: Rc<RefCell<Vec<Armed>>>,
    /// The journal lines not yet taken, in journal mode.
    journal: Option<Rc<RefCell<Vec<Value>>>>,
}

impl FaultyStorage {
    /// A file storage for the case directory `root` that fails as `faults` say.
    /// Faults that [`Fault::refusal`] refuses are left out (the runner refuses their case).
    pub fn new(root: &Path, faults: &[Fault]) -> FaultyStorage {
        let armed = faults
            .iter()
            .filter(|f| f.refusal().is_none())
            .map(|f| Armed {
                on: f.on,
                path: f.path.as_deref().and_then(|p| matcher(p).ok()),
                nth: f.nth.unwrap_or(1),
                seen: 0,
                action: if f.short {
                    Action::Short {
                        bytes: f.after_bytes.unwrap_or(1),
                    }
                } else {
                    Action::Fail {
                        errno: f.error.unwrap_or(Errno::Eio),
                        bytes: f.after_bytes.unwrap_or(0),
                    }
                },
            })
            .collect();
        FaultyStorage {
            root: root.to_owned(),
            inner: Rc::new(RefCell::new(FileStorage)),
            armed: Rc::new(RefCell::new(armed)),
            journal: None,
        }
    }

    /// The same storage, keeping a journal of the calls that change files.
    #[must_use]
    pub fn journaled(mut self) -> FaultyStorage {
        self.journal = Some(Rc::default());
        self
    }

    /// The journal lines recorded since the last call (`{"op":"write",…}`, without
    /// `type` and `case`); empty without a journal.
    pub fn take_journal(&self) -> Vec<Value> {
        self.journal
            .as_ref()
            .map(|j| std::mem::take(&mut *j.borrow_mut()))
            .unwrap_or_default()
    }

    /// Records a call in the journal, if there is one.
    fn record(&self, op: &str, path: &Path, more: Value) {
        if let Some(journal) = &self.journal {
            let mut line = json!({"op": op, "path": path.to_string_lossy()});
            if let (Some(line), Value::Object(more)) = (line.as_object_mut(), more) {
                line.extend(more);
            }
            journal.borrow_mut().push(line);
        }
    }

    /// Records that `bytes` reached the end of `path` (nothing: the file was created).
    fn record_write(&self, path: &Path, bytes: &[u8]) {
        if self.journal.is_some() {
            use base64::Engine as _;
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            self.record("write", path, json!({"data": data}));
        }
    }

    /// Counts a call of kind `on` to `path`; the action of the fault it fires, if any.
    pub fn hit(&self, on: FaultOn, path: &Path) -> Option<Action> {
        let mut fired = None;
        for armed in self.armed.borrow_mut().iter_mut() {
            if armed.on == on && self.matches(armed, path) {
                armed.seen = armed.seen.saturating_add(1);
                if armed.seen == armed.nth && fired.is_none() {
                    fired = Some(armed.action);
                }
            }
        }
        fired
    }

    /// Whether a fault of any kind could apply to `path`.
    fn concerns(&self, path: &Path) -> bool {
        self.armed.borrow().iter().any(|a| self.matches(a, path))
    }

    fn matches(&self, armed: &Armed, path: &Path) -> bool {
        let Ok(relative) = path.strip_prefix(&self.root) else {
            return false;
        };
        armed.path.as_ref().is_none_or(|m| m.is_match(relative))
    }

    /// A failing open, if one fires.
    fn open_check(&self, path: &Path) -> io::Result<()> {
        match self.hit(FaultOn::Open, path) {
            Some(Action::Fail { errno, .. }) => Err(errno.error()),
            _ => Ok(()),
        }
    }

    /// Writes `bytes` to `file` as a write call to `path`.
    fn write(&self, path: &Path, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        self.write_as(path, path, file, bytes)
    }

    /// Writes `bytes` to `file` (named `name` in the journal) as a write call to `path`.
    fn write_as(&self, path: &Path, name: &Path, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        match self.hit(FaultOn::Write, path) {
            Some(Action::Fail { errno, bytes: n }) => {
                file.write_all(prefix(bytes, n))?;
                self.record_write(name, prefix(bytes, n));
                Err(errno.error())
            }
            Some(Action::Short { bytes: n }) => {
                ShortOnce {
                    file,
                    first: Some(usize::try_from(n).unwrap_or(usize::MAX)),
                }
                .write_all(bytes)?;
                self.record_write(name, bytes);
                Ok(())
            }
            None => {
                file.write_all(bytes)?;
                self.record_write(name, bytes);
                Ok(())
            }
        }
    }

    /// `fsync`s `file` as a call on `path`.
    fn fsync(&self, path: &Path, file: &File) -> io::Result<()> {
        if let Some(Action::Fail { errno, .. }) = self.hit(FaultOn::Fsync, path) {
            return Err(errno.error());
        }
        file.sync_all()?;
        self.record("fsync", path, Value::Null);
        Ok(())
    }

    /// Renames as a call on `from` and `to`.
    fn rename_check(&self, from: &Path, to: &Path) -> io::Result<()> {
        let fired = self.hit(FaultOn::Rename, from).or_else(|| {
            (from != to)
                .then(|| self.hit(FaultOn::Rename, to))
                .flatten()
        });
        match fired {
            Some(Action::Fail { errno, .. }) => Err(errno.error()),
            _ => Ok(()),
        }
    }
}

/// The first `n` bytes of `bytes` (all of them when there are fewer).
fn prefix(bytes: &[u8], n: u64) -> &[u8] {
    let n = usize::try_from(n).unwrap_or(usize::MAX).min(bytes.len());
    &bytes[..n]
}

/// A file whose first write call writes at most `first` bytes (at least one, so that
/// `write_all` goes on), as a short write does.
struct ShortOnce<'a> {
    file: &'a mut File,
    first: Option<usize>,
}

impl Write for ShortOnce<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.first.take() {
            Some(n) => self
                .file
                .write(&buf[..n.clamp(1, buf.len().max(1)).min(buf.len())]),
            None => self.file.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// An append writer whose calls go through the faults; its first error is latched.
struct FaultyWriter {
    storage: FaultyStorage,
    path: PathBuf,
    file: Option<File>,
    error: Option<String>,
}

impl FaultyWriter {
    fn run(
        &mut self,
        call: impl FnOnce(&FaultyStorage, &Path, &mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        if let Some(message) = &self.error {
            return Err(io::Error::other(message.clone()));
        }
        let result = match self.file.as_mut() {
            Some(file) => call(&self.storage, &self.path, file),
            None => Err(io::Error::other("Writer closed")),
        };
        result.inspect_err(|e| self.error = Some(e.to_string()))
    }
}

impl Writer for FaultyWriter {
    fn write_line(&mut self, line: &str) -> io::Result<()> {
        self.run(|storage, path, file| storage.write(path, file, format!("{line}\n").as_bytes()))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.run(|_, _, file| file.flush())
    }

    fn fsync(&mut self) -> io::Result<()> {
        self.run(|storage, path, file| storage.fsync(path, file))
    }

    fn close(&mut self) -> io::Result<()> {
        if self.file.is_none() && self.error.is_none() {
            return Ok(());
        }
        let closed = self.run(|_, _, file| file.flush());
        self.file = None;
        closed
    }

    fn error(&self) -> Option<String> {
        self.error.clone()
    }
}

impl Storage for FaultyStorage {
    fn ensure_dir(&mut self, dir: &Path) -> io::Result<()> {
        self.inner.borrow_mut().ensure_dir(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.borrow().exists(path)
    }

    /// A rewrite: open (the temp file), write, fsync, rename, each a call on `path`.
    /// Without a fault that could apply to `path`, the file storage's own rewrite.
    fn write_text(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        if !self.concerns(path) && self.journal.is_none() {
            return self.inner.borrow_mut().write_text(path, bytes);
        }
        let temp = temp_beside(path)?;
        self.open_check(path)?;
        let result = (|| {
            let mut file = File::create(&temp)?;
            self.record("truncate", &temp, Value::Null);
            // The faults count the calls on the target; the journal names the temp file.
            self.write_as(path, &temp, &mut file, bytes)?;
            match self.hit(FaultOn::Fsync, path) {
                Some(Action::Fail { errno, .. }) => return Err(errno.error()),
                _ => file.sync_all()?,
            }
            self.record("fsync", &temp, Value::Null);
            drop(file);
            self.rename_check(path, path)?;
            fs::rename(&temp, path)?;
            self.record("rename", &temp, json!({"to": path.to_string_lossy()}));
            Ok(())
        })();
        if result.is_err() && fs::remove_file(&temp).is_ok() {
            self.record("unlink", &temp, Value::Null);
        }
        result
    }

    fn stat(&self, path: &Path) -> io::Result<Option<Stat>> {
        self.inner.borrow().stat(path)
    }

    fn list_files(&self, dir: &Path, pattern: &str) -> io::Result<Vec<PathBuf>> {
        self.inner.borrow().list_files(dir, pattern)
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.inner.borrow().read(path)
    }

    fn read_prefix(&self, path: &Path, max: usize) -> io::Result<Option<Vec<u8>>> {
        self.inner.borrow().read_prefix(path, max)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        self.rename_check(from, to)?;
        self.inner.borrow_mut().rename(from, to)?;
        self.record("rename", from, json!({"to": to.to_string_lossy()}));
        Ok(())
    }

    fn unlink(&mut self, path: &Path) -> io::Result<()> {
        self.inner.borrow_mut().unlink(path)?;
        self.record("unlink", path, Value::Null);
        Ok(())
    }

    fn open_writer(&mut self, path: &Path) -> io::Result<Box<dyn Writer>> {
        self.open_check(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        self.record_write(path, b"");
        Ok(Box::new(FaultyWriter {
            storage: self.clone(),
            path: path.to_owned(),
            file: Some(file),
            error: None,
        }))
    }

    fn read_blob(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        self.inner.borrow().read_blob(path)
    }

    fn remove_stale_temps(&mut self, dir: &Path) {
        let names = |dir: &Path| -> Vec<PathBuf> {
            fs::read_dir(dir)
                .map(|d| d.flatten().map(|e| e.path()).collect())
                .unwrap_or_default()
        };
        let before = names(dir);
        self.inner.borrow_mut().remove_stale_temps(dir);
        if self.journal.is_some() {
            let after = names(dir);
            for gone in before.iter().filter(|p| !after.contains(p)) {
                self.record("unlink", gone, Value::Null);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fault(value: serde_json::Value) -> Fault {
        serde_json::from_value(value).expect("a fault")
    }

    /// What a sequence of calls on `sessions/s.jsonl` leaves, per fault kind: each
    /// call's outcome (`ok` or the errno number) and the file's bytes.
    #[test]
    fn each_fault_kind_fails_its_call_once() {
        #[allow(clippy::type_complexity)]
        let table: [(serde_json::Value, &[&str], &str); 7] = [
            // fault, outcomes of write "a", write "bc", write "d", the file's bytes
            (
                json!({"on": "write", "error": "ENOSPC"}),
                &["28", "28", "28"],
                "",
            ),
            (
                json!({"on": "write", "nth": 2, "error": "ENOSPC", "after_bytes": 1}),
                &["ok", "28", "28"],
                "a\nb",
            ),
            (
                json!({"on": "write", "nth": 2, "short": true}),
                &["ok", "ok", "ok"],
                "a\nbc\nd\n",
            ),
            (
                json!({"on": "write", "path": "other/*", "error": "EIO"}),
                &["ok", "ok", "ok"],
                "a\nbc\nd\n",
            ),
            (
                json!({"on": "fsync", "error": "EIO"}),
                &["5", "5", "5"],
                "a\n",
            ),
            (
                json!({"on": "open", "path": "sessions/*", "error": "EACCES"}),
                &["13"],
                "",
            ),
            (
                json!({"on": "rename", "error": "EXDEV"}),
                &["ok", "ok", "ok"],
                "a\nbc\nd\n",
            ),
        ];
        for (spec, outcomes, bytes) in table {
            let dir = tempfile::tempdir().expect("a temp dir");
            let mut storage = FaultyStorage::new(dir.path(), &[fault(spec.clone())]);
            let path = dir.path().join("sessions/s.jsonl");
            let mut seen = Vec::new();
            match storage.open_writer(&path) {
                Err(e) => seen.push(e.raw_os_error().map_or("other".into(), |n| n.to_string())),
                Ok(mut writer) => {
                    for line in ["a", "bc", "d"] {
                        let result = writer.write_line(line).and_then(|()| writer.fsync());
                        seen.push(match result {
                            Ok(()) => "ok".into(),
                            Err(e) => e
                                .raw_os_error()
                                .map_or_else(|| latched_number(&e), |n| n.to_string()),
                        });
                    }
                }
            }
            assert_eq!(seen, outcomes, "{spec}");
            let written = fs::read(&path).unwrap_or_default();
            assert_eq!(String::from_utf8_lossy(&written), bytes, "{spec}");
        }
    }

    /// A latched error's number, read back from its message.
    fn latched_number(error: &io::Error) -> String {
        let text = error.to_string();
        text.rsplit_once("os error ")
            .map_or(text.clone(), |(_, n)| n.trim_end_matches(')').to_owned())
    }

    /// A rewrite counts one call of each kind; a failed one leaves the old file whole
    /// and no temp file.
    #[test]
    fn a_failed_rewrite_leaves_the_old_file() {
        for spec in [
            json!({"on": "open", "error": "EACCES"}),
            json!({"on": "write", "error": "ENOSPC", "after_bytes": 2}),
            json!({"on": "fsync", "error": "EIO"}),
            json!({"on": "rename", "error": "EXDEV"}),
        ] {
            let dir = tempfile::tempdir().expect("a temp dir");
            let path = dir.path().join("s.jsonl");
            fs::write(&path, "old\n").expect("written");
            let mut storage = FaultyStorage::new(dir.path(), &[fault(spec.clone())]);
            assert!(storage.write_text(&path, b"new\n").is_err(), "{spec}");
            assert_eq!(fs::read(&path).expect("kept"), b"old\n", "{spec}");
            assert_eq!(
                fs::read_dir(dir.path()).expect("a dir").count(),
                1,
                "{spec}"
            );
            // Lifted: the next rewrite succeeds.
            storage.write_text(&path, b"new\n").expect("lifted");
            assert_eq!(fs::read(&path).expect("replaced"), b"new\n", "{spec}");
        }
    }

    /// The journal of a session that appends, flushes, appends again and branches off:
    /// the appends after the flush are synced before the switch to the branched file
    /// (a later flush syncs only that one). Found by `crash --power-loss`.
    #[test]
    fn the_journal_shows_the_old_file_synced_before_a_branched_session() {
        use session_reference::model::Profile;
        use session_reference::session::SessionManager;
        let dir = tempfile::tempdir().expect("a temp dir");
        let storage = FaultyStorage::new(dir.path(), &[]).journaled();
        let mut options = crate::execute::options(dir.path(), Profile::Pi);
        options.storage = Box::new(storage.clone());
        let mut sm = SessionManager::create(options);
        let message = |role: &str| json!({"role": role, "content": "x", "timestamp": 1});
        sm.append_message(message("user")).expect("appended");
        let a1 = sm.append_message(message("assistant")).expect("appended");
        sm.flush().expect("flushed");
        sm.append_message(message("user")).expect("appended");
        let main = sm.session_file().expect("a file").to_owned();
        sm.create_branched_session(Some(&a1)).expect("branched");
        let calls: Vec<String> = storage
            .take_journal()
            .iter()
            .map(|line| {
                let path = line["path"].as_str().unwrap_or_default();
                let name = if path == main.to_string_lossy() {
                    "main"
                } else {
                    "other"
                };
                format!("{} {name}", line["op"].as_str().unwrap_or_default())
            })
            .collect();
        let last_main_write = calls.iter().rposition(|c| c == "write main");
        let last_main_fsync = calls.iter().rposition(|c| c == "fsync main");
        assert!(last_main_fsync > last_main_write, "{calls:?}");
    }

    #[test]
    fn bad_faults_are_refused() {
        let table = [
            (json!({"on": "write", "path": "../x", "error": "EIO"}), true),
            (
                json!({"on": "write", "path": "/etc/*", "error": "EIO"}),
                true,
            ),
            (json!({"on": "write"}), true),
            (json!({"on": "write", "short": true, "error": "EIO"}), true),
            (json!({"on": "fsync", "short": true}), true),
            (
                json!({"on": "rename", "error": "EXDEV", "after_bytes": 3}),
                true,
            ),
            (json!({"on": "write", "nth": 0, "error": "EIO"}), true),
            (
                json!({"on": "write", "path": "sessions/**", "error": "EIO"}),
                true,
            ),
            (
                json!({"on": "write", "path": "s?.jsonl", "error": "EIO"}),
                true,
            ),
            (
                json!({"on": "open", "path": "sessions/*", "error": "EACCES"}),
                false,
            ),
            (json!({"on": "write", "nth": 2, "short": true}), false),
        ];
        for (spec, refused) in table {
            assert_eq!(fault(spec.clone()).refusal().is_some(), refused, "{spec}");
        }
        for bad in [
            json!({"on": "read", "error": "EIO"}),
            json!({"on": "write", "error": "EPERM"}),
        ] {
            assert!(serde_json::from_value::<Fault>(bad).is_err());
        }
    }
}
