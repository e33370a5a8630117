//! The files a case leaves behind (`PROTOCOL.md` "What the runner reads"): every regular
//! file under the case directory, described by kind.

use std::fs;
use std::path::Path;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::canonical::object;

/// Reads every regular file under `dir` (except the `home/` tree, of which only
/// `home/.omp/agent/blobs/` is kept) as the protocol describes.
/// An input file whose bytes did not change is shown as `{"unchanged": true}`.
/// A symbolic link to a file is read through; one to a folder is not followed.
/// A file that is not a regular file (a FIFO, a socket, a device, a link to one) is shown
/// as `{"special": KIND}` without being opened; one larger than
/// [`crate::guard::MAX_FILE_BYTES`] as `{"bytes": N, "unread": …}` without being read.
/// Files deeper than [`MAX_DEPTH`] folders are not read.
pub fn snapshot(dir: &Path, inputs: &std::collections::BTreeMap<String, Vec<u8>>) -> Value {
    Walk::run(dir, inputs, false)
}

/// [`snapshot`], removing every file and folder under `dir` once read: the
/// folder is left empty. One walk instead of a second one to delete the tree.
/// A symbolic link is removed, never what it points to (as `remove_dir_all` does).
pub fn take_snapshot(dir: &Path, inputs: &std::collections::BTreeMap<String, Vec<u8>>) -> Value {
    Walk::run(dir, inputs, true)
}

/// How many folders deep a snapshot reads files.
pub const MAX_DEPTH: usize = 256;

/// One walk of a case directory.
struct Walk<'a> {
    inputs: &'a std::collections::BTreeMap<String, Vec<u8>>,
    files: Map<String, Value>,
}

impl<'a> Walk<'a> {
    /// The files under `root` as an object, by path; with `remove`, emptying `root`.
    /// The walk (`walkdir`) keeps its own stack and never follows a link to a folder,
    /// so neither the depth of the tree nor a link loop can stop it.
    fn run(
        root: &'a Path,
        inputs: &'a std::collections::BTreeMap<String, Vec<u8>>,
        remove: bool,
    ) -> Value {
        let mut walk = Walk {
            inputs,
            files: Map::new(),
        };
        let kept = |rel: &str| {
            !rel.starts_with("home")
                || rel.starts_with("home/.omp/agent/blobs")
                || rel.starts_with("home/.omp/agent/sessions")
                || rel == "home/.omp"
                || rel == "home/.omp/agent"
                || rel == "home"
        };
        let relative = |path: &Path| {
            path.strip_prefix(root)
                .unwrap_or(path)
                .to_string_lossy()
                .replace('\\', "/")
        };
        // Folders after their contents, so that each is empty when it is removed.
        let items = walkdir::WalkDir::new(root)
            .min_depth(1)
            .contents_first(true);
        for item in items.into_iter().filter_map(Result::ok) {
            let path = item.path();
            let kind = item.file_type();
            if kind.is_dir() {
                if remove {
                    let _ = fs::remove_dir(path);
                }
                continue;
            }
            let rel = relative(path);
            // SQLite files are compared through the `history` operation's output, not byte for byte.
            if kept(&rel) && !is_database(&rel) && item.depth() <= MAX_DEPTH {
                walk.describe(path, rel);
            }
            if remove {
                let _ = fs::remove_file(path);
            }
        }
        Value::Object(walk.files)
    }

    /// Describes one file: a regular file (or a link to one) by its contents, anything
    /// else by its kind; a link to a folder not at all.
    fn describe(&mut self, path: &Path, rel: String) {
        use crate::guard::{read_regular, Contents, MAX_FILE_BYTES};
        let described = match read_regular(path, MAX_FILE_BYTES) {
            Ok(Contents::Bytes(bytes)) if self.inputs.get(&rel) == Some(&bytes) => {
                json!({ "unchanged": true })
            }
            Ok(Contents::Bytes(bytes)) => describe_file(&rel, &bytes),
            // Not followed: it could lead out of the directory, or back up it.
            Ok(Contents::Special("directory")) | Err(_) => return,
            Ok(Contents::Special(kind)) => json!({ "special": kind }),
            Ok(Contents::TooLarge(bytes)) => json!({
                "bytes": bytes,
                "unread": too_large_note(),
            }),
        };
        self.files.insert(rel, described);
    }
}

/// The note on a file larger than [`crate::guard::MAX_FILE_BYTES`]. The limit is written in
/// MiB: its digits in bytes (67108864) would read as a created id to the normaliser.
fn too_large_note() -> String {
    format!(
        "larger than the snapshot's limit of {} MiB",
        crate::guard::MAX_FILE_BYTES >> 20
    )
}

