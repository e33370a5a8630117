//! Issue #41: what a corpus case may hold. Input names, placeholders, links, templates,
//! goldens and `case.json` itself are checked when a case is loaded; a case that breaks
//! a rule is a case error (`corpus check` lists it, a run fails it and goes on, `bless`
//! reports it and exits non-zero). One test (or more) per item, each reproducing the
//! defect the attack run found.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_conformance::corpus::{self, CaseProblem, CorpusProblem, GoldenProblem};
use session_conformance::harness::Harness;
use session_conformance::runner::Status;
use session_reference::model::Profile;
use snapbox::cmd::Command;

fn cli() -> Command {
    Command::new(snapbox::cmd::cargo_bin!("session-conformance")).env_remove("CI")
}

const SESSION: &str = concat!(
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
    "\n",
    r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#,
    "\n"
);

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("folders");
    fs::write(path, text).expect("write");
}

/// A case `g/NAME` whose `case.json` is a `load` of `session.jsonl` with the fields of
/// `extra`, pretty-printed (one key a line), and whose input is `session.jsonl`.
fn case(root: &Path, id: u32, name: &str, extra: &Value) -> PathBuf {
    let dir = root.join("g").join(name);
    let mut file = json!({"id": id, "name": name, "profiles": ["pi"], "clauses": ["loading.1"], "op": "load",
        "args": {"file": "session.jsonl"}});
    for (k, v) in extra.as_object().expect("object") {
        file[k] = v.clone();
    }
    let text = serde_json::to_string_pretty(&file).expect("json");
    write(&dir.join("case.json"), &text);
    write(&dir.join("input/session.jsonl"), SESSION);
    dir
}

/// The loaded case `g/NAME`'s error.
fn refusal(root: &Path, name: &str) -> Option<corpus::CaseError> {
    let cases = corpus::load(root).expect("the corpus loads");
    let case = cases
        .into_iter()
        .find(|c| c.full_name() == format!("g/{name}"))
        .expect("the case is loaded");
    case.refused
}

/// Every case of `root` fails a run as a case error, except those named `good`.
fn run_fails_as_case_errors(root: &Path) {
    let run = Harness::new(root)
        .profile(Profile::Pi)
        .run_reference()
        .expect("the run goes on");
    assert!(!run.results.is_empty());
    for result in &run.results {
        if result.name.ends_with("/good") {
            assert_eq!(result.status, Status::Pass, "{result:?}");
        } else {
            assert_eq!(result.status, Status::Fail, "{result:?}");
            assert!(result.notes[0].starts_with("case error: "), "{result:?}");
        }
    }
}

/// `corpus check`'s problems, as text.
fn check(root: &Path) -> Vec<String> {
    corpus::check(root)
        .iter()
        .map(ToString::to_string)
        .collect()
}

// 9. An input name with a `\` or bytes that are not UTF-8 would reach the adapter
// changed (`a\b.jsonl` as `a/b.jsonl`), and two such names merge into one: a case error
// naming the file.
#[cfg(unix)]
#[test]
fn input_names_that_would_change_are_case_errors() {
    use std::os::unix::ffi::OsStrExt;
    let root = tempfile::tempdir().expect("dir");
    let slash = case(root.path(), 1, "backslash", &json!({}));
    write(&slash.join("input/a\\b.jsonl"), SESSION);
    write(&slash.join("input/a/b.jsonl"), "other\n");
    let bytes = case(root.path(), 2, "not-utf8", &json!({}));
    let name = std::ffi::OsStr::from_bytes(b"s\xff.jsonl");
    fs::write(bytes.join("input").join(name), SESSION).expect("write");

    let error = refusal(root.path(), "backslash").expect("refused");
    assert!(matches!(error.kind, CaseProblem::InputName(_)), "{error}");
    assert_eq!(error.path, slash.join("input/a\\b.jsonl"));
    let error = refusal(root.path(), "not-utf8").expect("refused");
    assert!(matches!(error.kind, CaseProblem::InputName(_)), "{error}");
    assert!(error.to_string().contains("is not UTF-8"), "{error}");
    assert_eq!(check(root.path()).len(), 2, "{:?}", check(root.path()));
    run_fails_as_case_errors(root.path());
}

