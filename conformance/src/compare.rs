//! Comparing a case's normalised output with its golden (`PROTOCOL.md` "Comparison"):
//! JSON values, not spellings; the first difference as a JSON Pointer; created ids
//! aligned before a diff is shown; created file names set aside when an adapter
//! names files its own way.
//!
//! Invariant: nothing here recurses on the depth of a value. Every walk keeps its
//! own stack, so a response nested 100,000 deep fails its case like any other.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::json_writer;

/// How numbers are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbers {
    /// By value, as `JSON.parse` reads them (a double): `1`, `1.0` and `1e0` are equal,
    /// and integers beyond 2^53 round to the nearest double.
    ByValue,
    /// As written: an integer never equals a decimal (`1` and `1.0` differ), as a
    /// reader of the bytes tells them apart.
    AsWritten,
    /// A case's output (`{"response", "files"}`): the lines of written files
    /// (`/files`) as written, everything else by value.
    Output,
}

/// The first place two values differ, in canonical order (keys sorted, arrays in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Its JSON Pointer (`/` for the whole value).
    pub pointer: String,
    /// The expected value there, compact (shortened past 60 characters); `(absent)` when missing.
    pub expected: String,
    /// The actual value there, as [`Difference::expected`].
    pub actual: String,
    /// What kind of difference it is.
    pub kind: DifferenceKind,
}

/// The kind of a [`Difference`]: what a divergence line's `diff:` part names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DifferenceKind {
    /// The actual output has a key or array item the golden has not (`diff:added`).
    Added,
    /// The actual output lacks a key or array item the golden has (`diff:missing`).
    Missing,
    /// Both have a value there, and they differ (`diff:changed`).
    Changed,
}

impl DifferenceKind {
    /// The kind's name in a divergence line: `added`, `missing`, `changed`.
    pub fn name(self) -> &'static str {
        match self {
            DifferenceKind::Added => "added",
            DifferenceKind::Missing => "missing",
            DifferenceKind::Changed => "changed",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<DifferenceKind> {
        [Self::Added, Self::Missing, Self::Changed]
            .into_iter()
            .find(|kind| kind.name() == name)
    }
}

impl Difference {
    /// The difference in one line: `POINTER: EXPECTED -> ACTUAL`.
    pub fn signature(&self) -> String {
        format!("{}: {} -> {}", self.pointer, self.expected, self.actual)
    }
}

/// One step of a path: an object key or an array index.
enum Step<'v> {
    Root,
    Key(&'v str),
    Index(usize),
}

/// Work left in a walk of two values.
enum Pending<'v> {
    /// Compare these two, found at path node `at`.
    Both(&'v Value, &'v Value, usize, bool),
    /// A member present on one side only.
    OneSide(Option<&'v Value>, Option<&'v Value>, usize),
}

/// Whether two values are equal under `numbers` (object key order never matters).
pub fn same(expected: &Value, actual: &Value, numbers: Numbers) -> bool {
    first_difference(expected, actual, numbers).is_none()
}

/// The first place `expected` and `actual` differ, or `None` when they are equal
/// under `numbers`.
pub fn first_difference(expected: &Value, actual: &Value, numbers: Numbers) -> Option<Difference> {
    // The path to each pending pair, as (parent node, step): pointers are built only
    // for the difference found (a pointer per node would be quadratic in the depth).
    let mut path: Vec<(usize, Step<'_>)> = vec![(0, Step::Root)];
    let exact_root = numbers == Numbers::AsWritten;
    let mut pending = vec![Pending::Both(expected, actual, 0, exact_root)];
    while let Some(work) = pending.pop() {
        let (ours, theirs, at, exact) = match work {
            Pending::OneSide(ours, theirs, at) => return Some(difference(&path, at, ours, theirs)),
            Pending::Both(ours, theirs, at, exact) => (ours, theirs, at, exact),
        };
        match (ours, theirs) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort_unstable();
                keys.dedup();
                // Pushed last first, so that they are taken in order.
                for key in keys.into_iter().rev() {
                    path.push((at, Step::Key(key)));
                    let node = path.len() - 1;
                    let exact = exact || (numbers == Numbers::Output && at == 0 && key == "files");
                    pending.push(match (x.get(key), y.get(key)) {
                        (Some(x), Some(y)) => Pending::Both(x, y, node, exact),
                        (x, y) => Pending::OneSide(x, y, node),
                    });
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    let n = x.len().min(y.len());
                    path.push((at, Step::Index(n)));
                    pending.push(Pending::OneSide(x.get(n), y.get(n), path.len() - 1));
                }
                for (i, (x, y)) in x.iter().zip(y).enumerate().rev() {
                    path.push((at, Step::Index(i)));
                    pending.push(Pending::Both(x, y, path.len() - 1, exact));
                }
            }
            (Value::Number(x), Value::Number(y)) => {
                let equal = if exact {
                    x == y
                } else {
                    x.as_f64() == y.as_f64()
                };
                if !equal {
                    return Some(difference(&path, at, Some(ours), Some(theirs)));
                }
            }
            (Value::String(x), Value::String(y)) if x == y => {}
            (Value::Bool(x), Value::Bool(y)) if x == y => {}
            (Value::Null, Value::Null) => {}
            _ => return Some(difference(&path, at, Some(ours), Some(theirs))),
        }
    }
    None
}

