//! The adapter process of a crash trial: started in its own process group, greeted,
//! sent requests, read one line at a time within a deadline, and killed with SIGKILL.
//!
//! Unlike [`session_conformance::adapter::ProcessAdapter`], which hides the process behind one
//! request and one answer, a trial needs the lines *between* a request and its answer
//! (the acknowledgements) and the moment to kill.

use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::CrashError;
use session_conformance::adapter::StderrTail;
use session_conformance::answers::{describe_exit, Answers, Line};
use session_conformance::protocol::{Hello, RunnerHello, PROTOCOL_VERSION};

/// The longest line read from an adapter (as [`session_conformance::adapter::MAX_RESPONSE_BYTES`]).
const MAX_LINE_BYTES: u64 = session_conformance::adapter::MAX_RESPONSE_BYTES;

/// One acknowledgement (`PROTOCOL.md` "Ack mode").
#[derive(Debug, Clone, PartialEq)]
pub struct Ack {
    /// The step acknowledged; `None` for the open (and the migration rewrite it made).
    pub step: Option<usize>,
    /// What the step returned (an entry id, a file path, `null`, or `{"error": …}`).
    pub result: Value,
    /// The implementation's writes for this call were complete when it returned.
    pub durable: bool,
    /// The entry as the implementation holds it, for a step that returned an entry id.
    pub entry: Option<Value>,
}

/// What one line from a trial's adapter was.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// An acknowledgement.
    Ack(Ack),
    /// A line of the request that says it is an ack but is not one of the protocol's
    /// shape: what is wrong with it.
    BadAck(String),
    /// A journal line (`PROTOCOL.md` "Journal"): a file-system call, unread.
    Fs(Value),
    /// The request's response: `Ok(output)` or `Err("kind: message")`.
    Response(Result<Value, String>),
    /// A line that is neither (kept for the report, never fatal).
    Junk(String),
    /// The adapter closed its stdout (it exited, or was killed).
    Eof,
    /// The adapter exited (with this status), and no line it wrote is left; a process
    /// it started may still hold its stdout open.
    Exited(ExitStatus),
    /// Nothing within the time limit.
    Timeout,
}

/// A running adapter.
pub struct Process {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    answers: Answers,
    stderr: StderrTail,
    killed: bool,
}

