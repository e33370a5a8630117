//! `run --expect LIST --write-divergences` from the command line.

use snapbox::cmd::Command;

fn cli() -> Command {
    Command::new(snapbox::cmd::cargo_bin!("session-conformance"))
        .env_remove("CI")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A listed case that passes is an unexpected pass (exit 1); writing the divergences
/// removes its line and keeps comments and categories, and the run then passes.
#[test]
fn writing_divergences_removes_passing_ids_and_keeps_the_rest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let list = dir.path().join("expected-divergences");
    std::fs::write(
        &list,
        "# my port\n0024 reads CRLF differently\nmigrate/* v3 only\n",
    )
    .expect("written");
    let run = |write: bool| {
        let mut args = vec![
            "run",
            "--profile",
            "pi",
            "--filter",
            "parse/crlf-line-endings",
            "--color",
            "never",
            "--expect",
        ];
        args.push(list.to_str().expect("utf-8 path"));
        if write {
            args.push("--write-divergences");
        }
        cli().args(&args)
    };
    let output = run(false).assert().code(1).get_output().stdout.clone();
    let text = String::from_utf8_lossy(&output);
    assert!(
        text.contains("UNEXPECTED-PASS 0024 parse/crlf-line-endings"),
        "{text}"
    );
    let output = run(true).assert().code(1).get_output().stderr.clone();
    let text = String::from_utf8_lossy(&output);
    assert!(text.contains("1 passing id(s) removed (0024)"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&list).expect("read"),
        "# my port\nmigrate/* v3 only\n"
    );
    run(false).assert().success();
}

/// Issue #40: one run seeds a list. `--write-divergences` on a missing list makes it,
/// with every failure under the placeholder reason `UNREVIEWED`; the next run passes and
/// says how many reasons are still to write.
#[test]
fn writing_divergences_seeds_a_list_from_a_red_run() {
    let adapter = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wrong-answers.py"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let list = dir.path().join("new-divergences");
    let run = |write: bool| {
        let mut command = cli()
            .args([
                "run",
                "--profile",
                "pi",
                "--filter",
                "parse/blank-*",
                "--color",
                "never",
            ])
            .args(["--jobs", "1", "--timeout", "20", "--expect"])
            .arg(&list);
        if write {
            command = command.arg("--write-divergences");
        }
        command.args(["--adapter", "python3", adapter])
    };
    let seeded = run(true).assert().code(1).get_output().stderr.clone();
    let seeded = String::from_utf8_lossy(&seeded);
    assert!(
        seeded.contains("failure(s) added as UNREVIEWED"),
        "{seeded}"
    );
    let text = std::fs::read_to_string(&list).expect("the list is made");
    assert!(text.starts_with("0001 UNREVIEWED: say why"), "{text}");
    assert!(text.lines().all(|l| l.contains(" ## ")), "{text}");
    let out = run(false).assert().success().get_output().stdout.clone();
    let out = String::from_utf8_lossy(&out);
    assert!(out.contains("divergence(s) listed as UNREVIEWED"), "{out}");
}