/// SQLite files (`*.db` and its `-wal`, `-shm`, `-journal` companions): not snapshotted.
fn is_database(name: &str) -> bool {
    [".db", ".db-wal", ".db-shm", ".db-journal"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
}

/// The most lines of a `.jsonl` file a snapshot makes values of (100,000; the corpus's
/// longest file has 3,001). Each line becomes a JSON value of about a hundred bytes
/// however short it is, so a file of more lines (`{}` lines, say) is described by its
/// size and hash instead: memory follows the bytes, not the line count.
pub const MAX_LINES: usize = 100_000;

/// A `.jsonl` file as its lines (a line nested deeper than [`crate::guard::MAX_NESTING`]
/// as `{"$deep": {bytes, sha256}}`; one of more than [`MAX_LINES`] lines by its size and
/// hash), a terminal breadcrumb (`terminal-sessions/…`) as its
/// text, anything else as size and hash.
pub fn describe_file(name: &str, bytes: &[u8]) -> Value {
    if name.contains("terminal-sessions/") {
        return json!({ "text": String::from_utf8_lossy(bytes) });
    }
    if !Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
    {
        return json!({"bytes": bytes.len(), "sha256": hex(&Sha256::digest(bytes))});
    }
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    if newlines > MAX_LINES {
        return json!({
            "bytes": bytes.len(),
            "sha256": hex(&Sha256::digest(bytes)),
            "unread": format!("more than the snapshot's limit of {} thousand lines", MAX_LINES / 1000),
        });
    }
    // Valid UTF-8 (the usual case) is checked by the faster strict test.
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    };
    let mut lines = Vec::new();
    let body = match text.strip_prefix('\u{feff}') {
        Some(rest) => {
            lines.push(json!({"$bom": true}));
            rest
        }
        None => &text,
    };
    let mut parts: Vec<&str> = body.split('\n').collect();
    if parts.last() == Some(&"") {
        parts.pop();
    }
    for line in parts {
        // A line nested past the limit is not made a value: it is described by its size
        // and hash (a line that deep is longer than the limit).
        if line.len() > crate::guard::MAX_NESTING && crate::guard::check_nesting(line).is_err() {
            lines.push(json!({"$deep": {
                "bytes": line.len(),
                "sha256": hex(&Sha256::digest(line.as_bytes())),
            }}));
            continue;
        }
        lines.push(
            session_reference::raw::parse_value(line)
                .unwrap_or_else(|_| json!({"$unparsed": line})),
        );
    }
    object([("lines", Value::Array(lines))])
}

/// Lowercase hex digits of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// omp 18's title slot: a first line `{"type":"title",…}` before the header, which the
/// reference (omp 13.19.0's format) does not read. Returns the lines set aside (0 or 1)
/// and the rest of the file.
pub fn title_slot(bytes: &[u8]) -> (usize, &[u8]) {
    let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
        return (0, bytes);
    };
    let first = &bytes[..end];
    let is_title = first.starts_with(b"{\"type\":\"title\"")
        && serde_json::from_slice::<Value>(first).is_ok_and(|v| v.is_object());
    if is_title {
        (1, &bytes[end + 1..])
    } else {
        (0, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_slot_is_set_aside_and_nothing_else() {
        let table: [(&str, usize, &str); 5] = [
            (
                "{\"type\":\"title\",\"v\":1}\n{\"type\":\"session\"}\n",
                1,
                "{\"type\":\"session\"}\n",
            ),
            ("{\"type\":\"session\"}\n", 0, "{\"type\":\"session\"}\n"),
            ("{\"type\":\"title\"", 0, "{\"type\":\"title\""),
            (
                "{\"type\":\"title\",torn\nrest",
                0,
                "{\"type\":\"title\",torn\nrest",
            ),
            ("", 0, ""),
        ];
        for (text, skipped, rest) in table {
            let (n, left) = title_slot(text.as_bytes());
            assert_eq!((n, left), (skipped, rest.as_bytes()), "{text:?}");
        }
    }

    /// Taking a snapshot describes what `snapshot` describes, skipped files and
    /// folders included in the removal, and leaves the case directory empty.
    #[test]
    fn taking_a_snapshot_reads_then_empties_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("session.jsonl", "{\"type\":\"session\"}\n"),
            ("kept.jsonl", "{}\n"),
            ("sessions/--proj--/a.jsonl", "{\"a\":1}\n"),
            ("home/.omp/agent/blobs/abc", "bytes"),
            ("home/.omp/agent/other/skipped.txt", "not shown"),
            ("history.db", "sqlite"),
        ];
        for (name, text) in files {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        fs::create_dir_all(dir.path().join("empty/inner")).unwrap();
        // A link out of the directory, and one back up to it (a loop).
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("theirs.txt"), "keep me").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
            std::os::unix::fs::symlink(dir.path(), dir.path().join("empty/up")).unwrap();
        }
        let inputs = [("kept.jsonl".to_owned(), b"{}\n".to_vec())].into();
        let read = snapshot(dir.path(), &inputs);
        assert_eq!(read.as_object().unwrap().len(), 4, "{read}");
        assert_eq!(read["kept.jsonl"], json!({"unchanged": true}));
        #[cfg(unix)]
        assert!(
            read.get("out/theirs.txt").is_none(),
            "links to folders are not followed"
        );
        assert_eq!(take_snapshot(dir.path(), &inputs), read);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        let theirs = fs::read_to_string(outside.path().join("theirs.txt")).unwrap();
        assert_eq!(theirs, "keep me", "what a link points to is left alone");
    }

    #[test]
    fn a_jsonl_file_of_more_lines_than_the_limit_is_described_by_size() {
        let bytes = "{}\n".repeat(MAX_LINES + 1);
        let described = describe_file("s.jsonl", bytes.as_bytes());
        assert_eq!(described["bytes"], bytes.len());
        assert!(described["unread"]
            .as_str()
            .unwrap()
            .contains("100 thousand lines"));
        let within = "{}\n".repeat(MAX_LINES);
        let lines = describe_file("s.jsonl", within.as_bytes());
        assert_eq!(lines["lines"].as_array().map(Vec::len), Some(MAX_LINES));
    }

    #[test]
    fn jsonl_files_are_described_by_lines() {
        let described = describe_file("s.jsonl", "\u{feff}{\"a\":1}\ntorn{\n".as_bytes());
        assert_eq!(
            described,
            json!({"lines": [{"$bom": true}, {"a": 1}, {"$unparsed": "torn{"}]})
        );
        assert_eq!(describe_file("b", b"xyz")["bytes"], 3);
    }
}
