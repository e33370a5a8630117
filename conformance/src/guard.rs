//! The limits the harness and the CLI keep on what they are given (docs/ARCHITECTURE.md
//! "Threat model"): paths stay inside their root, only regular files are read and never
//! more than a cap, JSON values are built only up to a nesting depth, and text from a
//! store is printed with its control characters escaped.
//!
//! Rule: no input makes the runner or the CLI panic, hang or leave its root.

use std::borrow::Cow;
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

/// The deepest JSON nesting the harness and the CLI build values for (1,000 levels;
/// the corpus goes to 200). Deeper text is described, refused or reported, never
/// parsed into a value: values are walked, compared and dropped by recursive code.
pub const MAX_NESTING: usize = 1_000;

/// The most bytes read from one file a case leaves (64 MiB); a larger file is described
/// by its size and this limit, unread.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// How deeply `text`, read as JSON, nests arrays and objects (brackets inside strings do
/// not count). One pass over the bytes, no recursion.
pub fn nesting(text: &str) -> usize {
    nesting_of_bytes(text.as_bytes())
}

/// [`nesting`] of bytes (a line of a file, UTF-8 or not: only ASCII bytes count).
fn nesting_of_bytes(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut in_string = false;
    let mut bytes = text.iter().copied();
    while let Some(b) = bytes.next() {
        if in_string {
            match b {
                b'\\' => {
                    bytes.next();
                }
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// What the harness refuses to read or touch.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuardError {
    /// A JSON text nested deeper than [`MAX_NESTING`].
    TooDeep {
        /// How deep it nests.
        depth: usize,
    },
    /// An empty path.
    EmptyPath,
    /// A path that climbs out of its directory with `..`.
    LeavesDirectory {
        /// The path as given.
        name: String,
    },
    /// An absolute path (or one with a drive prefix).
    Absolute {
        /// The path as given.
        name: String,
    },
    /// A JSON text of more values than a limit ([`check_values`]).
    TooManyValues {
        /// How many it holds ([`values`]).
        values: usize,
        /// The limit.
        limit: usize,
    },
}

impl std::fmt::Display for GuardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GuardError::TooDeep { depth } => write!(
                f,
                "nested {depth} levels deep, deeper than the limit of {MAX_NESTING}"
            ),
            GuardError::EmptyPath => f.write_str("an empty path"),
            GuardError::LeavesDirectory { name } => {
                write!(f, "{name:?} leaves its directory (`..`)")
            }
            GuardError::Absolute { name } => {
                write!(f, "{name:?} is absolute; paths are relative to the case")
            }
            GuardError::TooManyValues { values, limit } => write!(
                f,
                "holds {values} JSON values, more than the limit of {limit} values"
            ),
        }
    }
}

impl std::error::Error for GuardError {}

/// `Err` naming the depth when `text` nests deeper than [`MAX_NESTING`] (a text no
/// longer than the limit cannot, and is not scanned).
pub fn check_nesting(text: &str) -> Result<(), GuardError> {
    check_nesting_of_bytes(text.as_bytes())
}

/// [`check_nesting`] of bytes. Only a text with more than [`MAX_NESTING`] opening
/// brackets can nest deeper, and counting them is a loop the compiler vectorises, so
/// the usual text (a session line holds a few dozen) is not scanned byte by byte.
pub fn check_nesting_of_bytes(text: &[u8]) -> Result<(), GuardError> {
    if text.len() <= MAX_NESTING {
        return Ok(());
    }
    let openings = text.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if openings <= MAX_NESTING {
        return Ok(());
    }
    match nesting_of_bytes(text) {
        depth if depth > MAX_NESTING => Err(GuardError::TooDeep { depth }),
        _ => Ok(()),
    }
}

/// The first line of `bytes` (1-based) nested deeper than [`MAX_NESTING`], with the
/// reason. Only a line with more opening brackets than the limit can be, so one pass
/// finds the newlines and brackets (`memchr3`, a few of each in a usual line) and only
/// such a line is scanned.
pub fn deep_line(bytes: &[u8]) -> Option<(usize, GuardError)> {
    let (mut line, mut start, mut openings) = (1, 0, 0);
    for at in memchr::memchr3_iter(b'\n', b'[', b'{', bytes) {
        if bytes[at] == b'\n' {
            (line, start, openings) = (line + 1, at + 1, 0);
            continue;
        }
        openings += 1;
        if openings == MAX_NESTING + 1 {
            let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n);
            if let Err(error) = check_nesting_of_bytes(&bytes[start..end]) {
                return Some((line, error));
            }
        }
    }
    None
}