// 10. Text equal to a placeholder the normaliser writes, in an input, an input's name or
// the arguments (literal, or built by a template), is a case error naming the file and
// line; `<dir>` in a `dir_inputs` file is what the runner replaces, and stays allowed.
/// Faults on an operation that never meets them are a case error: the case would pass
/// without its fault (`PROTOCOL.md` "Faults").
#[test]
fn faults_on_an_operation_that_ignores_them_are_case_errors() {
    let root = tempfile::tempdir().expect("dir");
    let fault = json!([{"on": "write", "error": "EIO"}]);
    case(root.path(), 1, "load", &json!({"faults": fault}));
    case(
        root.path(),
        2,
        "apply",
        &json!({"op": "apply", "args": {"open": "session.jsonl", "steps": []}, "faults": fault}),
    );
    let error = refusal(root.path(), "load").expect("refused");
    assert_eq!(
        error.kind,
        CaseProblem::Fault("faults on `load`: only apply and persist meet faults".into())
    );
    assert_eq!(refusal(root.path(), "apply"), None);
}

#[test]
fn placeholders_in_inputs_and_arguments_are_case_errors() {
    let root = tempfile::tempdir().expect("dir");
    let input = case(root.path(), 1, "in-input", &json!({}));
    let text = SESSION.replace("\"hi\"", "\"at <time>\"");
    write(&input.join("input/session.jsonl"), &text);
    let args = case(
        root.path(),
        2,
        "in-args",
        &json!({"op": "context", "args": {"file": "session.jsonl", "leafId": "<id:1>"}}),
    );
    case(
        root.path(),
        3,
        "built-by-a-template",
        &json!({"args": {"file": "session.jsonl", "x": {"$concat": ["<sess", "ion:2>"]}}}),
    );
    let named = case(root.path(), 4, "in-a-name", &json!({}));
    write(&named.join("input/<ftime>_a.jsonl"), SESSION);
    let dir = case(root.path(), 5, "dir-elsewhere", &json!({}));
    write(
        &dir.join("input/terminal-sessions/c"),
        "<dir>/session.jsonl\n",
    );
    let crumb = json!({"dir_inputs": ["terminal-sessions/c"]});
    let good = case(root.path(), 6, "good", &crumb);
    write(
        &good.join("input/terminal-sessions/c"),
        "<dir>/session.jsonl\n",
    );

    let error = refusal(root.path(), "in-input").expect("refused");
    assert_eq!(error.kind, CaseProblem::Placeholder("<time>".into()));
    assert_eq!(
        (error.path, error.line),
        (input.join("input/session.jsonl"), Some(2))
    );
    let error = refusal(root.path(), "in-args").expect("refused");
    assert_eq!(error.kind, CaseProblem::Placeholder("<id:1>".into()));
    let line = fs::read_to_string(args.join("case.json"))
        .expect("read")
        .lines()
        .position(|l| l.contains("<id:1>"))
        .map(|n| n + 1);
    assert_eq!((error.path, error.line), (args.join("case.json"), line));
    let error = refusal(root.path(), "built-by-a-template").expect("refused");
    assert_eq!(error.kind, CaseProblem::Placeholder("<session:2>".into()));
    let error = refusal(root.path(), "in-a-name").expect("refused");
    assert_eq!(error.kind, CaseProblem::Placeholder("<ftime>".into()));
    let error = refusal(root.path(), "dir-elsewhere").expect("refused");
    assert_eq!(error.kind, CaseProblem::Placeholder("<dir>".into()));
    assert_eq!(refusal(root.path(), "good"), None);

    session_conformance::harness::bless(root.path(), Some("g/good"), &mut Vec::new())
        .expect("bless");
    run_fails_as_case_errors(root.path());
}