/// The [`Difference`] at path node `at`.
fn difference(
    path: &[(usize, Step<'_>)],
    at: usize,
    expected: Option<&Value>,
    actual: Option<&Value>,
) -> Difference {
    let mut steps = Vec::new();
    let mut node = at;
    while node != 0 {
        let (parent, step) = &path[node];
        steps.push(match step {
            Step::Key(key) => key.replace('~', "~0").replace('/', "~1"),
            Step::Index(i) => i.to_string(),
            Step::Root => String::new(),
        });
        node = *parent;
    }
    steps.reverse();
    let pointer = if steps.is_empty() {
        "/".to_owned()
    } else {
        steps.iter().fold(String::new(), |mut p, s| {
            p.push('/');
            p.push_str(s);
            p
        })
    };
    let kind = match (expected, actual) {
        (None, _) => DifferenceKind::Added,
        (_, None) => DifferenceKind::Missing,
        _ => DifferenceKind::Changed,
    };
    Difference {
        pointer,
        expected: short(expected),
        actual: short(actual),
        kind,
    }
}

/// A value in at most about 60 characters: its compact text, or the start of it and a
/// hash of the whole.
fn short(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".to_owned();
    };
    let text = json_writer::compact(value);
    if text.chars().count() <= 60 {
        return text;
    }
    let start: String = text.chars().take(40).collect();
    let digest = Sha256::digest(text.as_bytes());
    let hash = digest[..4].iter().fold(String::new(), |mut hash, b| {
        let _ = write!(hash, "{b:02x}");
        hash
    });
    format!("{start}…#{hash}")
}

/// Drops `value` without recursing on its depth (the drop serde_json derives does):
/// containers are emptied onto a stack first.
pub fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// A copy of `value`, made without recursing on its depth.
pub fn deep_clone(value: &Value) -> Value {
    enum Frame<'v> {
        Array(std::slice::Iter<'v, Value>, Vec<Value>),
        Object(
            serde_json::map::Iter<'v>,
            Map<String, Value>,
            Option<String>,
        ),
    }
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut done: Option<Value> = None;
    let mut next = Some(value);
    loop {
        if let Some(v) = next.take() {
            match v {
                Value::Array(items) => {
                    stack.push(Frame::Array(items.iter(), Vec::with_capacity(items.len())));
                }
                Value::Object(map) => stack.push(Frame::Object(map.iter(), Map::new(), None)),
                scalar => done = Some(scalar.clone()),
            }
        }
        let Some(top) = stack.last_mut() else {
            return done.unwrap_or(Value::Null);
        };
        if let Some(value) = done.take() {
            match top {
                Frame::Array(_, out) => out.push(value),
                Frame::Object(_, out, key) => {
                    if let Some(key) = key.take() {
                        out.insert(key, value);
                    }
                }
            }
        }
        match top {
            Frame::Array(items, _) => {
                if let Some(item) = items.next() {
                    next = Some(item);
                    continue;
                }
            }
            Frame::Object(members, _, key) => {
                if let Some((k, item)) = members.next() {
                    *key = Some(k.clone());
                    next = Some(item);
                    continue;
                }
            }
        }
        done = match stack.pop() {
            Some(Frame::Array(_, out)) => Some(Value::Array(out)),
            Some(Frame::Object(_, out, _)) => Some(Value::Object(out)),
            None => None,
        };
    }
}

/// Calls `change` on every string and object key of `value` (keys first, then their
/// values, in the map's order), replacing those it returns a new text for. Without
/// recursion.
pub fn rewrite_strings(value: &mut Value, mut change: impl FnMut(&str) -> Option<String>) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) => {
                if let Some(new) = change(s) {
                    *s = new;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                if map.keys().any(|k| change(k).is_some()) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (change(&k).unwrap_or(k), v))
                        .collect();
                }
                stack.extend(map.values_mut());
            }
            _ => {}
        }
    }
}

