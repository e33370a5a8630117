//! The shape of `reference/src`: modules import downward only (no import cycle), and
//! no module is longer than a reader can hold (400 lines before its tests).
//!
//! A module is the first path segment under `src/` (`session/open.rs` belongs to
//! `session`). Its imports are the `crate::X` paths of its files, outside `//` comments
//! and outside the `#[cfg(test)]` part (tests may reach anywhere).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest a file may be before its `#[cfg(test)]` tests (docs/ARCHITECTURE.md).
const MAX_LINES: usize = 400;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The module a file belongs to: `src/tree/nodes.rs` → `tree`, `src/parse.rs` → `parse`.
fn module_of(path: &Path) -> String {
    let rel = path.strip_prefix(src()).expect("under src");
    let first = rel.iter().next().expect("a component").to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// A file's code before its tests, without `//` comments (doc links are not imports).
fn code_before_tests(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The modules a file's code names: `crate::X…` and each item of `crate::{X, Y::…}`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_ascii_alphabetic() || c == '_') => {
                        out.insert(ident_at(&group[i..]).to_owned());
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident_at(rest).to_owned());
        }
    }
    out.retain(|m| m.chars().next().is_some_and(|c| c.is_ascii_lowercase()));
    out
}

/// Which module imports which (a module's imports of itself left out).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in rust_files(&src()) {
        let module = module_of(&path);
        if module == "lib" {
            continue;
        }
        let text = fs::read_to_string(&path).expect("read a source file");
        let mut deps = imports(&code_before_tests(&text));
        deps.remove(&module);
        graph.entry(module).or_default().extend(deps);
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.graph.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.out
}

#[test]
fn modules_import_downward_only() {
    let graph = graph();
    assert!(graph.contains_key("model") && graph.contains_key("session"));
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles in reference/src (modules that import each other): {found:?}"
    );
}

#[test]
fn the_checker_sees_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", imports("use crate::b::X;")),
        ("b", imports("use crate::{c::{Y, Z}, d};")),
        ("c", imports("fn f() { crate::a::g() }")),
        ("d", BTreeSet::new()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(graph["b"], ["c".to_owned(), "d".to_owned()].into());
    assert_eq!(cycles(&graph), [["a", "b", "c"]]);
}

#[test]
fn no_module_file_is_over_400_lines_before_its_tests() {
    let long: Vec<String> = rust_files(&src())
        .into_iter()
        // A file that holds only a module's tests (`#[cfg(test)] mod tests;`) is all tests.
        .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs"))
        .filter_map(|path| {
            let text = fs::read_to_string(&path).expect("read a source file");
            let before = text.split("#[cfg(test)]").next().unwrap_or_default();
            let lines = before.lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines}", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by concern: {long:?}");
}
