//! Talking to an implementation: the built-in reference, or an adapter process (`PROTOCOL.md` "Modes").
//!
//! Invariant: a misbehaving adapter (hang, crash, non-JSON, a huge answer) fails
//! only the case at hand; the process is killed and started again for the next.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use session_reference::model::Profile;

use crate::answers::{Answers, Line};
use crate::execute;
use crate::protocol::{Hello, Request, Response, RunnerHello, PROTOCOL_VERSION};

/// The largest response line accepted (100 MiB).
pub const MAX_RESPONSE_BYTES: u64 = 100 * 1024 * 1024;

/// How long an adapter may take to start and say hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_mins(1);

/// Environment variables that name a terminal; cleared so implementations write no breadcrumbs.
const TERMINAL_VARS: [&str; 8] = [
    "TMUX_PANE",
    "KITTY_WINDOW_ID",
    "TERM_SESSION_ID",
    "WT_SESSION",
    "ZELLIJ_PANE_ID",
    "WEZTERM_PANE",
    "CMUX_SURFACE_ID",
    "TMUX",
];

/// Why an adapter produced no response for a case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No answer within the time limit.
    Timeout,
    /// The process exited; the tail of its stderr.
    Crash(String),
    /// The answer was not a protocol message.
    Protocol(String),
}

/// Something that answers protocol requests (on a worker thread of the run).
pub trait Adapter: Send {
    /// Starts the implementation (if needed) and returns its hello.
    fn hello(&mut self) -> Result<Hello, Failure>;
    /// Runs one request.
    fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure>;
}

/// A request's JSON text, in a buffer sized for it at once: the arguments can be
/// 500,000 characters, and growing a buffer to that size touches twice the memory.
fn request_line(request: &Request) -> Vec<u8> {
    let mut line = Vec::with_capacity(request.args.text_len().unwrap_or(0) + 1024);
    // A request always serialises (strings and a JSON text); empty stands in for the impossible failure.
    serde_json::to_writer(&mut line, request).map_or_else(|_| Vec::new(), |()| line)
}

/// The reference, in process.
pub struct ReferenceAdapter {
    profile: Profile,
}

impl ReferenceAdapter {
    /// The reference for `profile`.
    pub fn new(profile: Profile) -> ReferenceAdapter {
        ReferenceAdapter { profile }
    }
}

impl Adapter for ReferenceAdapter {
    fn hello(&mut self) -> Result<Hello, Failure> {
        Ok(execute::hello(self.profile))
    }

    fn call(&mut self, request: &Request, _timeout: Duration) -> Result<Response, Failure> {
        Ok(execute::execute(request.clone()))
    }
}

/// An adapter executable.
pub struct ProcessAdapter {
    argv: Vec<String>,
    profile: Profile,
    one_shot: bool,
    running: Option<Running>,
    hello: Option<Hello>,
}

