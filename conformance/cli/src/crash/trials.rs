//! Running the trials: the calibration run, then each kill trial (its `apply` killed at
//! its kill point) or power-loss trial (run to the end with a journal, then the disk
//! rebuilt at seeded moments), each checked, reopened by a later adapter process and
//! checked again, and the failing ones written as cases.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use session_conformance::answers;
use session_conformance::protocol::Hello;

use super::cases::{write_case, write_files};
use super::check::{self, Counts, Finding, FindingKind};
use super::drive::{adapter_findings, drive, End, Outcome, Request, Timeline};
use super::plan::{self, KillPoint, Plan};
use super::power;
use super::process::{Ack, Event, Process};
use super::results::{PowerPoint, Summary, Trial};
use super::{io_error, Config, CrashError};

/// Runs a crash run: the calibration, then the trials; `progress` sees each trial as it ends.
pub fn run(config: &Config, mut progress: impl FnMut(&Trial)) -> Result<Summary, CrashError> {
    let root = tempfile::Builder::new()
        .prefix("sc-crash-")
        .tempdir_in(session_conformance::runner::work_root())
        .map_err(|e| io_error(session_conformance::runner::work_root(), &e))?;
    let root_path = root
        .path()
        .canonicalize()
        .unwrap_or(root.path().to_path_buf());
    let tmp = root_path.join("tmp");
    std::fs::create_dir_all(&tmp).map_err(|e| io_error(&tmp, &e))?;
    let mut run = Run {
        config,
        root: root_path,
        tmp,
        reopener: None,
        spare: None,
    };
    let (calibration, timeline, hello) = run.calibrate()?;
    if config.power_points.is_some()
        && !hello.has(&session_conformance::protocol::Capability::Journal)
    {
        return Err(CrashError::NoJournal {
            implementation: format!("{} {}", hello.implementation, hello.version),
        });
    }
    let indices: Vec<usize> = match config.only_trial {
        Some(k) => vec![k],
        None => (0..config.trials).collect(),
    };
    let mut trials = Vec::with_capacity(indices.len());
    for (i, &index) in indices.iter().enumerate() {
        let mut rng = plan::Rng::new(config.seed, index as u64);
        let plan = plan::build(&mut rng, config.size);
        if let Some(points) = config.power_points {
            for trial in run.power_trial(index, &plan, points, i + 1 < indices.len())? {
                progress(&trial);
                trials.push(trial);
            }
            continue;
        }
        let kill = plan::kill_point(&mut rng, &plan);
        let delay = timeline.gap(kill.after).mul_f64(kill.fraction);
        let (trial, _, _) = run.trial(
            Some(index),
            &plan,
            Some((kill, delay)),
            i + 1 < indices.len(),
        )?;
        progress(&trial);
        trials.push(trial);
    }
    if let Some(reopener) = run.reopener.take() {
        reopener.stop();
    }
    if let Some(spare) = run.spare.take() {
        // Started for a trial that did not come (no trials): stopped as it is dropped.
        let _ = spare.join();
    }
    if config.keep {
        let _ = root.keep();
    }
    Ok(Summary {
        hello,
        calibration,
        trials,
    })
}

/// The state of a run between trials.
struct Run<'a> {
    config: &'a Config,
    root: PathBuf,
    tmp: PathBuf,
    /// The adapter that reopens files after a kill (kept across trials).
    reopener: Option<Process>,
    /// The next trial's adapter, started while this one is checked.
    spare: Option<JoinHandle<Result<(Process, Hello), CrashError>>>,
}

