//! `session-conformance crash`: kill -9 trials find planted data-loss bugs in a toy
//! adapter (`tests/crash-adapters/toy.py`), pass the reference and the correct toy, and
//! survive adapters that lie, babble or hang.
#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Output};

const TOY: &str = "tests/crash-adapters/toy.py";

/// `crash` with small trials, failing cases written to `cases`.
fn crash(cases: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_session-conformance"))
        .env_remove("CI")
        .arg("crash")
        .args(["--appends", "60", "--v1-entries", "150", "--timeout", "20"])
        .arg("--cases")
        .arg(cases)
        .args(args)
        .output()
        .expect("run session-conformance")
}

/// `crash` against the toy adapter with `bug` planted (`none`: the correct toy).
fn toy(cases: &Path, bug: &str, args: &[&str]) -> Output {
    let mut all = vec!["--profile", "pi"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--adapter", "python3", TOY, "--", "--bug", bug]);
    crash(cases, &all)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn no_panic(out: &Output) {
    assert!(!stderr(out).contains("panicked"), "{}", stderr(out));
}

/// `crash` of the reference (both profiles) with `args`: it exits 0 without a panic and
/// loses and fuses nothing in either profile. Returns its report.
fn reference_passes(args: &[&str]) -> String {
    let cases = tempfile::tempdir().unwrap();
    let out = crash(cases.path(), args);
    no_panic(&out);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert_eq!(text.matches(", losses 0, fused 0,").count(), 2, "{text}");
    text
}

/// The case files written under `cases`, as values.
fn cases_in(cases: &Path) -> Vec<serde_json::Value> {
    let mut dirs: Vec<_> = std::fs::read_dir(cases)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let text = std::fs::read_to_string(d.join("case.json")).expect("case.json");
            serde_json::from_str(&text).expect("case.json is JSON")
        })
        .collect()
}

#[test]
fn the_reference_survives_kill_trials_in_both_profiles() {
    let text = reference_passes(&[
        "--trials",
        "4",
        "--seed",
        "11",
        "--expect",
        "../adapters/reference.crash-divergences",
    ]);
    assert_eq!(text.matches(" 0 failed, 0 skipped").count(), 2, "{text}");
}

#[test]
fn an_expected_divergence_list_names_known_kinds_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list");
    std::fs::write(&list, "# known\nstale_temp a reason\nlosts typo\n").unwrap();
    let out = toy(dir.path(), "none", &["--expect", list.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("list: line 3: unknown finding kind \"losts\""),
        "{}",
        stderr(&out)
    );
    // A planted loss stays a failure when the list names other kinds only.
    std::fs::write(&list, "stale_temp a reason\n").unwrap();
    let out = toy(
        dir.path(),
        "drop-last",
        &["--trials", "1", "--expect", list.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    // A kill that lands late (a loaded machine) lets the held-back entry reach the
    // branched file too: misplaced, or written there twice.
    std::fs::write(
        &list,
        "lost the toy holds its last entry back\nmisplaced a late kill: the held-back entry lands in the branched file\nduplicate a late kill: the held-back entry is written there twice\n",
    )
    .unwrap();
    let out = toy(
        dir.path(),
        "drop-last",
        &["--trials", "1", "--expect", list.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("2 divergent"), "{}", stdout(&out));
}

#[test]
fn the_correct_toy_adapter_passes() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(cases.path(), "none", &["--trials", "4"]);
    no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn an_adapter_that_acknowledges_before_writing_loses_data_and_is_caught() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(
        cases.path(),
        "ack-before-write",
        &["--trials", "4", "--seed", "3"],
    );
    no_panic(&out);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains(") is missing"), "{text}");
    let written = cases_in(cases.path());
    assert!(!written.is_empty(), "a failing trial is written as a case");
    for case in &written {
        assert_eq!(case["op"], "apply");
        // Shrunk to the steps that ran: the acknowledged ones and the one in progress.
        let steps = case["args"]["steps"].as_array().unwrap().len();
        let left_out = usize::try_from(case["crash"]["steps_left_out"].as_u64().unwrap()).unwrap();
        assert!(steps + left_out > 60, "{case}");
        let last_acked = case["crash"]["acknowledged"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["step"].as_u64())
            .max();
        let in_progress = usize::try_from(last_acked.map_or(0, |s| s + 1)).unwrap();
        assert!(steps == in_progress + 1 || left_out == 0, "{case}");
        assert!(case["crash"]["kill"]["after"].is_string());
        // Lost, or (pending writes that land after the createBranchedSession) written
        // to the branched file instead of their own.
        let losses = case["crash"]["findings"].as_array().unwrap();
        assert!(
            losses
                .iter()
                .any(|f| f["kind"] == "lost" || f["kind"] == "misplaced"),
            "{case}"
        );
        let rerun = case["crash"]["reproduce"].as_str().unwrap();
        assert!(
            rerun.contains("--seed 3") && rerun.contains("--trial "),
            "{rerun}"
        );
    }
}

#[test]
fn an_adapter_that_holds_back_its_last_entry_is_caught() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(cases.path(), "drop-last", &["--trials", "2"]);
    no_panic(&out);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // The calibration run is not killed, and still loses its last entry.
    assert!(text.contains("calibration (not killed"), "{text}");
    assert!(!text.contains(", losses 0,"), "{text}");
}