/// `<id:N>`, a created entry id after normalisation.
static ID_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<id:([0-9]+)>").expect("valid regex"));

/// Renames the created ids of `actual` (`<id:N>`, numbered by first appearance) after
/// the entries of `expected` they stand for, so that one missing or extra entry
/// shows as one block in a diff instead of renumbering every later id.
///
/// Entries are objects with an `id` that is a created id. They are aligned by their
/// content with ids masked (a longest common subsequence, in canonical order), then
/// along parent links (`parentId`) from aligned pairs; an id of `actual` left over
/// gets a number `expected` does not use. The renaming is one to one, so it never
/// makes unequal outputs equal.
pub fn align_ids(expected: &Value, actual: &mut Value) {
    let ours = entries(expected);
    let theirs = entries(actual);
    if ours.is_empty() || theirs.is_empty() {
        return;
    }
    let keys = |list: &[Entry]| list.iter().map(|e| e.key.clone()).collect::<Vec<_>>();
    let (old, new) = (keys(&ours), keys(&theirs));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        &old,
        &new,
        Some(deadline),
    );
    let mut map: HashMap<String, String> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    let mut pair = |from: &str, to: &str, map: &mut HashMap<String, String>| {
        if !map.contains_key(from) && !taken.contains(to) {
            map.insert(from.to_owned(), to.to_owned());
            taken.insert(to.to_owned());
            true
        } else {
            false
        }
    };
    let mut pairs = Vec::new();
    for op in ops {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for i in 0..len {
                pairs.push((old_index + i, new_index + i));
            }
        }
    }
    for &(o, n) in &pairs {
        pair(&theirs[n].id, &ours[o].id, &mut map);
    }
    // Along parent links: the parents of aligned entries stand for each other.
    let (by_id_ours, by_id_theirs): (HashMap<&str, &Entry>, HashMap<&str, &Entry>) = (
        ours.iter().map(|e| (e.id.as_str(), e)).collect(),
        theirs.iter().map(|e| (e.id.as_str(), e)).collect(),
    );
    let mut frontier = pairs
        .iter()
        .map(|&(o, n)| (ours[o].id.as_str(), theirs[n].id.as_str()))
        .collect::<Vec<_>>();
    let mut rounds = 0;
    while let Some((o, n)) = frontier.pop() {
        rounds += 1;
        if rounds > 100_000 {
            break;
        }
        let (Some(o), Some(n)) = (by_id_ours.get(o), by_id_theirs.get(n)) else {
            continue;
        };
        if let (Some(po), Some(pn)) = (&o.parent, &n.parent) {
            if pair(pn, po, &mut map) {
                frontier.push((po.as_str(), pn.as_str()));
            }
        }
    }
    let mut fresh = max_id(expected);
    let mut renamed_any = false;
    rewrite_strings(actual, |s| {
        if !s.contains("<id:") {
            return None;
        }
        let new = ID_NAME.replace_all(s, |c: &regex::Captures| {
            let name = &c[0];
            if let Some(to) = map.get(name) {
                return to.clone();
            }
            fresh += 1;
            let to = format!("<id:{fresh}>");
            map.insert(name.to_owned(), to.clone());
            to
        });
        (new != s).then(|| {
            renamed_any = true;
            new.into_owned()
        })
    });
    let _ = renamed_any;
}

/// An entry of an output: its created id, its parent's, and its content with ids masked.
struct Entry {
    id: String,
    parent: Option<String>,
    key: String,
}

