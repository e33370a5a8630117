//! Values written as JSON text, byte for byte as `serde_json` writes them, but with a
//! string escape that looks at 8 bytes at a time.
//!
//! Session lines carry strings of half a million characters (000 K1). `serde_json`
//! checks every byte of a string against its escape table one at a time; here a
//! run of 8 bytes that needs no escape (no `"`, `\` or control character) is
//! copied after one test of a 64-bit word. Numbers, key order (the map's own, or
//! sorted) and escapes are those of `serde_json`, which the tests check.

use std::fmt::Write as _;

use serde_json::Value;

/// Compact JSON text of `value`, as `serde_json::to_string` writes it.
pub fn compact(value: &Value) -> String {
    let mut out = String::new();
    write(&mut out, value, Layout::COMPACT);
    out
}

/// How [`write()`] lays the text out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Indented by two spaces, one value per line, as `serde_json::to_string_pretty`.
    pub pretty: bool,
    /// Object keys in byte order instead of the map's order.
    pub sorted_keys: bool,
    /// Numbers as JavaScript writes them ([`js_number`]) instead of as serde_json does:
    /// for the CLI's views of a session, which show what the real implementations read.
    pub js_numbers: bool,
}

impl Layout {
    /// One line, keys in the map's order.
    pub const COMPACT: Layout = Layout {
        pretty: false,
        sorted_keys: false,
        js_numbers: false,
    };
}

/// A double as JavaScript's `Number.prototype.toString` writes it (ECMA-262
/// `Number::toString`), which `JSON.stringify` uses: the shortest digits that read back
/// as the same double, as an integer up to 10^21, as a decimal down to 10^-6, and in
/// exponent form (`1e+21`, `1.5e-7`) beyond; `-0` as `0`. Not finite: `null`, as
/// `JSON.stringify` writes it.
pub fn js_number(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_owned();
    }
    if f == 0.0 {
        return "0".to_owned();
    }
    // Rust's exponent form gives the shortest round-trip digits: `d.ddde±x`.
    let text = format!("{:e}", f.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    // The value is 0.DIGITS × 10^n.
    let n = exponent.parse::<i64>().unwrap_or(0) + 1;
    let sign = if f < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!(
            "{digits}{}",
            "0".repeat(usize::try_from(n - k).unwrap_or(0))
        )
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n).unwrap_or(0));
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-n).unwrap_or(0)))
    } else {
        let e = n - 1;
        let e_sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{rest}e{e_sign}{}", e.abs())
    };
    format!("{sign}{body}")
}

/// Appends the JSON text of `value` to `out`. The walk keeps its own stack, so a
/// value nested 100,000 deep is written like any other (no recursion on depth).
/// Pretty text indents by two spaces a level up to [`MAX_INDENT`] levels; deeper
/// levels keep that indent, so the text stays linear in the value's size.
pub fn write(out: &mut String, value: &Value, layout: Layout) {
    Writer { out, layout }.value(value);
}

/// The deepest level whose indent grows (pretty text): deeper levels are indented
/// as this one. No golden comes near it (the deepest is about 200 levels).
pub const MAX_INDENT: usize = 1000;

struct Writer<'a> {
    out: &'a mut String,
    layout: Layout,
}

/// An open array or object: the members still to write, and its depth.
enum Open<'v> {
    Array(std::slice::Iter<'v, Value>, usize, usize),
    Object(std::vec::IntoIter<(&'v String, &'v Value)>, usize, usize),
}

impl Writer<'_> {
    fn value(&mut self, root: &Value) {
        let mut open: Vec<Open<'_>> = Vec::new();
        let mut next = Some((root, 0usize));
        loop {
            if let Some((value, depth)) = next.take() {
                if let Some(opened) = self.scalar_or_open(value, depth) {
                    open.push(opened);
                }
            }
            let Some(top) = open.last_mut() else {
                return;
            };
            match top {
                Open::Array(items, index, depth) => {
                    if let Some(item) = items.next() {
                        let (i, d) = (*index, *depth);
                        *index += 1;
                        self.separator(i, d + 1);
                        next = Some((item, d + 1));
                    } else {
                        let (had, d) = (*index > 0, *depth);
                        open.pop();
                        self.close(had, d, ']');
                    }
                }
                Open::Object(members, index, depth) => {
                    if let Some((key, item)) = members.next() {
                        let (i, d) = (*index, *depth);
                        *index += 1;
                        self.separator(i, d + 1);
                        write_str(self.out, key);
                        self.out
                            .push_str(if self.layout.pretty { ": " } else { ":" });
                        next = Some((item, d + 1));
                    } else {
                        let (had, d) = (*index > 0, *depth);
                        open.pop();
                        self.close(had, d, '}');
                    }
                }
            }
        }
    }

    /// Writes a scalar, or opens an array or object and returns it.
    fn scalar_or_open<'v>(&mut self, value: &'v Value, depth: usize) -> Option<Open<'v>> {
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            // `Number`'s display is what serde_json writes for it: they share its number
            // formatting (checked on serde_json 1.0.154, and by the tests below).
            // JavaScript holds every number as a double: an integer past 2^53 too.
            Value::Number(n) => match n.as_f64().filter(|_| self.layout.js_numbers) {
                Some(f) => self.out.push_str(&js_number(f)),
                None => {
                    let _ = write!(self.out, "{n}");
                }
            },
            Value::String(s) => write_str(self.out, s),
            Value::Array(items) => {
                self.out.push('[');
                return Some(Open::Array(items.iter(), 0, depth));
            }
            Value::Object(map) => {
                self.out.push('{');
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                if self.layout.sorted_keys {
                    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                }
                return Some(Open::Object(entries.into_iter(), 0, depth));
            }
        }
        None
    }

    /// What comes before the `index`th member of an array or object at `depth`.
    fn separator(&mut self, index: usize, depth: usize) {
        if index > 0 {
            self.out.push(',');
        }
        if self.layout.pretty {
            self.out.push('\n');
            self.indent(depth);
        }
    }

    /// Ends an array or object; a pretty non-empty one closes on a line of its own.
    fn close(&mut self, had_members: bool, depth: usize, bracket: char) {
        if self.layout.pretty && had_members {
            self.out.push('\n');
            self.indent(depth);
        }
        self.out.push(bracket);
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth.min(MAX_INDENT) {
            self.out.push_str("  ");
        }
    }
}

