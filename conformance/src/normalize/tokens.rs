//! Finding the tokens an implementation creates: the patterns (ids and session ids as
//! hex, file-name times, ISO times) and the kind of token each match is ([`TokenKind`]),
//! the known tokens of a case's inputs, the hex pattern matched by hand eight bytes at a
//! time, and the cheap tests that let a string skip the patterns.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

/// What a created-token pattern finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pattern {
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

/// The created-token patterns: ids and session ids (hex), file-name times, ISO times.
pub(super) static PATTERNS: LazyLock<[(Pattern, Regex); 3]> = LazyLock::new(|| {
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
pub(super) static MASK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8,}(?:-[0-9a-f]{4}){0,3}(?:-[0-9a-f]{12})?|[0-9]{4}-[0-9]{2}-[0-9]{2}[T_][0-9:.-]+Z?|[0-9]{8}T[0-9.]{6,}Z?")
        .expect("valid regex")
});

/// The created-token-shaped strings of `inputs` (input files, request arguments): the
/// *known strings* a [`Normalizer`](super::Normalizer) keeps as they are. Only tokens it
/// would rename are kept.
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
pub(super) fn find_tokens<'t>(
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

/// A cheap test that `s` could contain a created token: a run of 8 hex digits (which
/// the 8 digits of a basic-format time are too), or 4 ASCII digits and a dash (the
/// start of a time).
pub(super) fn may_hold_token(s: &str) -> bool {
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
pub(super) fn may_match(pattern: Pattern, s: &str) -> bool {
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

/// What a pattern match names: an id (8 hex), a session id (a UUID of any version, its
/// 32 digits without dashes, or 16 hex), a time; `None` for other hex runs (a SHA-256
/// is 64).
pub(super) fn classify(pattern: Pattern, token: &str) -> Option<TokenKind> {
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
pub(super) fn standalone(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Texts made of random pieces, the same on every run (a fixed seed; no generator
    /// crate, so the library stays free of proptest): `count` texts of up to `most`
    /// pieces each, a piece being one of `fixed` or up to `longest` characters of
    /// `alphabet`.
    fn texts(
        count: usize,
        most: usize,
        fixed: &[&str],
        alphabet: &[char],
        longest: usize,
    ) -> Vec<String> {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % bound as u64).expect("below a usize bound")
        };
        (0..count)
            .map(|_| {
                let pieces = next(most + 1);
                (0..pieces)
                    .map(|_| match next(fixed.len() + 2) {
                        i if i < fixed.len() => fixed[i].to_owned(),
                        _ => (0..next(longest + 1))
                            .map(|_| alphabet[next(alphabet.len())])
                            .collect(),
                    })
                    .collect()
            })
            .collect()
    }

    const HEX: &[char] = &[
        '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f',
    ];

    #[test]
    fn hex_is_matched_by_hand_as_the_regex_matches_it() {
        let mut alphabet = HEX.to_vec();
        alphabet.extend(['g', '-', ' ', '\u{e9}']);
        let fixed = [
            "12345678-1234-1234-1234-123456789abc",
            "12345678-1234-1234-1234-",
            "-1234",
        ];
        assert_eq!(PATTERNS[0].0, Pattern::Hex);
        for text in texts(3000, 8, &fixed, &alphabet, 14) {
            let by_regex: Vec<_> = PATTERNS[0].1.find_iter(&text).map(|m| m.range()).collect();
            assert_eq!(hex_matches(&text).collect::<Vec<_>>(), by_regex, "{text:?}");
        }
    }

    #[test]
    fn known_tokens_are_those_of_the_whole_text() {
        let mut alphabet = HEX.to_vec();
        alphabet.extend(['T', 'Z', ':', '.', ' ', 'x', '-', '\u{663}', 'g', '"']);
        let long_hex: String = (0..100).map(|i| HEX[i * 7 % 16]).collect();
        let long_digits: String = (0..90).map(|i| HEX[i * 3 % 10]).collect();
        let fixed = [
            long_hex.as_str(),
            long_digits.as_str(),
            "2026-01-01T00:00:00",
            "12345678-1234-1234-1234-",
            "2026-01-01T12-30-45-123Z",
        ];
        for text in texts(2000, 10, &fixed, &alphabet, 12) {
            assert_eq!(
                known_tokens([text.as_str()]),
                known_tokens_in_whole_texts(&[&text]),
                "{text:?}"
            );
        }
    }
}