impl Process {
    /// Starts `argv` (no shell) in its own process group, with `TMPDIR` set to `tmp`
    /// (so an adapter's scratch files stay inside the run's root), and says hello.
    pub fn start(
        argv: &[String],
        profile: &str,
        tmp: &Path,
        timeout: Duration,
    ) -> Result<(Process, Hello), CrashError> {
        let (program, rest) = argv.split_first().ok_or_else(|| CrashError::Start {
            command: String::new(),
            message: "empty adapter command".into(),
        })?;
        let mut command = Command::new(program);
        command
            .args(rest)
            .env("TMPDIR", tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let start_error = |message: String| CrashError::Start {
            command: argv.join(" "),
            message,
        };
        let mut child = command.spawn().map_err(|e| start_error(e.to_string()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(start_error("no stdin or stdout pipe".into()));
        };
        let stderr = StderrTail::keep(child.stderr.take(), 8 * 1024);
        let mut process = Process {
            child,
            stdin: Arc::new(Mutex::new(Some(stdin))),
            answers: Answers::new(stdout, MAX_LINE_BYTES),
            stderr,
            killed: false,
        };
        let greeting = RunnerHello {
            kind: "hello".into(),
            protocol: PROTOCOL_VERSION,
            profile: profile.into(),
        };
        process.send(serde_json::to_vec(&greeting).unwrap_or_default());
        let hello = match process.answers.next_watching(timeout, &mut process.child) {
            Line::Text(line) => serde_json::from_str::<Hello>(&line)
                .map_err(|e| format!("bad hello ({e}): {}", clip(&line))),
            Line::Timeout => Err(format!("no hello within {} s", timeout.as_secs())),
            Line::Exited(status) => Err(format!(
                "exited with {} before its hello",
                describe_exit(status)
            )),
            Line::Eof => Err("closed its stdout before its hello".into()),
            Line::TooLong => Err("its hello is too long".into()),
        };
        match hello {
            Ok(hello) => Ok((process, hello)),
            Err(why) => {
                process.kill();
                let tail = process.stderr_text();
                Err(CrashError::Hello {
                    command: argv.join(" "),
                    message: if tail.is_empty() {
                        why
                    } else {
                        format!("{why}: {tail}")
                    },
                })
            }
        }
    }

    /// Writes `line` and a `\n` on a thread of its own: an adapter that does not read
    /// cannot block the trial, whose waits all have deadlines (the thread ends when the
    /// process is killed and the pipe breaks).
    pub fn send(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        let stdin = Arc::clone(&self.stdin);
        thread::spawn(move || {
            if let Ok(mut guard) = stdin.lock() {
                if let Some(pipe) = guard.as_mut() {
                    if pipe.write_all(&line).and_then(|()| pipe.flush()).is_err() {
                        *guard = None;
                    }
                }
            }
        });
    }

    /// The next line, read as an [`Event`] of the request `case`, waiting until `deadline`.
    pub fn next(&mut self, case: &str, deadline: Instant) -> Event {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.answers.next_watching(left, &mut self.child) {
            Line::Text(line) => read_event(&line, case),
            Line::TooLong => Event::Junk("a line over 100 MiB".into()),
            Line::Eof => Event::Eof,
            Line::Exited(status) => Event::Exited(status),
            Line::Timeout => Event::Timeout,
        }
    }

    /// SIGKILL to the whole process group, then the child is reaped.
    pub fn kill(&mut self) {
        if self.killed {
            return;
        }
        self.killed = true;
        #[cfg(unix)]
        {
            let pid = rustix::process::Pid::from_child(&self.child);
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends `bye` and gives the adapter a moment to exit; then kills what is left.
    pub fn stop(mut self) {
        self.send(br#"{"type":"bye"}"#.to_vec());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }

    /// `; stderr: …` with the last lines the adapter wrote to stderr, or nothing.
    pub fn stderr_tail(&self) -> String {
        match self.stderr_text() {
            text if text.is_empty() => text,
            text => format!("; stderr: {text}"),
        }
    }

    /// The last 1,500 bytes (or a little less) the adapter wrote to stderr, trimmed.
    pub fn stderr_text(&self) -> String {
        let text = self.stderr.text(Duration::from_millis(200));
        let start = text.len().saturating_sub(1500);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text[start..].to_owned()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads one line: an ack or the response of `case`; anything else is junk.
fn read_event(line: &str, case: &str) -> Event {
    if session_conformance::guard::check_nesting(line).is_err() {
        return Event::Junk(clip(line));
    }
    let Ok(value) = session_reference::raw::parse_value(line.trim_end()) else {
        return Event::Junk(clip(line));
    };
    if value["case"].as_str() != Some(case) {
        return Event::Junk(clip(line));
    }
    match value["type"].as_str() {
        Some("ack") => read_ack(&value).map_or_else(Event::BadAck, Event::Ack),
        Some("fs") => Event::Fs(value),
        Some("response") => {
            if let Some(ok) = value.get("ok") {
                Event::Response(Ok(ok.clone()))
            } else if let Some(error) = value.get("error") {
                Event::Response(Err(format!(
                    "{}: {}",
                    error["kind"].as_str().unwrap_or("?"),
                    error["message"].as_str().unwrap_or_default()
                )))
            } else {
                Event::Response(Err("unsupported".into()))
            }
        }
        _ => Event::Junk(clip(line)),
    }
}

/// An ack line's fields (`PROTOCOL.md` "Ack mode"), or what is wrong with them:
/// `step` null or a step number, `result` present, `durable` a boolean, `entry` (when
/// present) an object or null.
fn read_ack(value: &Value) -> Result<Ack, String> {
    let step = match value.get("step") {
        Some(Value::Null) => None,
        Some(n) => Some(
            n.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| {
                    format!(
                        "`step` is {}, not null or a step number",
                        clip(&n.to_string())
                    )
                })?,
        ),
        None => return Err("no `step`".into()),
    };
    let result = value.get("result").ok_or("no `result`")?.clone();
    let durable = value
        .get("durable")
        .and_then(Value::as_bool)
        .ok_or("`durable` is missing or not true or false")?;
    let entry = match value.get("entry") {
        None | Some(Value::Null) => None,
        Some(entry @ Value::Object(_)) => Some(entry.clone()),
        Some(_) => return Err("`entry` is not an object".into()),
    };
    Ok(Ack {
        step,
        result,
        durable,
        entry,
    })
}

/// At most 200 characters of `text`, for a message.
fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_acks_responses_and_junk() {
        let ack = read_event(
            r#"{"type":"ack","case":"c","step":3,"result":"abcd1234","durable":true}"#,
            "c",
        );
        assert!(matches!(
            ack,
            Event::Ack(Ack {
                step: Some(3),
                durable: true,
                ..
            })
        ));
        let open = read_event(
            r#"{"type":"ack","case":"c","step":null,"result":null,"durable":false}"#,
            "c",
        );
        assert!(matches!(
            open,
            Event::Ack(Ack {
                step: None,
                durable: false,
                ..
            })
        ));
        assert_eq!(
            read_event(
                r#"{"type":"ack","case":"c","step":-1,"result":null,"durable":true}"#,
                "c"
            ),
            Event::BadAck("`step` is -1, not null or a step number".into())
        );
        assert_eq!(
            read_event(r#"{"type":"ack","case":"c","step":null}"#, "c"),
            Event::BadAck("no `result`".into())
        );
        assert_eq!(
            read_event(
                r#"{"type":"ack","case":"c","step":2,"result":"x","durable":"yes"}"#,
                "c"
            ),
            Event::BadAck("`durable` is missing or not true or false".into())
        );
        assert_eq!(
            read_event(
                r#"{"type":"ack","case":"c","step":2,"result":"x","durable":true,"entry":[1]}"#,
                "c"
            ),
            Event::BadAck("`entry` is not an object".into())
        );
        assert!(matches!(
            read_event(r#"{"type":"ack","case":"other","step":1}"#, "c"),
            Event::Junk(_)
        ));
        assert!(matches!(read_event("not json", "c"), Event::Junk(_)));
        assert_eq!(
            read_event(
                r#"{"type":"response","case":"c","error":{"kind":"exception","message":"m"}}"#,
                "c"
            ),
            Event::Response(Err("exception: m".into()))
        );
    }
}
