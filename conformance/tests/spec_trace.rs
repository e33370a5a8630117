//! Issue 46, item 6: the specification and the reference trace each other. Every item a
//! clause names on its `Checked:` or `Implemented by:` paragraph (a source path, then the
//! file's functions, types or constants: `corpus::names_in`) exists in that file, and the
//! doc comment of each names the clause on a `Clauses:` line; every `Clauses:` line of
//! `reference/src` and `conformance/src/execute` names clauses that exist and name that
//! item back.
//!
//! This is a test of the repository rather than a rule of `corpus check`: resolving a name
//! needs the reference's source, which an installed binary does not carry (it carries the
//! specification only). `corpus check` checks what the text alone can show: that every
//! clause has such a paragraph, naming at least one function.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use session_conformance::corpus::{self, Named, Spec};

/// The folders whose items may name clauses, from the repository's root.
const TRACED_FOLDERS: [&str; 2] = ["reference/src", "conformance/src/execute"];

/// The keywords that define a named item, after any of [`QUALIFIERS`].
const ITEM_KEYWORDS: [&str; 7] = ["fn", "struct", "enum", "trait", "type", "const", "static"];

/// Words that may come before an item's keyword.
const QUALIFIERS: [&str; 6] = [
    "pub",
    "pub(crate)",
    "pub(super)",
    "const",
    "async",
    "unsafe",
];

/// An item a Rust source file defines.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Def {
    /// Its name (`for_profile`).
    name: String,
    /// The type of the `impl` block it is in (`Rules`), when it is in one.
    owner: Option<String>,
    /// Whether it is a function.
    function: bool,
    /// Its line (1-based).
    line: usize,
    /// The clauses its doc comment's `Clauses:` line names.
    clauses: Vec<String>,
}

impl Def {
    /// Whether a clause's name (`name`, `Type::name`) is this item.
    fn is(&self, named: &Named) -> bool {
        let owner = named
            .item
            .rsplit_once("::")
            .map(|(owner, _)| owner.rsplit("::").next().unwrap_or(owner));
        self.name == named.name()
            && self.function == named.is_function()
            && (owner.is_none() || owner == self.owner.as_deref())
    }
}

/// The items `source` defines, with the clauses each one's doc comment names. An `impl`
/// or `trait` block is one that opens on a line of its own at the left margin and closes
/// with a `}` there (rustfmt's layout); its functions' owner is its type.
fn defs(source: &str) -> Vec<Def> {
    let mut defs = Vec::new();
    let mut owner: Option<String> = None;
    let mut docs: Vec<&str> = Vec::new();
    for (index, line) in source.lines().enumerate() {
        if line.starts_with("impl") {
            owner = impl_target(line);
        } else if let Some(name) = line
            .strip_prefix("pub trait ")
            .or(line.strip_prefix("trait "))
        {
            owner = item_of(&format!("trait {name}")).map(|(_, name)| name.to_owned());
        } else if line == "}" {
            owner = None;
        }
        let bare = line.trim();
        if let Some(doc) = bare.strip_prefix("///") {
            docs.push(doc.trim());
            continue;
        }
        if bare.starts_with("#[") || bare.starts_with("//") {
            continue;
        }
        if let Some((keyword, name)) = item_of(bare) {
            defs.push(Def {
                name: name.to_owned(),
                owner: owner.clone(),
                function: keyword == "fn",
                line: index + 1,
                clauses: clauses_in(&docs),
            });
        }
        docs.clear();
    }
    defs
}

/// The type an `impl` line is for: `impl Rules {`, `impl<'a> Trait for Rules<'a> {`.
fn impl_target(line: &str) -> Option<String> {
    let head = line.split('{').next().unwrap_or(line);
    let target = head.rsplit(" for ").next().unwrap_or(head);
    let target = target.strip_prefix("impl").unwrap_or(target);
    // Drop the impl's own generics, then take the type's last path segment.
    let target = if target.starts_with('<') {
        target.split_once('>').map_or(target, |(_, rest)| rest)
    } else {
        target
    };
    let name = target.trim().split('<').next().unwrap_or("").trim();
    let name = name.rsplit("::").next().unwrap_or(name);
    (!name.is_empty()).then(|| name.to_owned())
}

/// The keyword and name of the item a line defines, if it defines one.
fn item_of(line: &str) -> Option<(&str, &str)> {
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.next() {
        let qualifies = QUALIFIERS.contains(&word) || word.starts_with("pub(");
        let next_is_item = words
            .peek()
            .is_some_and(|next| ITEM_KEYWORDS.contains(next));
        if ITEM_KEYWORDS.contains(&word) && !(qualifies && next_is_item) {
            let rest = words.next()?;
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            return (end > 0).then(|| (word, &rest[..end]));
        }
        if !qualifies {
            return None;
        }
    }
    None
}

/// The clauses a doc comment names: its line starting `Clauses:` and the lines after it
/// that hold nothing but clause ids.
fn clauses_in(docs: &[&str]) -> Vec<String> {
    let ids = |text: &str| -> Option<Vec<String>> {
        let words: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || c == ',')
            .map(|w| w.trim_end_matches('.'))
            .filter(|w| !w.is_empty())
            .collect();
        let all = !words.is_empty() && words.iter().all(|w| corpus::is_clause_id(w));
        all.then(|| words.into_iter().map(str::to_owned).collect())
    };
    let Some(start) = docs.iter().position(|d| d.starts_with("Clauses:")) else {
        return Vec::new();
    };
    let mut clauses = ids(docs[start].trim_start_matches("Clauses:")).unwrap_or_default();
    for more in docs[start + 1..].iter().map_while(|d| ids(d)) {
        clauses.extend(more);
    }
    clauses
}