/// The objects of `value` whose `id` is a created id, in canonical order.
fn entries(value: &Value) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(map) => {
                if let Some(Value::String(id)) = map.get("id") {
                    if ID_NAME.find(id).is_some_and(|m| m.len() == id.len()) {
                        let parent = map
                            .get("parentId")
                            .and_then(Value::as_str)
                            .filter(|p| ID_NAME.find(p).is_some_and(|m| m.len() == p.len()))
                            .map(str::to_owned);
                        let text = json_writer::compact(value);
                        let key = ID_NAME.replace_all(&text, "<id>").into_owned();
                        out.push(Entry {
                            id: id.clone(),
                            parent,
                            key,
                        });
                    }
                }
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                stack.extend(members.into_iter().rev().map(|(_, v)| v));
            }
            _ => {}
        }
    }
    out
}

/// The largest `N` of the `<id:N>` names in `value`.
fn max_id(value: &Value) -> u64 {
    let mut max = 0;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) => {
                for c in ID_NAME.captures_iter(s) {
                    max = max.max(c[1].parse().unwrap_or(0));
                }
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (k, v) in map {
                    for c in ID_NAME.captures_iter(k) {
                        max = max.max(c[1].parse().unwrap_or(0));
                    }
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    max
}

/// For an adapter whose file names are not part of its contract (hello capability
/// `own-file-names`): every created file of the output (one whose name holds a
/// created token, `<ftime>`, `<session:N>`, `<id:N>`) is renamed by its folder and
/// role, `<file:N>` numbered in the order of its content with created tokens masked
/// (the session file and its fork differ in their headers), and the name is replaced
/// wherever the output mentions it.
pub fn set_aside_file_names(output: &mut Value) {
    let Some(Value::Object(files)) = output.get("files") else {
        return;
    };
    let mut created: Vec<(String, String, String)> = files
        .iter()
        .filter(|(name, _)| is_created_name(name))
        .map(|(name, value)| {
            let folder = name.rsplit_once('/').map_or("", |(f, _)| f).to_owned();
            let masked = TOKEN
                .replace_all(&json_writer::compact(value), "#")
                .into_owned();
            (folder, masked, name.clone())
        })
        .collect();
    if created.is_empty() {
        return;
    }
    created.sort();
    let renames: Vec<(String, String)> = created
        .into_iter()
        .enumerate()
        .map(|(n, (folder, _, name))| {
            let ext = name
                .rsplit_once('/')
                .map_or(name.as_str(), |(_, last)| last)
                .rsplit_once('.')
                .map(|(_, ext)| format!(".{ext}"))
                .unwrap_or_default();
            let new = if folder.is_empty() {
                format!("<file:{}>{ext}", n + 1)
            } else {
                format!("{folder}/<file:{}>{ext}", n + 1)
            };
            (name, new)
        })
        .collect();
    rewrite_strings(output, |s| {
        if !s.contains('<') {
            return None;
        }
        let mut out: Option<String> = None;
        for (old, new) in &renames {
            let current = out.as_deref().unwrap_or(s);
            if current.contains(old.as_str()) {
                out = Some(current.replace(old.as_str(), new));
            }
        }
        out
    });
}

/// A normalised created token: `<ftime>`, `<time>`, `<id:N>`, `<session:N>`.
static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<(?:ftime|time|id:[0-9]+|session:[0-9]+)>").expect("valid regex")
});

