//! Talking to an implementation: the built-in reference, or an adapter process (`PROTOCOL.md` "Modes").
//!
//! Invariant: a misbehaving adapter (hang, crash, non-JSON, a huge or deep answer, a
//! request it does not read) fails only the case at hand; the process and every process
//! it started (its process group) are killed, and it is started again for the next.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use session_reference::model::Profile;

use crate::answers::{describe_exit, exit_status, Answers, Line};
use crate::execute;
use crate::protocol::{Hello, Request, Response, RunnerHello, PROTOCOL_VERSION};

/// The largest response line accepted (100 MiB).
pub const MAX_RESPONSE_BYTES: u64 = 100 * 1024 * 1024;

/// How long an adapter may take to start and say hello, unless
/// [`ProcessAdapter::with_timeout`] says otherwise.
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
    /// The process could not be started: `cannot start PROGRAM: REASON`.
    Start(String),
    /// The process exited, or stopped talking before its hello: what happened, in words
    /// (`exited with status 3; stderr: …`, `no hello within 60 s`).
    Crash(String),
    /// The answer was not a protocol message.
    Protocol(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout => f.write_str("no answer within the time limit"),
            Failure::Start(why) | Failure::Crash(why) => f.write_str(why),
            Failure::Protocol(why) => write!(f, "its answer is not a protocol message ({why})"),
        }
    }
}

/// Something that answers protocol requests (on a worker thread of the run).
pub trait Adapter: Send {
    /// Starts the implementation (if needed) and returns its hello.
    fn hello(&mut self) -> Result<Hello, Failure>;
    /// Runs one request.
    fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure>;
    /// Whether [`Adapter::call`] and [`Adapter::hello`] return within their time limits
    /// by themselves (an adapter process does: it is killed at the limit). The harness
    /// calls any other adapter on a thread of its own and stops waiting at the limit
    /// ([`crate::watch`]). No by default.
    fn keeps_time(&self) -> bool {
        false
    }
    /// How much of a call's time goes to starting the implementation rather than to the
    /// call's work: a one-shot adapter starts a process per call. A short time limit
    /// (a case listed as timing out) is lengthened by it, so that it cuts the work, not
    /// the start. None by default.
    fn start_allowance(&self) -> Duration {
        Duration::ZERO
    }
}

/// What a one-shot adapter's start is taken to cost before any call has answered.
pub const ONE_SHOT_START_GUESS: Duration = Duration::from_secs(2);

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
    /// The longest wait for the hello.
    hello_timeout: Duration,
    /// One-shot mode: the quickest whole call so far (a start and a request), the
    /// estimate of what a start costs.
    quickest: Option<Duration>,
}

struct Running {
    child: Child,
    /// `None` once closed (one-shot mode closes it after the request).
    stdin: Option<ChildStdin>,
    answers: Answers,
    stderr: StderrTail,
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
            hello_timeout: HELLO_TIMEOUT,
            quickest: None,
        }
    }

    /// Waits at most `timeout` for the adapter's hello (the run's `--timeout`).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> ProcessAdapter {
        self.hello_timeout = timeout;
        self
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
        // Its own process group: a timed-out adapter is killed with everything it started.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(|e| Failure::Start(format!("cannot start {program}: {e}")))?;
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
        // Writes that would block wait in `poll`, within the request's time limit.
        #[cfg(unix)]
        rustix::io::ioctl_fionbio(&stdin, true)
            .map_err(|e| Failure::Crash(format!("adapter stdin: {e}")))?;
        let stderr = StderrTail::keep(child.stderr.take(), 16 * 1024);
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
        let wait = self.hello_timeout;
        let result = send(
            &mut running,
            serde_json::to_vec(&greeting).unwrap_or_default(),
            wait,
        )
        .and_then(|()| receive(&mut running, wait))
        .and_then(|line| read_hello(&line));
        match result {
            Ok(hello) => {
                self.hello = Some(hello);
                self.running = Some(running);
                Ok(())
            }
            Err(e) => {
                kill(&mut running);
                Err(before_hello(e, wait, &running))
            }
        }
    }

    fn one_shot_call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure> {
        let started = std::time::Instant::now();
        let mut running = self.spawn()?;
        let line = request_line(request);
        let result = send(&mut running, line, timeout).and_then(|()| {
            running.stdin = None;
            receive(&mut running, timeout)
        });
        let result = result.and_then(|l| parse_response(&l, &request.case));
        if result.is_ok() {
            let took = started.elapsed();
            self.quickest = Some(self.quickest.map_or(took, |q| q.min(took)));
        }
        kill(&mut running);
        result.map_err(|e| with_stderr(e, &running))
    }
}

