//! JSON objects kept as raw text: one pass over a line, no tree of values (000 "Session files are JSONL").
//!
//! The session layer interprets only a few fields of a line. [`RawObject`] reads an
//! object as a list of `(key, raw value)` pairs borrowed from the line, so a
//! field is parsed only when somebody asks for it, unknown fields cost nothing,
//! and writing the object back reproduces every value byte for byte.
//! Duplicate keys behave as in JavaScript's `JSON.parse`: the last one wins.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

mod deep;

/// A JSON object as an ordered list of keys and the raw text of their values.
#[derive(Debug, Clone, Default)]
pub struct RawObject<'a> {
    pairs: Vec<(Cow<'a, str>, Cow<'a, RawValue>)>,
}

impl<'a> RawObject<'a> {
    /// Parses `text` as one JSON object; `None` when it is not JSON or not an object.
    /// Clauses: js.6.
    pub fn parse(text: &'a str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// The raw value of `key` (the last occurrence, as `JSON.parse` does).
    /// Clauses: js.6.
    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// Takes the raw value of `key` (the last occurrence), still borrowed from the
    /// parsed text when it was.
    pub fn take(self, key: &str) -> Option<Cow<'a, RawValue>> {
        self.pairs
            .into_iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// `key` as a string, when it is present and a JSON string.
    pub fn str(&self, key: &str) -> Option<String> {
        self.get(key).and_then(as_string)
    }

    /// Sets `key` to `value` where the key first appears, else at the end, as a
    /// JavaScript property assignment on a parsed object does (`JSON.parse` keeps a
    /// duplicated key at its first position); later duplicates go.
    pub fn set(&mut self, key: &str, value: Box<RawValue>) {
        let mut value = Some(Cow::Owned(value));
        self.pairs.retain_mut(|(k, v)| {
            if k != key {
                return true;
            }
            match value.take() {
                Some(new) => {
                    *v = new;
                    true
                }
                None => false, // a later duplicate
            }
        });
        if let Some(value) = value {
            self.pairs.push((Cow::Owned(key.to_owned()), value));
        }
    }

    /// Removes `key` (every occurrence).
    pub fn remove(&mut self, key: &str) {
        self.pairs.retain(|(k, _)| k != key);
    }

    /// The keys in order, duplicates included.
    #[cfg(test)]
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.pairs.iter().map(|(k, _)| k.as_ref())
    }

    /// Writes the object as compact JSON, keys in order; a duplicated key keeps
    /// its first position and its last value, as `JSON.stringify(JSON.parse(..))` does.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(
            self.pairs
                .iter()
                .map(|(k, v)| k.len() + v.get().len() + 4)
                .sum::<usize>()
                + 2,
        );
        out.push('{');
        let mut first = true;
        for (i, (key, _)) in self.pairs.iter().enumerate() {
            if self.pairs[..i].iter().any(|(k, _)| k == key) {
                continue;
            }
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&serde_json::to_string(key.as_ref()).unwrap_or_default());
            out.push(':');
            out.push_str(self.get(key).map_or("null", RawValue::get));
        }
        out.push('}');
        out
    }

    /// The object as an owned raw value.
    pub fn to_raw(&self) -> Box<RawValue> {
        raw(self.to_json())
    }
}

/// JSON text known to be valid: a slice of a shared buffer (the session file an
/// entry was read from, so loading keeps one copy of the file's text), or text of
/// its own. Cloning is cheap.
#[derive(Clone)]
pub struct JsonText {
    source: Arc<String>,
    range: Range<usize>,
}

impl JsonText {
    /// Text of its own; the caller passes valid JSON (written by `serde_json` or this crate).
    pub fn new(text: String) -> JsonText {
        let range = 0..text.len();
        JsonText {
            source: Arc::new(text),
            range,
        }
    }

    /// The part `range` of `source`; the caller passes the bounds of a JSON value it has read.
    pub fn slice(source: &Arc<String>, range: Range<usize>) -> JsonText {
        JsonText {
            source: Arc::clone(source),
            range,
        }
    }

