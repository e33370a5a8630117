//! Running cases: prepare a working directory, ask the adapter, read the files, normalise, compare, check safety.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use session_reference::model::Profile;

use crate::adapter::{Adapter, Failure};
use crate::corpus::{Case, SafetyCheck};
use crate::names::{self, NameProblem};
use crate::normalize::{object, take_snapshot, Normalizer};
pub use crate::outcome::{CaseResult, Status, UNREVIEWED_NOTE};

mod judge;
mod safety;

use crate::protocol::{Capability, Hello, Request};
use judge::compare_case;
pub use judge::{first_difference, ignore_extra_keys, unified_diff, OWN_FILE_NAMES};
use safety::safety;

/// A request as it was sent, cut to 300 characters: what a timeout was waiting on.
fn request_excerpt(request: &Request) -> String {
    const MAX: usize = 300;
    let text = serde_json::to_string(request).unwrap_or_default();
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

pub use crate::divergences::Divergences;

/// Reads a divergence list (`divergences` module: ids, globs, tags, entry types).
pub fn read_divergences(path: &Path) -> Result<Divergences, crate::divergences::DivergenceError> {
    crate::divergences::read(path)
}

/// Where case directories are made: `$SESSION_CONFORMANCE_WORK_DIR`, else `/dev/shm`
/// when it exists (memory-backed: a case's fsyncs and deletions cost nothing), else the temp dir.
/// The path is canonical (absolute, no symbolic links), so a case directory made in it is too.
pub fn work_root() -> &'static Path {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let root = if let Some(dir) = std::env::var_os("SESSION_CONFORMANCE_WORK_DIR") {
            dir.into()
        } else {
            let shm = Path::new("/dev/shm");
            if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
                shm.to_path_buf()
            } else {
                std::env::temp_dir()
            }
        };
        root.canonicalize().unwrap_or(root)
    })
}

/// Runs the actual operation of `case` and returns its canonical, normalised output.
pub fn produce(
    case: &Case,
    profile: Profile,
    adapter: &mut dyn Adapter,
    hello: &Hello,
    timeout: Duration,
) -> Result<(Value, Vec<String>), (Status, String)> {
    produce_with(case, profile, adapter, hello, timeout, &[])
        .map(|produced| {
            let notes = produced.notes();
            (produced.output, notes)
        })
        .map_err(|unproduced| (unproduced.status(), unproduced.to_string()))
}

/// Why [`produce_with`] has no output, and what the adapter destroyed before it
/// stopped: the safety checks run on whatever a timed-out, crashed or confused
/// adapter left in the case directory.
#[derive(Debug, Clone)]
pub struct Unproduced {
    /// What happened: `timeout`, `crash`, `protocol-error`, `skipped`, or `fail` for a
    /// case error.
    pub status: Status,
    /// What the adapter or the case did: the timeout's request, the crash's message.
    pub note: String,
    /// The safety checks that failed on what the adapter left behind.
    pub unsafe_checks: Vec<SafetyFailure>,
}

impl Unproduced {
    /// A failure that left nothing to check (the case directory was never handed over).
    fn before_the_call(status: Status, note: String) -> Unproduced {
        Unproduced {
            status,
            note,
            unsafe_checks: Vec::new(),
        }
    }

    /// The case's status: `unsafe` when a safety check failed, whatever else happened.
    pub fn status(&self) -> Status {
        if self.unsafe_checks.is_empty() {
            self.status
        } else {
            Status::Unsafe
        }
    }
}

impl std::fmt::Display for Unproduced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.note)?;
        for check in &self.unsafe_checks {
            write!(f, "; {check}")?;
        }
        Ok(())
    }
}

/// What [`produce_with`] gives.
pub struct Produced {
    /// The normalised output, `{"response", "files"}`.
    pub output: Value,
    /// The safety checks that failed: the implementation destroyed data.
    pub unsafe_checks: Vec<SafetyFailure>,
    /// The adapter's error, when it answered one: `error KIND: MESSAGE`.
    pub error: Option<String>,
    /// Lines of an extra entry type left out of written files: `N line(s) of type T`.
    pub left_out: Vec<String>,
    /// Created file names and session ids not in the profile's form ([`crate::names`]);
    /// none when the adapter declares `own-file-names`.
    pub name_problems: Vec<NameProblem>,
}

