//! `crash`: kill -9 trials against an implementation (`session_conformance_cli::crash`).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use session_conformance_cli::crash::{self, Config, Expected, Size, Summary, Trial};
use session_reference::model::Profile;

use super::{parse_profile, status, write_stdout, AdapterArgs, OutputFormat};

/// Kill an implementation with SIGKILL in the middle of a long `apply`, and check what
/// it left on disk with the reference.
///
/// Each trial opens a large v1 session file (a migration rewrite), then runs hundreds
/// of appends with periodic flushes, a branch, a branch summary and a
/// createBranchedSession, in ack mode: the adapter acknowledges the open and every step
/// as it returns (conformance/PROTOCOL.md "Ack mode"). The adapter's process group is
/// killed at a seeded moment; a second adapter process then reopens every session file
/// and appends. The checks: every acknowledged entry that was durable or followed by an
/// acknowledged flush is present and identical; each file has one header and parses;
/// a torn final line only if never acknowledged; no two entries fused on one line; the
/// migration rewrite left the old file or the complete new one; no temp file is left
/// after the later open. An ack out of place (a step twice, out of order, beyond the
/// plan or before the open, or malformed) fails the trial at once, naming its line.
///
/// The same `--seed` gives the same trials; a failing trial is written to `--cases` as a
/// case (its steps, kill point and findings, and the command that reruns it alone).
///
/// With `--power-loss`, nothing is killed: each trial runs to its end while the adapter
/// reports every file-system call the implementation makes (PROTOCOL.md "Journal"), and
/// the disk is rebuilt as a power loss could leave it at `--points` moments of the
/// trial: each file holds what its last fsync covered and any prefix of the bytes
/// written since (CRASH.md "Power loss"). Only entries followed by an acknowledged flush
/// are then promised; the other checks are the same.
///
/// Exit status: 0 when every trial passed, 1 when one failed, 2 when the adapter cannot
/// be run (no hello, no ack mode, no journal for `--power-loss`) or a file cannot be
/// written.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    adapter: AdapterArgs,
    /// Profile (pi or omp); default: both for the reference, required for an adapter.
    #[arg(long, value_parser = parse_crash_profile)]
    profile: Vec<Profile>,
    /// Trials to run.
    #[arg(long, default_value_t = 20)]
    trials: usize,
    /// Seed of the trials' plans and kill points.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run only trial K of the seed's sequence (what a case file's command does).
    #[arg(long, value_name = "K")]
    trial: Option<usize>,
    /// Seconds any one wait may take (a hello, a trial's apply, a reopen).
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Append steps per trial.
    #[arg(long, default_value_t = 300)]
    appends: usize,
    /// Entries of the v1 file each trial opens and migrates.
    #[arg(long, default_value_t = 2000)]
    v1_entries: usize,
    /// Where failing trials are written as cases.
    #[arg(long, default_value = "target/crash-cases")]
    cases: PathBuf,
    /// Keep every trial's directory (under the run's root: $SESSION_CONFORMANCE_WORK_DIR,
    /// else /dev/shm or the temp folder, in `sc-crash-*`).
    #[arg(long)]
    keep: bool,
    /// Known findings of this implementation: lines of `KIND reason` (KIND a finding kind:
    /// lost, misplaced, fused, stale_temp, …). A trial whose findings are all listed is
    /// divergent, not failed.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// Simulate power losses instead of kills (the adapter needs the `journal` capability).
    #[arg(long)]
    power_loss: bool,
    /// Moments per trial at which the power goes out (with --power-loss).
    #[arg(long, default_value_t = 10, value_name = "N")]
    points: usize,
    /// Report format: text, or JSON Lines (one record per trial, then a summary).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// `pi` or `omp`: the trials' calls are the camelCase ones (the operator dialect's differ).
fn parse_crash_profile(s: &str) -> Result<Profile, String> {
    match parse_profile(s)? {
        Profile::Operator => Err("crash runs the pi and omp profiles".into()),
        p => Ok(p),
    }
}

