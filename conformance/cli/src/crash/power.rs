//! Simulated power loss (issue #24, item 3): the disk as it could be after the power
//! went out, rebuilt from the file-system calls an implementation made.
//!
//! An adapter in journal mode (`PROTOCOL.md` "Journal") reports each call that changes
//! a file (`write`, `truncate`, `fsync`, `rename`, `unlink`) before the ack that follows
//! it. [`Disk`] replays them under one model of a journaling file system:
//!
//! - names are metadata and never lost: creating a file, emptying it (`truncate`),
//!   `rename` and `unlink` are on disk at once, in order;
//! - a file's bytes are on disk up to its last `fsync`; of the bytes written since,
//!   any prefix may have reached the disk, cut anywhere (inside a line, too).
//!
//! A rename carries the file's state with it: a temp file renamed over a session
//! without an `fsync` first may hold nothing after the power loss, while its name
//! already replaced the old file. This is the weakest promise POSIX makes; real file
//! systems often keep more (ext4 flushes a file renamed over another), never less.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde_json::Value;

use super::plan::Rng;

/// One call that changes a file, as a journal line reports it; paths are relative to
/// the request's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsOp {
    /// Appends `data` to `path` (creating it).
    Write {
        /// The file.
        path: String,
        /// The bytes.
        data: Vec<u8>,
    },
    /// Empties `path` (creating it): `O_TRUNC`, what `writeFileSync` starts with.
    Truncate {
        /// The file.
        path: String,
    },
    /// Makes `path`'s bytes durable.
    Fsync {
        /// The file.
        path: String,
    },
    /// Moves `path` to `to`, replacing what was there.
    Rename {
        /// The old name.
        path: String,
        /// The new name.
        to: String,
    },
    /// Removes `path`.
    Unlink {
        /// The file.
        path: String,
    },
}

impl FsOp {
    /// Reads a journal line (`{"type":"fs","op":…}`) of a request made in `dir`.
    /// `Err` says what is wrong with it (an unknown call, a path outside `dir`, bad data).
    pub fn read(line: &Value, dir: &Path) -> Result<FsOp, String> {
        let path = |key: &str| -> Result<String, String> {
            let raw = line[key]
                .as_str()
                .ok_or_else(|| format!("`{key}` is not a path"))?;
            inside(dir, raw).ok_or_else(|| {
                format!(
                    "`{key}` leads outside the case directory: {}",
                    session_conformance::guard::printable(raw)
                )
            })
        };
        match line["op"].as_str() {
            Some("write") => {
                let encoded = line["data"]
                    .as_str()
                    .ok_or("`data` is not a base64 string")?;
                let data = base64_decode(encoded).ok_or("`data` is not base64")?;
                Ok(FsOp::Write {
                    path: path("path")?,
                    data,
                })
            }
            Some("truncate") => Ok(FsOp::Truncate {
                path: path("path")?,
            }),
            Some("fsync") => Ok(FsOp::Fsync {
                path: path("path")?,
            }),
            Some("rename") => Ok(FsOp::Rename {
                path: path("path")?,
                to: path("to")?,
            }),
            Some("unlink") => Ok(FsOp::Unlink {
                path: path("path")?,
            }),
            other => Err(format!("unknown file-system call {other:?}")),
        }
    }
}

impl FsOp {
    /// What the call costs to keep: its bytes and paths, and 64 for the call itself.
    pub fn size(&self) -> usize {
        64 + match self {
            FsOp::Write { path, data } => path.len() + data.len(),
            FsOp::Rename { path, to } => path.len() + to.len(),
            FsOp::Truncate { path } | FsOp::Fsync { path } | FsOp::Unlink { path } => path.len(),
        }
    }
}