impl Produced {
    /// The notes a result shows: each failed safety check (`unsafe: …`), then the
    /// adapter's error (`error …`).
    pub fn notes(&self) -> Vec<String> {
        self.unsafe_checks
            .iter()
            .map(ToString::to_string)
            .chain(self.error.clone())
            .collect()
    }
}

/// A safety check that failed ([`SafetyCheck`]), and what it found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafetyFailure {
    /// The check, as the case states it.
    pub check: SafetyCheck,
    /// What is lost: `the bytes of session.jsonl are gone`.
    pub lost: String,
}

impl SafetyFailure {
    /// The check as a signature names it: `bytes-kept FILE`, `lines-kept FILE` or
    /// `single-header`; words from the case, never from the run, so a divergence list
    /// can record it.
    pub fn label(&self) -> String {
        match &self.check {
            SafetyCheck::BytesKept { file } => format!("bytes-kept {file}"),
            SafetyCheck::LinesKept { file } => format!("lines-kept {file}"),
            SafetyCheck::SingleHeader => "single-header".to_owned(),
        }
    }
}

impl std::fmt::Display for SafetyFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unsafe: {}", self.lost)
    }
}

/// [`produce`], leaving out of written files the lines whose `type` is one of `extra_types`
/// (entry types an implementation writes by design, declared in its divergence list).
pub fn produce_with(
    case: &Case,
    profile: Profile,
    adapter: &mut dyn Adapter,
    hello: &Hello,
    timeout: Duration,
    extra_types: &[&str],
) -> Result<Produced, Unproduced> {
    // A corpus error fails its case, not the run.
    if let Some(reason) = &case.refused {
        return Err(Unproduced::before_the_call(
            Status::Fail,
            format!("case error: {reason}"),
        ));
    }
    let case_error =
        |e: String| Unproduced::before_the_call(Status::Fail, format!("case error: {e}"));
    let crash = |e: String| Unproduced::before_the_call(Status::Crash, e);
    let work = tempfile::Builder::new()
        .prefix("sc-")
        .tempdir_in(work_root())
        .map_err(|e| crash(format!("temp dir: {e}")))?;
    // The root is canonical and the directory was just made: its path is canonical too.
    let dir = work.path().to_path_buf();
    let dir_text = dir.to_string_lossy().into_owned();
    let mut folders = Folders::new(&dir);
    for (name, bytes) in &case.inputs {
        let path = crate::guard::inside(&dir, name).map_err(|e| case_error(e.to_string()))?;
        if let Some(parent) = path.parent() {
            folders.make(parent).map_err(|e| crash(e.to_string()))?;
        }
        let written: std::borrow::Cow<[u8]> = if case.file.dir_inputs.contains(name) {
            String::from_utf8_lossy(bytes)
                .replace("<dir>", &dir_text)
                .into_bytes()
                .into()
        } else {
            bytes.into()
        };
        fs::write(&path, written).map_err(|e| crash(e.to_string()))?;
    }
    set_mtimes(&dir, &case.file.mtimes).map_err(case_error)?;
    folders
        .make(&dir.join("home"))
        .map_err(|e| crash(e.to_string()))?;
    let args = case.request_args();
    let known = case.known_tokens(&args.text());
    let request = Request {
        kind: "request".into(),
        case: case.id(),
        op: case.file.op.clone(),
        profile: profile.name().into(),
        dir: dir_text.clone(),
        args,
        faults: case.file.faults.clone(),
    };
    // Whatever the adapter answers, or fails to, what it left is checked: a timed-out
    // or crashed adapter (killed by now, with all it started) may have destroyed data.
    let checked = |status, note| Unproduced {
        status,
        note,
        unsafe_checks: safety_failures(case, &dir),
    };
    let response = adapter.call(&request, timeout).map_err(|f| match f {
        Failure::Timeout => checked(
            Status::Timeout,
            format!(
                "no response within {}s to `{}`; the request sent: {}",
                timeout.as_secs_f64(),
                case.file.op,
                request_excerpt(&request)
            ),
        ),
        Failure::Start(m) | Failure::Crash(m) => checked(Status::Crash, m),
        Failure::Protocol(m) => checked(Status::ProtocolError, m),
    })?;
    if response.unsupported {
        return Err(checked(
            Status::Skipped,
            format!("adapter does not support {}", case.file.op),
        ));
    }
    let mut response_value = match (response.ok, &response.error) {
        (Some(ok), _) => object([("ok", ok)]),
        (None, Some(error)) => json!({ "error": { "kind": error.kind } }),
        (None, None) => json!({}),
    };
    strip_extras(&mut response_value, hello);
    strip_error_messages(&mut response_value);
    let unsafe_checks = safety_failures(case, &dir);
    // Read and emptied in one walk; what could not be removed goes with the directory.
    let mut files = take_snapshot(&dir, &case.inputs);
    let emptied = work.keep();
    if fs::remove_dir(&emptied).is_err() {
        let _ = fs::remove_dir_all(&emptied);
    }
    let error = response
        .error
        .as_ref()
        .map(|error| format!("error {}: {}", error.kind, error.message));
    // Names are checked as written: the normaliser makes every spelling a placeholder.
    let name_problems = if hello.has(&Capability::OwnFileNames) {
        Vec::new()
    } else {
        let args_text = request.args.text();
        let given = names::Given {
            dir: &dir_text,
            known: &known,
            args: &args_text,
            inputs: &case.inputs,
        };
        names::check(profile, &response_value, &files, &given)
    };
    let left_out = leave_out_types(&mut files, extra_types);
    let mut normalizer = Normalizer::with_known(&dir_text, known);
    // The response first: its ids and paths are in an order every implementation shares.
    normalizer.normalize(&mut response_value);
    normalizer.normalize_files(&mut files);
    let output = object([("response", response_value), ("files", files)]);
    Ok(Produced {
        output,
        unsafe_checks,
        error,
        left_out,
        name_problems,
    })
}