/// Reads the source files `paths` (from `root`): a path that is not a regular file reads
/// as `None`.
fn sources(
    root: &Path,
    paths: impl IntoIterator<Item = String>,
) -> BTreeMap<String, Option<Vec<Def>>> {
    paths
        .into_iter()
        .map(|path| {
            let file = root.join(&path);
            let regular = fs::symlink_metadata(&file).is_ok_and(|m| m.is_file());
            let text = regular.then(|| fs::read_to_string(&file).ok()).flatten();
            (path, text.as_deref().map(defs))
        })
        .collect()
}

/// The `.rs` files under the traced folders of `root`, as paths from `root` (links are not
/// followed).
fn traced_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for folder in TRACED_FOLDERS {
        if !root.join(folder).is_dir() {
            continue;
        }
        for entry in walkdir::WalkDir::new(root.join(folder)).sort_by_file_name() {
            let entry = entry.expect("the source folder walks");
            let path = entry.path();
            if entry.file_type().is_file() && path.extension().is_some_and(|x| x == "rs") {
                let relative = path.strip_prefix(root).expect("under the root");
                files.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files
}

/// What is wrong with the trace between `spec` and the sources under `root`: each problem
/// as a line naming the clause or the source line.
fn trace_problems(spec: &Spec, root: &Path) -> Vec<String> {
    let named = spec
        .clauses
        .values()
        .flat_map(|c| c.names.iter().map(|n| n.file.clone()));
    let files = sources(root, named.chain(traced_files(root)));
    let mut problems = Vec::new();
    for (id, clause) in &spec.clauses {
        for named in &clause.names {
            let Some(Some(defs)) = files.get(&named.file) else {
                problems.push(format!("{id}: {} is not a source file", named.file));
                continue;
            };
            let found: Vec<&Def> = defs.iter().filter(|d| d.is(named)).collect();
            if found.is_empty() {
                problems.push(format!("{id}: {} has no {}", named.file, named.item));
            } else if !found.iter().any(|d| d.clauses.contains(id)) {
                problems.push(format!(
                    "{id}: {}:{} {}'s doc comment has no `Clauses:` line naming {id}",
                    named.file, found[0].line, named.item
                ));
            }
        }
    }
    for (file, defs) in &files {
        for def in defs.iter().flatten() {
            for id in &def.clauses {
                let names_it = spec.clauses.get(id).is_some_and(|clause| {
                    clause.names.iter().any(|n| &n.file == file && def.is(n))
                });
                if !names_it {
                    problems.push(format!(
                        "{file}:{} {}: its `Clauses:` line names {id}, which does not name it",
                        def.line, def.name
                    ));
                }
            }
        }
    }
    problems
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every clause of `docs/spec/` names items that exist, each of whose doc comments names
/// the clause back, and no doc comment names a clause that does not name it.
#[test]
fn the_specification_and_the_reference_name_each_other() {
    let root = repo();
    let spec = Spec::read(&root.join("docs/spec")).expect("the specification reads");
    let problems = trace_problems(&spec, &root);
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The check itself: a missing file, a missing item, a type named as a function, a
/// missing `Clauses:` line and a `Clauses:` line naming a clause that does not name the
/// item are each found; a correct trace is not a problem.
#[test]
fn trace_problems_are_found() {
    let root = tempfile::tempdir().expect("temp dir");
    let src = root.path().join("reference/src");
    fs::create_dir_all(&src).expect("made");
    fs::write(
        src.join("a.rs"),
        "/// Reads.\n///\n/// Clauses: t.1,\n/// t.2.\npub fn read() {}\n\npub struct Header;\n\nimpl Rules {\n    /// Clauses: t.2.\n    #[must_use]\n    pub(crate) const fn for_profile() {}\n}\n\n/// Clauses: t.1, t.9.\nfn helper() {}\n\nfn bare() {}\n",
    )
    .expect("written");
    let text = "### t.1 One\nChecked: `reference/src/a.rs` `read`, `helper`.\n### t.2 Two\nImplemented by: `reference/src/a.rs` `read`, `Rules::for_profile`, `Header`, `bare`, `gone`, `Other::for_profile`; `reference/src/b.rs` `f`.\n";
    let mut spec = Spec::default();
    spec.add(Path::new("t.md"), text);
    let problems = trace_problems(&spec, root.path());
    assert_eq!(
        problems,
        [
            "t.2: reference/src/a.rs:7 Header's doc comment has no `Clauses:` line naming t.2",
            "t.2: reference/src/a.rs:18 bare's doc comment has no `Clauses:` line naming t.2",
            "t.2: reference/src/a.rs has no gone",
            "t.2: reference/src/a.rs has no Other::for_profile",
            "t.2: reference/src/b.rs is not a source file",
            "reference/src/a.rs:16 helper: its `Clauses:` line names t.9, which does not name it",
        ]
    );
}

/// The item keywords and the `impl` targets the reader knows.
#[test]
fn definitions_are_read_with_their_owner() {
    for (line, want) in [
        ("pub fn read(x: u8) {", Some(("fn", "read"))),
        ("pub(crate) const fn f<T>() {", Some(("fn", "f"))),
        (
            "pub const MAX_LIMIT: usize = 1;",
            Some(("const", "MAX_LIMIT")),
        ),
        ("pub(super) struct Reader<'a> {", Some(("struct", "Reader"))),
        ("let fn_name = 1;", None),
        ("// fn commented() {}", None),
    ] {
        assert_eq!(item_of(line.trim()), want, "{line}");
    }
    for (line, want) in [
        ("impl Rules {", Some("Rules")),
        ("impl<'a> Iterator for Reader<'a> {", Some("Reader")),
        ("impl fmt::Display for super::Wrap {", Some("Wrap")),
    ] {
        assert_eq!(impl_target(line).as_deref(), want, "{line}");
    }
}
