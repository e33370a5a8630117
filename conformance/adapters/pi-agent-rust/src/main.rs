//! session-conformance adapter for pi_agent_rust 0.8.0, the Rust port of pi's agent
//! (`pi::session::Session`), profile `pi`.
//!
//! Speaks conformance/PROTOCOL.md: one JSON object per line on stdin (requests) and stdout
//! (responses). Persistent mode by default; `--one-shot` answers exactly one request and exits.
//!
//! Operations: `load`, `context`, `tree`, `apply`, `persist` (src/ops.rs says how each maps onto
//! the crate). The session stores (`list`, `continue`, `resolve`, `switch`, …) and compaction
//! planning (`compaction`, `branch_summary`) are answered `{"unsupported": true}` (README.md
//! "What is left"). The crate is async (asupersync); every request runs on one current-thread
//! asupersync runtime, as the crate's own tests drive it (session.rs `run_async`).

mod ops;
mod util;

use std::io::{BufRead, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use asupersync::runtime::{Runtime, RuntimeBuilder};
use serde_json::{Map, Value, json};

use crate::util::{Failure, OpError};

const IMPLEMENTATION: &str = "pi_agent_rust";
const VERSION: &str = "0.8.0";
const PROFILE: &str = "pi";
const OPERATIONS: [&str; 5] = ["load", "context", "tree", "apply", "persist"];
/// `own-file-names`: the crate names a new session file `<time>_<first 8 characters of the
/// session id>.<ext>` in `<session dir>/--<cwd>--/` (session.rs `save_inner`), where pi writes
/// `<time>_<uuid>.jsonl` in the session dir.
const CAPABILITIES: [&str; 1] = ["own-file-names"];

/// The protocol's output: each line written whole and flushed at once (ack lines must reach
/// the pipe before the next step runs).
pub struct Out;

impl Out {
    pub fn line(&self, value: &Value) {
        let text = serde_json::to_string(value).unwrap_or_else(|err| {
            format!(
                "{{\"type\":\"response\",\"case\":\"\",\"error\":{{\"kind\":\"exception\",\"message\":{}}}}}",
                Value::String(format!("cannot serialise the response: {err}"))
            )
        });
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        let written = lock
            .write_all(text.as_bytes())
            .and_then(|()| lock.write_all(b"\n"))
            .and_then(|()| lock.flush());
        if let Err(err) = written {
            eprintln!("pi_agent_rust adapter: cannot write to stdout: {err}");
        }
    }
}

fn hello() -> Value {
    json!({
        "type": "hello",
        "implementation": IMPLEMENTATION,
        "version": VERSION,
        "profile": PROFILE,
        "operations": OPERATIONS,
        "capabilities": CAPABILITIES,
    })
}

struct Adapter {
    /// Built on first use; dropped (leaked) after a panic, since its state after an unwind
    /// through `block_on` is unknown.
    runtime: Option<Runtime>,
}

impl Adapter {
    fn runtime(&mut self) -> Result<&Runtime, Failure> {
        if self.runtime.is_none() {
            let runtime = RuntimeBuilder::current_thread().build().map_err(|err| {
                Failure::exception(format!("cannot build the asupersync runtime: {err}"))
            })?;
            self.runtime = Some(runtime);
        }
        self.runtime
            .as_ref()
            .ok_or_else(|| Failure::exception("no asupersync runtime"))
    }

    /// Answers one protocol line; returns false on `bye`.
    fn respond_to(&mut self, line: &str, out: &Out) -> bool {
        let message = match parse_line(line) {
            Ok(message) => message,
            Err(err) => {
                eprintln!("pi_agent_rust adapter: unreadable line: {err}");
                out.line(&json!({
                    "type": "response",
                    "case": guess_case(line),
                    "error": {"kind": "exception", "message": format!("cannot read the request: {err}")},
                }));
                return true;
            }
        };
        let Value::Object(message) = message else {
            out.line(&json!({
                "type": "response",
                "case": "",
                "error": {"kind": "exception", "message": "the request is not a JSON object"},
            }));
            return true;
        };
        match message.get("type").and_then(Value::as_str) {
            Some("hello") => out.line(&hello()),
            Some("bye") => return false,
            Some("request") => {
                let response = self.handle_request(&message, out);
                out.line(&response);
            }
            other => eprintln!("pi_agent_rust adapter: ignoring a message of type {other:?}"),
        }
        true
    }

    fn handle_request(&mut self, request: &Map<String, Value>, out: &Out) -> Value {
        let case = request.get("case").cloned().unwrap_or(Value::Null);
        match self.serve(request, &case, out) {
            Ok(ok) => json!({"type": "response", "case": case, "ok": ok}),
            Err(OpError::Unsupported) => {
                json!({"type": "response", "case": case, "unsupported": true})
            }
            Err(OpError::Fail(failure)) => {
                eprintln!(
                    "pi_agent_rust adapter: case {case}: {}: {}",
                    failure.kind, failure.message
                );
                json!({"type": "response", "case": case, "error": failure.to_json()})
            }
        }
    }

    fn serve(
        &mut self,
        request: &Map<String, Value>,
        case: &Value,
        out: &Out,
    ) -> Result<Value, OpError> {
        let op = request.get("op").and_then(Value::as_str).unwrap_or("");
        if !OPERATIONS.contains(&op) {
            return Err(OpError::Unsupported);
        }
        if let Some(profile) = request.get("profile").and_then(Value::as_str) {
            if profile != PROFILE {
                return Err(OpError::Unsupported);
            }
        }
        // No `faults` capability: the crate writes through std::fs and tempfile directly, with
        // no storage object to wrap. The runner never sends a case with faults to this adapter;
        // should one arrive (one-shot mode), it cannot be served as asked.
        if request
            .get("faults")
            .and_then(Value::as_array)
            .is_some_and(|faults| !faults.is_empty())
        {
            return Err(OpError::Unsupported);
        }
        let dir = match request.get("dir") {
            Some(Value::String(dir)) if Path::new(dir).is_absolute() => PathBuf::from(dir),
            other => {
                return Err(Failure::exception(format!(
                    "request.dir must be an absolute path, got {}",
                    util::show(other)
                ))
                .into());
            }
        };
        enter_case_dir(&dir)?;
        let empty = Map::new();
        let args = match request.get("args") {
            Some(Value::Object(args)) => args,
            _ => &empty,
        };
        let ctx = ops::Ctx {
            case: case.clone(),
            sessions_dir: dir.join("sessions"),
            dir,
        };

        let runtime = self.runtime()?;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(ops::run(op, &ctx, args, out))
        }));
        match outcome {
            Ok(result) => result,
            Err(panic) => {
                if let Some(runtime) = self.runtime.take() {
                    std::mem::forget(runtime);
                }
                Err(Failure::exception(format!("panic: {}", panic_message(&*panic))).into())
            }
        }
    }
}