/// `name` joined to `root`, when it is a relative path that stays inside it: no root,
/// no drive prefix, no `..` and not empty. Anything else is refused with the reason.
pub fn inside(root: &Path, name: &str) -> Result<PathBuf, GuardError> {
    let path = Path::new(name);
    if name.is_empty() {
        return Err(GuardError::EmptyPath);
    }
    for component in path.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(GuardError::LeavesDirectory {
                    name: name.to_owned(),
                });
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(GuardError::Absolute {
                    name: name.to_owned(),
                });
            }
        }
    }
    Ok(root.join(path))
}

/// What a file that is not a regular file is: `directory`, `fifo`, `socket`,
/// `character device`, `block device`, `symlink` or `special`.
pub fn kind_name(kind: fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "directory";
    }
    if kind.is_symlink() {
        return "symlink";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "fifo";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_char_device() {
            return "character device";
        }
        if kind.is_block_device() {
            return "block device";
        }
    }
    "special"
}

/// What reading a file the adapter left gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Contents {
    /// A regular file's bytes (a link to one is read through).
    Bytes(Vec<u8>),
    /// Not a regular file (a link's target's kind for a link): not opened.
    Special(&'static str),
    /// A regular file larger than the limit: its size, unread.
    TooLarge(u64),
}

/// Reads `path` when it is a regular file (following a link to one) of at most `limit`
/// bytes. Anything else is reported by kind without being opened; the open itself does
/// not wait (`O_NONBLOCK`), so a file swapped for a FIFO meanwhile cannot hang it.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Contents> {
    let meta = fs::metadata(path)?;
    if !meta.is_file() {
        return Ok(Contents::Special(kind_name(meta.file_type())));
    }
    if meta.len() > limit {
        return Ok(Contents::TooLarge(meta.len()));
    }
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(Contents::Special(kind_name(meta.file_type())));
    }
    // Read one byte past the limit: a file that grew meanwhile is reported, not read on.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(Contents::TooLarge(bytes.len() as u64));
    }
    Ok(Contents::Bytes(bytes))
}

/// The largest FILE argument the CLI reads (1 GiB; the 100,000-entry session the
/// benchmarks use is 120 MB). A larger regular file is refused before it is read, so a
/// sparse file of a terabyte costs nothing; a pipe is read up to the limit.
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// The most lines a FILE argument may have (2,000,000, twenty times the benchmark
/// session's). Each line the reference keeps costs about a hundred bytes beyond its text,
/// so a file of short lines (`{}`, or blank ones) would otherwise take memory by its
/// line count, not its bytes.
pub const MAX_INPUT_LINES: usize = 2_000_000;

/// The most JSON objects and arrays a FILE argument, a request to `serve` or an
/// adapter's answer may hold outside its strings
/// (2,000,000; the benchmark session has about 600,000). Each becomes a value of a
/// hundred bytes or more when a session is inspected, however few bytes it is written
/// in (`{"a":{}}` is 9 bytes and two objects), so the cap keeps memory to a bounded
/// multiple of the bytes.
pub const MAX_INPUT_CONTAINERS: usize = 2_000_000;

/// How many JSON objects and arrays `bytes` opens outside strings (a `{` or `[` in a
/// string does not count; a string ends at its closing quote or, unclosed, at the end
/// of its line). One pass, a few `memchr` calls a string.
pub fn containers(bytes: &[u8]) -> usize {
    let (mut count, mut at) = (0, 0);
    while let Some(found) = bytes
        .get(at..)
        .and_then(|rest| memchr::memchr3(b'"', b'{', b'[', rest))
    {
        let i = at + found;
        if bytes[i] != b'"' {
            count += 1;
            at = i + 1;
            continue;
        }
        // Past the string: its closing quote (escapes skipped), or the end of its line.
        let mut j = i + 1;
        loop {
            match bytes
                .get(j..)
                .and_then(|rest| memchr::memchr3(b'"', b'\\', b'\n', rest))
            {
                Some(k) if bytes[j + k] == b'\\' => j += k + 2,
                Some(k) => {
                    j += k + 1;
                    break;
                }
                None => return count,
            }
        }
        at = j;
    }
    count
}

/// The most JSON values an adapter's answer or a request to `serve` may hold
/// (1,000,000, as [`values`] counts them; the largest output of the corpus holds about
/// 21,000). A value costs the runner a few hundred bytes however few bytes it is written
/// in (`0,` is two bytes, and becomes a value, a line of canonical text and a line of a
/// diff), so a count as well as a byte limit keeps memory to a bounded multiple of the
/// bytes read.
pub const MAX_MESSAGE_VALUES: usize = 1_000_000;

