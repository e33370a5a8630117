//! The renaming of created ids and times (`PROTOCOL.md` "Normalisation").
//!
//! Normalisation has three parts, one module each: canonical JSON ([`crate::canonical`]),
//! the files a case leaves behind ([`crate::snapshot`]), and here the renaming of the
//! tokens an implementation creates. The items of the other two are re-exported here.
//!
//! Invariant: two conforming implementations produce byte-identical canonical
//! output for the same case, whatever their random ids and clocks.
//!
//! Here: the [`Normalizer`] and its renaming. Submodules: `tokens` (the patterns of
//! created tokens, their kinds and the known tokens of a case) and `placeholders` (the
//! placeholders the normaliser writes, found in text). Their public items are
//! re-exported here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::json_writer;
use crate::snapshot::hex;
use regex::Regex;
use serde_json::{json, Value};
use session_reference::persisted_form::utf16_len;
use sha2::{Digest, Sha256};

use self::tokens::{
    classify, find_tokens, may_hold_token, may_match, standalone, Pattern, MASK, PATTERNS,
};

pub use self::placeholders::{find_placeholder, DIR_PLACEHOLDER};
pub use self::tokens::{known_tokens, TokenKind};
pub use crate::canonical::{canonical, object, sorted};
pub use crate::snapshot::{describe_file, snapshot, take_snapshot, MAX_DEPTH};

mod placeholders;
mod tokens;

/// Strings longer than this many UTF-16 units are summarised.
pub const LONG_STRING: usize = 4096;

/// Renames created ids and times, replaces the case directory and summarises long strings.
pub struct Normalizer {
    known: Arc<HashSet<String>>,
    dir: String,
    names: HashMap<String, String>,
    counters: HashMap<TokenKind, usize>,
    patterns: &'static [(Pattern, Regex)],
}