impl Run<'_> {
    fn start(&self) -> Result<(Process, Hello), CrashError> {
        Process::start(
            &self.config.argv,
            self.config.profile.name(),
            &self.tmp,
            self.config.timeout,
        )
    }

    fn start_spare(&mut self) {
        let (argv, profile, tmp, timeout) = (
            self.config.argv.clone(),
            self.config.profile.name(),
            self.tmp.clone(),
            self.config.timeout,
        );
        self.spare = Some(std::thread::spawn(move || {
            Process::start(&argv, profile, &tmp, timeout)
        }));
    }

    fn take_process(&mut self) -> Result<(Process, Hello), CrashError> {
        match self.spare.take() {
            Some(handle) => handle.join().unwrap_or_else(|_| self.start()),
            None => self.start(),
        }
    }

    fn calibrate(&mut self) -> Result<(Trial, Timeline, Hello), CrashError> {
        let mut rng = plan::Rng::new(self.config.seed, u64::MAX);
        let plan = plan::build(&mut rng, self.config.size);
        let (trial, timeline, hello) = self.trial(None, &plan, None, true)?;
        if trial.acks == 0 {
            let message = trial
                .findings
                .iter()
                .find(|f| matches!(f.kind, FindingKind::Adapter { .. }))
                .map(ToString::to_string);
            return Err(match message {
                Some(message) if !trial.completed => CrashError::Calibration { message },
                _ => CrashError::NoAcks {
                    implementation: format!("{} {}", hello.implementation, hello.version),
                },
            });
        }
        Ok((trial, timeline, hello))
    }

    /// The directory of trial `name`: `sessions/`, `home/` and the plan's v1 file.
    fn prepare(&self, name: &str, plan: &Plan) -> Result<PathBuf, CrashError> {
        let dir = self.root.join(name);
        for sub in ["sessions", "home"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| io_error(&dir, &e))?;
        }
        let main = dir.join(check::MAIN_FILE);
        std::fs::write(&main, &plan.v1).map_err(|e| io_error(&main, &e))?;
        Ok(dir)
    }

    /// Starts the trial's adapter (the spare one, when ready) and the next one's spare.
    fn process_for(&mut self, more: bool) -> Result<(Process, Hello), CrashError> {
        let started = self.take_process()?;
        if more {
            self.start_spare();
        }
        Ok(started)
    }

    /// Runs trial `name`'s `apply` in a fresh directory with the next adapter: open the
    /// v1 file and run the plan's steps in ack mode (with a journal for a power-loss
    /// trial), killed at `kill`. Returns the directory, what the adapter said, what was
    /// wrong with the adapter itself, and its hello.
    fn apply(
        &mut self,
        name: &str,
        plan: &Plan,
        kill: Option<(KillPoint, Duration)>,
        journal: bool,
        more: bool,
    ) -> Result<(PathBuf, Outcome, Vec<Finding>, Hello), CrashError> {
        let dir = self.prepare(name, plan)?;
        let (mut process, hello) = self.process_for(more)?;
        let case = format!("crash-{name}");
        let mut args =
            json!({"open": check::MAIN_FILE, "cwd": "/proj", "steps": plan.steps, "ack": true});
        if journal {
            args["journal"] = Value::Bool(true);
        }
        let request = json!({
            "type": "request", "case": case, "op": "apply",
            "profile": self.config.profile.name(), "dir": dir.to_string_lossy(),
            "args": args,
        });
        let outcome = drive(
            &mut process,
            &Request {
                case: &case,
                value: &request,
                kinds: &plan.kinds,
                dir: &dir,
            },
            kill,
            self.config.timeout,
        );
        let stderr = process.stderr_tail();
        drop(process);
        let findings = adapter_findings(&outcome, &stderr, self.config.timeout);
        Ok((dir, outcome, findings, hello))
    }

    /// Runs one trial (`index` `None`: the calibration, not killed).
    fn trial(
        &mut self,
        index: Option<usize>,
        plan: &Plan,
        kill: Option<(KillPoint, Duration)>,
        more: bool,
    ) -> Result<(Trial, Timeline, Hello), CrashError> {
        let name = index.map_or("calibration".to_owned(), |i| format!("trial-{i}"));
        let (dir, outcome, mut findings, hello) = self.apply(&name, plan, kill, false, more)?;
        // What the kill left, for the case file of a failing trial.
        let left: Vec<(String, Vec<u8>)> = check::session_files(&dir)
            .into_iter()
            .filter_map(|f| check::read(&dir.join(&f)).map(|b| (f, b)))
            .collect();
        let promises = check::promises(plan, &outcome.acks, &dir, false);
        let (checked, counts) = self.verify(&dir, plan, &promises);
        findings.extend(checked);
        let mut trial = Trial {
            index,
            kill: kill.map(|(k, _)| k),
            delay: kill.map_or(Duration::ZERO, |(_, d)| d),
            acks: outcome.acks.len(),
            completed: matches!(outcome.end, End::Answered(_)),
            counts,
            findings,
            case: None,
            power: None,
        };
        if let Some(index) = index {
            trial.case = self.keep_case(&hello, plan, &trial, &outcome.acks, &left, index)?;
        }
        if !self.config.keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
        Ok((trial, outcome.timeline, hello))
    }

    /// Runs trial `index` to its end with a journal, then checks the disk at `points`
    /// moments the power could have gone out (`power`): one [`Trial`] per moment.
    fn power_trial(
        &mut self,
        index: usize,
        plan: &Plan,
        points: usize,
        more: bool,
    ) -> Result<Vec<Trial>, CrashError> {
        let name = format!("trial-{index}");
        let (dir, outcome, mut first, hello) = self.apply(&name, plan, None, true, more)?;
        let calls = outcome.journal.len();
        let mut rng = plan::Rng::new(self.config.seed ^ POWER_SALT, index as u64);
        let mut out = Vec::with_capacity(points);
        for point in 0..points {
            let after = power::moment(&mut rng, &outcome.journal, outcome.acks.len());
            let mut disk = power::Disk::new(&[(check::MAIN_FILE.to_owned(), plan.v1.clone())]);
            for (op, _) in &outcome.journal[..after] {
                disk.apply(op);
            }
            // Acks written before the next call: their calls had returned.
            let acked = outcome
                .journal
                .get(after)
                .map_or(outcome.acks.len(), |(_, n)| *n);
            let unsynced = disk.unsynced();
            let left = disk.after_power_loss(&mut rng);
            let here = self.root.join(format!("{name}-power-{point}"));
            // Paths in acks name the run's directory; the promises hold them relative.
            let promises = check::promises(plan, &outcome.acks[..acked], &dir, true);
            let mut findings = std::mem::take(&mut first);
            let counts = match write_files(&here, &left) {
                Ok(()) => {
                    let (checked, counts) = self.verify(&here, plan, &promises);
                    findings.extend(checked);
                    counts
                }
                // A journal whose names cannot all be files (`a` and `a/b`).
                Err(e) => {
                    findings.push(Finding {
                        file: String::new(),
                        line: None,
                        kind: FindingKind::Adapter {
                            reason: format!("the journal's files cannot be laid out: {e}"),
                        },
                    });
                    Counts::default()
                }
            };
            let mut trial = Trial {
                index: Some(index),
                kill: None,
                delay: Duration::ZERO,
                acks: acked,
                completed: matches!(outcome.end, End::Answered(_)),
                counts,
                findings,
                case: None,
                power: Some(PowerPoint {
                    point,
                    after_calls: after,
                    calls,
                    unsynced,
                }),
            };
            trial.case =
                self.keep_case(&hello, plan, &trial, &outcome.acks[..acked], &left, index)?;
            if !self.config.keep {
                let _ = std::fs::remove_dir_all(&here);
            }
            out.push(trial);
        }
        if !self.config.keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
        Ok(out)
    }

    /// Checks the session files of `dir` against `promises`, reopens each of them with
    /// a later adapter process, and checks again, temp files included.
    fn verify(
        &mut self,
        dir: &Path,
        plan: &Plan,
        promises: &check::Promises,
    ) -> (Vec<Finding>, Counts) {
        let mut allowed = HashSet::new();
        let (mut findings, counts) =
            check::check(dir, self.config.profile, plan, promises, &mut allowed);
        let mut after = promises.clone();
        after.findings.clear();
        // The branched session too where the implementation put it elsewhere (omp 18
        // writes it under its agent directory, not the session directory it was given).
        let mut files = check::session_files(dir);
        let branched = promises.branched.as_ref().map(|b| b.0.clone());
        if let Some(file) = &branched {
            if !files.contains(file) && check::read(&dir.join(file)).is_some() {
                files.push(file.clone());
            }
        }
        for file in files {
            match self.reopen(dir, &file) {
                Ok(ids) => {
                    if file == check::MAIN_FILE {
                        after.open_checked = true;
                    }
                    let steps = plan::reopen_steps(&format!("reopen {file}"));
                    for (n, id) in ids.into_iter().enumerate() {
                        after.entries.push(check::Expected {
                            id,
                            step: plan.steps.len() + n,
                            file: file.clone(),
                            checked: true,
                            entry: None,
                            entry_type: "message",
                            fields: vec![("message".into(), steps[n]["message"].clone())],
                        });
                    }
                }
                Err(reason) => findings.push(Finding {
                    file: file.clone(),
                    line: None,
                    kind: FindingKind::Adapter { reason },
                }),
            }
        }
        let (second, _) = check::check(dir, self.config.profile, plan, &after, &mut allowed);
        for f in second
            .into_iter()
            .chain(check::stale_temps(dir, branched.as_deref()))
        {
            if !findings.contains(&f) {
                findings.push(f);
            }
        }
        (findings, counts)
    }

    /// Writes a failing trial's case (with `left`, the files it was checked on) when
    /// the run writes cases; its folder.
    fn keep_case(
        &self,
        hello: &Hello,
        plan: &Plan,
        trial: &Trial,
        acks: &[Ack],
        left: &[(String, Vec<u8>)],
        index: usize,
    ) -> Result<Option<PathBuf>, CrashError> {
        let Some(cases) = self.config.cases_dir.as_ref().filter(|_| !trial.passed()) else {
            return Ok(None);
        };
        let case = write_case(cases, self.config, hello, plan, trial, acks, index)?;
        // What can be written of them (the trial's findings say why not the rest).
        let _ = write_files(&case.join("left"), left);
        Ok(Some(case))
    }

    /// Reopens `file` of `dir` with the reopening adapter: two appends and a flush.
    /// Returns the two entry ids, or why not.
    fn reopen(&mut self, dir: &Path, file: &str) -> Result<Vec<String>, String> {
        let mut process = match self.reopener.take() {
            Some(p) => p,
            None => self.start().map(|(p, _)| p).map_err(|e| e.to_string())?,
        };
        let case = format!("reopen-{file}");
        let request = json!({
            "type": "request", "case": case, "op": "apply",
            "profile": self.config.profile.name(), "dir": dir.to_string_lossy(),
            "args": {"open": file, "cwd": "/proj", "steps": plan::reopen_steps(&format!("reopen {file}"))},
        });
        process.send(serde_json::to_vec(&request).unwrap_or_default());
        let deadline = Instant::now() + self.config.timeout;
        loop {
            match process.next(&case, deadline) {
                Event::Response(Ok(ok)) => {
                    self.reopener = Some(process);
                    let results = ok["results"].as_array().cloned().unwrap_or_default();
                    let ids: Vec<String> = results
                        .iter()
                        .take(2)
                        .filter_map(|r| r.as_str().map(str::to_owned))
                        .collect();
                    if ids.len() < 2 {
                        return Err(format!(
                            "the later open appended no entries: {}",
                            Value::Array(results)
                        ));
                    }
                    return Ok(ids);
                }
                Event::Response(Err(e)) => {
                    self.reopener = Some(process);
                    return Err(format!("the later open failed: {e}"));
                }
                Event::Ack(_) | Event::BadAck(_) | Event::Fs(_) | Event::Junk(_) => {}
                Event::Eof => {
                    return Err(format!(
                        "it closed its stdout in the later open{}",
                        process.stderr_tail()
                    ))
                }
                Event::Exited(status) => {
                    return Err(format!(
                        "it exited with {} in the later open{}",
                        answers::describe_exit(status),
                        process.stderr_tail()
                    ))
                }
                Event::Timeout => return Err("no answer to the later open".into()),
            }
        }
    }
}

/// Mixed into the seed for the power-loss points, so that a trial's plan is the same
/// with and without `--power-loss`.
const POWER_SALT: u64 = 0x706f_7765_725f_6c6f;