/// About how many JSON values `bytes` holds: its objects and arrays, the commas between
/// their elements or members, and one for the outermost value (`[0,0,0]` is 4, `{}` 2).
/// Brackets and commas inside strings do not count; a string ends at its closing quote
/// or, unclosed, at the end of its line. One pass, no recursion.
pub fn values(bytes: &[u8]) -> usize {
    let mut count = usize::from(bytes.iter().any(|b| !b.is_ascii_whitespace()));
    let mut in_string = false;
    let mut iter = bytes.iter();
    while let Some(&b) = iter.next() {
        if in_string {
            match b {
                b'\\' => {
                    iter.next();
                }
                b'"' | b'\n' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' | b',' => count += 1,
            _ => {}
        }
    }
    count
}

/// `Err` with the count when `bytes` holds more than `limit` JSON values ([`values`]).
/// Only a text with more brackets and commas than the limit can, and counting those
/// bytes is a loop the compiler vectorises: the usual message is not scanned byte by
/// byte for strings.
pub fn check_values(bytes: &[u8], limit: usize) -> Result<(), GuardError> {
    let marks = bytes
        .iter()
        .filter(|&&b| b == b'{' || b == b'[' || b == b',')
        .count();
    if marks < limit {
        return Ok(());
    }
    match values(bytes) {
        values if values > limit => Err(GuardError::TooManyValues { values, limit }),
        _ => Ok(()),
    }
}

/// How long a FILE argument that is a pipe may stay silent: before its first bytes (a
/// named pipe whose writer opens it later) and between two reads.
pub const PIPE_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_mins(1);

/// Why a FILE argument was not read.
#[derive(Debug)]
#[non_exhaustive]
pub enum InputError {
    /// The system refused a call: its message.
    Io(io::Error),
    /// Larger than [`MAX_INPUT_BYTES`]: the size, or for a pipe the bytes read so far.
    TooLarge(u64),
    /// More lines than [`MAX_INPUT_LINES`].
    TooManyLines(usize),
    /// More objects and arrays than [`MAX_INPUT_CONTAINERS`].
    TooManyValues(usize),
    /// A pipe that gave nothing for [`PIPE_IDLE_TIMEOUT`].
    SilentPipe,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Io(e) => e.fmt(f),
            InputError::TooLarge(bytes) => write!(
                f,
                "{bytes} bytes or more, larger than the limit of {} MiB; not read",
                MAX_INPUT_BYTES >> 20
            ),
            InputError::TooManyLines(lines) => write!(
                f,
                "{lines} lines, more than the limit of {MAX_INPUT_LINES}; not read"
            ),
            InputError::TooManyValues(values) => write!(
                f,
                "{values} JSON objects and arrays, more than the limit of {MAX_INPUT_CONTAINERS}; not read"
            ),
            InputError::SilentPipe => write!(
                f,
                "a pipe that nothing was written to for {} s; given up",
                PIPE_IDLE_TIMEOUT.as_secs()
            ),
        }
    }
}

impl std::error::Error for InputError {}

impl From<io::Error> for InputError {
    fn from(e: io::Error) -> Self {
        InputError::Io(e)
    }
}

/// Reads a FILE argument: a regular file of at most [`MAX_INPUT_BYTES`], or a pipe read
/// once to its end within the same limit, each wait for it at most
/// [`PIPE_IDLE_TIMEOUT`]; either way at most [`MAX_INPUT_LINES`] lines. The caller has
/// checked it is one of the two.
pub fn read_input(path: &Path) -> Result<Vec<u8>, InputError> {
    let meta = fs::metadata(path)?;
    if meta.is_file() && meta.len() > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge(meta.len()));
    }
    #[cfg(unix)]
    let bytes = if std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()) {
        read_pipe(path, PIPE_IDLE_TIMEOUT)?
    } else {
        read_capped(fs::File::open(path)?, meta.len())?
    };
    #[cfg(not(unix))]
    let bytes = read_capped(fs::File::open(path)?, meta.len())?;
    let lines = memchr::memchr_iter(b'\n', &bytes).count();
    if lines > MAX_INPUT_LINES {
        return Err(InputError::TooManyLines(lines));
    }
    let values = containers(&bytes);
    if values > MAX_INPUT_CONTAINERS {
        return Err(InputError::TooManyValues(values));
    }
    Ok(bytes)
}