impl Normalizer {
    /// A normaliser for one case: `inputs` are the texts whose tokens are known (input files, request args).
    pub fn new<'a>(dir: &str, inputs: impl IntoIterator<Item = &'a str>) -> Normalizer {
        Normalizer::with_known(dir, Arc::new(known_tokens(inputs)))
    }

    /// A normaliser whose known tokens were collected already ([`known_tokens`]).
    pub fn with_known(dir: &str, known: Arc<HashSet<String>>) -> Normalizer {
        Normalizer {
            known,
            dir: dir.to_owned(),
            names: HashMap::new(),
            counters: HashMap::new(),
            patterns: &*PATTERNS,
        }
    }

    /// Normalises the `files` snapshot. Files are visited in an order that does not
    /// depend on created names: by name and content with every created token masked.
    ///
    /// # Panics
    /// Never: the mask pattern is fixed and valid.
    pub fn files(&mut self, files: &Value) -> Value {
        let mut files = crate::compare::deep_clone(files);
        self.normalize_files(&mut files);
        files
    }

    /// [`Normalizer::files`], in place.
    pub fn normalize_files(&mut self, files: &mut Value) {
        let Value::Object(map) = files else {
            self.normalize(files);
            return;
        };
        let mut each: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
        // By name, then a short fingerprint of the content (line count and first line),
        // with created tokens masked. One file (most cases) needs no key.
        if each.len() > 1 {
            let mask = &*MASK;
            each.sort_by_cached_key(|(name, value)| {
                let fingerprint = match value["lines"].as_array() {
                    Some(lines) => format!(
                        "{} {}",
                        lines.len(),
                        lines.first().map(json_writer::compact).unwrap_or_default()
                    ),
                    None => json_writer::compact(value),
                };
                (
                    mask.replace_all(name, "#").into_owned(),
                    mask.replace_all(&fingerprint, "#").into_owned(),
                    name.clone(),
                )
            });
        }
        for (key, mut value) in each {
            let key = self.text(&key);
            self.normalize(&mut value);
            map.insert(key, value);
        }
    }

    /// Normalises a value in canonical order.
    pub fn value(&mut self, value: &Value) -> Value {
        let mut value = crate::compare::deep_clone(value);
        self.normalize(&mut value);
        value
    }

    /// [`Normalizer::value`], in place: object keys are visited in sorted order, and
    /// only what changes is rebuilt (most of an output is left as it is).
    ///
    /// The walk keeps its own stack (a value may be nested 100,000 deep). Tokens are
    /// named in canonical order: each key before its value, each value before the next
    /// key. A key is renamed once the whole value is walked: walking holds its members,
    /// and the names are fixed by then (renaming again names nothing new).
    pub fn normalize(&mut self, value: &mut Value) {
        /// What is left to do: a value to walk, or a key whose tokens to name.
        enum Work<'v> {
            Walk(&'v mut Value),
            Key(String),
        }
        let mut renamed_keys = false;
        let mut stack = vec![Work::Walk(value)];
        while let Some(work) = stack.pop() {
            let value = match work {
                Work::Key(key) => {
                    renamed_keys |= self.text_if_changed(&key).is_some();
                    continue;
                }
                Work::Walk(value) => value,
            };
            match value {
                Value::String(s) => {
                    if let Some(new) = self.string(s) {
                        *value = new;
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut().rev().map(Work::Walk)),
                Value::Object(map) => {
                    map.sort_keys();
                    for (key, value) in map.iter_mut().rev() {
                        stack.push(Work::Walk(value));
                        if may_hold_token(key) || (!self.dir.is_empty() && key.contains(&self.dir))
                        {
                            stack.push(Work::Key(key.clone()));
                        }
                    }
                }
                _ => {}
            }
        }
        if renamed_keys {
            self.rename_keys(value);
        }
    }

    /// Renames the object keys of `value` that hold tokens named already.
    fn rename_keys(&mut self, value: &mut Value) {
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            match value {
                Value::Array(items) => stack.extend(items.iter_mut()),
                Value::Object(map) => {
                    let renamed: Vec<(usize, String)> = map
                        .keys()
                        .enumerate()
                        .filter_map(|(i, key)| self.text_if_changed(key).map(|new| (i, new)))
                        .collect();
                    if !renamed.is_empty() {
                        let mut renamed = renamed.into_iter().peekable();
                        *map = std::mem::take(map)
                            .into_iter()
                            .enumerate()
                            .map(
                                |(i, (key, value))| match renamed.next_if(|(at, _)| *at == i) {
                                    Some((_, new)) => (new, value),
                                    None => (key, value),
                                },
                            )
                            .collect();
                    }
                    stack.extend(map.values_mut());
                }
                _ => {}
            }
        }
    }

    /// The normalised form of a string value, when it differs.
    fn string(&mut self, s: &str) -> Option<Value> {
        let units = utf16_len(s);
        if units > LONG_STRING {
            return Some(
                json!({"$long": {"utf16": units, "sha256": hex(&Sha256::digest(s.as_bytes())), "tail": utf16_tail(s, 64)}}),
            );
        }
        self.text_if_changed(s).map(Value::String)
    }

    /// Normalises the tokens inside one string.
    pub fn text(&mut self, s: &str) -> String {
        self.text_if_changed(s).unwrap_or_else(|| s.to_owned())
    }

    /// [`Normalizer::text`], when it changes `s`.
    fn text_if_changed(&mut self, s: &str) -> Option<String> {
        let mut out = if !self.dir.is_empty() && s.contains(&self.dir) {
            s.replace(&self.dir, DIR_PLACEHOLDER)
        } else if !may_hold_token(s) || self.known.contains(s) {
            // Nothing a pattern finds, or a known token (an id or time from the inputs,
            // in which no pattern finds anything else): most strings of an output.
            return None;
        } else {
            s.to_owned()
        };
        let patterns = self.patterns;
        for &(pattern, ref re) in patterns {
            if may_match(pattern, &out) {
                out = self.rename(out, pattern, re);
            }
        }
        (out != s).then_some(out)
    }

    /// Renames the created tokens that `re` (`pattern`'s regex) finds in `text`.
    fn rename(&mut self, text: String, pattern: Pattern, re: &Regex) -> String {
        let mut result = String::new();
        let mut last = 0;
        for at in find_tokens(pattern, re, &text) {
            let token = &text[at.clone()];
            let Some(kind) =
                classify(pattern, token).filter(|_| standalone(&text, at.start, at.end))
            else {
                continue;
            };
            if self.known.contains(token) {
                continue;
            }
            result.push_str(&text[last..at.start]);
            result.push_str(&self.name(kind, token));
            last = at.end;
        }
        if last == 0 {
            // Nothing renamed (a match is never empty).
            return text;
        }
        result.push_str(&text[last..]);
        result
    }

    /// The placeholder of `token`, a created token of `kind`: `<KIND:N>` numbered by
    /// first appearance, or `<KIND>` for a time ([`TokenKind::is_time`]).
    fn name(&mut self, kind: TokenKind, token: &str) -> String {
        if kind.is_time() {
            return format!("<{}>", kind.name());
        }
        if let Some(name) = self.names.get(token) {
            return name.clone();
        }
        let n = self.counters.entry(kind).or_insert(0);
        *n += 1;
        let name = format!("<{}:{n}>", kind.name());
        self.names.insert(token.to_owned(), name.clone());
        name
    }
}

