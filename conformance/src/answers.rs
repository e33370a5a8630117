//! Reading an adapter's answers: one line at a time, each within a time limit.
//!
//! On Unix the job's own thread waits for the pipe with `poll` and reads it: an
//! answer wakes only the thread that asked. Elsewhere a reader thread passes lines
//! through a channel (one more thread to wake per answer).
//!
//! [`Answers::next_watching`] also looks, every [`EXIT_CHECK`], whether the adapter
//! process itself has exited: a child it started can keep the pipe open after it, and
//! the wait must not last until the time limit.

use std::process::{Child, ChildStdout, ExitStatus};
use std::time::{Duration, Instant};

/// What waiting for one answer line gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line, without its `\n` (bytes that are not UTF-8 replaced).
    Text(String),
    /// The line went past [`crate::adapter::MAX_RESPONSE_BYTES`].
    TooLong,
    /// The adapter closed its stdout (or it could not be read).
    Eof,
    /// No whole line within the time limit.
    Timeout,
    /// The adapter process exited, and no whole line it wrote before is left (a child
    /// it started may still hold the pipe open). Only [`Answers::next_watching`] says so.
    Exited(ExitStatus),
}

/// How often [`Answers::next_watching`] looks whether the adapter has exited.
pub const EXIT_CHECK: Duration = Duration::from_millis(50);

/// How long a process whose stdout closed is given to exit (for its status), and how
/// long the rest of what an exited process wrote is read for (at most a pipe's worth:
/// it could not exit before its last write had gone into the pipe).
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// What a pipe holds on Linux, and so what one read can return.
const PIPE_CHUNK: usize = 64 * 1024;

/// An adapter's stdout, read line by line.
pub struct Answers(imp::Answers);

impl Answers {
    /// Reads `pipe` from now on; a line longer than `max_bytes` is [`Line::TooLong`].
    pub fn new(pipe: ChildStdout, max_bytes: u64) -> Answers {
        Answers(imp::Answers::new(pipe, max_bytes))
    }

    /// The next line, waiting at most `timeout` for it. Once `timeout` has passed,
    /// only a line already read is returned: an adapter that never stops writing
    /// cannot hold the caller past it.
    pub fn next(&mut self, timeout: Duration) -> Line {
        self.0.next(timeout)
    }

    /// As [`Answers::next`], and every [`EXIT_CHECK`] looks whether `child` (the
    /// adapter) has exited. The lines it wrote before it exited are still returned; then
    /// [`Line::Exited`], whether or not a process it started keeps the pipe open. A
    /// closed pipe is [`Line::Exited`] too when the child exits soon after it.
    pub fn next_watching(&mut self, timeout: Duration, child: &mut Child) -> Line {
        let deadline = Instant::now().checked_add(timeout);
        loop {
            let left = deadline.map_or(EXIT_CHECK, |d| d.saturating_duration_since(Instant::now()));
            match self.0.next(left.min(EXIT_CHECK)) {
                Line::Timeout => {}
                Line::Eof => {
                    return exit_status(child, EXIT_GRACE).map_or(Line::Eof, Line::Exited);
                }
                line => return line,
            }
            if let Ok(Some(status)) = child.try_wait() {
                // What it wrote before it exited is in the pipe already.
                return match self.0.next(EXIT_GRACE) {
                    Line::Timeout | Line::Eof => Line::Exited(status),
                    line => line,
                };
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Line::Timeout;
            }
        }
    }
}

/// `child`'s exit status, waiting at most `grace` for it to exit.
pub fn exit_status(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            _ => return None,
        }
    }
}

/// An exit status in words: `status 3`, or `signal 9` for a process a signal ended.
pub fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("signal {signal}");
    }
    status
        .code()
        .map_or_else(|| status.to_string(), |code| format!("status {code}"))
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(unix)]
mod imp {
    use std::io::{ErrorKind, Read};
    use std::process::ChildStdout;
    use std::time::{Duration, Instant};

    use rustix::event::{poll, PollFd, PollFlags, Timespec};

    use super::{text, Line, PIPE_CHUNK};

