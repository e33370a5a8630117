//! The CLI tests that need code. A test that runs one command and checks its stdout,
//! stderr and exit code is a case file in tests/cmd/ (run by tests/cmd.rs; see
//! tests/cmd/README.md). Each test left here needs logic a case file cannot hold:
//!
//! - `serve_answers_a_bad_line_and_goes_on`: its stdin holds a line that is not UTF-8,
//!   which a case file can give only with `binary = true`, and then stdout is compared
//!   byte for byte, without wildcards: the test would pin the version and the operations
//!   list of the hello line and serde_json's wording of the error.
//! - `committed_schemas_match_the_code`: runs no command; it compares schemas/ with the
//!   schemas the library generates.
//! - `run_in_an_empty_directory_uses_the_built_in_corpus`: starts two runs at the same time
//!   in an empty folder, then inspects the cache folder they share and checks the corpus
//!   version `--version` prints against the one the library embeds.
//! - `corpus_export_writes_the_repository_corpus_and_refuses_a_non_empty_folder`: compares
//!   the exported tree file by file with corpus/ and schemas/, then exports again into the
//!   same folder, a file and an empty folder and checks nothing changed.
//! - `the_json_report_names_the_corpus_it_ran`: builds a two-case corpus in a temp folder
//!   and checks the report's hash against the one the library computes for it.
//! - `generate_says_where_it_wrote_and_how_many_cases`: its message names a temp folder, and
//!   the test counts the cases written there.
//! - `a_fuzz_finding_gets_the_next_free_id_and_a_kebab_case_name`: the expected id is
//!   computed from the corpus, and the finding is read back from the folder it was written to.
//! - `fuzz_looks_past_a_divergence_declared_by_category_and_reports_an_undeclared_one`:
//!   writes divergence lists, runs fuzz three times and checks which findings folders exist.
//! - `validate_of_a_binary_file_is_one_error_saying_it_is_not_a_session_file`: its input,
//!   64 KiB of binary data, is generated.
//! - `corpus_export_refuses_a_link_with_a_trailing_slash`: makes a symbolic link and checks
//!   the folder it points to stays empty.
//! - `a_cache_folder_of_another_user_is_not_used`: plants a cache folder, hands it to
//!   another user with chown (as root only) and runs twice.

use snapbox::cmd::Command;

fn cli() -> Command {
    Command::new(snapbox::cmd::cargo_bin!("session-conformance")).env_remove("CI")
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
fn committed_schemas_match_the_code() {
    let stale = session_conformance::schema::stale(std::path::Path::new("../../schemas"));
    assert!(
        stale.is_empty(),
        "stale schemas {stale:?}; run `cargo run -p session-conformance-cli -- schema --write`"
    );
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

/// `corpus export` writes the repository's corpus, schemas and specification byte for
/// byte, its README and PROTOCOL.md with paths for the exported layout, and refuses a
/// folder that exists and is not empty.
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
    // The texts as the exported layout holds them: `corpus/cases/…` is `cases/…` there.
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    let protocol = std::fs::read_to_string(out.join("PROTOCOL.md")).unwrap();
    for (exported, source) in [
        (&readme, "corpus/README.md"),
        (&protocol, "conformance/PROTOCOL.md"),
    ] {
        let source = std::fs::read_to_string(repo.join(source)).unwrap();
        let (note, body) = exported.split_once('\n').unwrap();
        assert!(note.starts_with("<!-- Written by `session-conformance corpus export`"));
        assert_eq!(body.lines().count(), source.lines().count());
        assert!(!body.contains("corpus/README.md") && !body.contains("docs/spec/"));
    }
    assert_eq!(
        files_under(&out.join("spec")),
        files_under(&repo.join("docs/spec"))
    );
    assert_eq!(
        files_under(&out).len(),
        files_under(&out.join("cases")).len()
            + files_under(&out.join("schemas")).len()
            + files_under(&out.join("spec")).len()
            + 2
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
    let loaded = session_conformance::corpus::load(&small).unwrap();
    let computed = session_conformance::bundle::version_of(&small, &loaded).unwrap();
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
