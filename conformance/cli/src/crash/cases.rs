//! A failing trial written as a case (`--cases`): its `case.json` (the steps that ran,
//! the kill point or power-loss point, the findings, the command that reruns it), its
//! v1 input, and the files it left.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_conformance::protocol::Hello;

use super::check;
use super::plan::Plan;
use super::process::Ack;
use super::results::Trial;
use super::{io_error, Config, CrashError};

/// Writes `files` (relative path, bytes) under `dir`, with the `sessions/` and `home/`
/// folders every trial directory has: every file that can be written, and the first
/// error (a journal can name `a` and `a/b`).
pub(super) fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), CrashError> {
    let mut first = Ok(());
    for sub in ["sessions", "home"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| io_error(dir, &e))?;
    }
    for (file, bytes) in files {
        let path = dir.join(file);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, bytes))
            .map_err(|e| io_error(&path, &e));
        if first.is_ok() {
            first = written;
        }
    }
    first
}

/// Writes a failing trial as a case: `case.json` (the steps that ran, the kill point,
/// the findings, the command that reruns it) and `input/session.jsonl` (the v1 file); the
/// caller adds `left/`, the session files as the kill or the power loss left them.
pub(super) fn write_case(
    cases: &Path,
    config: &Config,
    hello: &Hello,
    plan: &Plan,
    trial: &Trial,
    acks: &[Ack],
    index: usize,
) -> Result<PathBuf, CrashError> {
    let implementation: String = format!("{}-{}", hello.implementation, hello.version)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    let point = trial
        .power
        .map_or(String::new(), |p| format!("-power{}", p.point));
    let name = format!(
        "crash-{implementation}-{}-seed{}-trial{index}{point}",
        config.profile.name(),
        config.seed
    );
    let dir = cases.join(&name);
    let input = dir.join("input");
    std::fs::create_dir_all(&input).map_err(|e| io_error(&input, &e))?;
    let acked: Vec<Value> = acks
        .iter()
        .map(|a| json!({"step": a.step, "result": a.result, "durable": a.durable}))
        .collect();
    let kill = trial.kill.map_or(Value::Null, |k| {
        json!({"after": k.after.to_string(), "fraction": k.fraction,
               "delay_us": u64::try_from(trial.delay.as_micros()).unwrap_or(u64::MAX)})
    });
    let power = trial.power.map_or(Value::Null, |p| {
        json!({"point": p.point, "after_calls": p.after_calls, "calls": p.calls, "unsynced_bytes": p.unsynced})
    });
    let findings: Vec<Value> = trial
        .findings
        .iter()
        .map(|f| json!({"file": f.file, "line": f.line, "kind": f.kind.name(), "message": f.to_string()}))
        .collect();
    let what = match trial.power {
        Some(p) => format!(
            "power-loss point {} of trial {index}, seed {}: the power went out after {} of {} file-system calls, {} bytes unsynced",
            p.point, config.seed, p.after_calls, p.calls, p.unsynced
        ),
        None => format!(
            "kill -9 trial {index} of seed {}: killed {} µs after {}",
            config.seed,
            trial.delay.as_micros(),
            kill["after"].as_str().unwrap_or("-"),
        ),
    };
    // Shrunk to the steps that ran: those acknowledged and the one in progress.
    let ran = acks
        .iter()
        .filter_map(|a| a.step)
        .max()
        .map_or(1, |last| last + 2)
        .min(plan.steps.len());
    let ran = if trial.completed && trial.power.is_none() {
        plan.steps.len()
    } else {
        ran
    };
    let case = json!({
        "name": name,
        "description": format!(
            "{what}; {} acknowledgement(s) read; {}",
            trial.acks,
            trial.findings.first().map(ToString::to_string).unwrap_or_default()
        ),
        "profiles": [config.profile.name()],
        "op": "apply",
        "args": {"open": check::MAIN_FILE, "cwd": "/proj", "steps": plan.steps[..ran]},
        "crash": {
            "seed": config.seed, "trial": index, "kill": kill, "power": power, "completed": trial.completed,
            "steps_left_out": plan.steps.len() - ran,
            "acknowledged": acked, "findings": findings,
            "reproduce": format!("{} --trial {index}", config.command_line),
        },
    });
    let path = dir.join("case.json");
    std::fs::write(&path, session_conformance::canonical::canonical(&case))
        .map_err(|e| io_error(&path, &e))?;
    let v1 = input.join(check::MAIN_FILE);
    std::fs::write(&v1, &plan.v1).map_err(|e| io_error(&v1, &e))?;
    Ok(dir)
}