#[test]
fn a_torn_line_continued_on_reopen_is_reported_as_fused() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(cases.path(), "fuse", &["--trials", "10", "--seed", "2"]);
    no_panic(&out);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("two entries fused on one line"), "{text}");
    let case = cases_in(cases.path())
        .into_iter()
        .find(|c| c.to_string().contains("\"fused\""))
        .expect("a case with a fused line");
    assert!(case["crash"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "fused" && f["line"].is_u64()));
}

#[test]
fn lies_and_garbage_from_an_adapter_fail_trials_without_a_panic_or_a_read_outside() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(cases.path(), "junk", &["--trials", "3"]);
    no_panic(&out);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("the adapter named a path outside the trial directory: /etc/passwd"),
        "{text}"
    );
    assert!(
        text.contains("a line that is not an ack or the response"),
        "{text}"
    );
    // The calibration runs to the end, where the toy acknowledges a step the plan lacks.
    assert!(
        text.contains("step 1000000000 acknowledged, but the plan has"),
        "{text}"
    );
}

#[test]
fn an_adapter_without_ack_mode_is_refused() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(cases.path(), "no-ack", &["--trials", "2"]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no ack mode"), "{}", stderr(&out));
}

#[test]
fn an_adapter_that_never_says_hello_times_out() {
    let cases = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_session-conformance"))
        .args([
            "crash",
            "--profile",
            "pi",
            "--trials",
            "1",
            "--timeout",
            "1",
        ])
        .arg("--cases")
        .arg(cases.path())
        .args(["--adapter", "sh", "--", "-c", "sleep 30"])
        .output()
        .unwrap();
    no_panic(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no hello within 1 s"),
        "{}",
        stderr(&out)
    );
    assert!(started.elapsed().as_secs() < 20, "the wait has a deadline");
}