/// The safety checks of `case` that fail on what is in its directory `dir` now.
fn safety_failures(case: &Case, dir: &Path) -> Vec<SafetyFailure> {
    case.file
        .safety
        .iter()
        .filter_map(|check| {
            safety(check, case, dir).map(|lost| SafetyFailure {
                check: check.clone(),
                lost,
            })
        })
        .collect()
}

/// Removes the lines whose `type` is one of `types` from every file of a snapshot;
/// returns what was removed, per file and type.
fn leave_out_types(files: &mut Value, types: &[&str]) -> Vec<String> {
    let mut removed = Vec::new();
    if types.is_empty() {
        return removed;
    }
    let Value::Object(files) = files else {
        return removed;
    };
    for (name, file) in files.iter_mut() {
        let Some(lines) = file.get_mut("lines").and_then(Value::as_array_mut) else {
            continue;
        };
        for kind in types {
            let before = lines.len();
            lines.retain(|line| line.get("type").and_then(Value::as_str) != Some(kind));
            if lines.len() < before {
                removed.push(format!(
                    "{} line(s) of type {kind:?} left out of {name}",
                    before - lines.len()
                ));
            }
        }
    }
    removed
}

/// The folders made in a case directory so far: each is made once, its parents first,
/// without asking the file system again about one already made.
struct Folders {
    made: std::collections::HashSet<PathBuf>,
}

impl Folders {
    /// A fresh case directory's: only the directory itself exists.
    fn new(dir: &Path) -> Folders {
        Folders {
            made: std::iter::once(dir.to_path_buf()).collect(),
        }
    }

    /// Makes `folder` and any parent not made yet.
    fn make(&mut self, folder: &Path) -> std::io::Result<()> {
        if self.made.contains(folder) {
            return Ok(());
        }
        if let Some(parent) = folder.parent() {
            self.make(parent)?;
        }
        match fs::create_dir(folder) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        self.made.insert(folder.to_path_buf());
        Ok(())
    }
}

/// Gives input files the modification times the case states (`case.json` `mtimes`).
/// A name outside the case directory, a missing file or a time that does not read is
/// the case's error.
fn set_mtimes(
    dir: &Path,
    mtimes: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    for (name, time) in mtimes {
        let ms = session_reference::ids::parse_iso_ms(time)
            .ok_or_else(|| format!("mtimes: {time:?} is not an ISO time"))?;
        let at = if ms >= 0 {
            std::time::UNIX_EPOCH + Duration::from_millis(ms.unsigned_abs())
        } else {
            std::time::UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
        };
        let path = crate::guard::inside(dir, name).map_err(|e| format!("mtimes: {e}"))?;
        fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(at))
            .map_err(|e| format!("mtimes: {name}: {e}"))?;
    }
    Ok(())
}

