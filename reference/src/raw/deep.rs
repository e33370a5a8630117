//! JSON text to a value at any depth (000 "Session files are JSONL": a line may nest as
//! deep as JavaScript's `JSON.parse` reads it). The open arrays and objects are a list on
//! the heap, not calls on the stack, so no input's depth can exhaust the stack, and no
//! stack-growing machinery is needed (`serde_stacker`'s `psm` assembles with a C
//! compiler, which the library does without).
//!
//! It reads exactly what `serde_json` (with `float_roundtrip` and `preserve_order`) reads,
//! to the same value: [`parse`]'s tests hold the two together on hand-picked texts and on
//! every line of the corpus.

use serde_json::{Map, Number, Value};

/// Parses one JSON text into a value, as `serde_json::from_str` would without its
/// nesting limit: integers that fit are `u64`/`i64` (`-0` is the double `-0.0`), other
/// numbers doubles (an infinite one is an error), a duplicated key's last value wins at
/// its first position.
pub(crate) fn parse(text: &str) -> Result<Value, serde_json::Error> {
    Parser { text, at: 0 }.document()
}

/// An array or object that is open: what it holds so far.
enum Open {
    Array(Vec<Value>),
    /// The members so far and the key whose value comes next.
    Object(Map<String, Value>, String),
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    /// The whole text: one value, then only whitespace.
    fn document(&mut self) -> Result<Value, serde_json::Error> {
        let mut open: Vec<Open> = Vec::new();
        'value: loop {
            let mut value = match self.start_value()? {
                Some(Start::Array) => {
                    open.push(Open::Array(Vec::new()));
                    continue 'value;
                }
                Some(Start::Object(key)) => {
                    open.push(Open::Object(Map::new(), key));
                    continue 'value;
                }
                Some(Start::Done(value)) => value,
                None => return Err(self.error("EOF while parsing a value")),
            };
            // The value is whole: put it where it belongs, closing what it ends.
            loop {
                self.skip_whitespace();
                match open.last_mut() {
                    None => {
                        return match self.peek() {
                            None => Ok(value),
                            Some(_) => Err(self.error("trailing characters")),
                        }
                    }
                    Some(Open::Array(items)) => {
                        items.push(value);
                        match self.next() {
                            Some(b',') => continue 'value,
                            Some(b']') => {}
                            Some(_) => return Err(self.error("expected `,` or `]`")),
                            None => return Err(self.error("EOF while parsing a list")),
                        }
                    }
                    Some(Open::Object(members, key)) => {
                        members.insert(std::mem::take(key), value);
                        match self.next() {
                            Some(b',') => {
                                self.skip_whitespace();
                                *key = self.key()?;
                                continue 'value;
                            }
                            Some(b'}') => {}
                            Some(_) => return Err(self.error("expected `,` or `}`")),
                            None => return Err(self.error("EOF while parsing an object")),
                        }
                    }
                }
                value = match open.pop() {
                    Some(Open::Array(items)) => Value::Array(items),
                    Some(Open::Object(members, _)) => Value::Object(members),
                    None => unreachable!("a frame was just looked at"),
                };
            }
        }
    }

    /// The start of a value: a whole scalar or empty container, or an array or object
    /// opened (with its first key), or `None` at the end of the text.
    fn start_value(&mut self) -> Result<Option<Start>, serde_json::Error> {
        self.skip_whitespace();
        let Some(first) = self.peek() else {
            return Ok(None);
        };
        let start = match first {
            b'[' => {
                self.at += 1;
                self.skip_whitespace();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    Start::Done(Value::Array(Vec::new()))
                } else {
                    Start::Array
                }
            }
            b'{' => {
                self.at += 1;
                self.skip_whitespace();
                match self.peek() {
                    Some(b'}') => {
                        self.at += 1;
                        Start::Done(Value::Object(Map::new()))
                    }
                    None => return Err(self.error("EOF while parsing an object")),
                    Some(_) => Start::Object(self.key()?),
                }
            }
            b'"' => {
                self.at += 1;
                Start::Done(Value::String(self.string()?))
            }
            b't' => Start::Done(self.literal("true", Value::Bool(true))?),
            b'f' => Start::Done(self.literal("false", Value::Bool(false))?),
            b'n' => Start::Done(self.literal("null", Value::Null)?),
            b'-' | b'0'..=b'9' => Start::Done(Value::Number(self.number()?)),
            _ => return Err(self.error("expected value")),
        };
        Ok(Some(start))
    }

    /// A member's key and the `:` after it (whitespace before the key already skipped).
    fn key(&mut self) -> Result<String, serde_json::Error> {
        match self.next() {
            Some(b'"') => {}
            Some(_) => return Err(self.error("key must be a string")),
            None => return Err(self.error("EOF while parsing an object")),
        }
        let key = self.string()?;
        self.skip_whitespace();
        match self.next() {
            Some(b':') => Ok(key),
            Some(_) => Err(self.error("expected `:`")),
            None => Err(self.error("EOF while parsing an object")),
        }
    }

    /// A string's content after its opening quote, through its closing one.
    fn string(&mut self) -> Result<String, serde_json::Error> {
        let bytes = self.text.as_bytes();
        let mut out = String::new();
        let mut run = self.at;
        loop {
            let Some(&b) = bytes.get(self.at) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match b {
                b'"' => {
                    out.push_str(&self.text[run..self.at]);
                    self.at += 1;
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(&self.text[run..self.at]);
                    self.at += 1;
                    out.push(self.escape()?);
                    run = self.at;
                }
                0..=0x1f => {
                    return Err(self
                        .error("control character (\\u0000-\\u001F) found while parsing a string"))
                }
                _ => self.at += 1,
            }
        }
    }

    /// The character of an escape, after its `\`.
    fn escape(&mut self) -> Result<char, serde_json::Error> {
        let c = match self.next() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => return self.unicode_escape(),
            Some(_) => return Err(self.error("invalid escape")),
            None => return Err(self.error("EOF while parsing a string")),
        };
        Ok(c)
    }

    /// A `\uXXXX` escape after its `u`, with the low half of a surrogate pair.
    fn unicode_escape(&mut self) -> Result<char, serde_json::Error> {
        let unit = self.hex4()?;
        let code = match unit {
            0xd800..=0xdbff => {
                if self.text.as_bytes().get(self.at..self.at + 2) != Some(b"\\u") {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                self.at += 2;
                let low = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&low) {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                0x10000 + ((u32::from(unit) - 0xd800) << 10) + (u32::from(low) - 0xdc00)
            }
            0xdc00..=0xdfff => return Err(self.error("lone trailing surrogate in hex escape")),
            _ => u32::from(unit),
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid unicode code point"))
    }

    /// Four hex digits.
    fn hex4(&mut self) -> Result<u16, serde_json::Error> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("invalid escape"))?;
        self.at += 4;
        u16::from_str_radix(digits, 16).map_err(|_| self.error("invalid escape"))
    }

    /// `true`, `false` or `null`.
    fn literal(&mut self, word: &str, value: Value) -> Result<Value, serde_json::Error> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error("expected ident"))
        }
    }

    /// A number: `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?.
    fn number(&mut self) -> Result<Number, serde_json::Error> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        match self.next() {
            Some(b'0') => {
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return Err(self.error("invalid number"));
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("invalid number")),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
            integer = false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.some_digits()?;
            integer = false;
        }
        let text = &self.text[start..self.at];
        if integer {
            let magnitude = &text[usize::from(negative)..];
            if let Ok(n) = magnitude.parse::<u64>() {
                if !negative {
                    return Ok(Number::from(n));
                }
                // `-0` and what `i64` cannot hold are doubles, as serde_json reads them.
                if n != 0 {
                    if let Ok(n) = i64::try_from(-i128::from(n)) {
                        return Ok(Number::from(n));
                    }
                }
            }
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .ok_or_else(|| self.error("number out of range"))
    }

    /// Decimal digits, maybe none.
    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    /// One decimal digit or more.
    fn some_digits(&mut self) -> Result<(), serde_json::Error> {
        if !matches!(self.peek(), Some(b'0'..=b'9')) {
            return Err(self.error("invalid number"));
        }
        self.digits();
        Ok(())
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// An error at the current place, worded as serde_json words its own.
    fn error(&self, what: &str) -> serde_json::Error {
        let before = &self.text.as_bytes()[..self.at.min(self.text.len())];
        let line = 1 + before.iter().fold(0, |n, &b| n + usize::from(b == b'\n'));
        let column = before.len()
            - before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
        serde::de::Error::custom(format!("{what} at line {line} column {column}"))
    }
}