#[test]
fn the_same_seed_and_trial_rerun_the_same_plan_and_kill_point() {
    let first = tempfile::tempdir().unwrap();
    toy(
        first.path(),
        "ack-before-write",
        &["--trials", "3", "--seed", "9"],
    );
    let case = cases_in(first.path())
        .into_iter()
        .next()
        .expect("a failing trial");
    let trial = case["crash"]["trial"].as_u64().unwrap().to_string();
    let again = tempfile::tempdir().unwrap();
    toy(
        again.path(),
        "ack-before-write",
        &["--trials", "3", "--seed", "9", "--trial", &trial],
    );
    // The rerun may pass (a kill point's delay scales with the machine's timing), so the
    // plan is compared through `--keep`-free means: the case, when it fails again, or the
    // plan that `session_conformance_cli::crash::plan` builds for the same seed and trial.
    let rebuilt = {
        use session_conformance_cli::crash::plan::{build, kill_point, Rng};
        let mut rng = Rng::new(9, trial.parse().unwrap());
        let plan = build(
            &mut rng,
            session_conformance_cli::crash::Size {
                appends: 60,
                v1_entries: 150,
            },
        );
        let kill = kill_point(&mut rng, &plan);
        (serde_json::Value::from(plan.steps), kill.after.to_string())
    };
    // The case holds the plan's first steps (those that ran).
    let steps = case["args"]["steps"].as_array().unwrap();
    assert_eq!(steps[..], rebuilt.0.as_array().unwrap()[..steps.len()]);
    assert_eq!(case["crash"]["kill"]["after"], rebuilt.1.as_str());
    if let Some(rerun) = cases_in(again.path()).first() {
        let (a, b) = (
            rerun["args"]["steps"].as_array().unwrap(),
            case["args"]["steps"].as_array().unwrap(),
        );
        let n = a.len().min(b.len());
        assert_eq!(a[..n], b[..n]);
        assert_eq!(rerun["crash"]["kill"], {
            let mut kill = case["crash"]["kill"].clone();
            kill["delay_us"] = rerun["crash"]["kill"]["delay_us"].clone();
            kill
        });
    }
}

/// Power losses (`--power-loss`): what each toy leaves is found by the kind of finding
/// its bug causes; the correct toy passes.
#[test]
fn power_losses_find_writes_that_no_fsync_made_durable() {
    // bug, exit status, a finding kind that must be reported (None: none at all)
    let table = [
        ("none", 0, None),
        // A flush that syncs nothing: flushed entries are lost.
        ("no-fsync", 1, Some("lost")),
        // A temp file renamed over the session before it was synced: the session is
        // empty or partial, the old one gone.
        ("unsynced-rename", 1, Some("migration")),
    ];
    for (bug, status, kind) in table {
        let cases = tempfile::tempdir().unwrap();
        let out = toy(
            cases.path(),
            bug,
            &[
                "--power-loss",
                "--points",
                "10",
                "--trials",
                "4",
                "--seed",
                "3",
            ],
        );
        no_panic(&out);
        let text = stdout(&out);
        assert_eq!(
            out.status.code(),
            Some(status),
            "{bug}: {text}{}",
            stderr(&out)
        );
        assert!(
            text.contains("40 power loss(es) (10 a trial)"),
            "{bug}: {text}"
        );
        let written = cases_in(cases.path());
        assert_eq!(written.is_empty(), kind.is_none(), "{bug}: {text}");
        for case in &written {
            assert!(case["crash"]["power"]["after_calls"].is_u64(), "{case}");
            assert!(case["crash"]["kill"].is_null(), "{case}");
            let rerun = case["crash"]["reproduce"].as_str().unwrap();
            assert!(rerun.contains("--power-loss --points 10"), "{rerun}");
        }
        if let Some(kind) = kind {
            let found = written.iter().any(|case| {
                case["crash"]["findings"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f["kind"] == kind))
            });
            assert!(found, "{bug}: no {kind} finding in {written:?}");
        }
    }
}

#[test]
fn the_reference_survives_power_losses_in_both_profiles() {
    let text = reference_passes(&[
        "--power-loss",
        "--points",
        "8",
        "--trials",
        "3",
        "--seed",
        "5",
    ]);
    assert_eq!(text.matches("25 passed, 0 failed").count(), 2, "{text}");
}

#[test]
fn a_power_loss_run_needs_the_journal_capability() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(
        cases.path(),
        "no-journal",
        &["--power-loss", "--trials", "1"],
    );
    no_panic(&out);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("does not declare the `journal` capability"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_lying_journal_fails_its_trials_without_a_panic_or_a_write_outside() {
    let cases = tempfile::tempdir().unwrap();
    let out = toy(
        cases.path(),
        "junk",
        &["--power-loss", "--points", "4", "--trials", "1"],
    );
    no_panic(&out);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(
        text.contains("a journal line: `path` leads outside the case directory: /etc/passwd"),
        "{text}"
    );
    assert!(
        text.contains("the journal's files cannot be laid out"),
        "{text}"
    );
}
