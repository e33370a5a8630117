//! The exported layout (`corpus export`, and the cache the CLI unpacks into): `cases/`,
//! `README.md`, `schemas/`, `spec/` and `PROTOCOL.md` side by side in one folder. The
//! bundle carries the repository's own texts, whose paths name the repository's layout
//! (`corpus/cases/…`, `docs/spec/…`); here they are rewritten for the exported one.

use std::borrow::Cow;

/// Repository paths and what they are in the exported layout, longest first. A bare
/// `corpus/cases` stays: it names the folder the runner looks for, not a file here.
const PATHS: &[(&str, &str)] = &[
    ("conformance/PROTOCOL.md", "PROTOCOL.md"),
    ("corpus/README.md", "README.md"),
    ("corpus/cases/", "cases/"),
    ("docs/spec/", "spec/"),
];

/// The first line of a rewritten text: where its remaining repository paths point.
const NOTE: &str = "<!-- Written by `session-conformance corpus export`: paths are this folder's \
(`cases/`, `spec/`, `schemas/`, `PROTOCOL.md`); `conformance/…` paths name files of the \
session-conformance repository. -->\n";

/// The files whose text names repository paths: the corpus's README and the protocol.
const REWRITTEN: &[&str] = &["README.md", "PROTOCOL.md"];

/// `content` of the bundle's file `name` as the exported layout holds it: the README and
/// PROTOCOL.md with their paths rewritten (and a first line saying so), every other file
/// as it is.
pub fn for_export<'a>(name: &str, content: &'a [u8]) -> Cow<'a, [u8]> {
    if !REWRITTEN.contains(&name) {
        return Cow::Borrowed(content);
    }
    let Ok(text) = std::str::from_utf8(content) else {
        return Cow::Borrowed(content);
    };
    let mut out = String::with_capacity(NOTE.len() + text.len());
    out.push_str(NOTE);
    out.push_str(&rewrite_paths(text));
    Cow::Owned(out.into_bytes())
}

/// `text` with each repository path of [`PATHS`] replaced by its exported one.
fn rewrite_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for (from, to) in PATHS {
            if let Some(after) = rest.strip_prefix(from) {
                out.push_str(to);
                rest = after;
                continue 'scan;
            }
        }
        let step = rest.chars().next().map_or(1, char::len_utf8);
        out.push_str(&rest[..step]);
        rest = &rest[step..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_paths_become_the_exported_ones() {
        let cases = [
            (
                "see `conformance/PROTOCOL.md` and `corpus/README.md`",
                "see `PROTOCOL.md` and `README.md`",
            ),
            (
                "corpus/cases/<group>/<name>/ (`docs/spec/` clause)",
                "cases/<group>/<name>/ (`spec/` clause)",
            ),
            // The folder the runner looks for keeps its name.
            (
                "`--corpus`, else `corpus/cases`, else",
                "`--corpus`, else `corpus/cases`, else",
            ),
            ("é `schemas/protocol/` ü", "é `schemas/protocol/` ü"),
        ];
        for (text, expected) in cases {
            assert_eq!(rewrite_paths(text), expected, "{text}");
        }
    }

    #[test]
    fn only_the_readme_and_the_protocol_are_rewritten() {
        let text = b"corpus/cases/x";
        assert_eq!(&*for_export("cases/a/case.json", text), text);
        let readme = for_export("README.md", text);
        assert!(readme.starts_with(NOTE.as_bytes()));
        assert!(readme.ends_with(b"\ncases/x"));
    }
}