    pub struct Answers {
        pipe: ChildStdout,
        max_bytes: u64,
        /// Bytes read: `buf[start..end]` are not yet returned. The buffer keeps the
        /// size of the longest answer, so a long answer is not grown step by step again.
        buf: Vec<u8>,
        start: usize,
        end: usize,
    }

    /// The longest single `poll`: a longer wait is made of several (some systems
    /// refuse timeouts of weeks).
    const MAX_POLL: Duration = Duration::from_hours(1);

    impl Answers {
        pub fn new(pipe: ChildStdout, max_bytes: u64) -> Answers {
            Answers {
                pipe,
                max_bytes,
                buf: vec![0; PIPE_CHUNK],
                start: 0,
                end: 0,
            }
        }

        pub fn next(&mut self, timeout: Duration) -> Line {
            // No deadline when it is too far away to be told (a timeout of ages).
            let deadline = Instant::now().checked_add(timeout);
            // How many unread bytes are known to hold no `\n`.
            let mut scanned = 0;
            loop {
                let unread = &self.buf[self.start..self.end];
                if let Some(at) = memchr::memchr(b'\n', &unread[scanned..]) {
                    let length = scanned + at;
                    if length as u64 > self.max_bytes {
                        return Line::TooLong;
                    }
                    let line = unread[..length].to_vec();
                    self.start += length + 1;
                    return Line::Text(text(line));
                }
                scanned = unread.len();
                if scanned as u64 > self.max_bytes {
                    return Line::TooLong;
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Line::Timeout;
                }
                match self.wait(deadline) {
                    Some(true) => {}
                    Some(false) => return Line::Timeout,
                    None => return Line::Eof,
                }
                self.make_room();
                match self.pipe.read(&mut self.buf[self.end..]) {
                    Ok(0) => return Line::Eof,
                    Ok(n) => self.end += n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => return Line::Eof,
                }
            }
        }

        /// Waits until the pipe can be read (`Some(true)`), the deadline passes
        /// (`Some(false)`) or the pipe fails (`None`).
        fn wait(&self, deadline: Option<Instant>) -> Option<bool> {
            loop {
                let left = deadline.map_or(MAX_POLL, |d| {
                    d.saturating_duration_since(Instant::now()).min(MAX_POLL)
                });
                // The field types are narrower on some 32-bit systems.
                #[allow(clippy::unnecessary_fallible_conversions)]
                let timeout = Timespec {
                    tv_sec: left.as_secs().try_into().unwrap_or_default(),
                    tv_nsec: left.subsec_nanos().try_into().unwrap_or_default(),
                };
                let mut fds = [PollFd::new(&self.pipe, PollFlags::IN)];
                match poll(&mut fds, Some(&timeout)) {
                    Ok(0) if left.is_zero() => return Some(false),
                    // Readable, or hung up / in error: the read says which.
                    Ok(n) if n > 0 => return Some(true),
                    // Woken early (a signal, a timer's rounding, a long wait in
                    // parts): wait the rest.
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return None,
                }
            }
        }

        /// Moves unread bytes to the front of the buffer, or grows it when they fill it.
        fn make_room(&mut self) {
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            }
            if self.end == self.buf.len() {
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                } else {
                    self.buf.resize(self.buf.len() * 2, 0);
                }
            }
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use std::io::{BufRead, BufReader, Read};
    use std::process::ChildStdout;
    use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
    use std::thread;
    use std::time::Duration;

    use super::{text, Line, PIPE_CHUNK};

    pub struct Answers {
        lines: Receiver<Line>,
    }

    impl Answers {
        pub fn new(pipe: ChildStdout, max_bytes: u64) -> Answers {
            let (tx, lines) = mpsc::channel();
            thread::spawn(move || {
                let mut reader = BufReader::with_capacity(PIPE_CHUNK, pipe);
                loop {
                    let mut buf = Vec::new();
                    // The line and its `\n`, and a byte more to tell a line that is too long.
                    let read = (&mut reader)
                        .take(max_bytes.saturating_add(2))
                        .read_until(b'\n', &mut buf);
                    if buf.last() == Some(&b'\n') {
                        buf.pop();
                    }
                    let line = match read {
                        Ok(0) | Err(_) => Line::Eof,
                        Ok(_) if buf.len() as u64 > max_bytes => Line::TooLong,
                        Ok(_) => Line::Text(text(buf)),
                    };
                    let stop = !matches!(line, Line::Text(_));
                    if tx.send(line).is_err() || stop {
                        break;
                    }
                }
            });
            Answers { lines }
        }