struct Running {
    child: Child,
    /// `None` once closed (one-shot mode closes it after the request).
    stdin: Option<ChildStdin>,
    answers: Answers,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl ProcessAdapter {
    /// An adapter started as `argv` (no shell), for `profile`.
    pub fn new(argv: Vec<String>, profile: Profile, one_shot: bool) -> ProcessAdapter {
        ProcessAdapter {
            argv,
            profile,
            one_shot,
            running: None,
            hello: None,
        }
    }

    fn spawn(&self) -> Result<Running, Failure> {
        let (program, rest) = self
            .argv
            .split_first()
            .ok_or_else(|| Failure::Protocol("empty adapter command".into()))?;
        let mut command = Command::new(program);
        command
            .args(rest)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.one_shot {
            command.arg("--one-shot");
        }
        for var in TERMINAL_VARS {
            command.env_remove(var);
        }
        let mut child = command
            .spawn()
            .map_err(|e| Failure::Crash(format!("cannot start {program}: {e}")))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| Failure::Crash("no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Failure::Crash("no stdout".into()))?;
        widen_pipe(&stdin);
        widen_pipe(&stdout);
        let stderr_pipe = child.stderr.take();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = stderr_pipe {
            let sink = Arc::clone(&stderr);
            thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut s) = sink.lock() {
                        s.extend_from_slice(&buf[..n]);
                        let excess = s.len().saturating_sub(16 * 1024);
                        s.drain(..excess);
                    }
                }
            });
        }
        Ok(Running {
            child,
            stdin: Some(stdin),
            answers: Answers::new(stdout, MAX_RESPONSE_BYTES),
            stderr,
        })
    }

    fn ensure_started(&mut self) -> Result<(), Failure> {
        if self.running.is_some() {
            return Ok(());
        }
        let mut running = self.spawn()?;
        let greeting = RunnerHello {
            kind: "hello".into(),
            protocol: PROTOCOL_VERSION,
            profile: self.profile.name().into(),
        };
        let result = send(
            &mut running,
            serde_json::to_vec(&greeting).unwrap_or_default(),
        )
        .and_then(|()| receive(&mut running, HELLO_TIMEOUT))
        .and_then(|line| {
            serde_json::from_str::<Hello>(&line)
                .map_err(|e| Failure::Protocol(format!("bad hello: {e}: {}", line.trim())))
        });
        match result {
            Ok(hello) => {
                self.hello = Some(hello);
                self.running = Some(running);
                Ok(())
            }
            Err(e) => {
                kill(&mut running);
                Err(with_stderr(e, &running))
            }
        }
    }

    fn one_shot_call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure> {
        let mut running = self.spawn()?;
        let line = request_line(request);
        let result = send(&mut running, line).and_then(|()| {
            running.stdin = None;
            receive(&mut running, timeout)
        });
        let result = result.and_then(|l| parse_response(&l, &request.case));
        kill(&mut running);
        result.map_err(|e| with_stderr(e, &running))
    }
}

impl Adapter for ProcessAdapter {
    fn hello(&mut self) -> Result<Hello, Failure> {
        if self.one_shot {
            let operations = crate::protocol::OPERATIONS
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            let name = self.argv.join(" ");
            return Ok(Hello {
                kind: "hello".into(),
                implementation: name,
                version: String::new(),
                profile: self.profile.name().into(),
                operations,
                capabilities: vec![],
            });
        }
        self.ensure_started()?;
        self.hello
            .clone()
            .ok_or_else(|| Failure::Protocol("no hello".into()))
    }

    fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure> {
        if self.one_shot {
            return self.one_shot_call(request, timeout);
        }
        self.ensure_started()?;
        let Some(running) = self.running.as_mut() else {
            return Err(Failure::Crash("not running".into()));
        };
        // A crash note holds this case's stderr only, not an earlier case's.
        if let Ok(mut stderr) = running.stderr.lock() {
            stderr.clear();
        }
        let line = request_line(request);
        let result = send(running, line)
            .and_then(|()| receive(running, timeout))
            .and_then(|l| parse_response(&l, &request.case));
        if let Err(failure) = result {
            let mut running = self.running.take().expect("checked above");
            kill(&mut running);
            return Err(with_stderr(failure, &running));
        }
        result
    }
}

impl Drop for ProcessAdapter {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take() {
            let _ = send(&mut running, br#"{"type":"bye"}"#.to_vec());
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            // An adapter's stdout closes as it exits: wait for that first (lines after
            // `bye` are ignored; one that keeps writing is stopped at the deadline).
            let left = || deadline.saturating_duration_since(std::time::Instant::now());
            while let Line::Text(_) = running.answers.next(left()) {}
            while std::time::Instant::now() < deadline {
                if matches!(running.child.try_wait(), Ok(Some(_))) {
                    return;
                }
                thread::sleep(Duration::from_millis(1));
            }
            kill(&mut running);
        }
    }
}

/// The bytes a pipe to or from an adapter is asked to hold: a request or a reply can
/// be a megabyte, and through Linux's default pipe of 64 KiB it passes in sixteen
/// turns of writer and reader, each a switch between processes. With pipes of 1 MiB,
/// a run of omp's share of the corpus switched 998 times instead of 1,349.
const PIPE_BYTES: usize = 1 << 20;