// 15. A link among the inputs that leads out of the case folder (`/proc/self/environ`)
// is a case error: nothing outside is read, copied or hashed into a golden. A link to a
// file inside the case folder is read through; one to a folder is skipped.
#[cfg(unix)]
#[test]
fn links_out_of_the_case_folder_are_case_errors() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().expect("dir");
    let outside = tempfile::tempdir().expect("dir");
    write(&outside.path().join("secret.txt"), "secret");
    let environ = case(root.path(), 1, "environ", &json!({}));
    symlink("/proc/self/environ", environ.join("input/env.txt")).expect("link");
    let file = case(root.path(), 2, "outside-file", &json!({}));
    symlink(outside.path().join("secret.txt"), file.join("input/s.txt")).expect("link");
    let folder = case(root.path(), 3, "input-folder", &json!({}));
    fs::remove_dir_all(folder.join("input")).expect("remove");
    symlink(outside.path(), folder.join("input")).expect("link");
    let good = case(root.path(), 4, "good", &json!({}));
    symlink("session.jsonl", good.join("input/again.jsonl")).expect("link");
    symlink(outside.path(), good.join("input/out")).expect("link");

    for (name, path) in [
        ("environ", environ.join("input/env.txt")),
        ("outside-file", file.join("input/s.txt")),
        ("input-folder", folder.join("input")),
    ] {
        let error = refusal(root.path(), name).expect("refused");
        assert_eq!((error.kind, error.path), (CaseProblem::LinkLeaves, path));
    }
    let cases = corpus::load(root.path()).expect("loads");
    let good_case = cases.iter().find(|c| c.file.name == "good").expect("good");
    assert_eq!(good_case.refused, None);
    let names: Vec<&str> = good_case.inputs.keys().map(String::as_str).collect();
    assert_eq!(names, ["again.jsonl", "session.jsonl"]);

    let blessed = session_conformance::harness::bless(root.path(), None, &mut Vec::new());
    assert!(blessed.is_err(), "three cases cannot run");
    assert!(!environ.join("expected.json").exists());
    run_fails_as_case_errors(root.path());
}

// 16. A `$repeat` or `$concat` not of its form reached the adapter as a literal object
// and `corpus check` was silent: a case error naming `case.json` and the template's line.
#[test]
fn malformed_templates_are_case_errors() {
    let root = tempfile::tempdir().expect("dir");
    let shapes = [
        json!({"$repeat": ["x", -5]}),
        json!({"$repeat": ["x", 1.5]}),
        json!({"$repeat": ["x", 2], "extra": 1}),
        json!({"$repeat": ["x", {"$repeat": ["1", 2]}]}),
        json!({"$concat": "x"}),
        json!({"$concat": ["x", 7]}),
    ];
    for (i, shape) in shapes.iter().enumerate() {
        let name = format!("shape-{i}");
        let id = u32::try_from(i).expect("small") + 1;
        let dir = case(
            root.path(),
            id,
            &name,
            &json!({"args": {"file": "session.jsonl", "m": shape}}),
        );
        let error = refusal(root.path(), &name).expect("refused");
        assert!(
            matches!(error.kind, CaseProblem::BadTemplate { ref pointer, .. } if pointer == "/m"),
            "{error}"
        );
        let text = fs::read_to_string(dir.join("case.json")).expect("read");
        let line = text.lines().position(|l| l.contains("\"$")).map(|n| n + 1);
        assert_eq!((error.path, error.line), (dir.join("case.json"), line));
    }
    assert_eq!(check(root.path()).len(), shapes.len());
    run_fails_as_case_errors(root.path());
}

// 18. Goldens: `corpus check` parses each one and names a golden that is not JSON (file
// and line); a run says it is unreadable, not missing. A golden past the size limit, or
// one that is not a regular file, is a case error and is never read.
#[test]
fn goldens_are_parsed_by_check_and_capped() {
    let root = tempfile::tempdir().expect("dir");
    let broken = case(root.path(), 1, "broken", &json!({}));
    write(
        &broken.join("expected.json"),
        "{\n  \"files\": {},\n  oops\n}\n",
    );
    let huge = case(root.path(), 2, "huge", &json!({}));
    fs::File::create(huge.join("expected.json"))
        .and_then(|f| f.set_len(1 << 30))
        .expect("a sparse 1 GiB golden");

    let problems = corpus::check(root.path());
    let not_json = problems
        .iter()
        .find(|p| p.path == broken.join("expected.json"))
        .expect("the broken golden is reported");
    assert!(
        matches!(
            not_json.kind,
            CorpusProblem::Golden(GoldenProblem::NotJson { line: 3, .. })
        ),
        "{not_json}"
    );
    let error = refusal(root.path(), "huge").expect("refused");
    assert_eq!(
        (error.kind, error.path),
        (
            CaseProblem::Golden(GoldenProblem::TooLarge(1 << 30)),
            huge.join("expected.json")
        )
    );

    let run = Harness::new(root.path())
        .profile(Profile::Pi)
        .run_reference()
        .expect("runs");
    let result = |name: &str| {
        run.results
            .iter()
            .find(|r| r.name == format!("g/{name}"))
            .expect("result")
    };
    let broken_result = result("broken");
    assert_eq!(broken_result.status, Status::Fail);
    assert_eq!(
        broken_result.signature.as_deref(),
        Some("unreadable golden")
    );
    assert!(
        broken_result.notes[0].starts_with("unreadable golden ")
            && broken_result.notes[0].contains("line 3: not JSON"),
        "{:?}",
        broken_result.notes
    );
    assert!(result("huge").notes[0].starts_with("case error: "));
}

