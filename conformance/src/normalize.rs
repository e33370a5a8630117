//! The renaming of created ids and times (`PROTOCOL.md` "Normalisation").
//!
//! Normalisation has three parts, one module each: canonical JSON ([`crate::canonical`]),
//! the files a case leaves behind ([`crate::snapshot`]), and here the renaming of the
//! tokens an implementation creates. The items of the other two are re-exported here.
//!
//! Invariant: two conforming implementations produce byte-identical canonical
//! output for the same case, whatever their random ids and clocks.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use crate::json_writer;
use crate::snapshot::hex;
use regex::Regex;
use serde_json::{json, Value};
use session_reference::persisted_form::utf16_len;
use sha2::{Digest, Sha256};

pub use crate::canonical::{canonical, object, sorted};
pub use crate::snapshot::{describe_file, snapshot, take_snapshot, MAX_DEPTH};

/// Strings longer than this many UTF-16 units are summarised.
pub const LONG_STRING: usize = 4096;

/// What a created-token pattern finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pattern {
    /// Runs of hex digits and UUIDs: ids and session ids ([`classify`] tells them apart).
    Hex,
    /// Times as file names spell them.
    FileTime,
    /// ISO times.
    Time,
}

/// The kind of a created token: the `KIND` of its placeholder `<KIND:N>` or `<KIND>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// An entry id: 8 hex digits (`<id:N>`).
    Id,
    /// A session id: a UUID of any version, its 32 digits without dashes, or 16 hex
    /// digits (`<session:N>`).
    Session,
    /// A time in a file name (`<ftime>`).
    FileTime,
    /// An ISO time (`<time>`).
    Time,
}

impl TokenKind {
    /// The placeholder's name: `id`, `session`, `ftime`, `time`.
    pub fn name(self) -> &'static str {
        match self {
            TokenKind::Id => "id",
            TokenKind::Session => "session",
            TokenKind::FileTime => "ftime",
            TokenKind::Time => "time",
        }
    }

    /// Whether every token of the kind becomes the same placeholder: whether two
    /// created times are equal depends on the clock, not on the implementation.
    pub fn is_time(self) -> bool {
        matches!(self, TokenKind::FileTime | TokenKind::Time)
    }
}

/// The placeholder the normaliser writes for the case directory.
pub const DIR_PLACEHOLDER: &str = "<dir>";

/// Where the first placeholder the normaliser writes (`<dir>`, `<id:N>`, `<session:N>`,
/// `<ftime>`, `<time>`) starts and ends in `text`. Text that holds one cannot be told
/// from a normalised output: an implementation that answers a real time or a fresh id
/// in its place would pass, so the corpus refuses it in inputs and arguments.
pub fn find_placeholder(text: &[u8]) -> Option<std::ops::Range<usize>> {
    memchr::memchr_iter(b'<', text)
        .find_map(|at| placeholder_len(&text[at + 1..]).map(|len| at..at + 1 + len))
}

/// The length of the placeholder `rest` starts with, after its `<`, if it is one:
/// `<dir>`, a token (`<id:N>`, `<session:N>`, `<ftime>`, `<time>`) or a set-aside file
/// name (`<file:N>`, `compare`'s `own-file-names`).
fn placeholder_len(rest: &[u8]) -> Option<usize> {
    if rest.starts_with(&DIR_PLACEHOLDER.as_bytes()[1..]) {
        return Some(DIR_PLACEHOLDER.len() - 1);
    }
    if let Some(digits) = rest.strip_prefix(b"file:") {
        let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        if n > 0 && digits.get(n) == Some(&b'>') {
            return Some("file:".len() + n + 1);
        }
    }
    let kinds = [
        TokenKind::Id,
        TokenKind::Session,
        TokenKind::FileTime,
        TokenKind::Time,
    ];
    kinds.iter().find_map(|kind| {
        let after = rest.strip_prefix(kind.name().as_bytes())?;
        if kind.is_time() {
            return (after.first() == Some(&b'>')).then_some(kind.name().len() + 1);
        }
        let digits = after.strip_prefix(b":")?;
        let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        (n > 0 && digits.get(n) == Some(&b'>')).then_some(kind.name().len() + n + 2)
    })
}

