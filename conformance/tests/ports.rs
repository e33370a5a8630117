//! The kit as a port sees it (issue 19): the reference behind proxies that change what
//! a port may change (number spellings, file names, legacy files refused) passes, or is
//! reported `divergent` under a category its divergence list declares; a response
//! nested 100,000 deep fails its case and the run goes on (issue 20, item 9).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use session_conformance::adapter::{Adapter, Failure, ReferenceAdapter};
use session_conformance::compare::dispose;
use session_conformance::corpus::{self, Case};
use session_conformance::divergences;
use session_conformance::harness::Harness;
use session_conformance::protocol::{Hello, Request, Response};
use session_conformance::runner::{Divergences, Status, OWN_FILE_NAMES};
use session_reference::model::Profile;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/cases")
}

/// The reference, with every response passed through `change` (and its hello through `greet`).
struct Proxy {
    inner: ReferenceAdapter,
    change: fn(&Request, &mut Response),
    greet: fn(&mut Hello),
}

impl Adapter for Proxy {
    fn hello(&mut self) -> Result<Hello, Failure> {
        let mut hello = self.inner.hello()?;
        (self.greet)(&mut hello);
        Ok(hello)
    }

    fn call(&mut self, request: &Request, timeout: Duration) -> Result<Response, Failure> {
        let mut response = self.inner.call(request, timeout)?;
        (self.change)(request, &mut response);
        Ok(response)
    }
}

/// Runs the whole corpus for every profile through a proxy; the results of every case.
fn run_all(
    change: fn(&Request, &mut Response),
    greet: fn(&mut Hello),
    list: &Divergences,
    filter: Option<&str>,
) -> Vec<(Profile, session_conformance::runner::CaseResult)> {
    let cases = std::sync::Arc::new(corpus::load(&corpus_dir()).expect("corpus loads"));
    let mut out = Vec::new();
    for profile in Profile::ALL {
        let mut harness = Harness::new(corpus_dir())
            .loaded(std::sync::Arc::clone(&cases))
            .profile(profile)
            .ignore(list.clone())
            .jobs(2)
            .timeout(Duration::from_mins(10));
        if let Some(glob) = filter {
            harness = harness.filter(glob).expect("glob");
        }
        let run = harness
            .run_with(&move || {
                Box::new(Proxy {
                    inner: ReferenceAdapter::new(profile),
                    change,
                    greet,
                })
            })
            .expect("runs");
        out.extend(run.results.into_iter().map(|r| (profile, r)));
    }
    out
}

