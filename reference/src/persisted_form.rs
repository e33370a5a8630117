//! What a value looks like when written: truncation, transient fields, line counts, image blobs (000 "Truncation and blob externalization"; omp K, L).
//!
//! Applies to the omp profile; pi-mono writes values as they are (clause persistence.13).
//!
//! - A string longer than [`MAX_PERSIST_CHARS`] UTF-16 code units (as JavaScript
//!   counts) keeps its first `500000 - 47` units, never half a surrogate pair, and
//!   ends with [`TRUNCATION_NOTICE`].
//! - `partialJson` and `jsonlEvents` are dropped at any depth.
//! - An object that changed and has a string `content` and a numeric `lineCount`
//!   gets `lineCount = content.split("\n").length`.
//! - An image block (`{"type":"image","data":…}`) in a `content` array whose base64
//!   is at least [`BLOB_THRESHOLD`] characters is stored in the blob store and
//!   replaced by its `blob:sha256:` reference; [`resolve_blobs`] undoes that on load
//!   in the image blocks of `message` and `custom_message` content (000).

use std::path::Path;

use serde_json::{Map, Value};

use crate::blobs::{self, BlobRef, BLOB_PREFIX};
use crate::storage::Storage;

/// Strings longer than this many UTF-16 code units are truncated.
pub const MAX_PERSIST_CHARS: usize = 500_000;

/// Appended to a truncated string (47 UTF-16 units, the leading newlines included).
pub const TRUNCATION_NOTICE: &str = "\n\n[Session persistence truncated large content]";

/// Image data of at least this many base64 characters goes to the blob store.
pub const BLOB_THRESHOLD: usize = 1024;

/// A blob that [`prepare`] took out of a value and that must be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingBlob {
    /// Its reference.
    pub blob: BlobRef,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Prepares `value` for writing; returns the blobs to store. Reports whether anything changed.
/// Clauses: persistence.14, persistence.15.
pub fn prepare(value: &mut Value, blobs: &mut Vec<PendingBlob>) -> bool {
    match value {
        Value::String(s) => truncate(s),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, v| prepare(v, blobs) | changed),
        Value::Object(map) => prepare_object(map, blobs),
        _ => false,
    }
}

fn prepare_object(map: &mut Map<String, Value>, blobs: &mut Vec<PendingBlob>) -> bool {
    let mut changed = map.remove("partialJson").is_some() | map.remove("jsonlEvents").is_some();
    for (key, value) in &mut *map {
        changed |= prepare(value, blobs);
        if key == "content" {
            if let Value::Array(items) = value {
                changed |= items
                    .iter_mut()
                    .fold(false, |c, item| externalize_image(item, blobs) | c);
            }
        }
    }
    if changed {
        if let (Some(Value::String(content)), Some(Value::Number(_))) =
            (map.get("content"), map.get("lineCount"))
        {
            let lines = content.split('\n').count();
            map.insert("lineCount".to_owned(), Value::from(lines));
        }
    }
    changed
}

/// The `data` string of an image block (`{"type":"image","data":…}`), if `item` is one.
fn image_data(item: &mut Value) -> Option<&mut String> {
    let block = item.as_object_mut()?;
    if block.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    match block.get_mut("data") {
        Some(Value::String(data)) => Some(data),
        _ => None,
    }
}

/// Clauses: persistence.16.
fn externalize_image(item: &mut Value, blobs: &mut Vec<PendingBlob>) -> bool {
    let Some(data) = image_data(item) else {
        return false;
    };
    if data.len() < BLOB_THRESHOLD || data.starts_with(BLOB_PREFIX) {
        return false;
    }
    let Some(bytes) = blobs::decode_base64(data) else {
        return false;
    };
    let blob = BlobRef::for_bytes(&bytes);
    *data = blob.to_string();
    blobs.push(PendingBlob { blob, bytes });
    true
}