/// Whether the last part of a file's path holds a created token.
fn is_created_name(name: &str) -> bool {
    let last = name.rsplit_once('/').map_or(name, |(_, last)| last);
    TOKEN.is_match(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize, leaf: Value) -> Value {
        let mut value = leaf;
        for i in 0..depth {
            value = if i % 2 == 0 {
                Value::Array(vec![value])
            } else {
                let mut map = Map::new();
                map.insert("k".into(), value);
                Value::Object(map)
            };
        }
        value
    }

    #[test]
    fn numbers_compare_by_value_outside_written_files() {
        let expected = json!({"response": {"ok": [1, 0, 9_007_199_254_740_993_u64]}, "files": {"s.jsonl": {"lines": [1]}}});
        let floats = json!({"response": {"ok": [1.0, -0.0, 9_007_199_254_740_992.0]}, "files": {"s.jsonl": {"lines": [1]}}});
        assert!(same(&expected, &floats, Numbers::Output));
        assert!(!same(&expected, &floats, Numbers::AsWritten));
        let written = json!({"response": {"ok": [1, 0, 9_007_199_254_740_993_u64]}, "files": {"s.jsonl": {"lines": [1.0]}}});
        let found = first_difference(&expected, &written, Numbers::Output).expect("differs");
        assert_eq!(found.pointer, "/files/s.jsonl/lines/0");
        assert_eq!(found.signature(), "/files/s.jsonl/lines/0: 1 -> 1.0");
    }

    #[test]
    fn pointers_name_the_first_difference_in_canonical_order() {
        let a = json!({"z": 1, "a": [1, 2, {"b/c": 3}]});
        let b = json!({"a": [1, 2, {"b/c": 4}], "z": 2});
        assert_eq!(
            first_difference(&a, &b, Numbers::ByValue)
                .map(|d| d.pointer)
                .as_deref(),
            Some("/a/2/b~1c")
        );
        assert_eq!(
            first_difference(&json!([1]), &json!([1, 2]), Numbers::ByValue)
                .map(|d| d.signature())
                .as_deref(),
            Some("/1: (absent) -> 2")
        );
        assert_eq!(
            first_difference(&json!({"a": 1}), &json!({}), Numbers::ByValue)
                .map(|d| d.signature())
                .as_deref(),
            Some("/a: 1 -> (absent)")
        );
        assert_eq!(
            first_difference(&json!(1), &json!("1"), Numbers::ByValue)
                .map(|d| d.pointer)
                .as_deref(),
            Some("/")
        );
        let long = "x".repeat(100);
        let d = first_difference(&json!(long), &json!(1), Numbers::ByValue).expect("differs");
        assert!(
            d.expected.starts_with("\"xxx") && d.expected.contains("…#"),
            "{}",
            d.expected
        );
    }

    /// Comparing, copying and dropping a value 100,000 deep neither recurses nor
    /// overflows the stack (a test thread has 2 MiB).
    #[test]
    fn values_100_000_deep_are_compared_without_recursion() {
        let a = nested(100_000, json!(1));
        let b = deep_clone(&a);
        assert!(same(&a, &b, Numbers::Output));
        let c = nested(100_000, json!(2));
        let found = first_difference(&a, &c, Numbers::ByValue).expect("differs");
        assert_eq!(found.pointer.len(), 100_000 + 50_000 * 2);
        let mut d = deep_clone(&a);
        rewrite_strings(&mut d, |_| None);
        align_ids(&a, &mut d);
        for value in [a, b, c, d] {
            dispose(value);
        }
    }

    #[test]
    fn a_missing_entry_renames_no_later_id() {
        let entry = |id: &str, parent: Option<&str>, text: &str| json!({"id": id, "parentId": parent, "text": text});
        let expected = json!({"entries": [
            entry("<id:1>", None, "a"), entry("<id:2>", Some("<id:1>"), "b"),
            entry("<id:3>", Some("<id:2>"), "c"), entry("<id:4>", Some("<id:3>"), "d"),
        ], "leafId": "<id:4>"});
        // `b` is missing: the actual output numbered `c` and `d` as 2 and 3.
        let mut actual = json!({"entries": [
            entry("<id:1>", None, "a"), entry("<id:2>", Some("<id:1>"), "c"),
            entry("<id:3>", Some("<id:2>"), "d"),
        ], "leafId": "<id:3>"});
        align_ids(&expected, &mut actual);
        assert_eq!(
            actual,
            json!({"entries": [
            entry("<id:1>", None, "a"), entry("<id:3>", Some("<id:1>"), "c"),
            entry("<id:4>", Some("<id:3>"), "d"),
        ], "leafId": "<id:4>"})
        );
    }

    #[test]
    fn created_file_names_are_set_aside_by_role() {
        let mut golden = json!({"response": {"ok": {"file": "<dir>/sessions/<ftime>_<session:1>.jsonl"}},
            "files": {"sessions/<ftime>_<session:1>.jsonl": {"lines": [{"type": "session", "id": "<session:1>"}]}, "in.jsonl": {"unchanged": true}}});
        let mut port = json!({"response": {"ok": {"file": "<dir>/sessions/<ftime>-<session:1>.jsonl"}},
            "files": {"sessions/<ftime>-<session:1>.jsonl": {"lines": [{"type": "session", "id": "<session:1>"}]}, "in.jsonl": {"unchanged": true}}});
        set_aside_file_names(&mut golden);
        set_aside_file_names(&mut port);
        assert_eq!(golden, port);
        assert_eq!(
            golden["response"]["ok"]["file"],
            "<dir>/sessions/<file:1>.jsonl"
        );
        assert!(golden["files"].get("in.jsonl").is_some());
    }
}