/// Without the `diagnostics` capability, `diagnostics`, `unlistedDiagnostics` and
/// `migrated` are not part of a `{"ok": …}` response.
pub fn strip_extras(response: &mut Value, hello: &Hello) {
    if hello.has(&Capability::Diagnostics) {
        return;
    }
    if let Some(ok) = response.get_mut("ok").and_then(Value::as_object_mut) {
        ok.remove("diagnostics");
        ok.remove("unlistedDiagnostics");
        ok.remove("migrated");
    }
}

/// Error objects are compared by `kind`: drops `message` from every `{"error": {kind, message}}`
/// and from `apply`'s `{"flushError": {kind, message}}`.
/// Without recursion (a response may be nested 100,000 deep).
fn strip_error_messages(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    match v {
                        Value::Object(e)
                            if (key == "error" || key == "flushError")
                                && e.contains_key("kind") =>
                        {
                            e.shift_remove("message");
                        }
                        v => stack.push(v),
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// Runs one case and compares it with its golden. The adapter has `timeout` to answer,
/// or less when the divergence list expects the case to time out
/// ([`Divergences::time_limit`]).
pub fn run_case(
    case: &Case,
    profile: Profile,
    adapter: &mut dyn Adapter,
    hello: &Hello,
    timeout: Duration,
    divergences: &Divergences,
) -> CaseResult {
    let start = std::time::Instant::now();
    let limit = divergences.time_limit(&case.id(), timeout);
    // A short limit cuts the work, not the adapter's start (a one-shot process's).
    let limit = if limit < timeout {
        (limit + adapter.start_allowance()).min(timeout)
    } else {
        limit
    };
    let mut result = compare_case(case, profile, adapter, hello, limit, divergences);
    if limit < timeout && result.signature.as_deref() == Some(Status::Timeout.name()) {
        result.notes.push(format!(
            "waited {} ms, not --timeout's {} s: the divergence list expects this case to time out (`run --write-divergences` waits the whole timeout, and drops the line of a case that now answers)",
            limit.as_millis(),
            timeout.as_secs()
        ));
    }
    result.elapsed = start.elapsed();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Response;

    /// Folders are made with their parents, once; one that exists is no error, a file
    /// in the way is.
    #[test]
    fn folders_are_made_once_with_their_parents() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let mut folders = Folders::new(root);
        for folder in ["a/b/c", "a/b", "a", "a/d", "home"] {
            folders.make(&root.join(folder)).expect("made");
            assert!(root.join(folder).is_dir(), "{folder}");
        }
        assert_eq!(folders.made.len(), 6, "the root and five folders");
        // Made outside this record (by another writer): no error.
        fs::create_dir(root.join("e")).expect("made");
        Folders::new(root).make(&root.join("e/f")).expect("made");
        assert!(root.join("e/f").is_dir());
        fs::write(root.join("file"), "x").expect("written");
        assert!(Folders::new(root).make(&root.join("file/g")).is_err());
    }

    #[test]
    fn error_messages_are_left_out_of_results_and_flush_errors() {
        let mut response = json!({"ok": {
            "results": ["a", {"error": {"kind": "persistence", "message": "ENOTDIR"}}],
            "flushError": {"kind": "persistence", "message": "<dir>/sessions: write failed"},
            "message": "kept: not an error object"
        }});
        strip_error_messages(&mut response);
        assert_eq!(
            response,
            json!({"ok": {
                "results": ["a", {"error": {"kind": "persistence"}}],
                "flushError": {"kind": "persistence"},
                "message": "kept: not an error object"
            }})
        );
    }

    #[test]
    fn pointers_name_the_first_difference() {
        let a = json!({"a": [1, 2, {"b/c": 3}], "z": 1});
        let b = json!({"a": [1, 2, {"b/c": 4}], "z": 1});
        assert_eq!(
            first_difference(&a, &b, String::new()).as_deref(),
            Some("/a/2/b~1c")
        );
        assert_eq!(first_difference(&a, &a, String::new()), None);
        assert_eq!(
            first_difference(&json!([1]), &json!([1, 2]), String::new()).as_deref(),
            Some("/1")
        );
    }

    /// An adapter that answers every request with an empty session, or never answers
    /// (a hang); it records the limit each request was given.
    struct Recording {
        hangs: bool,
        limits: Vec<Duration>,
    }

    impl Adapter for Recording {
        fn hello(&mut self) -> Result<Hello, Failure> {
            Ok(crate::execute::hello(Profile::Pi))
        }

        fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure> {
            self.limits.push(timeout);
            if self.hangs {
                return Err(Failure::Timeout);
            }
            Ok(Response {
                kind: "response".into(),
                case: request.case.clone(),
                ok: Some(json!({"header": null, "entries": [], "leafId": null})),
                error: None,
                unsupported: false,
            })
        }
    }

    /// A `load` case, `g/x` with id 0001, in `dir`, whose golden is a `not_found` error:
    /// an empty session differs from it.
    fn hanging_case(dir: &Path) -> Case {
        let golden = r#"{"files":{},"response":{"error":{"kind":"not_found"}}}"#;
        fs::write(dir.join("expected.json"), golden).expect("golden written");
        let file = serde_json::from_value(json!({
            "id": 1, "name": "x", "profiles": ["pi"], "clauses": ["loading.1"], "op": "load", "args": {}
        }))
        .expect("case file");
        Case {
            file,
            dir: dir.to_path_buf(),
            group: "g".into(),
            inputs: std::collections::BTreeMap::new(),
            derived: crate::corpus::Derived::default(),
            refused: None,
        }
    }

    /// A case listed as timing out (`## timeout`) is given the short limit, and is
    /// divergent when it runs out; any other listing, or none, gives the run's timeout.
    /// A case that answers within the short limit is judged as any other.
    #[test]
    fn only_a_case_listed_as_timing_out_gets_the_short_limit() {
        use Status::{Divergent, DivergentChanged as Changed, Timeout};
        let (full, ms300) = (Duration::from_secs(20), Duration::from_millis(300));
        let short = crate::divergences::EXPECTED_HANG_LIMIT;
        let rows = [
            // (list, run's timeout, hangs, limit given, status, a note on the short limit)
            ("0001 h ## timeout", full, true, short, Divergent, true),
            ("0001 h ## timeout", ms300, true, ms300, Divergent, false),
            ("0001 h ## timeout", full, false, short, Changed, false),
            ("0001 h ## crash", full, true, full, Changed, false),
            ("0001 h", full, true, full, Divergent, false),
            ("g/* h", full, true, full, Divergent, false),
            ("tag:* h", full, true, full, Timeout, false),
            ("", full, true, full, Timeout, false),
        ];
        let dir = tempfile::tempdir().expect("temp dir");
        let case = hanging_case(dir.path());
        let hello = crate::execute::hello(Profile::Pi);
        for (list, timeout, hangs, limit, status, noted) in rows {
            let divergences = crate::divergences::parse(list, Path::new("d")).expect("a list");
            let mut adapter = Recording {
                hangs,
                limits: Vec::new(),
            };
            let result = run_case(
                &case,
                Profile::Pi,
                &mut adapter,
                &hello,
                timeout,
                &divergences,
            );
            assert_eq!(adapter.limits, [limit], "{list:?}");
            assert_eq!(result.status, status, "{list:?}: {:?}", result.notes);
            let note = result
                .notes
                .iter()
                .any(|n| n.contains("expects this case to time out"));
            assert_eq!(note, noted, "{list:?}: {:?}", result.notes);
        }
    }

    /// An adapter that answers `apply` by writing one session file, `sessions/NAME`,
    /// whose header has `id`.
    struct Naming {
        name: String,
        id: String,
    }

    impl Adapter for Naming {
        fn hello(&mut self) -> Result<Hello, Failure> {
            Ok(crate::execute::hello(Profile::Pi))
        }

        fn call(&mut self, request: &Request, _: Duration) -> Result<Response, Failure> {
            let sessions = Path::new(&request.dir).join("sessions");
            let header =
                json!({"type": "session", "id": self.id, "timestamp": "2026-11-25T21:12:20.603Z"});
            fs::create_dir_all(&sessions)
                .and_then(|()| fs::write(sessions.join(&self.name), format!("{header}\n")))
                .map_err(|e| Failure::Crash(e.to_string()))?;
            Ok(Response {
                kind: "response".into(),
                case: request.case.clone(),
                ok: Some(Value::Null),
                error: None,
                unsupported: false,
            })
        }
    }

    /// A case `apply/new` (id 0002, tag `file-naming`) whose golden is one new pi session
    /// file, `sessions/<ftime>_<session:1>.jsonl`.
    fn naming_case(dir: &Path) -> Case {
        let golden = json!({
            "files": {"sessions/<ftime>_<session:1>.jsonl": {"lines": [
                {"id": "<session:1>", "timestamp": "<time>", "type": "session"}
            ]}},
            "response": {"ok": null}
        });
        fs::write(
            dir.join("expected.json"),
            crate::canonical::canonical(&golden),
        )
        .expect("golden written");
        let file = serde_json::from_value(json!({
            "id": 2, "name": "new", "profiles": ["pi"], "clauses": ["format.15"], "op": "apply",
            "args": {"open": null, "steps": []}, "tags": ["file-naming"]
        }))
        .expect("case file");
        Case {
            file,
            dir: dir.to_path_buf(),
            group: "apply".into(),
            inputs: std::collections::BTreeMap::new(),
            derived: crate::corpus::Derived::default(),
            refused: None,
        }
    }

    /// A created name or id not in the profile's form fails a case its golden passes
    /// (the normaliser hides the spelling), with the problem as a note and a signature
    /// free of created names; `own-file-names` exempts it, and a divergence list lists
    /// it by tag or by id with that signature.
    #[test]
    fn created_names_are_checked_unless_the_adapter_names_its_own_files() {
        use Status::{Divergent, Fail, Pass};
        const UUID: &str = "01a2148d-657a-7504-a693-e034265d393c";
        let ms = "2026-11-25T21-12-20-603Z";
        let wrong_time = "name format.15: file name is not YYYY-MM-DDTHH-MM-SS-sssZ_<id>.jsonl";
        let rows = [
            // (file name, header id, own-file-names, list, status, signature)
            (format!("{ms}_{UUID}.jsonl"), UUID, false, "", Pass, None),
            (
                format!("20261125T211220603Z_{UUID}.jsonl"),
                UUID,
                false,
                "",
                Fail,
                Some(wrong_time),
            ),
            (
                format!("20261125T211220603Z_{UUID}.jsonl"),
                UUID,
                true,
                "",
                Pass,
                None,
            ),
            (
                format!("{ms}_1f9d2a6b9c0d1234.jsonl"),
                "1f9d2a6b9c0d1234",
                false,
                "",
                Fail,
                Some("name format.3: header id is not a lowercase UUID (8-4-4-4-12 hex digits)"),
            ),
            (
                format!("{ms}_1f9d2a6b9c0d1234.jsonl"),
                "1f9d2a6b9c0d1234",
                true,
                "",
                Pass,
                None,
            ),
            (
                format!("20261125T211220603Z_{UUID}.jsonl"),
                UUID,
                false,
                "tag:file-naming names files its way",
                Divergent,
                Some(wrong_time),
            ),
            (
                format!("20261125T211220603Z_{UUID}.jsonl"),
                UUID,
                false,
                &format!("0002 names files its way ## {wrong_time}"),
                Divergent,
                Some(wrong_time),
            ),
        ];
        let dir = tempfile::tempdir().expect("temp dir");
        let case = naming_case(dir.path());
        for (name, id, own, list, status, signature) in rows {
            let mut hello = crate::execute::hello(Profile::Pi);
            if own {
                hello.capabilities.push(Capability::OwnFileNames);
            }
            let divergences = crate::divergences::parse(list, Path::new("d")).expect("a list");
            let mut adapter = Naming {
                name: name.clone(),
                id: id.to_owned(),
            };
            let result = run_case(
                &case,
                Profile::Pi,
                &mut adapter,
                &hello,
                Duration::from_secs(20),
                &divergences,
            );
            let context = format!("{name} own-file-names {own} {list:?}: {:?}", result.notes);
            assert_eq!(result.status, status, "{context}");
            assert_eq!(result.signature.as_deref(), signature, "{context}");
            let noted = result
                .notes
                .iter()
                .any(|n| n.starts_with(&format!("name: sessions/{name}: ")));
            assert_eq!(noted, signature.is_some(), "{context}");
        }
    }

    #[test]
    fn divergence_lists_need_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        fs::write(&path, "# comment\n0001 hangs on cycles\n").unwrap();
        assert_eq!(
            read_divergences(&path)
                .unwrap()
                .by_id
                .get("0001")
                .map(|k| k.reason.as_str()),
            Some("hangs on cycles")
        );
        fs::write(&path, "0002\n").unwrap();
        assert!(read_divergences(&path)
            .unwrap_err()
            .to_string()
            .contains("line 1"));
    }
}
