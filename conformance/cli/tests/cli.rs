//! The CLI: exit codes, error lines, outputs, and the protocol end to end through `serve`.

use snapbox::cmd::Command;

fn cli() -> Command {
    Command::new(snapbox::cmd::cargo_bin!("session-conformance")).env_remove("CI")
}

const SMALL: &str = "tests/fixtures/small.jsonl";

#[test]
fn load_prints_entries_and_diagnostics_without_touching_the_file() {
    let before = std::fs::read(SMALL).unwrap();
    let out = cli()
        .args(["load", SMALL, "--profile", "pi"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(value["entries"].as_array().unwrap().len(), 2);
    assert_eq!(
        value["diagnostics"],
        serde_json::json!([{"kind": "not_json", "line": 3}])
    );
    assert_eq!(value["leafId"], "aaaa0002");
    assert_eq!(std::fs::read(SMALL).unwrap(), before);
}

#[test]
fn context_has_each_profile_shape() {
    let pi = cli()
        .args(["context", SMALL, "--profile", "pi"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let pi: serde_json::Value = serde_json::from_slice(&pi).unwrap();
    assert_eq!(
        pi["model"],
        serde_json::json!({"provider": "p", "modelId": "m"})
    );
    let omp = cli()
        .args(["context", SMALL, "--profile", "omp", "--leaf", "aaaa0001"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let omp: serde_json::Value = serde_json::from_slice(&omp).unwrap();
    assert_eq!(omp["messages"].as_array().unwrap().len(), 1);
    assert_eq!(omp["mode"], "none");
    let empty = cli()
        .args(["context", SMALL, "--profile", "pi", "--no-leaf"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&empty).unwrap()["messages"],
        serde_json::json!([])
    );
}

#[test]
fn tree_text_marks_the_leaf() {
    cli()
        .args(["tree", SMALL, "--profile", "omp"])
        .assert()
        .success()
        .stdout_eq("aaaa0001 message user \"hi\"\naaaa0002 message assistant \"yo\"  <- leaf\n");
    cli()
        .args([
            "tree",
            "tests/fixtures/omp-session.jsonl",
            "--profile",
            "omp",
            "--format",
            "json",
        ])
        .assert()
        .success();
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let cases = [
        (vec!["load", "tests/fixtures/missing.jsonl", "--profile", "pi"], "session-conformance: tests/fixtures/missing.jsonl: No such file or directory (os error 2)\n"),
        (vec!["load", "tests/fixtures/no-header.jsonl", "--profile", "omp"], "session-conformance: tests/fixtures/no-header.jsonl: line 1: not a session header; the first line must be {\"type\":\"session\",\"id\":…}\n"),
        (vec!["run", "--adapter", "./x", "--corpus", "../../corpus/cases"], "session-conformance: --profile is required with an adapter command\n"),
    ];
    for (args, stderr) in cases {
        cli().args(&args).assert().code(2).stderr_eq(stderr);
    }
}

#[test]
fn bless_is_refused_in_ci() {
    cli()
        .env("CI", "true")
        .args(["bless", "--corpus", "../../corpus/cases"])
        .assert()
        .code(2);
}

#[test]
fn corpus_is_clean() {
    cli()
        .args(["corpus", "check", "--corpus", "../../corpus/cases"])
        .assert()
        .success();
}

#[test]
fn serve_speaks_the_protocol_end_to_end() {
    let bin = snapbox::cmd::cargo_bin!("session-conformance")
        .to_string_lossy()
        .into_owned();
    for profile in ["pi", "omp"] {
        cli()
            .args([
                "run",
                "--corpus",
                "../../corpus/cases",
                "--profile",
                profile,
                "--jobs",
                "2",
                "--adapter",
                &bin,
                "--",
                "serve",
                "--profile",
                profile,
            ])
            .assert()
            .success();
    }
}

/// `serve` skips blank lines (Unicode whitespace too), answers a line that is not
/// JSON (here not even UTF-8) with an `exception` error, and goes on.
#[test]
fn serve_answers_a_bad_line_and_goes_on() {
    let mut input = "\n  \r\n\u{b}\n\u{a0} \u{2029}\n".as_bytes().to_vec();
    input.extend_from_slice(b"{\"type\":\"request\",\"case\":\"\xff\"}\n");
    input.extend_from_slice(b"{\"type\":\"hello\"}\n{\"type\":\"bye\"}\n");
    let out = cli()
        .args(["serve", "--profile", "pi"])
        .stdin(input)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["error"]["kind"], "exception", "{text}");
    assert!(
        lines[0]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("not JSON"),
        "{text}"
    );
    assert_eq!(lines[1]["type"], "hello", "{text}");
}

#[test]
fn a_broken_adapter_fails_its_cases_with_a_status() {
    let out = cli()
        .args(["run", "--corpus", "../../corpus/cases", "--profile", "pi", "--format", "json", "--timeout", "2", "--adapter", "sh", "--", "-c", "read x; echo '{\"type\":\"hello\",\"implementation\":\"x\",\"version\":\"0\",\"profile\":\"pi\",\"operations\":[\"load\",\"context\",\"tree\",\"apply\",\"persist\"]}'; read y; echo garbage"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("\"status\":\"protocol-error\""), "{text}");
}

#[test]
fn committed_schemas_match_the_code() {
    let stale = session_conformance::schema::stale(std::path::Path::new("../../schemas"));
    assert!(
        stale.is_empty(),
        "stale schemas {stale:?}; run `cargo run -p session-conformance-cli -- schema --write`"
    );
}

#[test]
fn validate_reports_each_finding_with_its_line_and_exit_code() {
    cli().args(["validate", "tests/fixtures/small.jsonl", "tests/fixtures/omp-session.jsonl"]).assert().code(1).stdout_eq(
        "tests/fixtures/small.jsonl:3: error: not JSON; the line is skipped when loading\n  (profile omp, decided from the content)\n2 file(s), 1 error(s), 0 warning(s)\n",
    );
    cli().args(["validate", "--profile", "omp", "tests/fixtures/invalid.jsonl"]).assert().code(1).stdout_eq(
        "\
tests/fixtures/invalid.jsonl:1: warning: legacy version 2; loading migrates it (v2→v3) and rewrites the file (/version)
tests/fixtures/invalid.jsonl:3: error: not JSON; the line is skipped when loading
tests/fixtures/invalid.jsonl:4: error: duplicate id (first on line 2); the later entry wins [aaaa0001] (/id)
tests/fixtures/invalid.jsonl:4: error: message: \"message\" is a required property [aaaa0001] (/)
tests/fixtures/invalid.jsonl:4: error: parentId \"aaaa0009\" is not an entry of this session; the entry becomes a root [aaaa0001] (/parentId)
tests/fixtures/invalid.jsonl:5: warning: label on \"ghost\", which is not an entry of this session [aaaa0003] (/targetId)
1 file(s), 4 error(s), 2 warning(s)
",
    );
    cli()
        .args([
            "validate",
            "--profile",
            "pi",
            "tests/fixtures/omp-session.jsonl",
        ])
        .assert()
        .code(1);
    cli()
        .args(["validate", "tests/fixtures/nope.jsonl"])
        .assert()
        .code(2);
    let out = cli()
        .args(["validate", "--format", "json", "tests/fixtures/small.jsonl"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let last = String::from_utf8(out)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    assert_eq!(
        last,
        r#"{"type":"summary","files":1,"errors":1,"warnings":0}"#
    );
}

#[test]
fn validate_finds_no_errors_in_files_the_real_implementations_wrote() {
    for file in [
        "../../conformance/adapters/pi-mono/fixtures/real-session.jsonl",
        "../../conformance/adapters/omp/fixtures/real-session.jsonl",
    ] {
        cli().args(["validate", file]).assert().success();
    }
}

#[test]
fn schema_diff_classifies_and_fails_on_breaking_changes() {
    let out = cli()
        .args(["schema", "diff", "../../schemas/pi", "../../schemas/omp"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for expected in [
        "breaking: session_info.schema.json: schema removed",
        "narrowing: model_change.schema.json/model: required field added",
        "compatible: ttsr_injection.schema.json: schema added",
    ] {
        assert!(text.contains(expected), "{expected}\n{text}");
    }
    cli()
        .args(["schema", "diff", "../../schemas", "../../schemas"])
        .assert()
        .success()
        .stdout_eq("0 change(s), 0 breaking\n");
    cli()
        .args(["schema", "diff", "../../schemas/nope", "../../schemas"])
        .assert()
        .code(2);
}

#[test]
fn validate_covers_every_tree_finding() {
    let blobs = tempfile::tempdir().unwrap();
    let out = cli()
        .args(["validate", "--profile", "omp", "--blob-dir"])
        .arg(blobs.path())
        .arg("tests/fixtures/every-finding.jsonl")
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out)
        .unwrap()
        .replace(&blobs.path().display().to_string(), "<blobs>");
    let f = "tests/fixtures/every-finding.jsonl";
    for expected in [
        format!("{f}:1: error: entry before the session header; the header must be the first line [early]"),
        format!("{f}:3: error: not a JSON object; the line is skipped when loading"),
        format!("{f}:5: error: parentId chain returns to this entry (a cycle) [c1] (/parentId)"),
        format!("{f}:7: warning: firstKeptEntryId \"c1\" is not an ancestor of this compaction; nothing before it is kept [k] (/firstKeptEntryId)"),
        format!("{f}:8: warning: fromId \"gone\" is not an entry of this session [b] (/fromId)"),
        format!("{f}:9: error: a second session header; it is not part of the tree [s]"),
        format!("{f}:10: error: invalid blob reference \"blob:sha256:../x\"; expected blob:sha256:<64 lowercase hex digits> [img] (/message/content/0/data)"),
        format!("{f}:10: warning: blob {} is not in the blob store <blobs> [img] (/message/content/1/data)", "b".repeat(64)),
    ] {
        assert!(text.lines().any(|l| l == expected), "missing: {expected}\n{text}");
    }
}

#[test]
fn one_shot_mode_starts_the_adapter_per_case() {
    let bin = snapbox::cmd::cargo_bin!("session-conformance")
        .to_string_lossy()
        .into_owned();
    cli()
        .args([
            "run",
            "--corpus",
            "../../corpus/cases",
            "--profile",
            "omp",
            "--filter",
            "parse/*",
            "--one-shot",
            "--adapter",
            &bin,
            "--",
            "serve",
            "--profile",
            "omp",
        ])
        .assert()
        .success();
}

#[test]
fn tree_text_draws_branches() {
    let picture = std::fs::read_to_string("tests/fixtures/omp-session.tree.txt").unwrap();
    cli()
        .args([
            "tree",
            "tests/fixtures/omp-session.jsonl",
            "--profile",
            "omp",
        ])
        .assert()
        .success()
        .stdout_eq(picture);
}

#[test]
fn sessions_commands_read_a_store_and_name_what_is_missing() {
    let agent = "../../corpus/cases/store/resolve-ambiguous-prefix/input/agent";
    let base = [
        "sessions",
        "--agent-dir",
        agent,
        "--cwd",
        "/proj",
        "--profile",
        "pi",
    ];
    let run = |extra: &[&str]| {
        let out = cli()
            .args(base)
            .args(extra)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let resolved = run(&["resolve", "aaaa"]);
    assert!(
        resolved.contains("2 sessions start with \"aaaa\""),
        "{resolved}"
    );
    assert!(resolved.contains("--proj--/b.jsonl"), "{resolved}");
    let listed: serde_json::Value =
        serde_json::from_str(&run(&["list", "--all", "--full", "--format", "json"])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4);
    let shown = run(&["show", "cccc"]);
    assert!(
        shown.contains("session: cccc3333-0003 (cwd /other)"),
        "{shown}"
    );
    assert!(run(&["check"]).contains("0 error(s)"));
    cli()
        .args(base)
        .args(["show", "ffff"])
        .assert()
        .code(2)
        .stderr_eq("session-conformance: ffff: no session file or id prefix matches\n");
    cli()
        .args(base)
        .args(["check", "--dir", "no/such/dir"])
        .assert()
        .code(2)
        .stderr_eq("session-conformance: no/such/dir: no such directory\n");
}

#[test]
fn compaction_shows_the_plan_without_touching_the_file() {
    let file = "../../corpus/cases/planning/file-ops-turn-prefix-counted/input/session.jsonl";
    let before = std::fs::read(file).unwrap();
    cli()
        .args(["compaction", file, "--profile", "pi", "--context-window", "200", "--keep-recent-tokens", "30"])
        .assert()
        .success()
        .stdout_eq(snapbox::str![[r"
../../corpus/cases/planning/file-ops-turn-prefix-counted/input/session.jsonl (pi), 10 entries on the path
context: 0 tokens, window 200: compaction due
keep from: #6 e0000007 (message, assistant)
split turn, started at #3 e0000004 (message, user)
summarise: 3 messages
turn prefix: 3 messages
keep: 4 entries
tokens before: 0
read files: /history.md
modified files: /prefix.rs
request: summary prompt, 120 characters of conversation, maxTokens 13107
request: turnPrefix prompt, 85 characters of conversation, maxTokens 8192

"]]);
    let json = cli()
        .args([
            "compaction",
            file,
            "--profile",
            "omp",
            "--context-window",
            "200",
            "--format",
            "json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(value["pruning"]["prunedCount"], 0);
    assert_eq!(std::fs::read(file).unwrap(), before);
}

#[test]
fn run_with_a_filter_that_matches_no_case_exits_2() {
    cli()
        .args(["run", "--corpus", "../../corpus/cases", "--filter", "nothing/*"])
        .assert()
        .code(2)
        .stderr_eq(
            "session-conformance: --filter \"nothing/*\" matches no case of ../../corpus/cases (it matches `group/name`, e.g. `parse/*`, or an id)\n",
        );
}

/// Outside the repository, `schema` checks the schemas the binary carries and says they
/// are current (issue #40: it printed nothing); a `--dir` that is missing is named.
#[test]
fn schema_outside_the_repository_checks_the_built_in_schemas() {
    let dir = tempfile::tempdir().unwrap();
    cli()
        .current_dir(dir.path())
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .arg("schema")
        .assert()
        .success()
        .stdout_eq("[..]schemas: [..] schema(s), all current\n");
    cli()
        .current_dir(dir.path())
        .args(["schema", "--dir", "nowhere"])
        .assert()
        .code(2)
        .stderr_eq("session-conformance: nowhere: no schemas folder here; run from the repository root or pass --dir\n");
}

/// Every regular file under `dir`, by path relative to it.
fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// Installed with `cargo install`, the binary runs in an empty folder: no corpus/cases
/// there, so it unpacks the corpus it carries into its cache, once, even when two runs
/// start together; `--version` names that corpus.
#[test]
fn run_in_an_empty_directory_uses_the_built_in_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let cache = dir.path().join("cache");
    let version = session_conformance::bundle::embedded_version();
    let bin = snapbox::cmd::cargo_bin!("session-conformance");
    let together: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(bin)
                .current_dir(&empty)
                .env("XDG_CACHE_HOME", &cache)
                .env_remove("CI")
                .args([
                    "run",
                    "--filter",
                    "parse/*",
                    "--profile",
                    "pi",
                    "--color",
                    "never",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in together {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(&format!("\ncorpus: {version}\n")), "{text}");
    }
    let unpacked: Vec<_> = std::fs::read_dir(cache.join("session-conformance"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(unpacked.len(), 1, "{unpacked:?}");
    assert!(unpacked[0].starts_with("corpus-"), "{unpacked:?}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    cli()
        .current_dir(&empty)
        .env("XDG_CACHE_HOME", &cache)
        .args(["run", "--filter", "parse/*", "--profile", "omp"])
        .assert()
        .success();
    cli().arg("--version").assert().success().stdout_eq(format!(
        "session-conformance {} (corpus {version})\n",
        env!("CARGO_PKG_VERSION")
    ));
}

/// `corpus export` writes the repository's corpus and schemas byte for byte, and refuses
/// a folder that exists and is not empty.
#[test]
fn corpus_export_writes_the_repository_corpus_and_refuses_a_non_empty_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kit");
    cli()
        .args(["corpus", "export"])
        .arg(&out)
        .assert()
        .success();
    let repo = std::path::Path::new("../..");
    assert_eq!(
        files_under(&out.join("cases")),
        files_under(&repo.join("corpus/cases"))
    );
    assert_eq!(
        files_under(&out.join("schemas")),
        files_under(&repo.join("schemas"))
    );
    assert_eq!(
        std::fs::read(out.join("README.md")).unwrap(),
        std::fs::read(repo.join("corpus/README.md")).unwrap()
    );
    assert_eq!(
        files_under(&out).len(),
        files_under(&out.join("cases")).len() + files_under(&out.join("schemas")).len() + 1
    );
    let before = files_under(&out);
    cli()
        .args(["corpus", "export"])
        .arg(&out)
        .assert()
        .code(2)
        .stderr_eq(format!(
            "session-conformance: {}: exists and is not an empty folder; name a new or empty one\n",
            out.display()
        ));
    assert_eq!(files_under(&out), before);
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    cli().args(["corpus", "export"]).arg(&file).assert().code(2);
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    cli()
        .args(["corpus", "export"])
        .arg(&empty)
        .assert()
        .success();
    assert_eq!(files_under(&empty), before);
}

/// The JSON report's header names the corpus actually run: the repository's is the one
/// the binary carries; a corpus of two of its cases has another hash.
#[test]
fn the_json_report_names_the_corpus_it_ran() {
    let header = |corpus: &std::path::Path| {
        let out = cli()
            .args([
                "run",
                "--profile",
                "pi",
                "--format",
                "json",
                "--filter",
                "parse/*",
                "--corpus",
            ])
            .arg(corpus)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let first = String::from_utf8(out)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_owned();
        serde_json::from_str::<serde_json::Value>(&first).unwrap()
    };
    let version = session_conformance::bundle::embedded_version();
    let repo = header(std::path::Path::new("../../corpus/cases"));
    assert_eq!(repo["type"], "header");
    assert_eq!(
        repo["corpus"],
        serde_json::json!({"cases": version.cases, "sha256": version.sha256})
    );
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("cases");
    for (rel, bytes) in files_under(std::path::Path::new("../../corpus/cases/parse")) {
        let to = small.join("parse").join(&rel);
        if rel.starts_with("crlf-line-endings") || rel.starts_with("crlf-blank-lines") {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(to, bytes).unwrap();
        }
    }
    let two = header(&small);
    assert_eq!(two["corpus"]["cases"], 2, "{two}");
    assert_ne!(two["corpus"]["sha256"], repo["corpus"]["sha256"]);
    let computed = session_conformance::bundle::version_of(&small, 2).unwrap();
    assert_eq!(two["corpus"]["sha256"], computed.sha256);
}

#[test]
fn generate_says_where_it_wrote_and_how_many_cases() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    cli()
        .args(["generate", "--count", "3", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stderr_eq(format!(
            "session-conformance: 3 case(s) written to {}\n",
            out.join("generated").display()
        ));
    assert_eq!(std::fs::read_dir(out.join("generated")).unwrap().count(), 3);
}

#[test]
fn profile_values_are_listed_in_help() {
    for command in [&["validate", "--help"][..], &["sessions", "--help"]] {
        let out = cli()
            .args(command)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8(out).unwrap();
        for value in ["auto:", "pi:", "omp:", "operator:"] {
            assert!(text.contains(value), "{command:?} --help lacks {value}");
        }
    }
}

#[test]
fn a_fuzz_finding_gets_the_next_free_id_and_a_kebab_case_name() {
    let dir = tempfile::tempdir().unwrap();
    let bin = snapbox::cmd::cargo_bin!("session-conformance");
    cli()
        .args([
            "fuzz",
            "--profile",
            "pi",
            "--cases",
            "20",
            "--corpus",
            "../../corpus/cases",
        ])
        .arg("--out")
        .arg(dir.path())
        .args([
            "--adapter",
            "python3",
            "tests/fixtures/drop-last-message.py",
        ])
        .arg(bin)
        .args(["--", "serve", "--profile", "pi"])
        .assert()
        .code(1);
    let cases =
        session_conformance::corpus::load(std::path::Path::new("../../corpus/cases")).unwrap();
    let next = cases
        .iter()
        .map(|c| c.file.id)
        .filter(|&id| id < session_conformance_cli::fuzz::FIRST_ID)
        .max()
        .unwrap()
        + 1;
    let finding: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(finding.len(), 1);
    let name = finding[0].file_name().into_string().unwrap();
    assert!(name.starts_with("fuzz-pi-seed-1-case-"), "{name}");
    let case: serde_json::Value =
        serde_json::from_slice(&std::fs::read(finding[0].path().join("case.json")).unwrap())
            .unwrap();
    assert_eq!(case["id"], next);
    assert_eq!(case["name"], name.as_str());
}

#[test]
fn an_adapter_that_cannot_start_is_reported_in_a_sentence() {
    cli()
        .args(["run", "--corpus", "../../corpus/cases", "--filter", "parse/*", "--profile", "pi"])
        .args(["--adapter", "/nonexistent/adapter"])
        .assert()
        .code(2)
        .stderr_eq("session-conformance: the adapter did not start: cannot start /nonexistent/adapter: No such file or directory (os error 2)\n");
}

#[test]
fn context_at_an_unknown_leaf_is_the_context_at_the_last_entry_with_a_note() {
    let last = cli()
        .args(["context", SMALL, "--profile", "pi"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    cli()
        .args(["context", SMALL, "--profile", "pi", "--leaf", "deadbeef"])
        .assert()
        .success()
        .stdout_eq(last)
        .stderr_eq(format!(
            "session-conformance: {SMALL}: entry deadbeef not found; this is the context at the last entry, as buildSessionContext gives it\n"
        ));
}

#[test]
fn sessions_list_headers_say_what_each_view_shows_and_an_empty_list_names_its_folder() {
    let agent = "../../corpus/cases/store/resolve-ambiguous-prefix/input/agent";
    let list = |extra: &[&str]| {
        let out = cli()
            .args([
                "sessions",
                "--agent-dir",
                agent,
                "--cwd",
                "/proj",
                "--profile",
                "pi",
                "list",
            ])
            .args(extra)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let quick = list(&[]);
    assert!(quick.starts_with("ID "), "{quick}");
    assert!(
        quick
            .lines()
            .next()
            .unwrap()
            .contains("NAME (title or first prompt)"),
        "{quick}"
    );
    assert!(
        quick.lines().next().unwrap().ends_with("FILE MODIFIED"),
        "{quick}"
    );
    let full = list(&["--full"]);
    let head = full.lines().next().unwrap();
    assert!(
        head.contains("NAME (name, title or first message)"),
        "{full}"
    );
    assert!(head.ends_with("LAST MESSAGE (else created)"), "{full}");
    let empty = tempfile::tempdir().unwrap();
    let out = cli()
        .args([
            "sessions",
            "--cwd",
            "/proj",
            "--profile",
            "pi",
            "--agent-dir",
        ])
        .arg(empty.path())
        .arg("list")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("0 session(s)\n(none in "), "{out}");
    assert!(out.contains(&empty.path().display().to_string()), "{out}");
}

#[test]
fn load_context_and_tree_decide_the_profile_from_the_content_with_auto() {
    let omp = "tests/fixtures/omp-session.jsonl";
    let table: [&[&str]; 3] = [
        &["load", omp],
        &["context", omp],
        &["tree", omp, "--format", "json"],
    ];
    for args in table {
        let given = cli()
            .args(args)
            .args(["--profile", "omp"])
            .assert()
            .success();
        let expected = given.get_output().stdout.clone();
        cli()
            .args(args)
            .assert()
            .success()
            .stdout_eq(expected.clone());
        cli()
            .args(args)
            .args(["--profile", "auto"])
            .assert()
            .success()
            .stdout_eq(expected);
    }
    let help = cli()
        .args(["context", "--help"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let help = String::from_utf8(help).unwrap();
    for value in ["auto:", "pi:", "omp:", "operator:"] {
        assert!(help.contains(value), "context --help lacks {value}");
    }
}

/// `fuzz --expect` reads the list `run --expect` reads: a disagreement in a declared
/// category (here the durable `leaf` entries a port writes: `entry-type:leaf`; or the
/// `file-naming` tag every generated `apply` case carries) is looked past and counted on
/// stderr; with a list that declares another category, the same adapter is still a
/// finding.
#[test]
fn fuzz_looks_past_a_divergence_declared_by_category_and_reports_an_undeclared_one() {
    let dir = tempfile::tempdir().unwrap();
    let bin = snapbox::cmd::cargo_bin!("session-conformance");
    let fuzz = |list: &str, out: &str| {
        let expect = dir.path().join(format!("{out}.txt"));
        std::fs::write(&expect, list).unwrap();
        cli()
            .args(["fuzz", "--profile", "pi", "--cases", "12"])
            .args(["--corpus", "../../corpus/cases"])
            .arg("--out")
            .arg(dir.path().join(out))
            .arg("--expect")
            .arg(&expect)
            .args(["--adapter", "python3", "tests/fixtures/durable-leaf.py"])
            .arg(bin)
            .args(["--", "serve", "--profile", "pi"])
            .assert()
    };
    fuzz("entry-type:leaf writes a durable leaf entry\n", "by-entry-type")
        .code(0)
        .stdout_eq("12 generated case(s), no disagreement\n")
        .stderr_eq(
            "session-conformance: [..] disagreement(s) looked past as expected divergences:\n  [..] case(s): entry-type:leaf: writes a durable leaf entry\n",
        );
    fuzz("tag:file-naming names its files its own way\n", "by-tag")
        .code(0)
        .stdout_eq("12 generated case(s), no disagreement\n")
        .stderr_eq(
            "session-conformance: [..] disagreement(s) looked past as expected divergences:\n  [..] case(s): tag:file-naming: names its files its own way\n",
        );
    let finding = fuzz("tag:legacy-v1 v3 only\n", "undeclared")
        .code(1)
        .get_output()
        .stdout
        .clone();
    let finding = String::from_utf8(finding).unwrap();
    assert!(
        finding.starts_with("disagreement after "),
        "an undeclared divergence is a finding: {finding}"
    );
    assert!(finding.contains("\"leaf\""), "{finding}");
    assert!(!dir.path().join("by-entry-type").exists());
    assert_eq!(
        std::fs::read_dir(dir.path().join("undeclared"))
            .unwrap()
            .count(),
        1
    );
}

/// `validate` of a binary file says it is not a session file: one error for the file
/// (line 0), not one per line (#19 item 6).
#[test]
fn validate_of_a_binary_file_is_one_error_saying_it_is_not_a_session_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("image.jsonl");
    let mut binary: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
    binary.extend(b"\nmore\n");
    std::fs::write(&path, binary).unwrap();
    cli()
        .arg("validate")
        .arg(&path)
        .assert()
        .code(1)
        .stdout_eq(
            "[..]image.jsonl:0: error: not a session file: it holds binary data and no line of it is JSON\n  (profile [..], decided from the content)\n1 file(s), 1 error(s), 0 warning(s)\n",
        );
}

/// `load`, `context`, `tree` and `compaction` list the values of `--profile` in their
/// help, `auto` among them, as `validate` and `sessions` do (#19 item 6).
#[test]
fn profile_values_are_listed_in_the_help_of_load_context_tree_and_compaction() {
    for command in ["load", "context", "tree", "compaction"] {
        let out = cli()
            .args([command, "--help"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8(out).unwrap();
        for value in ["auto:", "pi:", "omp:", "operator:"] {
            assert!(text.contains(value), "{command} --help lacks {value}");
        }
    }
}

/// Issue #40: each failure shows its case's description, and a run with many failures
/// ends with them grouped by where they first differ.
#[test]
fn a_run_with_many_failures_shows_each_case_and_groups_them() {
    let adapter = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wrong-answers.py"
    );
    let out = cli()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "run",
            "--corpus",
            "../../corpus/cases",
            "--filter",
            "parse/*",
            "--profile",
            "pi",
        ])
        .args([
            "--jobs",
            "1",
            "--timeout",
            "20",
            "--adapter",
            "python3",
            adapter,
        ])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains("FAIL 0001 parse/blank-lines-between-entries at /response/ok/entries/0\n  case: Empty lines 2, 4 and 5 are skipped"),
        "{text}"
    );
    let groups = text
        .split("failures by where they first differ:\n")
        .nth(1)
        .expect("a grouped summary");
    assert!(groups.starts_with("  "), "{groups}");
    assert!(
        groups.contains(" at /response/ok/entries/* (parse/)\n"),
        "{groups}"
    );
}

/// Issue #41, third review: an adapter's answer of more JSON objects and arrays than the
/// limit is a protocol error of its case, refused before it becomes values; the run goes on.
#[test]
fn an_answer_of_too_many_values_fails_its_case_only() {
    let adapter = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wrong-answers.py"
    );
    let out = cli()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "run",
            "--corpus",
            "../../corpus/cases",
            "--filter",
            "parse/blank-*",
            "--profile",
            "pi",
        ])
        .args([
            "--jobs",
            "1",
            "--timeout",
            "30",
            "--adapter",
            "python3",
            adapter,
            "2000001",
        ])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains("JSON objects and arrays, more than the limit"),
        "{text}"
    );
}

/// Issue #41, third review: `corpus export` does not follow a link given with a
/// trailing `/`.
#[test]
fn corpus_export_refuses_a_link_with_a_trailing_slash() {
    let root = tempfile::tempdir().expect("dir");
    let target = root.path().join("target");
    std::fs::create_dir(&target).expect("folder");
    std::os::unix::fs::symlink(&target, root.path().join("link")).expect("link");
    cli()
        .arg("corpus")
        .arg("export")
        .arg(format!("{}/", root.path().join("link").display()))
        .assert()
        .failure();
    assert_eq!(std::fs::read_dir(&target).expect("target").count(), 0);
}

/// Issue #41, third review: a corpus another user planted under the cache's name (the
/// temp folder is shared) is not used; the run unpacks its own.
#[test]
fn a_cache_folder_of_another_user_is_not_used() {
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let root = tempfile::tempdir().expect("dir");
    let (xdg, home, empty) = (
        root.path().join("xdg"),
        root.path().join("home"),
        root.path().join("empty"),
    );
    for dir in [&xdg, &home, &empty] {
        std::fs::create_dir(dir).expect("folder");
    }
    let check = || {
        cli()
            .current_dir(&empty)
            .env("XDG_CACHE_HOME", &xdg)
            .env("HOME", &home)
            .args(["corpus", "check"])
            .assert()
            .get_output()
            .clone()
    };
    check();
    let cache = xdg.join("session-conformance");
    let name = std::fs::read_dir(&cache)
        .expect("the cache")
        .flatten()
        .map(|e| e.file_name())
        .find(|n| n.to_string_lossy().starts_with("corpus-"))
        .expect("an unpacked corpus");
    std::fs::remove_dir_all(cache.join(&name)).expect("removed");
    let planted = cache.join(&name).join("cases/g/planted");
    std::fs::create_dir_all(&planted).expect("folders");
    std::fs::write(planted.join("case.json"), "{}").expect("write");
    if is_root {
        let owned = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(cache.join(&name))
            .status()
            .expect("chown");
        assert!(owned.success());
    } else {
        // Another user's folder cannot be made without root (CI runs as root).
        return;
    }
    let out = check();
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("planted"), "{text}");
    assert!(text.contains(" cases, 0 problem(s)"), "{text}");
}