/// The created-token patterns: ids and session ids (hex), file-name times, ISO times.
static PATTERNS: LazyLock<[(Pattern, Regex); 3]> = LazyLock::new(|| {
    [
        (
            Pattern::Hex,
            Regex::new(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{8,}")
                .expect("valid regex"),
        ),
        (
            Pattern::FileTime,
            // `…-sssZ` (pi, omp) or `…-ffffff`, microseconds without a zone (003); the
            // other spellings ports use in file names: `T` or `_` between date and time,
            // with or without a fraction (`-`, `.`) and a `Z`; and ISO's basic format
            // `20261126T230319521Z`.
            Regex::new(concat!(
                r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T_][0-9]{2}-[0-9]{2}-[0-9]{2}(?:[-.](?:[0-9]{6}|[0-9]{3}))?Z?",
                r"|[0-9]{8}T[0-9]{6}(?:\.?(?:[0-9]{6}|[0-9]{3}))?Z?",
            ))
            .expect("valid regex"),
        ),
        (
            Pattern::Time,
            // `Z`, or an offset from UTC (`+00:00`).
            Regex::new(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})")
                .expect("valid regex"),
        ),
    ]
});

/// Everything a created token could be, for ordering files independently of created names.
static MASK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8,}(?:-[0-9a-f]{4}){0,3}(?:-[0-9a-f]{12})?|[0-9]{4}-[0-9]{2}-[0-9]{2}[T_][0-9:.-]+Z?|[0-9]{8}T[0-9.]{6,}Z?")
        .expect("valid regex")
});

/// Renames created ids and times, replaces the case directory and summarises long strings.
pub struct Normalizer {
    known: Arc<HashSet<String>>,
    dir: String,
    names: HashMap<String, String>,
    counters: HashMap<TokenKind, usize>,
    patterns: &'static [(Pattern, Regex)],
}

/// The created-token-shaped strings of `inputs` (input files, request arguments): the
/// *known strings* a [`Normalizer`] keeps as they are. Only tokens it would rename are kept.
pub fn known_tokens<'a>(inputs: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
    let patterns: &'static [(Pattern, Regex)] = &*PATTERNS;
    let mut known = HashSet::new();
    for text in inputs {
        for &(pattern, ref re) in patterns {
            for token in find_tokens(pattern, re, text).map(|at| &text[at]) {
                if classify(pattern, token).is_some() && !known.contains(token) {
                    known.insert(token.to_owned());
                }
            }
        }
    }
    known
}

/// Where `pattern` (`re`) matches in `text`, as `re.find_iter` finds it.
/// [`Pattern::Hex`], which has no literal for the regex engine to look for first, is
/// matched by hand ([`hex_matches`]), several times faster than its automaton.
fn find_tokens<'t>(
    pattern: Pattern,
    re: &'t Regex,
    text: &'t str,
) -> impl Iterator<Item = std::ops::Range<usize>> + 't {
    let by_hand = (pattern == Pattern::Hex).then(|| hex_matches(text));
    let by_regex = by_hand
        .is_none()
        .then(|| re.find_iter(text).map(|m| m.range()));
    by_hand
        .into_iter()
        .flatten()
        .chain(by_regex.into_iter().flatten())
}

/// The matches of `[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|[0-9a-f]{8,}` in `text`,
/// leftmost first, as `Regex::find_iter` finds them: a match starts at the first place
/// 8 hex digits follow; it is a UUID when one starts there (its first group then ends
/// the run of digits), else the whole run.
fn hex_matches(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let bytes = text.as_bytes();
    let is_uuid_at = move |at: usize| {
        let shape = b"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
        bytes.get(at..at + shape.len()).is_some_and(|candidate| {
            candidate.iter().zip(shape).all(|(&b, &s)| {
                if s == b'-' {
                    b == b'-'
                } else {
                    is_hex_digit(b)
                }
            })
        })
    };
    let mut from = 0;
    std::iter::from_fn(move || loop {
        let start = from + first_where(bytes.get(from..)?, true)?;
        let end = first_where(&bytes[start..], false).map_or(bytes.len(), |n| start + n);
        from = end;
        if end - start < 8 {
            continue;
        }
        if is_uuid_at(start) {
            from = start + 36;
        }
        return Some(start..from);
    })
}