/// `raw` (absolute, or relative to `dir`) as a path relative to `dir`, by its text
/// alone (the file may be gone): `None` when it leaves `dir` or names `dir` itself.
pub fn inside(dir: &Path, raw: &str) -> Option<String> {
    let path = Path::new(raw);
    let rest = if path.is_absolute() {
        path.strip_prefix(dir).ok()?
    } else {
        path
    };
    let mut parts = Vec::new();
    for component in rest.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Standard base64, padded or not; `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(text).ok()
}

/// One file's state: bytes on disk for certain, and bytes written since its last fsync.
#[derive(Debug, Clone, Default)]
struct Inode {
    synced: Vec<u8>,
    pending: Vec<u8>,
}

/// The disk under the model above, after some calls.
#[derive(Debug, Clone, Default)]
pub struct Disk {
    names: BTreeMap<String, usize>,
    inodes: Vec<Inode>,
}

impl Disk {
    /// A disk holding `files` (name, bytes), all of them durable.
    pub fn new(files: &[(String, Vec<u8>)]) -> Disk {
        let mut disk = Disk::default();
        for (name, bytes) in files {
            let inode = disk.inode(name);
            disk.inodes[inode].synced.clone_from(bytes);
        }
        disk
    }

    /// The file named `name`, created empty when missing.
    fn inode(&mut self, name: &str) -> usize {
        if let Some(&i) = self.names.get(name) {
            return i;
        }
        self.inodes.push(Inode::default());
        let i = self.inodes.len() - 1;
        self.names.insert(name.to_owned(), i);
        i
    }

    /// Applies one call.
    pub fn apply(&mut self, op: &FsOp) {
        match op {
            FsOp::Write { path, data } => {
                let i = self.inode(path);
                self.inodes[i].pending.extend_from_slice(data);
            }
            FsOp::Truncate { path } => {
                let i = self.inode(path);
                self.inodes[i] = Inode::default();
            }
            FsOp::Fsync { path } => {
                if let Some(&i) = self.names.get(path) {
                    let inode = &mut self.inodes[i];
                    let pending = std::mem::take(&mut inode.pending);
                    inode.synced.extend_from_slice(&pending);
                }
            }
            FsOp::Rename { path, to } => {
                if let Some(i) = self.names.remove(path) {
                    self.names.insert(to.clone(), i);
                }
            }
            FsOp::Unlink { path } => {
                self.names.remove(path);
            }
        }
    }

    /// Every file as it was before the power went out (name, bytes): what its last
    /// fsync covered, then a prefix of the bytes written since, cut where `rng` says
    /// (nothing of them in a third of the files, all of them in a third, else a cut
    /// anywhere).
    pub fn after_power_loss(&self, rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
        self.names
            .iter()
            .map(|(name, &i)| {
                let inode = &self.inodes[i];
                let n = inode.pending.len();
                let cut = match rng.below(3) {
                    0 => 0,
                    1 => n,
                    _ => rng.below(n + 1),
                };
                let mut bytes = inode.synced.clone();
                bytes.extend_from_slice(&inode.pending[..cut]);
                (name.clone(), bytes)
            })
            .collect()
    }

    /// Bytes written but not yet synced, over every file.
    pub fn unsynced(&self) -> usize {
        self.names
            .values()
            .map(|&i| self.inodes[i].pending.len())
            .sum()
    }
}

/// How many of the `journal`'s calls (each with the number of acks written before it)
/// were made when the power went out: after an ack
/// drawn from the `acks` (or before the first), at a call drawn from those made before
/// the next one. Drawing the ack first spreads the moments over the whole run, also for
/// an implementation that makes thousands of calls in one step (omp 13.19.0 rewrites
/// the whole file for each queued append before its first flush).
pub fn moment(rng: &mut Rng, journal: &[(FsOp, usize)], acks: usize) -> usize {
    let ack = rng.below(acks + 1);
    let first = journal.partition_point(|(_, n)| *n < ack);
    let next = journal.partition_point(|(_, n)| *n <= ack);
    first + rng.below(next - first + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(line: &Value) -> FsOp {
        FsOp::read(line, Path::new("/case")).expect("a journal line")
    }

    fn write(path: &str, text: &str) -> FsOp {
        FsOp::Write {
            path: path.into(),
            data: text.as_bytes().to_vec(),
        }
    }

    /// What the disk can hold after each sequence of calls: every outcome over many
    /// draws of the cut, as text per file.
    #[test]
    fn the_disk_keeps_what_fsync_covered_and_a_prefix_of_the_rest() {
        let sync = |p: &str| FsOp::Fsync { path: p.into() };
        let table: Vec<(&str, Vec<FsOp>, &[&str])> = vec![
            ("nothing written: the old file", vec![], &["s=old"]),
            (
                "an append not synced: any prefix",
                vec![write("s", "ab")],
                &["s=old", "s=olda", "s=oldab"],
            ),
            (
                "an append synced: all of it",
                vec![write("s", "ab"), sync("s")],
                &["s=oldab"],
            ),
            (
                "rewritten in place, not synced: empty, or part of the new text",
                vec![FsOp::Truncate { path: "s".into() }, write("s", "ne")],
                &["s=", "s=n", "s=ne"],
            ),
            (
                "a temp renamed over it unsynced: the name moves, the bytes may not",
                vec![
                    write("t", "ne"),
                    FsOp::Rename {
                        path: "t".into(),
                        to: "s".into(),
                    },
                ],
                &["s=", "s=n", "s=ne"],
            ),
            (
                "a temp synced, then renamed: the new text",
                vec![
                    write("t", "ne"),
                    sync("t"),
                    FsOp::Rename {
                        path: "t".into(),
                        to: "s".into(),
                    },
                ],
                &["s=ne"],
            ),
            (
                "an fsync of another file covers nothing here",
                vec![write("s", "a"), sync("t")],
                &["s=old", "s=olda"],
            ),
            (
                "unlinked: gone",
                vec![FsOp::Unlink { path: "s".into() }],
                &[""],
            ),
        ];
        for (what, ops, outcomes) in table {
            let mut disk = Disk::new(&[("s".into(), b"old".to_vec())]);
            for op in &ops {
                disk.apply(op);
            }
            let mut seen: Vec<String> = (0..200)
                .map(|k| {
                    let mut rng = Rng::new(7, k);
                    disk.after_power_loss(&mut rng)
                        .iter()
                        .map(|(n, b)| format!("{n}={}", String::from_utf8_lossy(b)))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect();
            seen.sort();
            seen.dedup();
            assert_eq!(seen, outcomes, "{what}");
        }
    }

    #[test]
    fn journal_lines_are_read_and_checked() {
        assert_eq!(
            op(&json!({"op": "write", "path": "/case/sessions/a.jsonl", "data": "eyJ4IjoxfQo="})),
            write("sessions/a.jsonl", "{\"x\":1}\n")
        );
        assert_eq!(
            op(&json!({"op": "rename", "path": "./t", "to": "s"})),
            FsOp::Rename {
                path: "t".into(),
                to: "s".into()
            }
        );
        for bad in [
            json!({"op": "write", "path": "/case/../etc/passwd", "data": ""}),
            json!({"op": "write", "path": "/elsewhere/x", "data": ""}),
            json!({"op": "unlink", "path": "/case"}),
            json!({"op": "write", "path": "s", "data": "not base64!"}),
            json!({"op": "write", "path": "s", "data": "abcde"}),
            json!({"op": "chmod", "path": "s"}),
            json!({"op": "fsync", "path": 3}),
            json!({"op": "rename", "path": "s"}),
        ] {
            assert!(FsOp::read(&bad, Path::new("/case")).is_err(), "{bad}");
        }
    }

    #[test]
    fn base64_round_trips_every_length() {
        let table = [
            ("", ""),
            ("YQ==", "a"),
            ("YWI=", "ab"),
            ("YWJj", "abc"),
            ("YWJjZA", "abcd"),
            ("w6k=", "é"),
        ];
        for (encoded, text) in table {
            assert_eq!(
                base64_decode(encoded).as_deref(),
                Some(text.as_bytes()),
                "{encoded}"
            );
        }
    }

    /// Every moment lies after its ack and before the next one's calls end; over many
    /// draws, each ack's stretch is reached, both ends of the run included.
    #[test]
    fn moments_spread_over_the_acks() {
        let sync = FsOp::Fsync { path: "s".into() };
        // 2 calls before ack 1, none between acks 1 and 2, 3 after ack 2 (3 acks in all).
        let journal: Vec<(FsOp, usize)> =
            [0, 0, 2, 2, 2].iter().map(|&n| (sync.clone(), n)).collect();
        let mut seen = std::collections::BTreeSet::new();
        for k in 0..500 {
            let mut rng = Rng::new(3, k);
            let at = moment(&mut rng, &journal, 3);
            assert!(at <= journal.len(), "{at}");
            seen.insert(at);
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
        assert_eq!(moment(&mut Rng::new(1, 1), &[], 0), 0);
    }
}