    /// Where the text starts in its source (for a loaded entry, the byte offset of its
    /// line's value in the file's text).
    pub fn offset(&self) -> usize {
        self.range.start
    }

    /// The text.
    pub fn get(&self) -> &str {
        self.source.get(self.range.clone()).unwrap_or_default()
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.get(), f)
    }
}

/// Parses JSON text into a value the way JavaScript's `JSON.parse` reads it, as
/// JSON text would then carry it on (`JSON.stringify`):
/// - no nesting limit (the open arrays and objects are kept on the heap: `raw/deep.rs`);
/// - lone UTF-16 surrogate escapes, which Rust strings cannot hold, read as U+FFFD;
/// - a number beyond the double range (`1e400`, Infinity in JavaScript) reads as `null`.
///
/// Clauses: js.6, loading.6.
pub fn parse_value(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    if let Ok(value) = serde_json::from_str(text) {
        return Ok(value);
    }
    let error = match deep_parse(text) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    let mut repaired = replace_infinite_numbers(text);
    if text.contains("\\u") {
        repaired = replace_lone_surrogates(&repaired);
    }
    deep_parse(&repaired).map_err(|_| error)
}

/// Replaces every number outside strings that a double cannot hold (it reads as
/// infinite) by `null`, what `JSON.stringify` writes for Infinity.
/// Clauses: js.6.
fn replace_infinite_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut in_string = false;
    while let Some((at, c)) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next().map(|(_, e)| e)),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if c == '-' || c.is_ascii_digit() {
            let mut end = at + c.len_utf8();
            while let Some(&(i, n)) = chars.peek() {
                if !matches!(n, '0'..='9' | '.' | 'e' | 'E' | '+' | '-') {
                    break;
                }
                end = i + n.len_utf8();
                chars.next();
            }
            let number = &text[at..end];
            let infinite = number.parse::<f64>().is_ok_and(f64::is_infinite);
            out.push_str(if infinite { "null" } else { number });
            continue;
        }
        in_string = c == '"';
        out.push(c);
    }
    out
}

fn deep_parse(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    deep::parse(text)
}

/// Replaces `\uD800`–`\uDFFF` escapes that do not form a pair by `\ufffd`.
/// Clauses: loading.6.
pub fn replace_lone_surrogates(text: &str) -> String {
    let bytes = text.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        if bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u') {
            text.get(at + 2..at + 6)
                .and_then(|h| u16::from_str_radix(h, 16).ok())
        } else {
            None
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut last = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(0xd800..=0xdbff) if matches!(unit(i + 6), Some(0xdc00..=0xdfff)) => i += 12,
            Some(0xd800..=0xdfff) => {
                out.push_str(&text[last..i]);
                out.push_str("\\ufffd");
                i += 6;
                last = i;
            }
            Some(_) => i += 6,
            None => i += 2,
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Reads a raw JSON value as a string, if it is one, borrowing it when it has no escapes.
pub fn as_str(value: &RawValue) -> Option<Cow<'_, str>> {
    let text = value.get();
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Some(Cow::Borrowed(inner)),
        _ => as_string(value).map(Cow::Owned),
    }
}

/// Reads a raw JSON value as a string, if it is one.
pub fn as_string(value: &RawValue) -> Option<String> {
    if value.get().starts_with('"') {
        serde_json::from_str(value.get()).ok()
    } else {
        None
    }
}

/// Wraps text that is known to be valid JSON as a raw value.
///
/// # Panics
/// Never for text produced by `serde_json` or by [`RawObject::to_json`]; callers
/// pass only such text.
pub fn raw(json: String) -> Box<RawValue> {
    RawValue::from_string(json).expect("text produced by a JSON writer is valid JSON")
}

/// Serialises any value to a raw JSON value.
pub fn to_raw<T: serde::Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    raw(serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned()))
}