/// Truncates, in place, a string longer than [`MAX_PERSIST_CHARS`] UTF-16 units;
/// reports whether it did (`false`: it fits).
/// Clauses: persistence.13.
pub fn truncate(s: &mut String) -> bool {
    if utf16_len(s) <= MAX_PERSIST_CHARS {
        return false;
    }
    let keep = MAX_PERSIST_CHARS - utf16_len(TRUNCATION_NOTICE);
    s.truncate(utf16_prefix_end(s, keep));
    s.push_str(TRUNCATION_NOTICE);
    true
}

/// The length of a string as JavaScript counts it: UTF-16 code units.
/// Clauses: js.5.
pub fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The byte length of the longest prefix of `s` that fits in `units` UTF-16 units
/// without splitting a character (a surrogate pair is kept whole or dropped whole).
/// Clauses: js.5.
pub(crate) fn utf16_prefix_end(s: &str, units: usize) -> usize {
    let mut used = 0;
    for (at, c) in s.char_indices() {
        used += c.len_utf16();
        if used > units {
            return at;
        }
    }
    s.len()
}

/// Replaces valid blob references by their base64 data in the image blocks 000 names
/// ("On load, blob refs are resolved back to base64 for message/custom_message image
/// blocks"; omp 13.19.0 `resolveBlobRefsInEntries`): the items of a `message` entry's
/// `message.content` and of a `custom_message` entry's `content`; given a context message
/// (a `role`, no entry `type`), the items of its own `content`. Refs elsewhere (a
/// `details.content` below a message, a `custom` entry's data) stay refs, as written.
/// Missing blobs and invalid references are left as they are.
/// Clauses: persistence.17.
pub fn resolve_blobs(value: &mut Value, storage: &dyn Storage, dir: &Path) {
    let content = match value.get("type").and_then(Value::as_str) {
        Some("message") => value.get_mut("message").and_then(|m| m.get_mut("content")),
        Some("custom_message") => value.get_mut("content"),
        // A context message: no entry type, a role.
        None if value.get("role").is_some() => value.get_mut("content"),
        _ => None,
    };
    if let Some(Value::Array(blocks)) = content {
        for block in blocks {
            resolve_block(block, storage, dir);
        }
    }
}