/// Asks for a pipe of [`PIPE_BYTES`]; where the system refuses (its limit is
/// `/proc/sys/fs/pipe-max-size`), the pipe stays as it is.
#[cfg(target_os = "linux")]
fn widen_pipe<Fd: std::os::fd::AsFd>(pipe: &Fd) {
    let _ = rustix::pipe::fcntl_setpipe_size(pipe, PIPE_BYTES);
}

/// Pipes keep their size where Linux's setting does not exist.
#[cfg(not(target_os = "linux"))]
fn widen_pipe<T>(_pipe: &T) {}

/// Writes one message and its `\n` in one write.
fn send(running: &mut Running, mut line: Vec<u8>) -> Result<(), Failure> {
    line.push(b'\n');
    let stdin = running
        .stdin
        .as_mut()
        .ok_or_else(|| Failure::Crash("adapter stdin is closed".into()))?;
    stdin
        .write_all(&line)
        .and_then(|()| stdin.flush())
        .map_err(|e| Failure::Crash(format!("write to adapter: {e}")))
}

fn receive(running: &mut Running, timeout: Duration) -> Result<String, Failure> {
    match running.answers.next(timeout) {
        Line::Text(text) => Ok(text),
        Line::TooLong => Err(Failure::Protocol(format!(
            "response longer than {MAX_RESPONSE_BYTES} bytes"
        ))),
        Line::Eof => Err(Failure::Crash("adapter exited".into())),
        Line::Timeout => Err(Failure::Timeout),
    }
}

fn parse_response(line: &str, case: &str) -> Result<Response, Failure> {
    let response = read_response(line.trim_end())
        .map_err(|e| Failure::Protocol(format!("{e}: {}", truncate(line.trim(), 200))))?;
    if response.case != case {
        return Err(Failure::Protocol(format!(
            "response for case {:?}, expected {case:?}",
            response.case
        )));
    }
    if response.ok.is_none() && response.error.is_none() && !response.unsupported {
        return Err(Failure::Protocol(
            "response has neither ok, error nor unsupported".into(),
        ));
    }
    Ok(response)
}

/// Reads a response line as `JSON.parse` would (see `raw::parse_value`). Most lines
/// read directly as a [`Response`]; a line that does not (deep nesting, a lone
/// surrogate, a repeated key, not a response) takes the way through a JSON value,
/// which gives the same response or says what is wrong.
fn read_response(line: &str) -> Result<Response, String> {
    if let Ok(response) = serde_json::from_str::<Response>(line) {
        return Ok(response);
    }
    let value = session_reference::raw::parse_value(line).map_err(|e| format!("not JSON: {e}"))?;
    serde_json::from_value(value).map_err(|e| format!("not a response: {e}"))
}

fn kill(running: &mut Running) {
    let _ = running.child.kill();
    let _ = running.child.wait();
}

fn with_stderr(failure: Failure, running: &Running) -> Failure {
    let tail = running
        .stderr
        .lock()
        .map(|s| String::from_utf8_lossy(&s).into_owned())
        .unwrap_or_default();
    match failure {
        Failure::Crash(message) if !tail.trim().is_empty() => Failure::Crash(format!(
            "{message}; stderr: {}",
            truncate(tail.trim(), 2000)
        )),
        other => other,
    }
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_pipe_to_an_adapter_is_widened() {
        let limit: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        let adapter = ProcessAdapter::new(vec!["cat".into()], Profile::Pi, false);
        let mut running = adapter.spawn().expect("cat starts");
        let stdin = running.stdin.take().expect("stdin");
        let size = rustix::pipe::fcntl_getpipe_size(&stdin).expect("pipe size");
        if limit >= PIPE_BYTES {
            assert_eq!(size, PIPE_BYTES);
        } else {
            assert!(size < PIPE_BYTES, "{size} above the system's limit {limit}");
        }
        drop(stdin);
        kill(&mut running);
    }
}