/// The index of the first byte of `bytes` that is a hex digit (`[0-9a-f]`), or with
/// `hex` false the first that is not. Eight bytes at a time, where the answer is not in
/// them: arguments repeat a letter half a million times.
fn first_where(bytes: &[u8], hex: bool) -> Option<usize> {
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let mut eight = [0; 8];
        eight.copy_from_slice(word);
        let digits = hex_bytes(u64::from_le_bytes(eight));
        // A byte's top bit in `digits` is set when it is a hex digit.
        let found = if hex {
            digits != 0
        } else {
            digits != HIGH_BITS
        };
        if found {
            break;
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| is_hex_digit(b) == hex)
        .map(|n| at + n)
}

/// `0`–`9` or `a`–`f`: a digit of the ids and session ids an implementation creates.
fn is_hex_digit(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// The top bit of each byte.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The top bit of each byte of `word` set where that byte is `0`–`9` or `a`–`f`, every
/// other bit clear. For an ASCII byte `x`, `x + (0x80 - lo)` reaches the top bit when
/// `x >= lo` and `x + (0x7f - hi)` when `x > hi`, without carrying into the next byte.
fn hex_bytes(word: u64) -> u64 {
    const fn each(byte: u8) -> u64 {
        u64::from_le_bytes([byte; 8])
    }
    let ascii = !word & HIGH_BITS;
    let low7 = word & !HIGH_BITS;
    let within = |lo: u8, hi: u8| {
        let at_least = low7.wrapping_add(each(0x80 - lo));
        let above = low7.wrapping_add(each(0x7f - hi));
        at_least & !above & HIGH_BITS
    };
    (within(b'0', b'9') | within(b'a', b'f')) & ascii
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

/// A cheap test that `s` could contain a created token: a run of 8 hex digits (which
/// the 8 digits of a basic-format time are too), or 4 ASCII digits and a dash (the
/// start of a time).
fn may_hold_token(s: &str) -> bool {
    let (mut hex, mut date) = (0, DateStart::default());
    for b in s.bytes() {
        if is_hex_digit(b) {
            hex += 1;
            if hex >= 8 {
                return true;
            }
        } else {
            hex = 0;
        }
        if date.ends_at(b) {
            return true;
        }
    }
    false
}

/// A cheap test that `pattern` could match in `s`: every time starts with 4 digits and
/// a dash, or (ISO's basic format, a file-name time) 8 digits and a `T`.
/// [`Pattern::Hex`] is matched by hand ([`hex_matches`]), which is as cheap as a test
/// would be.
fn may_match(pattern: Pattern, s: &str) -> bool {
    pattern == Pattern::Hex
        || has_date_start(s)
        || (pattern == Pattern::FileTime && has_basic_date(s))
}

/// Whether `s` has 8 ASCII digits followed by a `T`.
fn has_basic_date(s: &str) -> bool {
    let mut digits = 0;
    s.bytes().any(|b| {
        let found = b == b'T' && digits >= 8;
        digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
        found
    })
}

/// Whether `s` has 4 ASCII digits followed by a dash.
fn has_date_start(s: &str) -> bool {
    let mut date = DateStart::default();
    s.bytes().any(|b| date.ends_at(b))
}

/// The start of a time read byte by byte: 4 ASCII digits or more, then a dash.
#[derive(Default)]
struct DateStart {
    digits: usize,
}

impl DateStart {
    /// Takes the next byte; whether it is the dash that ends a date's start.
    fn ends_at(&mut self, byte: u8) -> bool {
        let ends = byte == b'-' && self.digits >= 4;
        self.digits = if byte.is_ascii_digit() {
            self.digits + 1
        } else {
            0
        };
        ends
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

/// What a pattern match names: an id (8 hex), a session id (a UUID of any version, its
/// 32 digits without dashes, or 16 hex), a time; `None` for other hex runs (a SHA-256
/// is 64).
fn classify(pattern: Pattern, token: &str) -> Option<TokenKind> {
    match pattern {
        Pattern::Hex => match token.len() {
            36 | 32 | 16 => Some(TokenKind::Session),
            8 => Some(TokenKind::Id),
            _ => None,
        },
        Pattern::FileTime => Some(TokenKind::FileTime),
        Pattern::Time => Some(TokenKind::Time),
    }
}

/// Whether the match at `start..end` of `text` is not part of a longer word (letters and digits).
fn standalone(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The known tokens as the patterns' regexes find them: the oracle for
    /// [`known_tokens`], which finds `hex` by hand.
    fn known_tokens_in_whole_texts(texts: &[&str]) -> HashSet<String> {
        let mut known = HashSet::new();
        for text in texts {
            for &(pattern, ref re) in &*PATTERNS {
                for token in re.find_iter(text).map(|m| m.as_str()) {
                    if classify(pattern, token).is_some() {
                        known.insert(token.to_owned());
                    }
                }
            }
        }
        known
    }

    /// Every byte value, in every position of a word, is classed as a hex digit or not
    /// as `is_ascii_hexdigit` (lowercase) classes it.
    #[test]
    fn words_are_classed_byte_by_byte() {
        for byte in 0..=u8::MAX {
            let hex = byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte);
            for at in 0..8 {
                let mut word = [b'g'; 8];
                word[at] = byte;
                let expected = if hex { 0x80 << (8 * at) } else { 0 };
                assert_eq!(
                    hex_bytes(u64::from_le_bytes(word)),
                    expected,
                    "{byte:#x} at {at}"
                );
                let mut word = [b'7'; 8];
                word[at] = byte;
                let expected = if hex {
                    HIGH_BITS
                } else {
                    HIGH_BITS & !(0x80 << (8 * at))
                };
                assert_eq!(
                    hex_bytes(u64::from_le_bytes(word)),
                    expected,
                    "{byte:#x} at {at}"
                );
            }
        }
        let text = format!("{}0{}", "g".repeat(21), "a".repeat(30));
        assert_eq!(first_where(text.as_bytes(), true), Some(21));
        assert_eq!(first_where(&text.as_bytes()[21..], false), None);
        assert_eq!(first_where(b"abcdef0123456789-", false), Some(16));
    }

    fn hex_piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9a-fg\\- \u{e9}]{0,14}",
            Just("12345678-1234-1234-1234-123456789abc".to_owned()),
            Just("12345678-1234-1234-1234-".to_owned()),
            Just("-1234".to_owned()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]
        #[test]
        fn hex_is_matched_by_hand_as_the_regex_matches_it(pieces in prop::collection::vec(hex_piece(), 0..8)) {
            let text = pieces.concat();
            let by_regex: Vec<_> = PATTERNS[0].1.find_iter(&text).map(|m| m.range()).collect();
            prop_assert_eq!(PATTERNS[0].0, Pattern::Hex);
            prop_assert_eq!(hex_matches(&text).collect::<Vec<_>>(), by_regex);
        }
    }

    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9a-fTZ:. x\\-\u{663}g\"]{0,12}",
            "[0-9a-f]{56,140}",
            "[0-9]{56,140}",
            Just("2026-01-01T00:00:00".to_owned()),
            Just("12345678-1234-1234-1234-".to_owned()),
            Just("2026-01-01T12-30-45-123Z".to_owned()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        #[test]
        fn known_tokens_are_those_of_the_whole_text(pieces in prop::collection::vec(piece(), 0..10)) {
            let text = pieces.concat();
            prop_assert_eq!(known_tokens([text.as_str()]), known_tokens_in_whole_texts(&[&text]));
        }
    }

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

    /// Every placeholder the normaliser writes is found, and nothing that only looks
    /// like the start of one.
    #[test]
    fn placeholders_the_normaliser_writes_are_found() {
        let mut n = Normalizer::new("/d", []);
        let written =
            n.text("/d/x 2026-11-26T23-03-19-521Z_deadbeef 1f9d2a6b9c0d1234 2026-01-01T00:00:00Z");
        assert_eq!(written, "<dir>/x <ftime>_<id:1> <session:1> <time>");
        let mut found = Vec::new();
        let mut rest = written.as_bytes();
        while let Some(at) = find_placeholder(rest) {
            found.push(String::from_utf8_lossy(&rest[at.clone()]).into_owned());
            rest = &rest[at.end..];
        }
        assert_eq!(
            found,
            ["<dir>", "<ftime>", "<id:1>", "<session:1>", "<time>"]
        );
        for plain in [
            "<id:>",
            "<id:1",
            "<times>",
            "<session:x>",
            "<di>",
            "a < b",
            "<",
            "",
        ] {
            assert_eq!(find_placeholder(plain.as_bytes()), None, "{plain}");
        }
        assert_eq!(find_placeholder(b"\xff<id:12>\n"), Some(1..8));
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