/// What [`Parser::start_value`] found.
enum Start {
    /// `[` and something other than `]`.
    Array,
    /// `{` and its first key.
    Object(String),
    /// A whole value.
    Done(Value),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both parsers' answers: the value as serde_json writes it (so `1` and `1.0`, `0.0`
    /// and `-0.0` differ), or that the text is not JSON.
    fn both(text: &str) -> (Option<String>, Option<String>) {
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let theirs = serde::Deserialize::deserialize(&mut de)
            .and_then(|v: Value| de.end().map(|()| v))
            .ok()
            .map(|v| v.to_string());
        let ours = parse(text).ok().map(|v| v.to_string());
        (ours, theirs)
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let texts = [
            "0",
            "-0",
            "-0.0",
            "1",
            "-1",
            "1.0",
            "1.50",
            "1e2",
            "1E+2",
            "1e-2",
            "-1e-400",
            "1e400",
            "-1e400",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "9223372036854775808",
            "123456789012345678901234567890",
            "0.1",
            "2.2250738585072011e-308",
            "5e-324",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "0e999999999999",
            "01",
            "1.",
            ".1",
            "-",
            "+1",
            "1e",
            "1e+",
            "--1",
            "0x1",
            "NaN",
            "Infinity",
            r#""""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\ud83d\ude00""#,
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\uD83D\uDE00""#,
            r#""\u12""#,
            r#""\x""#,
            "\"a\u{1}\"",
            "\"a\u{7f}é\"",
            r#""\u0000""#,
            "true",
            "false",
            "null",
            "tru",
            "nul",
            "True",
            "[]",
            "{}",
            "[ ]",
            "{ }",
            " [1 , 2 ,3 ] ",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[",
            "]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r"{a:1}",
            r#"{"a":1,"b":[{"c":{}}]}"#,
            r#"{"type":"a","id":"x","type":"b"}"#,
            r#"{"":null}"#,
            r#"{"a":1"#,
            r#"{"a""#,
            "[1] x",
            "[1]\n",
            "\t\r\n 1 \n",
            "",
            "   ",
            "1 2",
            "[[[[1]]]]",
            "{\"a\":{\"a\":{}}}",
        ];
        for text in texts {
            let (ours, theirs) = both(text);
            assert_eq!(ours, theirs, "{text:?}");
        }
    }

    /// Every line of every JSON and JSONL file of the corpus reads the same.
    #[test]
    fn reads_every_corpus_line_as_serde_json_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/cases");
        if !root.is_dir()
            && !std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../.git")
                .exists()
        {
            return; // a packaged crate, without the repository's corpus beside it
        }
        let mut stack = vec![root];
        let mut lines = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let kind = entry.file_type().unwrap();
                let path = entry.path();
                if kind.is_dir() {
                    stack.push(path);
                    continue;
                }
                let json = path
                    .extension()
                    .is_some_and(|e| e == "json" || e == "jsonl");
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                if !kind.is_file() || !json {
                    continue;
                }
                for line in text.split('\n').chain([text.as_str()]) {
                    let (ours, theirs) = both(line);
                    assert_eq!(ours, theirs, "{}: {line:.200}", path.display());
                    lines += 1;
                }
            }
        }
        assert!(lines > 1000, "{lines} lines: the corpus was not found");
    }

    #[test]
    fn any_depth_reads_without_the_stack() {
        let depth = 1_000_000;
        let text = format!("{}{}{}", "[{\"a\":".repeat(depth), 1, "}]".repeat(depth));
        let mut value = parse(&text).unwrap();
        // Taken apart a level at a time: dropping it whole would recurse.
        let mut levels = 0;
        loop {
            value = match value {
                Value::Array(mut items) => items.pop().unwrap(),
                Value::Object(mut members) => members.remove("a").unwrap(),
                Value::Number(n) => {
                    assert_eq!(n.as_u64(), Some(1));
                    break;
                }
                other => panic!("{other}"),
            };
            levels += 1;
        }
        assert_eq!(levels, 2 * depth);
        assert!(parse(&"[".repeat(depth)).is_err());
    }

    #[test]
    fn errors_say_where() {
        let e = parse("[1,\n  x]").unwrap_err().to_string();
        assert!(e.starts_with("expected value at line 2 column "), "{e}");
    }
}