/// The last `n` UTF-16 units of `s`, read as `String::from_utf16_lossy` reads them
/// (a surrogate pair cut in half becomes U+FFFD).
fn utf16_tail(s: &str, n: usize) -> String {
    let mut units: Vec<u16> = Vec::with_capacity(n + 1);
    let mut buf = [0u16; 2];
    for c in s.chars().rev() {
        if units.len() >= n {
            break;
        }
        units.extend(c.encode_utf16(&mut buf).iter().rev());
    }
    units.reverse();
    let cut = units.len().saturating_sub(n);
    String::from_utf16_lossy(&units[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_tokens_are_renamed_in_order_and_known_ones_kept() {
        let mut n = Normalizer::new("/tmp/x", ["\"a1b2c3d4\" 2025-01-01T00:00:00.000Z"]);
        let out = n.value(&json!({
            "b": ["deadbeef", "a1b2c3d4", "deadbeef", "2026-11-25T21:12:20.603Z"],
            "a": "/tmp/x/sessions/2026-11-25T21-12-20-603Z_01a2148d-657a-7504-a693-e034265d393c.jsonl",
            "c": "2025-01-01T00:00:00.000Z",
        }));
        assert_eq!(
            out,
            json!({
                "a": "<dir>/sessions/<ftime>_<session:1>.jsonl",
                "b": ["<id:1>", "a1b2c3d4", "<id:1>", "<time>"],
                "c": "2025-01-01T00:00:00.000Z",
            })
        );
    }

    /// The snapshot's note on a file past its size limit reaches the golden as written:
    /// the limit is not spelled in digits the normaliser takes for an id (issue #41, 23).
    #[test]
    fn the_size_limit_note_is_not_renamed() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::File::create(dir.path().join("big.bin"))
            .and_then(|f| f.set_len(crate::guard::MAX_FILE_BYTES + 1))
            .expect("sparse file");
        let files = snapshot(dir.path(), &std::collections::BTreeMap::new());
        let note = files["big.bin"]["unread"].clone();
        assert_eq!(note, json!("larger than the snapshot's limit of 64 MiB"));
        let mut normalizer = Normalizer::new("/elsewhere", []);
        assert_eq!(normalizer.value(&files)["big.bin"]["unread"], note);
    }

    /// File names ports create: the usual spellings of a time, UUIDs of any version.
    #[test]
    fn created_file_names_in_other_spellings() {
        let mut n = Normalizer::new("/d", []);
        for (name, expected) in [
            (
                "/d/sessions/20261126T230319521Z-01a2148d-657a-4504-a693-e034265d393c.jsonl",
                "<dir>/sessions/<ftime>-<session:1>.jsonl",
            ),
            ("2026-11-26_23-03-19_deadbeef.jsonl", "<ftime>_<id:1>.jsonl"),
            ("2026-11-26T23-03-19.521Z.jsonl", "<ftime>.jsonl"),
            (
                "20261126T230319Z_0123456789abcdef0123456789abcdef.jsonl",
                "<ftime>_<session:2>.jsonl",
            ),
            ("2026-11-26T23:03:19+00:00", "<time>"),
        ] {
            assert_eq!(n.text(name), expected, "{name}");
        }
    }

    #[test]
    fn sixteen_hex_ids_and_long_strings() {
        let mut n = Normalizer::new("", []);
        assert_eq!(n.text("1f9d2a6b9c0d1234"), "<session:1>");
        let long = n.value(&json!("x".repeat(5000)));
        assert_eq!(long["$long"]["utf16"], 5000);
        let hash = "ef115a0e0c15cdc41958ca46b5b14b456115f4baec5e3ca68599d2a8f435e3b8";
        assert_eq!(n.text(hash), hash, "hashes are not ids");
    }

    #[test]
    fn times_are_written_in_ascii_digits() {
        // PROTOCOL.md's `YYYY-MM-DDTHH:MM:SS(.sss)Z`: other digits make no time, whatever
        // else the string holds (an id here).
        let mut n = Normalizer::new("", []);
        assert_eq!(
            n.text("deadbeef ٢٠٢٥-٠١-٠١T00:00:00Z 2025-01-01T00:00:00Z"),
            "<id:1> ٢٠٢٥-٠١-٠١T00:00:00Z <time>"
        );
        assert_eq!(n.text("x ٢٠٢٥-٠١-٠١T00:00:00Z"), "x ٢٠٢٥-٠١-٠١T00:00:00Z");
        assert_eq!(
            n.text("x ２０２５-01-01T00-00-00-000Z"),
            "x ２０２５-01-01T00-00-00-000Z"
        );
    }

    #[test]
    fn long_strings_are_measured_in_utf16_units() {
        for s in [
            "x".repeat(5000),
            format!("{}é", "😀".repeat(3000)),
            format!("a{}", "😀".repeat(3000)),
            format!("{}ab", "😀".repeat(3000)),
        ] {
            let units = s.encode_utf16().count();
            let tail: Vec<u16> = s.encode_utf16().skip(units - 64).collect();
            assert_eq!(utf16_len(&s), units);
            assert_eq!(utf16_tail(&s, 64), String::from_utf16_lossy(&tail));
        }
        assert_eq!(utf16_tail("a😀", 1), "\u{fffd}");
    }
}