/// Reads `reader` to its end, refusing more than [`MAX_INPUT_BYTES`]. The buffer is
/// sized for `expected` bytes (the file's length) at once: `take` hides the file's size
/// from `read_to_end`, which would otherwise grow the buffer by doubling, copying it and
/// holding both copies at the last step (the peak was twice the file).
fn read_capped(reader: impl Read, expected: u64) -> Result<Vec<u8>, InputError> {
    let capacity = usize::try_from(expected.min(MAX_INPUT_BYTES)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity.saturating_add(1));
    reader.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(InputError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads a named pipe: opened without waiting for a writer (`O_NONBLOCK`), then each
/// read waits with `poll` until bytes come, the writer closes it (the end), or `idle`
/// passes. A writer that opens it later is waited for, not taken for an empty file.
#[cfg(unix)]
fn read_pipe(path: &Path, idle: std::time::Duration) -> Result<Vec<u8>, InputError> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut options = fs::OpenOptions::new();
    options.read(true);
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let mut file = options.open(path)?;
    // The field types are narrower on some 32-bit systems.
    #[allow(clippy::unnecessary_fallible_conversions)]
    let timeout = Timespec {
        tv_sec: idle.as_secs().try_into().unwrap_or(60),
        tv_nsec: idle.subsec_nanos().try_into().unwrap_or_default(),
    };
    let (mut bytes, mut chunk) = (Vec::new(), vec![0; 64 << 10]);
    loop {
        let mut fds = [PollFd::new(&file, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Err(InputError::SilentPipe),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(InputError::Io(e.into())),
        }
        match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            // Refused before it grows: a buffer past the limit would double beyond it.
            Ok(n) if (bytes.len() + n) as u64 > MAX_INPUT_BYTES => {
                return Err(InputError::TooLarge((bytes.len() + n) as u64));
            }
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e.into()),
        }
        if bytes.len() as u64 > MAX_INPUT_BYTES {
            return Err(InputError::TooLarge(bytes.len() as u64));
        }
    }
}