/// Item 18: a golden that is a FIFO would hang the run that reads it: a case error.
#[cfg(unix)]
#[test]
fn a_golden_that_is_not_a_regular_file_is_a_case_error() {
    let root = tempfile::tempdir().expect("dir");
    let dir = case(root.path(), 1, "fifo", &json!({}));
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("expected.json"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let error = refusal(root.path(), "fifo").expect("refused");
    assert_eq!(
        error.kind,
        CaseProblem::Golden(GoldenProblem::Special("fifo"))
    );
    run_fails_as_case_errors(root.path());
}

// 20. `bless` on a case.json that does not parse (an id of 2^64 − 1) reported
// "0 golden file(s) written" and exited 0: it reports the case error and exits 1, and
// blesses the other cases.
#[test]
fn bless_reports_case_errors_and_exits_non_zero() {
    let root = tempfile::tempdir().expect("dir");
    let good = case(root.path(), 1, "good", &json!({}));
    let bad = root.path().join("g/huge-id");
    write(
        &bad.join("case.json"),
        r#"{"id": 18446744073709551615, "name": "huge-id", "profiles": ["pi"], "clauses": ["loading.1"], "op": "load"}"#,
    );
    let output = cli()
        .arg("bless")
        .arg("--corpus")
        .arg(root.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "case error: {}: line 1: invalid value",
            bad.join("case.json").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 golden file(s) written, 1 case(s) refused"),
        "{stderr}"
    );
    assert!(good.join("expected.json").is_file());
}

/// `args` nested 200 deep (the corpus's depth, well within `guard::MAX_NESTING`) load
/// and run; serde_json's own limit of 128 refused them. Past `MAX_NESTING` a
/// `case.json` is a case error, not a stack overflow.
#[test]
fn arguments_nest_as_deep_as_the_harness_reads() {
    let root = tempfile::tempdir().expect("dir");
    let nested = |depth: usize| -> Value { (0..depth).fold(json!(1), |value, _| json!([value])) };
    case(
        root.path(),
        1,
        "good",
        &json!({"args": {"file": "session.jsonl", "deep": nested(199)}}),
    );
    let deep = root.path().join("g/too-deep");
    let text = format!(
        r#"{{"id": 2, "name": "too-deep", "profiles": ["pi"], "clauses": ["loading.1"], "op": "load", "args": {{"file": "session.jsonl", "deep": {}1{}}}}}"#,
        "[".repeat(1_000),
        "]".repeat(1_000)
    );
    write(&deep.join("case.json"), &text);
    write(&deep.join("input/session.jsonl"), SESSION);

    let cases = corpus::load(root.path()).expect("loads");
    let good = cases.iter().find(|c| c.file.name == "good").expect("good");
    assert_eq!(good.refused, None);
    assert_eq!(
        session_conformance::guard::nesting(&good.file.args.to_string()),
        200,
        "args 200 levels deep"
    );
    let error = refusal(root.path(), "too-deep").expect("refused");
    assert!(matches!(error.kind, CaseProblem::TooDeep(_)), "{error}");
    session_conformance::harness::bless(root.path(), Some("g/good"), &mut Vec::new())
        .expect("bless");
    run_fails_as_case_errors(root.path());
}

/// `generate --count` has an upper bound, with a clear error (exit 2, a usage error).
#[test]
fn generate_refuses_a_count_past_its_limit() {
    let out = tempfile::tempdir().expect("dir");
    let output = cli()
        .args(["generate", "--count", "18446744073709551615", "--out"])
        .arg(out.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("more than the limit of 10000 cases"),
        "{stderr}"
    );
    assert!(!out.path().join("generated").exists());
}

/// Issue #41, second review: a golden that is a link is refused, never read (its target
/// could be outside the corpus) nor written through by `bless` (it overwrote the target).
#[test]
fn a_golden_link_is_neither_read_nor_written_through() {
    let root = tempfile::tempdir().expect("dir");
    let outside = tempfile::tempdir().expect("dir");
    let victim = outside.path().join("victim.json");
    fs::write(&victim, "{\"secret\": \"outside\"}\n").expect("write");
    let dir = case(root.path(), 1, "linked", &json!({}));
    std::os::unix::fs::symlink(&victim, dir.join("expected.json")).expect("link");
    let good = case(root.path(), 3, "good", &json!({}));
    let dangling = case(root.path(), 2, "dangling", &json!({}));
    let created = outside.path().join("created.json");
    std::os::unix::fs::symlink(&created, dangling.join("expected.json")).expect("link");
    cli()
        .arg("bless")
        .arg("--corpus")
        .arg(root.path())
        .assert()
        .failure();
    assert_eq!(
        fs::read_to_string(&victim).expect("victim"),
        "{\"secret\": \"outside\"}\n"
    );
    assert!(!created.exists(), "nothing made through a dangling link");
    assert!(
        good.join("expected.json").is_file(),
        "the other cases are blessed"
    );
    let refused = refusal(root.path(), "dangling").expect("a dangling golden link is refused");
    assert!(refused.to_string().contains("link"), "{refused}");
    let output = cli()
        .arg("run")
        .arg("--corpus")
        .arg(root.path())
        .args(["--profile", "pi"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("secret"), "{text}");
}

/// Issue #41, second review: a golden nested past the comparison's depth fails its case
/// in a run (it aborted the run, building its diff), and `case.json` that is a link is a
/// case error.
#[test]
fn a_deep_golden_and_a_linked_case_file_fail_their_cases() {
    let root = tempfile::tempdir().expect("dir");
    let deep = case(root.path(), 1, "deep", &json!({}));
    let depth = 100_000;
    write(
        &deep.join("expected.json"),
        &format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
    );
    let linked = case(root.path(), 2, "linked", &json!({}));
    let real = root.path().join("elsewhere.json");
    fs::rename(linked.join("case.json"), &real).expect("move");
    std::os::unix::fs::symlink(&real, linked.join("case.json")).expect("link");
    let refused = refusal(root.path(), "linked").expect("refused");
    assert!(refused.to_string().contains("is a link"), "{refused}");
    let run = Harness::new(root.path())
        .profile(Profile::Pi)
        .run_reference()
        .expect("the run goes on");
    assert_eq!(run.results.len(), 2);
    for result in &run.results {
        assert_eq!(result.status, Status::Fail, "{result:?}");
    }
}

/// Issue #41 item 10, second review: a placeholder written with a JSON escape
/// (`"\u003ctime>"` reads as `<time>`), a set-aside file name (`<file:1>`) and a line
/// keyed like the snapshot's description of a line (`{"$unparsed": …}`) are case errors.
#[test]
fn escaped_placeholders_and_snapshot_marks_are_case_errors() {
    let lines = [
        (
            "escaped",
            r#"{"type":"custom","id":"c1","parentId":null,"timestamp":"\u003ctime>"}"#,
        ),
        (
            "file-name",
            r#"{"type":"custom","id":"c1","parentId":null,"timestamp":"<file:1>"}"#,
        ),
        ("unparsed", r#"{"$unparsed":"torn{"}"#),
        ("escaped-mark", r#"{"\u0024bom":true}"#),
        (
            "good",
            r#"{"type":"custom","id":"c1","parentId":null,"note":"\u0041 $5 <b>"}"#,
        ),
    ];
    let root = tempfile::tempdir().expect("dir");
    for (i, (name, line)) in lines.iter().enumerate() {
        let dir = case(
            root.path(),
            u32::try_from(i).expect("few") + 1,
            name,
            &json!({}),
        );
        write(
            &dir.join("input/session.jsonl"),
            &format!("{SESSION}{line}\n"),
        );
    }
    for (name, _) in &lines[..4] {
        let refused = refusal(root.path(), name).unwrap_or_else(|| panic!("{name} is refused"));
        assert!(
            matches!(refused.kind, CaseProblem::Placeholder(_)),
            "{name}: {refused}"
        );
    }
    assert!(refusal(root.path(), "good").is_none());
}