/// Runs `crash`.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let reference = args.adapter.is_reference();
    let profiles = args
        .adapter
        .profiles(&args.profile, &[Profile::Pi, Profile::Omp])?;
    let expected = match &args.expect {
        Some(path) => Expected::read(path).map_err(|e| e.to_string())?,
        None => Expected::default(),
    };
    let progress = std::io::stderr().is_terminal();
    let mut text = String::new();
    let mut failed = 0;
    for profile in profiles {
        let command = if reference {
            let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
            vec![
                exe.to_string_lossy().into_owned(),
                "serve".into(),
                "--profile".into(),
                profile.name().into(),
            ]
        } else {
            args.adapter.command()
        };
        let mut config = Config::new(command, profile);
        config.trials = args.trials;
        config.seed = args.seed;
        config.only_trial = args.trial;
        config.size = Size {
            appends: args.appends,
            v1_entries: args.v1_entries,
        };
        config.timeout = Duration::from_secs(args.timeout.max(1));
        config.cases_dir = Some(args.cases.clone());
        config.keep = args.keep;
        config.command_line = command_line(args, profile, reference);
        config.power_points = args.power_loss.then_some(args.points);
        let summary = crash::run(&config, |trial| {
            if progress {
                eprintln!("session-conformance: {}", trial_line(trial, &expected));
            }
        })
        .map_err(|e| e.to_string())?;
        failed += summary.failed(&expected);
        match args.format {
            OutputFormat::Text => text.push_str(&report_text(&summary, &config, &expected)),
            OutputFormat::Json => text.push_str(&report_json(&summary, &config, &expected)),
        }
    }
    write_stdout(&text)?;
    Ok(status(failed == 0))
}

/// The command that reruns these trials (a case file adds `--trial K`).
fn command_line(args: &Args, profile: Profile, reference: bool) -> String {
    let mut line = String::from("session-conformance crash");
    if !reference {
        line.push_str(" --adapter");
        for a in &args.adapter.adapter {
            let _ = write!(line, " {a}");
        }
    }
    let _ = write!(
        line,
        " --profile {} --seed {} --appends {} --v1-entries {} --timeout {}",
        profile.name(),
        args.seed,
        args.appends,
        args.v1_entries,
        args.timeout
    );
    if args.power_loss {
        let _ = write!(line, " --power-loss --points {}", args.points);
    }
    if !args.adapter.rest.is_empty() {
        let _ = write!(line, " -- {}", args.adapter.rest.join(" "));
    }
    line
}

fn trial_line(trial: &Trial, expected: &Expected) -> String {
    let name = trial
        .index
        .map_or("calibration".to_owned(), |i| format!("trial {i}"));
    let name = match trial.power {
        Some(p) => format!("{name}, power loss {}", p.point),
        None => name,
    };
    let kill = match (trial.kill, trial.power) {
        (_, Some(p)) => format!(
            "after {} of {} file-system calls, {} bytes unsynced",
            p.after_calls, p.calls, p.unsynced
        ),
        (Some(k), None) if trial.completed => format!("answered before its kill after {}", k.after),
        (Some(k), None) => format!(
            "killed {:.3} ms after {}",
            trial.delay.as_secs_f64() * 1000.0,
            k.after
        ),
        (None, None) => "not killed".to_owned(),
    };
    let verdict = if trial.passed() {
        "passed"
    } else if expected.covers(trial) {
        "divergent"
    } else {
        "FAILED"
    };
    format!("{name} ({kill}; {} acks): {verdict}", trial.acks)
}

/// Findings shown per failing trial in the text report.
const MAX_FINDINGS_SHOWN: usize = 12;

