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

/// `run` of case 0001 (`parse/blank-lines-between-entries`) against the wrong adapter,
/// which hangs on it; `list` is the `--expect` list, if any. Returns the run's exit
/// code, its stdout and how long it took.
fn run_hanging(
    format: &str,
    timeout: &str,
    list: Option<&std::path::Path>,
) -> (i32, String, std::time::Duration) {
    let adapter = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wrong-answers.py"
    );
    let mut command = cli()
        .args([
            "run",
            "--profile",
            "pi",
            "--filter",
            "0001",
            "--color",
            "never",
        ])
        .args(["--format", format, "--jobs", "1", "--timeout", timeout]);
    if let Some(list) = list {
        command = command.arg("--expect").arg(list);
    }
    let started = std::time::Instant::now();
    let output = command
        .args(["--adapter", "python3", adapter, "hang", "0001"])
        .output()
        .expect("the run");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code().unwrap_or(-1), stdout, took)
}

/// Issue #38: a case the list expects to time out (`## timeout`) is given about a
/// second, not `--timeout`'s 60: the run ends long before the full limit, and the case
/// is divergent as listed.
#[test]
fn a_listed_hang_is_cut_short_and_divergent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let list = dir.path().join("expected-divergences");
    std::fs::write(&list, "0001 hangs on purpose ## timeout\n").expect("written");
    let (code, stdout, took) = run_hanging("json", "60", Some(&list));
    assert_eq!(code, 0, "{stdout}");
    let record: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["type"] == "case")
        .expect("a case record");
    assert_eq!(record["status"], "divergent", "{record}");
    assert_eq!(record["signature"], "timeout", "{record}");
    let notes = record["notes"].to_string();
    assert!(notes.contains("expects this case to time out"), "{notes}");
    assert!(
        record["ms"].as_f64().is_some_and(|ms| ms < 30_000.0),
        "{record}"
    );
    assert!(took < std::time::Duration::from_secs(30), "took {took:?}");
}

/// Issue #38: a hang the list does not expect still gets the full `--timeout` (3 s),
/// fails the run, and the text report names it among the slowest cases.
#[test]
fn an_unlisted_hang_waits_the_full_timeout() {
    let (code, stdout, took) = run_hanging("text", "3", None);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("TIMEOUT 0001 parse/blank-lines-between-entries\n"),
        "{stdout}"
    );
    assert!(stdout.contains("no response within 3s"), "{stdout}");
    assert!(
        !stdout.contains("expects this case to time out"),
        "{stdout}"
    );
    let slowest = stdout
        .split("slowest 1 case(s):\n")
        .nth(1)
        .expect("the slowest cases");
    assert!(
        slowest.contains(" s  0001 parse/blank-lines-between-entries (pi, timeout)\n"),
        "{slowest}"
    );
    assert!(took >= std::time::Duration::from_secs(3), "took {took:?}");
}
