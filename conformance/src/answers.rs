//! Reading an adapter's answers: one line at a time, each within a time limit.
//!
//! On Unix the job's own thread waits for the pipe with `poll` and reads it: an
//! answer wakes only the thread that asked. Elsewhere a reader thread passes lines
//! through a channel (one more thread to wake per answer).

use std::process::ChildStdout;
use std::time::Duration;

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
}

/// What a pipe holds on Linux, and so what one read can return.
const PIPE_CHUNK: usize = 64 * 1024;

/// An adapter's stdout, read line by line.
pub struct Answers(imp::Answers);

impl Answers {
    /// Reads `pipe` from now on.
    pub fn new(pipe: ChildStdout) -> Answers {
        Answers(imp::Answers::new(pipe))
    }

    /// The next line, waiting at most `timeout` for it.
    pub fn next(&mut self, timeout: Duration, max_bytes: u64) -> Line {
        self.0.next(timeout, max_bytes)
    }
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
        /// Bytes read: `buf[start..end]` are not yet returned. The buffer keeps the
        /// size of the longest answer, so a long answer is not grown step by step again.
        buf: Vec<u8>,
        start: usize,
        end: usize,
    }

    impl Answers {
        pub fn new(pipe: ChildStdout) -> Answers {
            Answers {
                pipe,
                buf: vec![0; PIPE_CHUNK],
                start: 0,
                end: 0,
            }
        }

        pub fn next(&mut self, timeout: Duration, max_bytes: u64) -> Line {
            let deadline = Instant::now() + timeout;
            // How many unread bytes are known to hold no `\n`.
            let mut scanned = 0;
            loop {
                let unread = &self.buf[self.start..self.end];
                if let Some(at) = memchr::memchr(b'\n', &unread[scanned..]) {
                    let line = unread[..scanned + at].to_vec();
                    self.start += scanned + at + 1;
                    return Line::Text(text(line));
                }
                scanned = unread.len();
                if scanned as u64 > max_bytes {
                    return Line::TooLong;
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
        fn wait(&self, deadline: Instant) -> Option<bool> {
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let timeout = Timespec {
                    tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(left.subsec_nanos()),
                };
                let mut fds = [PollFd::new(&self.pipe, PollFlags::IN)];
                match poll(&mut fds, Some(&timeout)) {
                    Ok(0) if left.is_zero() => return Some(false),
                    // Readable, or hung up / in error: the read says which.
                    Ok(n) if n > 0 => return Some(true),
                    // Woken early (a signal, or a timer's rounding): wait the rest.
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
    use crate::adapter::MAX_RESPONSE_BYTES;

    pub struct Answers {
        lines: Receiver<Line>,
    }

    impl Answers {
        pub fn new(pipe: ChildStdout) -> Answers {
            let (tx, lines) = mpsc::channel();
            thread::spawn(move || {
                let mut reader = BufReader::with_capacity(PIPE_CHUNK, pipe);
                loop {
                    let mut buf = Vec::new();
                    let read = (&mut reader)
                        .take(MAX_RESPONSE_BYTES + 1)
                        .read_until(b'\n', &mut buf);
                    let line = match read {
                        Ok(0) | Err(_) => Line::Eof,
                        Ok(_) if buf.len() as u64 > MAX_RESPONSE_BYTES => Line::TooLong,
                        Ok(_) => {
                            if buf.last() == Some(&b'\n') {
                                buf.pop();
                            }
                            Line::Text(text(buf))
                        }
                    };
                    let stop = !matches!(line, Line::Text(_));
                    if tx.send(line).is_err() || stop {
                        break;
                    }
                }
            });
            Answers { lines }
        }

        pub fn next(&mut self, timeout: Duration, _max_bytes: u64) -> Line {
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

    fn answers(script: &str) -> (std::process::Child, Answers) {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh starts");
        let pipe = child.stdout.take().expect("piped");
        (child, Answers::new(pipe))
    }

    #[test]
    fn lines_come_whole_and_in_order() {
        let (mut child, mut answers) =
            answers("printf 'a\\nb'; sleep 0.1; printf 'c\\n\\377\\n'; exec 1>&-; sleep 1");
        let second = Duration::from_secs(5);
        assert_eq!(answers.next(second, 100), Line::Text("a".into()));
        assert_eq!(answers.next(second, 100), Line::Text("bc".into()));
        assert_eq!(answers.next(second, 100), Line::Text("\u{fffd}".into()));
        assert_eq!(answers.next(second, 100), Line::Eof);
        child.wait().expect("exits");
    }

    #[test]
    fn silence_times_out_and_long_lines_are_refused() {
        let (mut child, mut answers) = answers("sleep 1; head -c 200000 /dev/zero; echo");
        assert_eq!(answers.next(Duration::from_millis(50), 100), Line::Timeout);
        assert_eq!(answers.next(Duration::from_secs(5), 150_000), Line::TooLong);
        let _ = child.kill();
        let _ = child.wait();
    }
}
