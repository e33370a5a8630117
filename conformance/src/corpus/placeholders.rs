//! Finding the placeholders the normaliser writes (`<time>`, `<id:1>`, …) where a case
//! must not hold them: in an input's bytes, as written or behind a JSON escape, and in
//! the strings of its arguments.

use serde_json::Value;

/// Whether a string or key of `value` holds a `<`. The walk keeps its own stack.
pub(super) fn holds_angle(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) if s.contains('<') => return true,
            Value::Object(map) => {
                if map.keys().any(|key| key.contains('<')) {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// The first placeholder in `bytes`, `<dir>` left out when `dir_allowed`: as written,
/// or (in a line that reads as JSON with a `\u` escape) as a string or key of it reads,
/// so `"\u003ctime>"` is found as `<time>`; the range is then the line's. A JSON line
/// that is an object keyed like a snapshot's description of a line (`$bom`, `$deep`,
/// `$long`, `$unparsed`) counts too: it would read as what the snapshot writes for a line
/// it could not show. A line is read as the snapshot reads it ([`snapshot_reading`]):
/// behind a BOM, with bytes that are not UTF-8, with a lone surrogate or a number past
/// the double range.
pub(super) fn placeholder_in(bytes: &[u8], dir_allowed: bool) -> Option<std::ops::Range<usize>> {
    let allowed =
        |found: &[u8]| dir_allowed && found == crate::normalize::DIR_PLACEHOLDER.as_bytes();
    let mut from = 0;
    while let Some(found) = crate::normalize::find_placeholder(&bytes[from..]) {
        let found = from + found.start..from + found.end;
        if !allowed(&bytes[found.clone()]) {
            return Some(found);
        }
        from = found.end;
    }
    let mut start = 0;
    for line in bytes.split(|&b| b == b'\n') {
        let range = start..start + line.len();
        start += line.len() + 1;
        let escaped = memchr::memmem::find(line, b"\\u").is_some();
        // A key may spell its `$` as `\u0024`.
        let marked = escaped || memchr::memchr(b'$', line).is_some();
        if !(escaped || marked) || crate::guard::check_nesting_of_bytes(line).is_err() {
            continue;
        }
        let Some(value) = snapshot_reading(line) else {
            continue;
        };
        if marked
            && value
                .as_object()
                .is_some_and(|o| o.keys().any(|k| SNAPSHOT_MARKS.contains(&k.as_str())))
        {
            return Some(range);
        }
        if escaped && decoded_placeholder(&value, &allowed) {
            return Some(range);
        }
    }
    None
}

/// A line's value as the snapshot reads it (`snapshot::describe_file`): its bytes as
/// UTF-8 with U+FFFD for what is not, a BOM before it set aside (the snapshot sets one
/// aside on line 1; here on any line), parsed as `JSON.parse` reads it
/// (`session_reference::raw::parse_value`). `None` when it does not read.
fn snapshot_reading(line: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    session_reference::raw::parse_value(text).ok()
}

/// The keys of the objects a snapshot writes for a line it does not show as itself.
const SNAPSHOT_MARKS: [&str; 4] = ["$bom", "$deep", "$long", "$unparsed"];

/// Whether a string or key of `value` holds a placeholder (not `allowed`). Without
/// recursion.
fn decoded_placeholder(value: &Value, allowed: &dyn Fn(&[u8]) -> bool) -> bool {
    let holds = |text: &str| {
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(found) = crate::normalize::find_placeholder(&bytes[from..]) {
            let found = from + found.start..from + found.end;
            if !allowed(&bytes[found.clone()]) {
                return true;
            }
            from = found.end;
        }
        false
    };
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) if holds(s) => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                if map.keys().any(|k| holds(k)) {
                    return true;
                }
                stack.extend(map.values());
            }
            _ => {}
        }
    }
    false
}
