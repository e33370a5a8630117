//! The placeholders the normaliser writes (`<dir>`, `<id:N>`, `<session:N>`, `<ftime>`,
//! `<time>`, and `compare`'s `<file:N>`), found in text: the corpus refuses inputs and
//! arguments that hold one.

use super::tokens::TokenKind;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::normalize::Normalizer;

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
}
