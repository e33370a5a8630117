//! The content-addressed blob store for large images (000 "Truncation and blob externalization"; omp L).
//!
//! A blob is stored under the lowercase hex SHA-256 of its *decoded* bytes and
//! referenced from the session as `blob:sha256:<64 hex>`. A reference whose suffix
//! is not exactly 64 lowercase hex digits is an error and never becomes a path.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::storage::Storage;

/// The prefix of a blob reference.
pub const BLOB_PREFIX: &str = "blob:sha256:";

/// A valid blob reference: the SHA-256 of the blob's bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlobRef {
    hash: String,
}

/// A string that starts like a blob reference but is not a valid one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidBlobRef(pub String);

impl fmt::Display for InvalidBlobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid blob reference {:?}; expected blob:sha256:<64 lowercase hex digits>",
            self.0
        )
    }
}

impl std::error::Error for InvalidBlobRef {}

impl BlobRef {
    /// The reference for `bytes`.
    pub fn for_bytes(bytes: &[u8]) -> BlobRef {
        BlobRef {
            hash: hex(&Sha256::digest(bytes)),
        }
    }

    /// Parses `blob:sha256:<64 lowercase hex>`; `Ok(None)` when `text` is not a blob reference at all.
    pub fn parse(text: &str) -> Result<Option<BlobRef>, InvalidBlobRef> {
        let Some(hash) = text.strip_prefix(BLOB_PREFIX) else {
            return Ok(None);
        };
        if hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Some(BlobRef {
                hash: hash.to_owned(),
            }))
        } else {
            Err(InvalidBlobRef(text.to_owned()))
        }
    }

    /// The 64 hex digits.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The file of this blob inside `dir`.
    pub fn path_in(&self, dir: &Path) -> PathBuf {
        dir.join(&self.hash)
    }
}

impl fmt::Display for BlobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{BLOB_PREFIX}{}", self.hash)
    }
}

/// Decodes standard base64 (what image blocks hold); `None` when it is not valid.
/// Clauses: persistence.16.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Encodes bytes as standard base64.
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Writes a blob under `dir`, every time (as omp 13.19.0's `BlobStore.put`): a file of
/// that name whose bytes are not the blob's (damaged, or planted) is replaced, since the
/// session is about to hold only the reference and a blob left wrong would lose the image.
/// A link, a folder or a special file there is an error (nothing is written through a
/// link), which the session latches.
/// Clauses: persistence.16.
pub fn put(storage: &mut dyn Storage, dir: &Path, bytes: &[u8]) -> std::io::Result<BlobRef> {
    let blob = BlobRef::for_bytes(bytes);
    let path = blob.path_in(dir);
    storage.read_blob(&path)?;
    storage.write_text(&path, bytes)?;
    Ok(blob)
}

/// Reads a blob; `None` when it is missing, is not a regular file (a link is not
/// followed), or when its content does not hash to its name (a damaged or planted file
/// is never served as the blob).
/// Clauses: persistence.17.
pub fn get(storage: &dyn Storage, dir: &Path, blob: &BlobRef) -> Option<Vec<u8>> {
    let bytes = storage.read_blob(&blob.path_in(dir)).ok().flatten()?;
    (BlobRef::for_bytes(&bytes) == *blob).then_some(bytes)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    #[test]
    fn a_blob_whose_content_does_not_match_its_name_is_missing() {
        let mut storage = MemoryStorage::default();
        let dir = Path::new("/blobs");
        let blob = put(&mut storage, dir, b"image").expect("put");
        assert_eq!(get(&storage, dir, &blob).as_deref(), Some(&b"image"[..]));
        storage.insert(blob.path_in(dir), b"planted".to_vec());
        assert_eq!(get(&storage, dir, &blob), None);
    }

    #[test]
    fn put_replaces_a_damaged_blob_and_keeps_a_good_one() {
        let dir = Path::new("/blobs");
        let blob = BlobRef::for_bytes(b"image");
        // (what the store holds under the blob's name, what it holds after put)
        let cases: [(Option<&[u8]>, &[u8]); 3] = [
            (None, b"image"),
            (Some(b"planted"), b"image"),
            (Some(b"image"), b"image"),
        ];
        for (before, after) in cases {
            let mut storage = MemoryStorage::default();
            if let Some(bytes) = before {
                storage.insert(blob.path_in(dir), bytes.to_vec());
            }
            assert_eq!(put(&mut storage, dir, b"image").expect("put"), blob);
            assert_eq!(
                storage.read(&blob.path_in(dir)).expect("read").as_deref(),
                Some(after),
                "{before:?}"
            );
        }
    }

    #[test]
    fn put_never_writes_through_a_link() {
        let root = tempfile::tempdir().expect("temp dir");
        let (dir, outside) = (root.path().join("blobs"), root.path().join("outside"));
        std::fs::create_dir(&dir).expect("blob dir");
        std::fs::write(&outside, b"kept").expect("outside");
        let blob = BlobRef::for_bytes(b"image");
        std::os::unix::fs::symlink(&outside, blob.path_in(&dir)).expect("link");
        let mut storage = crate::storage::FileStorage;
        assert!(put(&mut storage, &dir, b"image").is_err());
        assert_eq!(std::fs::read(&outside).expect("outside"), b"kept");
    }

    #[test]
    fn refs_parse_strictly() {
        let good = format!("{BLOB_PREFIX}{}", "a".repeat(64));
        assert!(BlobRef::parse(&good).unwrap().is_some());
        assert_eq!(BlobRef::parse("hello").unwrap(), None);
        for bad in [
            "blob:sha256:../../etc/passwd",
            &format!("{BLOB_PREFIX}{}", "A".repeat(64)),
            &format!("{BLOB_PREFIX}{}", "a".repeat(63)),
        ] {
            assert!(BlobRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hash_is_of_decoded_bytes() {
        // 1024 'A's decode to 768 zero bytes; the hash omp 13.19.0 gives (clause persistence.16).
        let bytes = decode_base64(&"A".repeat(1024)).unwrap();
        assert_eq!(
            BlobRef::for_bytes(&bytes).hash(),
            "ef115a0e0c15cdc41958ca46b5b14b456115f4baec5e3ca68599d2a8f435e3b8"
        );
    }

    #[test]
    fn put_then_get() {
        let mut storage = MemoryStorage::default();
        let dir = Path::new("/blobs");
        let blob = put(&mut storage, dir, b"xyz").unwrap();
        assert_eq!(get(&storage, dir, &blob).unwrap(), b"xyz");
    }
}