impl Adapter for ProcessAdapter {
    fn hello(&mut self) -> Result<Hello, Failure> {
        if self.one_shot {
            let operations = crate::protocol::Operation::ALL.to_vec();
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

    /// Killed at the limit: `send` and `receive` wait with `poll` until the deadline.
    fn keeps_time(&self) -> bool {
        true
    }

    /// One-shot mode: the quickest call so far ([`ONE_SHOT_START_GUESS`] before any);
    /// a running adapter has started already.
    fn start_allowance(&self) -> Duration {
        if self.one_shot {
            self.quickest.unwrap_or(ONE_SHOT_START_GUESS)
        } else {
            Duration::ZERO
        }
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
        running.stderr.clear();
        let line = request_line(request);
        let started = Instant::now();
        let result = send(running, line, timeout)
            .and_then(|()| receive(running, timeout.saturating_sub(started.elapsed())))
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
            let _ = send(
                &mut running,
                br#"{"type":"bye"}"#.to_vec(),
                Duration::from_secs(2),
            );
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

/// Writes one message and its `\n`, within `timeout`: an adapter that does not read
/// its stdin cannot hold the runner (the pipe does not block; a full pipe is waited on
/// with `poll` until the deadline).
fn send(running: &mut Running, line: Vec<u8>, timeout: Duration) -> Result<(), Failure> {
    write_line(running, line, timeout).map_err(|failure| match failure {
        // A pipe that broke because the adapter exited: say how it ended.
        Failure::Crash(why) => Failure::Crash(
            exit_status(&mut running.child, Duration::from_millis(500)).map_or(why, |status| {
                format!("exited with {}", describe_exit(status))
            }),
        ),
        other => other,
    })
}

/// [`send`]'s write, without a look at the process when it fails.
fn write_line(running: &mut Running, mut line: Vec<u8>, timeout: Duration) -> Result<(), Failure> {
    line.push(b'\n');
    let stdin = running
        .stdin
        .as_mut()
        .ok_or_else(|| Failure::Crash("adapter stdin is closed".into()))?;
    let deadline = Instant::now().checked_add(timeout);
    let mut written = 0;
    while written < line.len() {
        match stdin.write(&line[written..]) {
            Ok(0) => return Err(Failure::Crash("adapter stdin is closed".into())),
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !writable(stdin, deadline) {
                    return Err(Failure::Timeout);
                }
            }
            Err(e) => return Err(Failure::Crash(format!("write to adapter: {e}"))),
        }
    }
    Ok(())
}

/// Waits until `pipe` takes more bytes (`true`) or the deadline passes (`false`).
#[cfg(unix)]
fn writable(pipe: &ChildStdin, deadline: Option<Instant>) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    loop {
        let left = deadline.map_or(Duration::from_hours(1), |d| {
            d.saturating_duration_since(Instant::now())
                .min(Duration::from_hours(1))
        });
        if deadline.is_some() && left.is_zero() {
            return false;
        }
        // The field types are narrower on some 32-bit systems.
        #[allow(clippy::unnecessary_fallible_conversions)]
        let timeout = Timespec {
            tv_sec: left.as_secs().try_into().unwrap_or_default(),
            tv_nsec: left.subsec_nanos().try_into().unwrap_or_default(),
        };
        let mut fds = [PollFd::new(pipe, PollFlags::OUT)];
        match poll(&mut fds, Some(&timeout)) {
            // Writable, or hung up / in error: the write says which.
            Ok(n) if n > 0 => return true,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return true,
        }
    }
}

/// Pipes block elsewhere: the write itself waits.
#[cfg(not(unix))]
fn writable(_pipe: &ChildStdin, _deadline: Option<Instant>) -> bool {
    true
}

/// The next line, within `timeout`; the adapter's exit, noticed while waiting (even
/// when a process it started keeps its stdout open), is a crash with its status.
fn receive(running: &mut Running, timeout: Duration) -> Result<String, Failure> {
    match running.answers.next_watching(timeout, &mut running.child) {
        Line::Text(text) => Ok(text),
        Line::TooLong => Err(Failure::Protocol(format!(
            "response longer than the limit of {MAX_RESPONSE_BYTES} bytes (adapter::MAX_RESPONSE_BYTES)"
        ))),
        Line::Exited(status) => Err(Failure::Crash(format!(
            "exited with {}",
            describe_exit(status)
        ))),
        Line::Eof => Err(Failure::Crash("closed its stdout".into())),
        Line::Timeout => Err(Failure::Timeout),
    }
}

/// Reads the adapter's hello line, its values counted first as a response's are.
fn read_hello(line: &str) -> Result<Hello, Failure> {
    crate::guard::check_values(line.as_bytes(), crate::guard::MAX_MESSAGE_VALUES)
        .map_err(|e| Failure::Protocol(format!("hello {e} (guard::MAX_MESSAGE_VALUES)")))?;
    serde_json::from_str::<Hello>(line)
        .map_err(|e| Failure::Protocol(format!("bad hello: {e}: {}", truncate(line.trim(), 200))))
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
    // Each value costs the runner a few hundred bytes, however few it is written in
    // (`0,`): memory by bytes, not by values.
    crate::guard::check_values(line.as_bytes(), crate::guard::MAX_MESSAGE_VALUES)
        .map_err(|e| format!("response {e} (guard::MAX_MESSAGE_VALUES)"))?;
    if let Ok(response) = serde_json::from_str::<Response>(line) {
        return Ok(response);
    }
    crate::guard::check_nesting(line).map_err(|e| format!("response {e}"))?;
    let value = session_reference::raw::parse_value(line).map_err(|e| format!("not JSON: {e}"))?;
    serde_json::from_value(value).map_err(|e| format!("not a response: {e}"))
}

/// Kills the adapter and its process group (what it started), and reaps it.
fn kill(running: &mut Running) {
    #[cfg(unix)]
    {
        let pid = rustix::process::Pid::from_child(&running.child);
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = running.child.kill();
    let _ = running.child.wait();
}

fn with_stderr(failure: Failure, running: &Running) -> Failure {
    match failure {
        Failure::Crash(message) => match stderr_tail(running) {
            tail if tail.is_empty() => Failure::Crash(message),
            tail => Failure::Crash(format!("{message}; stderr: {tail}")),
        },
        other => other,
    }
}

/// A failure to say hello, in words: `no hello within N s` for a live adapter that
/// stayed silent, `exited with status S before its hello: <stderr tail>` for one that
/// ended.
fn before_hello(failure: Failure, wait: Duration, running: &Running) -> Failure {
    match failure {
        Failure::Timeout => Failure::Crash(format!("no hello within {} s", wait.as_secs())),
        Failure::Crash(why) => match stderr_tail(running) {
            tail if tail.is_empty() => Failure::Crash(format!("{why} before its hello")),
            tail => Failure::Crash(format!("{why} before its hello: {tail}")),
        },
        other => other,
    }
}

/// What the adapter wrote to stderr last (at most 2,000 characters of the kept tail),
/// once the pipe has closed or a moment has passed.
fn stderr_tail(running: &Running) -> String {
    truncate(&running.stderr.text(Duration::from_millis(200)), 2000)
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

/// The last bytes a child wrote to stderr (what a failure's note quotes), read on a
/// thread of its own until the pipe closes, so a chatty adapter never blocks on a full
/// pipe.
#[derive(Clone, Default)]
pub struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
    closed: Arc<AtomicBool>,
}

impl StderrTail {
    /// Reads `pipe` until it closes, keeping its last `limit` bytes.
    pub fn keep(pipe: Option<std::process::ChildStderr>, limit: usize) -> StderrTail {
        let tail = StderrTail::default();
        let Some(mut pipe) = pipe else {
            tail.closed.store(true, Ordering::Release);
            return tail;
        };
        let sink = tail.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut s) = sink.bytes.lock() {
                    s.extend_from_slice(&buf[..n]);
                    let excess = s.len().saturating_sub(limit);
                    s.drain(..excess);
                }
            }
            sink.closed.store(true, Ordering::Release);
        });
        tail
    }

    /// Forgets what was kept (a case's note quotes its own stderr only).
    pub fn clear(&self) {
        if let Ok(mut s) = self.bytes.lock() {
            s.clear();
        }
    }

    /// What was kept, as text (bytes that are not UTF-8 replaced), trimmed; first
    /// waiting at most `wait` for the pipe to close, since a process that has ended may
    /// have its last words still in the pipe.
    pub fn text(&self, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        while !self.closed.load(Ordering::Acquire) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(2));
        }
        self.bytes
            .lock()
            .map(|s| String::from_utf8_lossy(&s).trim().to_owned())
            .unwrap_or_default()
    }
}