        pub fn next(&mut self, timeout: Duration) -> Line {
            match self.lines.recv_timeout(timeout) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => Line::Timeout,
                Err(RecvTimeoutError::Disconnected) => Line::Eof,
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn start(script: &str, max_bytes: u64) -> (std::process::Child, Answers) {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh starts");
        let pipe = child.stdout.take().expect("piped");
        (child, Answers::new(pipe, max_bytes))
    }

    #[test]
    fn lines_come_whole_and_in_order() {
        let (mut child, mut answers) = start(
            "printf 'a\\nb'; sleep 0.1; printf 'c\\n\\377\\n'; exec 1>&-; sleep 1",
            100,
        );
        let wait = Duration::from_secs(5);
        assert_eq!(answers.next(wait), Line::Text("a".into()));
        assert_eq!(answers.next(wait), Line::Text("bc".into()));
        assert_eq!(answers.next(wait), Line::Text("\u{fffd}".into()));
        assert_eq!(answers.next(wait), Line::Eof);
        child.wait().expect("exits");
    }

    #[test]
    fn silence_times_out_and_long_lines_are_refused() {
        let (mut child, mut answers) = start("sleep 1; head -c 200000 /dev/zero; echo", 150_000);
        assert_eq!(answers.next(Duration::from_millis(50)), Line::Timeout);
        assert_eq!(answers.next(Duration::from_secs(5)), Line::TooLong);
        let _ = child.kill();
        let _ = child.wait();
        // A line over the limit is refused even when it arrives whole in one read.
        let (mut child, mut answers) = start("printf '12345\\n'", 4);
        assert_eq!(answers.next(Duration::from_secs(5)), Line::TooLong);
        let _ = child.wait();
    }

    #[test]
    fn an_endless_writer_cannot_hold_the_reader_past_its_timeout() {
        let (mut child, mut answers) = start("yes", 100);
        let start = std::time::Instant::now();
        let timeout = Duration::from_millis(200);
        while let Line::Text(_) = answers.next(timeout.saturating_sub(start.elapsed())) {}
        assert!(start.elapsed() < Duration::from_secs(5));
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn an_exit_is_noticed_while_a_child_holds_the_pipe_after_the_lines_before_it() {
        let mut command = Command::new("sh");
        command
            .args(["-c", "echo a; echo b; sleep 60 & exit 3"])
            .stdout(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().expect("sh starts");
        let mut answers = Answers::new(child.stdout.take().expect("piped"), 100);
        let wait = Duration::from_secs(20);
        let started = std::time::Instant::now();
        assert_eq!(
            answers.next_watching(wait, &mut child),
            Line::Text("a".into())
        );
        assert_eq!(
            answers.next_watching(wait, &mut child),
            Line::Text("b".into())
        );
        let Line::Exited(status) = answers.next_watching(wait, &mut child) else {
            panic!("the exit is noticed");
        };
        assert_eq!(describe_exit(status), "status 3");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let group = rustix::process::Pid::from_child(&child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }

    #[test]
    fn a_live_process_times_out_and_a_closed_pipe_gives_the_status() {
        let (mut child, mut answers) = start("sleep 60", 100);
        let wait = Duration::from_millis(200);
        assert_eq!(answers.next_watching(wait, &mut child), Line::Timeout);
        let _ = child.kill();
        let Line::Exited(status) = answers.next_watching(wait, &mut child) else {
            panic!("a killed process has exited");
        };
        assert_eq!(describe_exit(status), "signal 9");
    }

    #[test]
    fn a_timeout_of_ages_waits_without_failing() {
        let (mut child, mut answers) = start("echo hi", 100);
        assert_eq!(answers.next(Duration::MAX), Line::Text("hi".into()));
        let _ = child.wait();
    }
}