/// Resolves one `{"type":"image","data":"blob:sha256:…"}` block whose blob is in the store.
fn resolve_block(block: &mut Value, storage: &dyn Storage, dir: &Path) {
    let Some(data) = image_data(block) else {
        return;
    };
    if let Ok(Some(blob)) = BlobRef::parse(data) {
        if let Some(bytes) = blobs::get(storage, dir, &blob) {
            *data = blobs::encode_base64(&bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn utf16(s: &str) -> usize {
        utf16_len(s)
    }

    #[test]
    fn utf16_counts_and_prefixes_never_split_a_pair() {
        // (text, units) -> (its UTF-16 length, the byte end of the prefix that fits)
        let cases = [
            ("", 0, 0, 0),
            ("abc", 2, 3, 2),
            ("a\u{1F600}b", 1, 4, 1),
            ("a\u{1F600}b", 2, 4, 1),
            ("a\u{1F600}b", 3, 4, 5),
            ("\u{e9}\u{20ac}", 1, 2, 2),
            ("\u{e9}\u{20ac}", 9, 2, 5),
        ];
        for (text, units, len, end) in cases {
            assert_eq!(utf16_len(text), len, "{text:?}");
            assert_eq!(
                utf16_prefix_end(text, units),
                end,
                "{units} units of {text:?}"
            );
        }
    }

    #[test]
    fn truncation_counts_utf16_and_keeps_surrogate_pairs_whole() {
        let emoji = "\u{1F600}";
        let cases = [
            ("x".repeat(499_999), 499_999),
            ("x".repeat(500_000), 500_000),
            ("x".repeat(500_001), 500_000),
            ("\u{e9}".repeat(500_001), 500_000),
            (
                format!("{}{emoji}{}", "x".repeat(499_952), "y".repeat(100)),
                499_999,
            ),
            (
                format!("{}{emoji}{}", "x".repeat(499_951), "y".repeat(100)),
                500_000,
            ),
        ];
        for (input, expected) in cases {
            let mut value = Value::String(input.clone());
            prepare(&mut value, &mut Vec::new());
            let out = value.as_str().unwrap();
            assert_eq!(utf16(out), expected, "input of {} units", utf16(&input));
            if utf16(&input) > MAX_PERSIST_CHARS {
                assert!(out.ends_with(TRUNCATION_NOTICE));
            }
        }
    }

    #[test]
    fn transient_fields_dropped_and_line_count_recomputed() {
        let mut value = json!({"partialJson":"{", "nested":{"jsonlEvents":[1], "partialJson":"y"}, "content":"one\ntwo", "lineCount":99});
        prepare(&mut value, &mut Vec::new());
        assert_eq!(
            value,
            json!({"nested":{}, "content":"one\ntwo", "lineCount":2})
        );
        let mut untouched = json!({"content":"one\ntwo", "lineCount":99});
        assert!(!prepare(&mut untouched, &mut Vec::new()));
        let mut long = json!({"content": format!("{}{}", "l1\n".repeat(10), "z".repeat(500_010)), "lineCount": 5});
        prepare(&mut long, &mut Vec::new());
        assert_eq!(long["lineCount"], 13);
    }

    #[test]
    fn images_at_threshold_go_to_blobs() {
        for (len, externalized) in [(1023, false), (1024, true)] {
            let data = "A".repeat(len);
            let mut value =
                json!({"content":[{"type":"image","data":data,"mimeType":"image/png"}]});
            let mut blobs = Vec::new();
            prepare(&mut value, &mut blobs);
            assert_eq!(blobs.len(), usize::from(externalized), "{len}");
            let stored = value["content"][0]["data"].as_str().unwrap();
            assert_eq!(stored.starts_with(BLOB_PREFIX), externalized, "{len}");
        }
    }

    #[test]
    fn blobs_resolve_back_in_message_and_custom_message_content_only() {
        let mut storage = crate::storage::MemoryStorage::default();
        let dir = Path::new("/b");
        let mut value = json!({"content":[{"type":"image","data":"A".repeat(1024)}]});
        let mut pending = Vec::new();
        prepare(&mut value, &mut pending);
        for p in &pending {
            blobs::put(&mut storage, dir, &p.bytes).unwrap();
        }
        let reference = value["content"][0]["data"].clone();
        // (value holding the ref at /content/0/data or /message/content/0/data, resolved?)
        let image = json!([{"type":"image","data":reference}]);
        let cases = [
            (
                json!({"type":"message","message":{"role":"user","content":image}}),
                "/message/content/0/data",
                true,
            ),
            (
                json!({"type":"custom_message","content":image}),
                "/content/0/data",
                true,
            ),
            (
                json!({"role":"custom","content":image}),
                "/content/0/data",
                true,
            ),
            (
                json!({"type":"custom","content":image}),
                "/content/0/data",
                false,
            ),
            (
                json!({"type":"message","message":{"role":"assistant","content":[],"details":{"content":image}}}),
                "/message/details/content/0/data",
                false,
            ),
            (
                json!({"type":"custom_message","content":[{"type":"text","content":image}]}),
                "/content/0/content/0/data",
                false,
            ),
        ];
        for (mut value, pointer, resolved) in cases {
            let what = value.to_string();
            resolve_blobs(&mut value, &storage, dir);
            let expected = if resolved {
                json!("A".repeat(1024))
            } else {
                reference.clone()
            };
            assert_eq!(value.pointer(pointer), Some(&expected), "{what}");
        }
        let bad = json!({"role":"user","content":[{"type":"image","data":"blob:sha256:../../etc/passwd"}]});
        let mut value = bad.clone();
        resolve_blobs(&mut value, &storage, dir);
        assert_eq!(value, bad);
    }
}