fn failures(results: &[(Profile, session_conformance::runner::CaseResult)]) -> Vec<String> {
    results
        .iter()
        .filter(|(_, r)| r.status.is_failure())
        .map(|(p, r)| {
            format!(
                "{} {} ({p}): {} {}",
                r.id,
                r.name,
                r.status.name(),
                r.signature.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

/// Every integer of `value` as a float: what a port that keeps numbers as doubles writes
/// (`1` → `1.0`).
fn integers_as_floats(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Number(n) if !n.is_f64() => {
                if let Some(float) = n.as_f64().and_then(serde_json::Number::from_f64) {
                    *n = float;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => stack.extend(map.values_mut()),
            _ => {}
        }
    }
}

/// The reference, its every response integer rewritten as a float, passes every case:
/// responses are compared as values, not spellings.
#[test]
fn the_reference_with_every_integer_a_float_passes_every_case() {
    fn floats(_: &Request, response: &mut Response) {
        if let Some(ok) = response.ok.as_mut() {
            integers_as_floats(ok);
        }
    }
    let results = run_all(floats, |_| {}, &Divergences::new(), None);
    assert!(results.len() > 1000, "{} cases", results.len());
    let failed = failures(&results);
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// A created file's name as a port writes it: `20261126T230319521Z-<uuid>.jsonl` for
/// pi's `2026-11-26T23-03-19-521Z_<uuid>.jsonl`.
fn port_name(name: &str) -> Option<String> {
    let (time, rest) = name.split_once('_')?;
    let uuid = rest.strip_suffix(".jsonl")?;
    let b = time.as_bytes();
    let shape = time.len() == 24 && b[4] == b'-' && b[10] == b'T' && time.ends_with('Z');
    if !shape || uuid.len() != 36 {
        return None;
    }
    let digits: String = time.chars().filter(char::is_ascii_digit).collect();
    Some(format!("{}T{}Z-{uuid}.jsonl", &digits[..8], &digits[8..]))
}

/// Renames every created file under `dir` as a port would, and the names wherever the
/// files and the response mention them.
fn rename_created_files(request: &Request, response: &mut Response) {
    let dir = Path::new(&request.dir);
    let mut renames: Vec<(String, String)> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(folder) = stack.pop() {
        for item in fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = item.path();
            if item.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    for path in &files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Some((old, new)) = name.and_then(|n| port_name(&n).map(|new| (n, new))) {
            let _ = fs::rename(path, path.with_file_name(&new));
            renames.push((old, new));
        }
    }
    if renames.is_empty() {
        return;
    }
    let replace = |text: &str| {
        renames
            .iter()
            .fold(text.to_owned(), |t, (old, new)| t.replace(old, new))
    };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for item in fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = item.path();
            if item.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if let Ok(text) = fs::read_to_string(&path) {
                let new = replace(&text);
                if new != text {
                    let _ = fs::write(&path, new);
                }
            }
        }
    }
    if let Some(ok) = response.ok.as_mut() {
        let mut stack = vec![ok];
        while let Some(value) = stack.pop() {
            match value {
                Value::String(s) => *s = replace(s),
                Value::Array(items) => stack.extend(items.iter_mut()),
                Value::Object(map) => stack.extend(map.values_mut()),
                _ => {}
            }
        }
    }
}

/// An adapter that says its file names are its own passes every case though it names
/// created files `20261126T230319521Z-<uuid>.jsonl`: files are matched by content and role.
#[test]
fn a_port_with_its_own_file_names_passes_when_its_hello_says_so() {
    let own = |hello: &mut Hello| hello.capabilities.push(OWN_FILE_NAMES);
    let results = run_all(
        rename_created_files,
        own,
        &Divergences::new(),
        Some("{apply,persist,operator,store,real}/*"),
    );
    let failed = failures(&results);
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    // Without the declaration, the created names are part of the output.
    let results = run_all(
        rename_created_files,
        |_| {},
        &Divergences::new(),
        Some("apply/new-session-deferred-write-pi"),
    );
    assert_eq!(failures(&results).len(), 1, "{results:?}");
}

/// Whether an input session file of a request is version 1 or 2 (`version` absent, 1 or 2).
fn is_legacy(request: &Request) -> bool {
    let dir = Path::new(&request.dir);
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|item| {
            let text = fs::read_to_string(item.path()).unwrap_or_default();
            let first: Option<Value> = text
                .lines()
                .next()
                .and_then(|l| serde_json::from_str(l).ok());
            first.is_some_and(|h| {
                h["type"] == "session"
                    && h.get("version")
                        .is_none_or(|v| v.as_f64() == Some(1.0) || v.as_f64() == Some(2.0))
            })
        })
}

/// A v3-only port with its own file naming declares both decisions in two lines of its
/// divergence list, and sees those cases `divergent`, nothing failed.
#[test]
fn a_v3_only_port_with_its_own_file_names_needs_two_lines() {
    fn port(request: &Request, response: &mut Response) {
        if is_legacy(request) {
            *response = Response::error(&request.case, "invalid_header", "v3 only");
            return;
        }
        rename_created_files(request, response);
    }
    let text = "# a v3-only port\ntag:legacy-* this port reads version 3 only\ntag:file-naming this port names files <time>-<uuid>.jsonl\n";
    let list = divergences::parse(text, Path::new("list")).expect("parses");
    let results = run_all(
        port,
        |_| {},
        &list,
        Some("{migrate,apply,persist,header,parse}/*"),
    );
    let failed = failures(&results);
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let divergent = results
        .iter()
        .filter(|(_, r)| r.status == Status::Divergent)
        .count();
    assert!(divergent > 20, "{divergent} divergent");
}

/// The same port over the whole corpus, every group and profile: the two lines still
/// cover every case it differs in, and nothing else fails.
#[test]
fn a_v3_only_port_with_its_own_file_names_needs_two_lines_over_the_whole_corpus() {
    fn port(request: &Request, response: &mut Response) {
        if is_legacy(request) {
            *response = Response::error(&request.case, "invalid_header", "v3 only");
            return;
        }
        rename_created_files(request, response);
    }
    let text = "tag:legacy-* this port reads version 3 only\ntag:file-naming this port names files <time>-<uuid>.jsonl\n";
    let list = divergences::parse(text, Path::new("list")).expect("parses");
    let results = run_all(port, |_| {}, &list, None);
    assert!(results.len() > 1000, "{} cases", results.len());
    let failed = failures(&results);
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let divergent = |selector: &str| {
        results
            .iter()
            .filter(|(_, r)| {
                r.status == Status::Divergent
                    && r.notes.iter().any(|n| {
                        n.starts_with("known divergence (line ")
                            && n.contains(&format!(" ({selector})): "))
                    })
            })
            .count()
    };
    let (legacy, naming) = (divergent("tag:legacy-*"), divergent("tag:file-naming"));
    assert!(
        legacy > 0 && naming > 0,
        "{legacy} legacy, {naming} file-naming"
    );
}

/// A divergence recorded with one signature and now differing another way is
/// `divergent-changed`; an id that passes is an unexpected pass.
#[test]
fn a_changed_divergence_is_reported_and_a_pass_is_unexpected() {
    fn refuse(request: &Request, response: &mut Response) {
        *response = Response::error(&request.case, "invalid_header", "no");
    }
    let cases = corpus::load(&corpus_dir()).expect("corpus loads");
    let case: &Case = cases
        .iter()
        .find(|c| c.full_name() == "parse/crlf-line-endings")
        .expect("case");
    let id = case.id();
    let text = format!("{id} refuses CRLF ## error invalid_header\n");
    let same = divergences::parse(&text, Path::new("l")).expect("parses");
    let text = format!("{id} refuses CRLF ## error not_found\n");
    let other = divergences::parse(&text, Path::new("l")).expect("parses");
    let status = |change: fn(&Request, &mut Response), list: &Divergences| {
        let results = run_all(change, |_| {}, list, Some("parse/crlf-line-endings"));
        results.iter().map(|(_, r)| r.status).collect::<Vec<_>>()
    };
    assert!(status(refuse, &same)
        .iter()
        .all(|s| *s == Status::Divergent));
    assert!(status(refuse, &other)
        .iter()
        .all(|s| *s == Status::DivergentChanged));
    assert!(status(|_, _| {}, &same)
        .iter()
        .all(|s| *s == Status::UnexpectedPass));
}

/// A value nested `depth` deep, built without recursion.
fn nested(depth: usize) -> Value {
    let mut value = Value::String("deadbeef".into());
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

/// A response nested 100,000 deep, and a file left with a line as deep, fail their
/// case; the run goes on to the next.
#[test]
fn a_response_nested_100_000_deep_fails_only_its_case() {
    fn deep(request: &Request, response: &mut Response) {
        if let Some(ok) = response.ok.replace(nested(100_000)) {
            dispose(ok);
        }
        let line = format!("{}0{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let _ = fs::write(Path::new(&request.dir).join("deep.jsonl"), line);
    }
    let results = run_all(
        deep,
        |_| {},
        &Divergences::new(),
        Some("parse/crlf-line-endings"),
    );
    assert!(!results.is_empty());
    for (_, result) in &results {
        assert_eq!(result.status, Status::Fail, "{}", result.name);
        assert!(result.diff.is_some());
        // The first difference in canonical order: `files` before `response`.
        assert_eq!(result.pointer.as_deref(), Some("/files/deep.jsonl"));
        assert!(result.signature.is_some());
    }
}

/// A crash note holds the stderr of the case that crashed, not an earlier case's.
#[test]
fn a_crash_note_holds_only_its_cases_stderr() {
    use session_conformance::adapter::ProcessAdapter;
    let script = r#"
import sys, json, time
n = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        print(json.dumps({"type": "hello", "implementation": "x", "version": "1", "profile": "pi", "operations": ["load"]}), flush=True)
    elif msg["type"] == "request":
        n += 1
        if n == 1:
            print("an error of the first case", file=sys.stderr, flush=True)
            time.sleep(0.3)
            print(json.dumps({"type": "response", "case": msg["case"], "error": {"kind": "exception", "message": "no"}}), flush=True)
        else:
            print("the second case dies", file=sys.stderr, flush=True)
            time.sleep(0.3)
            sys.exit(3)
"#;
    let argv = vec!["python3".to_owned(), "-c".to_owned(), script.to_owned()];
    let mut adapter = ProcessAdapter::new(argv, Profile::Pi, false);
    let hello = adapter.hello().expect("hello");
    let cases = corpus::load(&corpus_dir()).expect("corpus loads");
    let mut loads = cases
        .iter()
        .filter(|c| c.file.op == "load" && c.applies_to(Profile::Pi));
    let run = |case: &Case, adapter: &mut ProcessAdapter| {
        session_conformance::runner::run_case(
            case,
            Profile::Pi,
            adapter,
            &hello,
            Duration::from_secs(20),
            &Divergences::new(),
        )
    };
    let first = run(loads.next().expect("a case"), &mut adapter);
    assert_eq!(first.status, Status::Fail);
    let second = run(loads.next().expect("a case"), &mut adapter);
    assert_eq!(second.status, Status::Crash);
    let note = second.notes.join("\n");
    assert!(note.contains("the second case dies"), "{note}");
    assert!(!note.contains("first case"), "{note}");
}

/// The tags that follow mechanically from a case's inputs and goldens are there
/// (`corpus/README.md` "Tags"): `legacy-v1`, `legacy-v2`, `file-naming`, `missing-file`.
#[test]
fn tags_follow_from_inputs_and_goldens() {
    let cases = corpus::load(&corpus_dir()).expect("corpus loads");
    let mut wrong = Vec::new();
    for case in &cases {
        let mut derived = Vec::new();
        for (name, bytes) in &case.inputs {
            if !Path::new(name)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"))
            {
                continue;
            }
            let text = String::from_utf8_lossy(bytes);
            let first = text
                .trim_start_matches('\u{feff}')
                .split('\n')
                .find(|l| !l.trim().is_empty())
                .and_then(|l| {
                    serde_json::from_str::<std::collections::HashMap<String, Box<RawValue>>>(
                        l.trim_end_matches('\r'),
                    )
                    .ok()
                });
            let Some(header) = first.filter(|h| {
                h.get("type").is_some_and(|t| t.get() == "\"session\"")
                    && h.get("id").is_some_and(|id| id.get().starts_with('"'))
            }) else {
                continue;
            };
            let version =
                session_reference::model::js_version(header.get("version").map(AsRef::as_ref));
            if version < 2.0 {
                derived.push("legacy-v1");
            } else if version < 3.0 {
                derived.push("legacy-v2");
            }
        }
        let goldens = fs::read_dir(&case.dir).into_iter().flatten().flatten();
        if goldens
            .filter(|g| g.file_name().to_string_lossy().starts_with("expected"))
            .any(|g| {
                let text = fs::read_to_string(g.path()).unwrap_or_default();
                text.contains("<ftime>_") || text.contains("<ftime>.jsonl")
            })
        {
            derived.push("file-naming");
        }
        for key in ["file", "open"] {
            if let Some(name) = case.file.args.get(key).and_then(Value::as_str) {
                if !case.inputs.contains_key(name) {
                    derived.push("missing-file");
                }
            }
        }
        for tag in ["legacy-v1", "legacy-v2", "file-naming", "missing-file"] {
            let has = case.file.tags.iter().any(|t| t == tag);
            if has != derived.contains(&tag) {
                wrong.push(format!(
                    "{} {}: {tag} {}",
                    case.id(),
                    case.full_name(),
                    if has {
                        "carried but does not follow"
                    } else {
                        "missing"
                    }
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `cut-at-other-role` follows from planning (corpus/README.md "Tags"): a `compaction` case
/// carries it exactly when its plan, under some profile it runs in, differs under
/// document 004's strict cut rule (a user or assistant message, never a tool result).
#[test]
fn cut_at_other_role_tags_the_plans_the_strict_cut_rule_changes() {
    use session_conformance::execute::compaction::compaction_under;
    use session_reference::compaction::{CutRule, Rules};

    let cases = corpus::load(&corpus_dir()).expect("corpus loads");
    let mut wrong = Vec::new();
    let mut tagged = 0;
    let planned = cases
        .iter()
        .filter(|c| c.file.op == session_conformance::protocol::Operation::Compaction);
    for case in planned {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, bytes) in &case.inputs {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().expect("a parent")).expect("input folder");
            fs::write(&path, bytes).expect("input");
        }
        let profiles = case
            .file
            .profiles
            .iter()
            .filter_map(|p| p.parse::<Profile>().ok());
        let differs = profiles.into_iter().any(|profile| {
            let wide = Rules::for_profile(profile);
            let strict = Rules {
                cut_rule: CutRule::UserOrAssistant,
                ..Rules::for_profile(profile)
            };
            let plan = |rules: &Rules| compaction_under(dir.path(), &case.file.args, rules).ok();
            plan(&wide) != plan(&strict)
        });
        let has = case.file.tags.iter().any(|t| t == "cut-at-other-role");
        tagged += usize::from(has);
        if has != differs {
            wrong.push(format!(
                "{} {}: has the tag {has}, plan differs {differs}",
                case.id(),
                case.full_name()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(tagged > 0, "no case carries cut-at-other-role");
}

/// A missing entry shows as one removed block: created ids are aligned with the golden's
/// before the diff, so no later `<id:N>` is renumbered.
#[test]
fn a_missing_entry_is_one_removed_block() {
    fn drop_second_entry(_: &Request, response: &mut Response) {
        let entries = response
            .ok
            .as_mut()
            .and_then(|ok| ok.get_mut("entries"))
            .and_then(Value::as_array_mut);
        if let Some(entries) = entries.filter(|e| e.len() >= 3) {
            entries.remove(1);
        }
    }
    let results = run_all(
        drop_second_entry,
        |_| {},
        &Divergences::new(),
        Some("migrate/v1-*"),
    );
    let failed: Vec<_> = results
        .iter()
        .filter(|(_, r)| r.status == Status::Fail)
        .collect();
    assert!(failed.len() > 5, "{} failed", failed.len());
    for (profile, result) in failed {
        let diff = result.diff.as_deref().unwrap_or_default();
        let body: Vec<&str> = diff.lines().skip(2).collect();
        let added = body.iter().filter(|l| l.starts_with('+')).count();
        let removed: Vec<usize> = (0..body.len())
            .filter(|&i| body[i].starts_with('-'))
            .collect();
        let contiguous = removed.windows(2).all(|w| w[1] == w[0] + 1);
        assert!(
            added == 0 && !removed.is_empty() && contiguous,
            "{} {} ({profile}):\n{diff}",
            result.id,
            result.name
        );
    }
}

/// A port that writes an entry type of its own (a durable `leaf` line after its writes)
/// declares it once: `entry-type:leaf`. Its cases are then `divergent`, not failed;
/// without the line they fail.
#[test]
fn an_extra_entry_type_is_declared_once() {
    fn leaf_lines(request: &Request, _: &mut Response) {
        let sessions = Path::new(&request.dir).join("sessions");
        let mut stack = vec![sessions];
        while let Some(folder) = stack.pop() {
            for item in fs::read_dir(&folder).into_iter().flatten().flatten() {
                let path = item.path();
                if item.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    let mut text = fs::read_to_string(&path).unwrap_or_default();
                    text.push_str("{\"type\":\"leaf\",\"id\":\"0123abcd\",\"parentId\":null}\n");
                    let _ = fs::write(&path, text);
                }
            }
        }
    }
    let filter = Some("apply/new-session-deferred-write-*");
    let declared = divergences::parse(
        "entry-type:leaf writes a durable leaf line\n",
        Path::new("l"),
    )
    .expect("parses");
    let results = run_all(leaf_lines, |_| {}, &declared, filter);
    assert!(!results.is_empty());
    for (_, r) in &results {
        assert_eq!(r.status, Status::Divergent, "{} {:?}", r.name, r.notes);
    }
    let results = run_all(leaf_lines, |_| {}, &Divergences::new(), filter);
    assert!(results.iter().all(|(_, r)| r.status == Status::Fail));
}

/// `corpus check` refuses a tag the corpus README does not list, unsorted tags, a clause
/// id that is not one, one the specification does not have, and (against the
/// specification) a clause no case cites that does not say why.
#[test]
fn corpus_check_refuses_unknown_and_unsorted_tags_and_unknown_clauses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let case_dir = dir.path().join("parse/crlf-line-endings");
    let source = corpus_dir().join("parse/crlf-line-endings");
    fs::create_dir_all(case_dir.join("input")).expect("made");
    for name in ["expected.json", "input/session.jsonl"] {
        fs::copy(source.join(name), case_dir.join(name)).expect("copied");
    }
    let mut case: Value =
        serde_json::from_str(&fs::read_to_string(source.join("case.json")).expect("read"))
            .expect("JSON");
    case["tags"] = serde_json::json!(["torn-line", "legacy-v9", "bad-header"]);
    case["clauses"] = serde_json::json!(["loading.99", "Loading", "loading.1"]);
    fs::write(case_dir.join("case.json"), case.to_string()).expect("written");
    let spec = corpus::Spec::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/spec"))
        .expect("the specification reads");
    let problems: Vec<String> = corpus::check_with_spec(dir.path(), &spec, corpus::Coverage::Every)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("unknown tag \"legacy-v9\"")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("not sorted")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("clause \"loading.99\" is not in the specification")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("clause \"Loading\" is not a clause id")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("clause loading.2 (line") && p.contains("is cited by no case")),
        "{problems:?}"
    );
    assert!(
        !problems.iter().any(|p| p.contains("clause loading.1 ")),
        "{problems:?}"
    );
}