/// JavaScript truthiness of a JSON value (`""`, `0`, `false`, `null` are falsy).
/// Clauses: js.4.
pub fn is_truthy(value: Option<&RawValue>) -> bool {
    match value.map(RawValue::get) {
        None | Some("null" | "false" | "\"\"") => false,
        Some(text) => !is_zero(text),
    }
}

/// [`is_truthy`] for a value held as a `serde_json::Value` (compaction planning's entries).
/// Clauses: js.4.
pub fn is_truthy_value(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => true,
        scalar => is_truthy(Some(&to_raw(scalar))),
    }
}

fn is_zero(text: &str) -> bool {
    text.parse::<f64>().is_ok_and(|n| n == 0.0)
}

impl<'de: 'a, 'a> Deserialize<'de> for RawObject<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(key) = map.next_key::<String>()? {
                    let value: &'de RawValue = map.next_value()?;
                    pairs.push((Cow::Owned(key), Cow::Borrowed(value)));
                }
                Ok(RawObject { pairs })
            }
        }
        deserializer
            .deserialize_map(ObjectVisitor)
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_beyond_doubles_read_as_javascript_writes_them() {
        let cases = [
            (
                r#"{"big":1e400,"small":1e-400,"n":-1E+400}"#,
                r#"{"big":null,"small":0.0,"n":null}"#,
            ),
            (
                r#"["1e400",1e400,"\"1e400"]"#,
                r#"["1e400",null,"\"1e400"]"#,
            ),
            (r#"{"k":2}"#, r#"{"k":2}"#),
        ];
        for (text, expected) in cases {
            let value = parse_value(text).unwrap();
            assert_eq!(value.to_string(), expected, "{text}");
        }
    }

    #[test]
    fn duplicate_keys_last_wins_first_position() {
        let obj = RawObject::parse(r#"{"type":"a","id":"x","type":"b"}"#).unwrap();
        assert_eq!(obj.str("type").as_deref(), Some("b"));
        assert_eq!(obj.to_json(), r#"{"type":"b","id":"x"}"#);
    }

    #[test]
    fn set_keeps_position_or_appends() {
        let mut obj = RawObject::parse(r#"{"a":1,"b":2}"#).unwrap();
        obj.set("a", to_raw(&5));
        obj.set("c", to_raw("x"));
        assert_eq!(obj.to_json(), r#"{"a":5,"b":2,"c":"x"}"#);
        // `o = JSON.parse('{"a":1,"b":2,"a":3}'); o.a = 5` gives {"a":5,"b":2}.
        let mut obj = RawObject::parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        obj.set("a", to_raw(&5));
        assert_eq!(obj.to_json(), r#"{"a":5,"b":2}"#);
    }

    #[test]
    fn values_round_trip_byte_exact() {
        let text = r#"{"k":"\u00e9\ud83d\ude00","n":1.50,"o":{ "x" : [ 1 ] }}"#;
        assert_eq!(RawObject::parse(text).unwrap().to_json(), text);
    }

    #[test]
    fn lone_surrogates_and_deep_nesting_parse() {
        let value = parse_value(r#"{"a":"x\ud800y","b":"\ud83d\ude00","c":"\\ud800"}"#).unwrap();
        assert_eq!(value["a"], "x\u{fffd}y");
        assert_eq!(value["b"], "\u{1F600}");
        assert_eq!(value["c"], "\\ud800");
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        assert!(parse_value(&deep).is_ok());
    }

    #[test]
    fn truthiness_matches_javascript() {
        for (json, truthy) in [
            ("\"\"", false),
            ("0", false),
            ("0.0", false),
            ("null", false),
            ("false", false),
            ("\"a\"", true),
            ("1", true),
            ("[]", true),
        ] {
            assert_eq!(is_truthy(Some(&raw(json.to_owned()))), truthy, "{json}");
        }
        assert!(!is_truthy(None));
    }
}