/// Appends `s` as a JSON string: quoted, with `"`, `\` and control characters
/// escaped as `serde_json` escapes them.
pub fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    write_escaped(out, s);
    out.push('"');
}

/// Appends what [`write_str`] writes between the quotes. Escapes go character by
/// character: the escape of a concatenation is the concatenation of the escapes.
pub fn write_escaped(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    // `bytes[copied..i]` needs no escape and is not written yet.
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let mut eight = [0; 8];
            eight.copy_from_slice(word);
            if !needs_escape(u64::from_le_bytes(eight)) {
                i += 8;
                continue;
            }
        }
        if let Some(escape) = escape(bytes[i]) {
            // An escaped byte is ASCII: both cuts are character boundaries.
            out.push_str(&s[copied..i]);
            match escape {
                Escape::Short(text) => out.push_str(text),
                Escape::Unicode(byte) => {
                    let _ = write!(out, "\\u{byte:04x}");
                }
            }
            copied = i + 1;
        }
        i += 1;
    }
    out.push_str(&s[copied..]);
}

/// Whether any of the 8 bytes in `word` is `"`, `\` or below 0x20.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Sets a byte's high bit when the byte is below `n` (n ≤ 0x80): exact for
    // "is there any", the question asked here.
    let below = |word: u64, n: u64| word.wrapping_sub(ONES * n) & !word & HIGHS;
    let zero = |word: u64| below(word, 1);
    below(word, 0x20)
        | zero(word ^ (ONES * u64::from(b'"')))
        | zero(word ^ (ONES * u64::from(b'\\')))
        != 0
}

/// How one byte is written inside a string.
enum Escape {
    Short(&'static str),
    Unicode(u8),
}

fn escape(byte: u8) -> Option<Escape> {
    Some(match byte {
        b'"' => Escape::Short("\\\""),
        b'\\' => Escape::Short("\\\\"),
        b'\n' => Escape::Short("\\n"),
        b'\r' => Escape::Short("\\r"),
        b'\t' => Escape::Short("\\t"),
        0x08 => Escape::Short("\\b"),
        0x0C => Escape::Short("\\f"),
        0..=0x1F => Escape::Unicode(byte),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Strings with every kind of byte, at every offset against the 8-byte words.
    fn strings() -> Vec<String> {
        let mut out: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        out.extend(["", "plain text", "é€😀", "a\u{7f}b", "\u{2028}\u{2029}"].map(String::from));
        for tricky in ["\"", "\\", "\n", "\u{1}", "\u{1f}", "😀", " "] {
            for at in 0..17 {
                out.push(format!("{}{tricky}{}", "x".repeat(at), "y".repeat(17 - at)));
            }
        }
        out.push("ab\"cd\\ef\u{0}gh".repeat(50));
        out
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for s in strings() {
            let mut ours = String::new();
            write_str(&mut ours, &s);
            assert_eq!(ours, serde_json::to_string(&s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn values_are_written_as_serde_json_writes_them() {
        let values = [
            json!(null),
            json!([]),
            json!({}),
            json!([[], {}, [[]], {"a": {}}]),
            json!({"z": 1, "a": [true, false, null], "m": {"y": -2, "b": 1.5e300}}),
            json!([
                0,
                -0.0,
                1e-7,
                123_456_789_012_345_678_u64,
                -9_007_199_254_740_993_i64,
                0.1
            ]),
            json!({"strings": strings(), "nested": [{"k\"ey": "v\\al"}]}),
        ];
        for value in &values {
            assert_eq!(compact(value), serde_json::to_string(value).unwrap());
            let mut pretty = String::new();
            let layout = Layout {
                pretty: true,
                sorted_keys: false,
                js_numbers: false,
            };
            write(&mut pretty, value, layout);
            assert_eq!(pretty, serde_json::to_string_pretty(value).unwrap());
        }
    }

    /// A value nested far deeper than any stack could recurse is written, in the
    /// text `serde_json` would write for it (bar the indent past [`MAX_INDENT`]).
    #[test]
    fn deep_values_are_written_without_recursion() {
        let depth = 100_000;
        let mut value = json!(1);
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        let text = compact(&value);
        let mut pretty = String::new();
        let layout = Layout {
            pretty: true,
            sorted_keys: true,
            js_numbers: false,
        };
        write(&mut pretty, &value, layout);
        // Dropped first: a failed assertion would drop it by recursion.
        crate::compare::dispose(value);
        assert_eq!(text, format!("{}1{}", "[".repeat(depth), "]".repeat(depth)));
        assert_eq!(pretty.lines().count(), 2 * depth + 1);
    }

    #[test]
    fn sorted_keys_are_in_byte_order_at_every_depth() {
        let value = json!({"b": {"z": 1, "a": 2}, "a": [{"y": 1, "x": 2}], "B": 0});
        let mut out = String::new();
        let layout = Layout {
            pretty: false,
            sorted_keys: true,
            js_numbers: false,
        };
        write(&mut out, &value, layout);
        assert_eq!(out, r#"{"B":0,"a":[{"x":2,"y":1}],"b":{"a":2,"z":1}}"#);
    }
}