/// Text from a store (an id, a cwd, a name) for a terminal: control characters
/// (C0, DEL, C1) written as `\u{..}` escapes, so a file cannot move the cursor,
/// clear the screen or retitle the window.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Ignores `SIGXFSZ`, so that a write past the file-size limit (`ulimit -f`) fails with
/// `EFBIG`, which the session manager latches as a persistence error, instead of killing
/// the process. Called first in `main`.
#[cfg(unix)]
#[allow(unsafe_code)]
pub fn ignore_file_size_signal() {
    // SAFETY: `SIG_IGN` installs no handler: no code runs on the signal, so nothing
    // can race with the rest of the program.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// No such signal elsewhere.
#[cfg(not(unix))]
pub fn ignore_file_size_signal() {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file is read into a buffer of its size: no doubling, whose last step holds two
    /// copies (the CLI's peak memory on a large session was twice the file).
    #[test]
    fn a_file_is_read_into_a_buffer_of_its_size() {
        let data = vec![b'x'; 3_000_000];
        let bytes = read_capped(&data[..], data.len() as u64).expect("reads");
        assert_eq!(bytes.len(), data.len());
        assert!(bytes.capacity() <= data.len() + 1, "{}", bytes.capacity());
    }

    #[test]
    fn containers_are_counted_outside_strings() {
        let cases: &[(&str, usize)] = &[
            (r#"{"a":{}}"#, 2),
            (r#"{"a":"{[","b":[1,{}]}"#, 3),
            (r#"{"a":"x\"{["}"#, 1),
            (r#"["\\",{}]"#, 2),
            ("{\"open\n{}\n[]", 3),
            (r#"{"unclosed"#, 1),
            (r#""\"#, 0),
            ("", 0),
        ];
        for (text, expected) in cases {
            assert_eq!(containers(text.as_bytes()), *expected, "{text:?}");
        }
    }

    #[test]
    fn values_are_counted_outside_strings() {
        let cases: &[(&str, usize)] = &[
            ("[0,0,0]", 4),
            ("{}", 2),
            (r#"{"a":1,"b":[true,null]}"#, 5),
            (r#"{"a":"x,[{\",y"}"#, 2),
            ("\"open,\n,", 2),
            ("  ", 0),
            ("0", 1),
        ];
        for (text, expected) in cases {
            assert_eq!(values(text.as_bytes()), *expected, "{text:?}");
        }
    }

    /// A text of many values is refused by their count, whatever its bytes; commas in
    /// strings are only counted by the quick pass, and let through.
    #[test]
    fn a_text_of_too_many_values_is_refused() {
        let zeros = format!("[{}0]", "0,".repeat(998));
        assert_eq!(check_values(zeros.as_bytes(), 1000), Ok(()));
        let more = format!("[{}0]", "0,".repeat(999));
        assert_eq!(
            check_values(more.as_bytes(), 1000),
            Err(GuardError::TooManyValues {
                values: 1001,
                limit: 1000
            })
        );
        let in_a_string = format!("[\"{}\"]", ",".repeat(5000));
        assert_eq!(check_values(in_a_string.as_bytes(), 1000), Ok(()));
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_nobody_opens_is_given_up_after_its_idle_time() {
        let dir = tempfile::tempdir().expect("dir");
        let fifo = dir.path().join("f");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success());
        let idle = std::time::Duration::from_millis(200);
        let start = std::time::Instant::now();
        let error = read_pipe(&fifo, idle).expect_err("no writer");
        assert!(matches!(error, InputError::SilentPipe), "{error}");
        assert!(start.elapsed() >= idle);
        // A writer that opens it and closes it without writing: an empty file, at once.
        let writer = std::thread::spawn({
            let fifo = fifo.clone();
            move || {
                drop(
                    fs::OpenOptions::new()
                        .write(true)
                        .open(fifo)
                        .expect("writer"),
                );
            }
        });
        assert_eq!(
            read_pipe(&fifo, std::time::Duration::from_secs(20)).expect("read"),
            b""
        );
        writer.join().expect("writer");
    }

    #[test]
    fn nesting_counts_brackets_outside_strings() {
        assert_eq!(nesting(r#"{"a":[1,{"b":"[[[\"{"}]}"#), 3);
        assert_eq!(nesting("1"), 0);
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(nesting(&deep), 5000);
        assert!(check_nesting(&deep).is_err());
        assert!(check_nesting("[[1]]").is_ok());
        // Many brackets, shallow: counted, then scanned, and let through.
        let wide = format!("[{}1]", "[],".repeat(2000));
        assert!(check_nesting(&wide).is_ok());
        let in_strings = format!("{{\"a\":\"{}\"}}", "[".repeat(5000));
        assert!(check_nesting(&in_strings).is_ok());
    }

    #[test]
    fn the_first_deep_line_is_found_by_its_number() {
        let deep = format!("{}{}", "[".repeat(1001), "]".repeat(1001));
        let shallow = format!("{{\"a\":\"{}\"}}", "x".repeat(3000));
        let text = format!("{shallow}\n[1]\n{deep}\n{deep}\n");
        let found = deep_line(text.as_bytes()).map(|(line, _)| line);
        assert_eq!(found, Some(3));
        assert_eq!(deep_line(format!("{shallow}\n{shallow}").as_bytes()), None);
        let invalid_utf8 = [b"\xff".as_slice(), deep.as_bytes()].concat();
        assert_eq!(deep_line(&invalid_utf8).map(|(line, _)| line), Some(1));
    }

    #[test]
    fn paths_stay_inside_their_root() {
        let root = Path::new("/case");
        assert_eq!(
            inside(root, "a/b.jsonl"),
            Ok(PathBuf::from("/case/a/b.jsonl"))
        );
        assert_eq!(inside(root, "./a"), Ok(PathBuf::from("/case/./a")));
        for bad in ["/etc/passwd", "../x", "a/../../x", "", "a/.."] {
            assert!(inside(root, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("plain é"), "plain é");
        assert_eq!(
            printable("a\u{1b}[2Jb\u{7}\u{9b}"),
            "a\\u{1b}[2Jb\\u{7}\\u{9b}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn special_files_are_named_not_read() {
        let dir = tempfile::tempdir().expect("dir");
        let fifo = dir.path().join("f");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success());
        assert_eq!(
            read_regular(&fifo, 10).expect("fifo"),
            Contents::Special("fifo")
        );
        assert_eq!(
            read_regular(Path::new("/dev/zero"), 10).expect("zero"),
            Contents::Special("character device")
        );
        let big = dir.path().join("big");
        fs::File::create(&big)
            .and_then(|f| f.set_len(1 << 40))
            .expect("sparse");
        assert_eq!(
            read_regular(&big, 1 << 20).expect("big"),
            Contents::TooLarge(1 << 40)
        );
        fs::write(dir.path().join("small"), "abc").expect("write");
        assert_eq!(
            read_regular(&dir.path().join("small"), 3).expect("small"),
            Contents::Bytes(b"abc".to_vec())
        );
        std::os::unix::fs::symlink(&fifo, dir.path().join("link")).expect("link");
        assert_eq!(
            read_regular(&dir.path().join("link"), 10).expect("link"),
            Contents::Special("fifo")
        );
    }
}
