//! The bundle's format, shared by `build.rs` (which writes it) and the CLI (which reads
//! it): the magic line, then one record per file in path order: the path's length (4 bytes,
//! little-endian), the path (UTF-8, `/`-separated, relative), the content's length (8
//! bytes, little-endian) and the content. The whole is one zlib stream.
//!
//! A corpus's `sha256` is the SHA-256 of the records of the files its cases read (paths
//! relative to the `cases` folder, [`read_by_a_case`]), so the hash names the cases
//! whatever folder holds them, and nothing else in that folder.

use sha2::{Digest, Sha256};

/// The first bytes of an unpacked bundle.
pub const MAGIC: &[u8] = b"session-conformance bundle 1\n";

/// A case's goldens, by file name: the one every profile shares, then one per profile
/// (`session_reference::model::Profile::ALL`'s names; a test keeps them in step).
pub const GOLDENS: [&str; 4] = [
    "expected.json",
    "expected.pi.json",
    "expected.omp.json",
    "expected.operator.json",
];

/// Whether the file at `path` (relative to the cases folder, `/`-separated) is one a
/// case reads, given the case folders (`case_dirs`, relative the same way): a case
/// folder's `case.json` or golden ([`GOLDENS`]), or a file under its `input/` folder
/// (the first `input` part of a path ends its case folder's path: cases are never
/// looked for inside an `input` folder).
pub fn read_by_a_case(path: &str, is_case_dir: impl Fn(&str) -> bool) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    if let Some(at) = parts.iter().position(|p| *p == "input") {
        return at > 0 && at + 1 < parts.len() && is_case_dir(&parts[..at].join("/"));
    }
    match path.rsplit_once('/') {
        Some((dir, name)) => (name == "case.json" || GOLDENS.contains(&name)) && is_case_dir(dir),
        None => false,
    }
}

/// Appends one file's record to `out` (the bundle, or a hasher's input).
pub fn write_record(out: &mut Vec<u8>, path: &str, content: &[u8]) {
    out.extend_from_slice(&record_head(path, content.len()));
    out.extend_from_slice(content);
}

/// A record's bytes before its content: both lengths and the path.
pub fn record_head(path: &str, len: usize) -> Vec<u8> {
    let mut head = Vec::with_capacity(12 + path.len());
    // A path over 4 GiB or a content over 16 EiB cannot be named or read.
    head.extend_from_slice(&u32::try_from(path.len()).unwrap_or(u32::MAX).to_le_bytes());
    head.extend_from_slice(path.as_bytes());
    head.extend_from_slice(&u64::try_from(len).unwrap_or(u64::MAX).to_le_bytes());
    head
}

/// Feeds one file's record to a corpus hash.
pub fn hash_record(hasher: &mut Sha256, path: &str, content: &[u8]) {
    hasher.update(record_head(path, content.len()));
    hasher.update(content);
}

/// A hash as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}