fn report_text(summary: &Summary, config: &Config, expected: &Expected) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "crash: {} {} (profile {}), seed {}, {} of {} appends over a v1 file of {} entries",
        summary.hello.implementation,
        summary.hello.version,
        config.profile.name(),
        config.seed,
        match config.power_points {
            Some(points) => format!("{} power loss(es) ({points} a trial)", summary.trials.len()),
            None => format!("{} trial(s)", summary.trials.len()),
        },
        config.size.appends,
        config.size.v1_entries
    );
    for trial in std::iter::once(&summary.calibration).chain(&summary.trials) {
        if trial.passed() {
            continue;
        }
        let _ = writeln!(out, "{}", trial_line(trial, expected));
        for finding in trial.findings.iter().take(MAX_FINDINGS_SHOWN) {
            let _ = writeln!(
                out,
                "  {}",
                session_conformance::guard::printable(&finding.to_string())
            );
        }
        if let Some(more) = trial.findings.len().checked_sub(MAX_FINDINGS_SHOWN) {
            if more > 0 {
                let _ = writeln!(out, "  … and {more} more (the case file lists them all)");
            }
        }
        if let Some(case) = &trial.case {
            let _ = writeln!(out, "  case: {}", case.display());
        }
    }
    let _ = writeln!(
        out,
        "acknowledged {}, checked {}, losses {}, fused {}, torn {}, second headers {}, stale temp files {}, {}",
        summary.total(|t| t.counts.acknowledged),
        summary.total(|t| t.counts.checked),
        summary.total(Trial::losses),
        summary.total(|t| t.count("fused")),
        summary.total(|t| t.counts.torn),
        summary.total(|t| t.count("second_header")),
        summary.total(|t| t.count("stale_temp")),
        match config.power_points {
            Some(_) => format!(
                "broken migrations {}",
                summary.total(|t| t.count("migration"))
            ),
            None => format!(
                "answered before the kill {}",
                summary.trials.iter().filter(|t| t.completed).count()
            ),
        },
    );
    let failed = summary.failed(expected);
    let divergent = summary.divergent(expected);
    if divergent > 0 {
        let _ = writeln!(
            out,
            "{divergent} divergent (every finding of a kind the --expect list gives a reason for)"
        );
    }
    let _ = writeln!(
        out,
        "{} passed, {failed} failed, 0 skipped",
        summary.trials.len() + 1 - failed - divergent
    );
    out
}

fn report_json(summary: &Summary, config: &Config, expected: &Expected) -> String {
    let mut out = String::new();
    for trial in std::iter::once(&summary.calibration).chain(&summary.trials) {
        let record = json!({
            "type": "trial", "profile": config.profile.name(), "trial": trial.index,
            "power": trial.power.map(|p| json!({"point": p.point, "after_calls": p.after_calls,
                "calls": p.calls, "unsynced_bytes": p.unsynced})),
            "kill": trial.kill.map(|k| json!({"after": k.after.to_string(), "fraction": k.fraction})),
            "delay_us": u64::try_from(trial.delay.as_micros()).unwrap_or(u64::MAX),
            "acks": trial.acks, "completed": trial.completed,
            "acknowledged": trial.counts.acknowledged, "checked": trial.counts.checked,
            "unflushed_missing": trial.counts.unflushed_missing, "torn": trial.counts.torn,
            "passed": trial.passed(), "divergent": expected.covers(trial),
            "findings": trial.findings.iter().map(|f| json!({
                "file": f.file, "line": f.line, "kind": f.kind.name(), "message": f.to_string()
            })).collect::<Vec<_>>(),
            "case": trial.case.as_ref().map(|c| c.to_string_lossy().into_owned()),
        });
        out.push_str(&record.to_string());
        out.push('\n');
    }
    let failed = summary.failed(expected);
    let divergent = summary.divergent(expected);
    let record = json!({
        "type": "summary", "implementation": summary.hello.implementation,
        "version": summary.hello.version, "profile": config.profile.name(),
        "seed": config.seed, "trials": summary.trials.len(),
        "power_loss": config.power_points.is_some(),
        "acknowledged": summary.total(|t| t.counts.acknowledged),
        "checked": summary.total(|t| t.counts.checked),
        "unflushed_missing": summary.total(|t| t.counts.unflushed_missing),
        "losses": summary.total(Trial::losses),
        "fused": summary.total(|t| t.count("fused")),
        "torn": summary.total(|t| t.counts.torn),
        "second_headers": summary.total(|t| t.count("second_header")),
        "stale_temps": summary.total(|t| t.count("stale_temp")),
        "migration": summary.total(|t| t.count("migration")),
        "completed_before_kill": summary.trials.iter().filter(|t| t.completed).count(),
        "passed": summary.trials.len() + 1 - failed - divergent, "failed": failed,
        "divergent": divergent, "misplaced": summary.total(|t| t.count("misplaced")),
    });
    out.push_str(&record.to_string());
    out.push('\n');
    out
}