/// The request's environment (PROTOCOL.md "Request"): the case directory is the working
/// directory, `dir/home` the home directory. The crate reads `PI_CODING_AGENT_DIR`
/// (config.rs `global_dir_from_env`, else `~/.pi/agent`) and `PI_SESSIONS_DIR` for its default
/// session folder, which only the sessions' index falls back to here.
fn enter_case_dir(dir: &Path) -> Result<(), Failure> {
    std::env::set_current_dir(dir)
        .map_err(|err| Failure::exception(format!("cannot enter {}: {err}", dir.display())))?;
    let home = dir.join("home");
    let agent_dir = home.join(".pi").join("agent");
    // SAFETY: called between requests, on the main thread, while no code of this process reads
    // the environment (the crate's worker threads of the previous request have finished).
    unsafe {
        std::env::set_var("HOME", &home);
        std::env::set_var("PI_CODING_AGENT_DIR", &agent_dir);
        std::env::remove_var("PI_SESSIONS_DIR");
    }
    Ok(())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Reads one protocol line. serde_json refuses a lone surrogate escape, which the runner's
/// `JSON.parse` reads as U+FFFD (PROTOCOL.md "Robustness"): such a line is read again with
/// those escapes replaced.
fn parse_line(line: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(value) => Ok(value),
        Err(err) => {
            if line.contains("\\u") {
                if let Ok(value) =
                    serde_json::from_str::<Value>(&util::replace_lone_surrogates(line))
                {
                    return Ok(value);
                }
            }
            Err(err.to_string())
        }
    }
}

/// The `case` of a line that does not parse (too deep, say), so that its error response still
/// names its case; `""` when none is found.
fn guess_case(line: &str) -> Value {
    let Some(start) = line.find("\"case\"") else {
        return Value::String(String::new());
    };
    let rest = line[start + "\"case\"".len()..].trim_start();
    let Some(rest) = rest.strip_prefix(':') else {
        return Value::String(String::new());
    };
    let rest = rest.trim_start();
    let Some(rest) = rest.strip_prefix('"') else {
        return Value::String(String::new());
    };
    match rest.find('"') {
        Some(end) if !rest[..end].contains('\\') => Value::String(rest[..end].to_string()),
        _ => Value::String(String::new()),
    }
}

fn main() {
    let one_shot = std::env::args().skip(1).any(|arg| arg == "--one-shot");
    let out = Out;
    let mut adapter = Adapter { runtime: None };

    if one_shot {
        let mut bytes = Vec::new();
        if let Err(err) = std::io::stdin().lock().read_to_end(&mut bytes) {
            eprintln!("pi_agent_rust adapter: cannot read stdin: {err}");
        }
        let text = String::from_utf8_lossy(&bytes);
        let line = text
            .split('\n')
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("");
        adapter.respond_to(line, &out);
        std::process::exit(0);
    }

    let stdin = std::io::stdin();
    let mut reader = stdin.lock();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer) {
            Ok(0) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&buffer);
                let line = text.trim();
                if line.is_empty() {
                    continue;
                }
                if !adapter.respond_to(line, &out) {
                    break;
                }
            }
            Err(err) => {
                eprintln!("pi_agent_rust adapter: cannot read stdin: {err}");
                break;
            }
        }
    }
    // Exit at once: dropping the runtime could wait for its blocking pool.
    std::process::exit(0);
}
