//! Kill -9 trials (`session-conformance crash`, issue #24 item 2): what survives when an
//! implementation is killed in the middle of a long `apply`.
//!
//! A trial:
//! 1. writes a large v1 session file (`plan`) in a fresh directory under the run's root;
//! 2. starts the adapter, sends an `apply` in ack mode (`PROTOCOL.md` "Ack mode"): it
//!    opens the v1 file (a migration rewrite), then runs hundreds of appends with
//!    periodic flushes, a branch, a branch summary and a createBranchedSession, and
//!    acknowledges the open and each step as it returns;
//! 3. kills the adapter's process group with SIGKILL at the trial's kill point (a seeded
//!    anchor, "after the ack of step N", plus a seeded fraction of the time the
//!    calibration run took to its next line);
//! 4. reads every acknowledgement the adapter managed to write, and checks the files with
//!    the reference (`check`);
//! 5. reopens each session file with a second adapter process (a later open: a user and
//!    an assistant message, a flush), and checks again, temp files included.
//!
//! A calibration run first runs the same kind of plan without a kill: it measures the
//! times the kill points are drawn over and proves the adapter acknowledges.
//!
//! Invariants: every wait has a deadline; nothing the adapter writes or leaves can make
//! the command panic; the adapter's scratch directory (`TMPDIR`) and every file read are
//! inside the run's root; the same `--seed` and trial number give the same plan and kill
//! point (the delay in microseconds scales with the calibration's timing).

pub mod acks;
pub mod check;
pub mod plan;
pub mod power;
pub mod process;

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use session_reference::model::Profile;

use acks::{AckError, Ledger};
pub use check::{Counts, Finding, FindingKind};
pub use plan::{Anchor, KillPoint, Plan, Size, StepKind};
use process::{Ack, Event, Process};

use session_conformance::answers;
use session_conformance::protocol::Hello;

/// What a crash run does.
#[derive(Debug, Clone)]
pub struct Config {
    /// The adapter command (no shell).
    pub argv: Vec<String>,
    /// The profile under test.
    pub profile: Profile,
    /// Trials to run (numbered from 0).
    pub trials: usize,
    /// The seed of every plan and kill point.
    pub seed: u64,
    /// Run only this trial of the seed's sequence (`--trial`).
    pub only_trial: Option<usize>,
    /// How big each trial is.
    pub size: Size,
    /// The longest wait for any one thing (a hello, the calibration run, a trial's
    /// `apply`, a reopen).
    pub timeout: Duration,
    /// Where failing trials are written as cases (`None`: not written).
    pub cases_dir: Option<PathBuf>,
    /// Keep every trial's directory (under the run's root, which is then kept too).
    pub keep: bool,
    /// The command line that reproduces a trial, without `--trial` (for case files).
    pub command_line: String,
    /// Simulated power loss instead of kills (`--power-loss`): each trial runs to the
    /// end with a journal, then is checked at this many moments the power went out.
    pub power_points: Option<usize>,
}

impl Config {
    /// Defaults for `argv` and `profile`: 20 trials of seed 1, 300 appends over a v1
    /// file of 2,000 entries, 60 s waits, no case files.
    pub fn new(argv: Vec<String>, profile: Profile) -> Config {
        Config {
            argv,
            profile,
            trials: 20,
            seed: 1,
            only_trial: None,
            size: Size {
                appends: 300,
                v1_entries: 2000,
            },
            timeout: Duration::from_mins(1),
            cases_dir: None,
            keep: false,
            command_line: String::new(),
            power_points: None,
        }
    }
}

/// Why a crash run could not run (a failing trial is not an error: it is a finding).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CrashError {
    /// The adapter could not be started.
    Start {
        /// The command.
        command: String,
        /// The system's reason.
        message: String,
    },
    /// The adapter gave no usable hello.
    Hello {
        /// The command.
        command: String,
        /// What happened (with its stderr's tail).
        message: String,
    },
    /// The calibration run's `apply` was answered without a single acknowledgement.
    NoAcks {
        /// The implementation (from its hello).
        implementation: String,
    },
    /// A power-loss run (`--power-loss`) against an adapter without a journal.
    NoJournal {
        /// The implementation (from its hello).
        implementation: String,
    },
    /// The calibration run did not finish.
    Calibration {
        /// What happened.
        message: String,
    },
    /// An expected-divergence list (`--expect`) has a bad line.
    Expect {
        /// The list.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A file or folder of the run could not be made or written.
    Io {
        /// The path.
        path: PathBuf,
        /// The system's reason.
        message: String,
    },
}

impl fmt::Display for CrashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CrashError::Start { command, message } => {
                write!(f, "cannot start adapter `{command}`: {message}")
            }
            CrashError::Hello { command, message } => {
                write!(f, "adapter `{command}`: {message}")
            }
            CrashError::NoAcks { implementation } => write!(
                f,
                "{implementation} answered the calibration apply without acknowledgements; the adapter has no ack mode (PROTOCOL.md \"Ack mode\")"
            ),
            CrashError::NoJournal { implementation } => write!(
                f,
                "{implementation} does not declare the `journal` capability: it cannot report its file-system calls, so a power loss cannot be simulated (PROTOCOL.md \"Journal\")"
            ),
            CrashError::Calibration { message } => {
                write!(f, "the calibration run failed: {message}")
            }
            CrashError::Expect {
                path,
                line,
                message,
            } => write!(f, "{}: line {line}: {message}", path.display()),
            CrashError::Io { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for CrashError {}

/// One trial's outcome.
#[derive(Debug, Clone)]
pub struct Trial {
    /// Its number in the seed's sequence (`None` for the calibration run).
    pub index: Option<usize>,
    /// Where it was to be killed (`None`: not killed).
    pub kill: Option<KillPoint>,
    /// The delay after the anchor.
    pub delay: Duration,
    /// Acknowledgements received (the open and steps).
    pub acks: usize,
    /// The `apply` answered before the kill.
    pub completed: bool,
    /// Counts of the check.
    pub counts: Counts,
    /// What is wrong (empty: the trial passed).
    pub findings: Vec<Finding>,
    /// The case file written for it, if it failed.
    pub case: Option<PathBuf>,
    /// Where the power went out, for a power-loss trial.
    pub power: Option<PowerPoint>,
}

/// The moment a power-loss trial's power went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PowerPoint {
    /// Its number among the run's points.
    pub point: usize,
    /// File-system calls made before it.
    pub after_calls: usize,
    /// File-system calls of the whole run.
    pub calls: usize,
    /// Bytes written but not synced at that moment (any prefix of them survives).
    pub unsynced: usize,
}

impl Trial {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }

    /// Findings of `kind`'s name.
    pub fn count(&self, name: &str) -> usize {
        self.findings
            .iter()
            .filter(|f| f.kind.name() == name)
            .count()
    }

    /// Findings that lose acknowledged data.
    pub fn losses(&self) -> usize {
        self.findings.iter().filter(|f| f.kind.is_loss()).count()
    }
}

/// Finding kinds an implementation is known to produce, each with its reason (`--expect`):
/// a trial whose findings are all of listed kinds is divergent, not failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// (kind name, reason), in the list's order.
    pub kinds: Vec<(String, String)>,
}

impl Expected {
    /// Reads a list: `# comment` lines, blank lines, and `KIND reason` lines, KIND one of
    /// [`check::KIND_NAMES`].
    pub fn read(path: &Path) -> Result<Expected, CrashError> {
        let text = std::fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
        let mut kinds = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (kind, reason) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let bad = |message: String| CrashError::Expect {
                path: path.to_path_buf(),
                line: n + 1,
                message,
            };
            if !check::KIND_NAMES.contains(&kind) {
                return Err(bad(format!(
                    "unknown finding kind {kind:?}; one of {}",
                    check::KIND_NAMES.join(", ")
                )));
            }
            if reason.trim().is_empty() {
                return Err(bad(format!(
                    "{kind} has no reason; write `{kind} why it is expected`"
                )));
            }
            kinds.push((kind.to_owned(), reason.trim().to_owned()));
        }
        Ok(Expected { kinds })
    }

    /// Whether `trial` failed only with listed kinds.
    pub fn covers(&self, trial: &Trial) -> bool {
        !trial.passed()
            && trial
                .findings
                .iter()
                .all(|f| self.kinds.iter().any(|(k, _)| k == f.kind.name()))
    }
}

/// A whole run.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The adapter's hello.
    pub hello: Hello,
    /// The run without a kill.
    pub calibration: Trial,
    /// The trials.
    pub trials: Vec<Trial>,
}

impl Summary {
    /// Trials that failed with a finding `expected` does not list (the calibration run
    /// counts as one).
    pub fn failed(&self, expected: &Expected) -> usize {
        self.all()
            .filter(|t| !t.passed() && !expected.covers(t))
            .count()
    }

    /// Trials whose findings `expected` lists.
    pub fn divergent(&self, expected: &Expected) -> usize {
        self.all().filter(|t| expected.covers(t)).count()
    }

    /// The calibration run, then the trials.
    pub fn all(&self) -> impl Iterator<Item = &Trial> {
        std::iter::once(&self.calibration).chain(&self.trials)
    }

    /// The sum of `f` over the calibration run and every trial.
    pub fn total(&self, f: impl Fn(&Trial) -> usize) -> usize {
        self.all().map(f).sum()
    }
}

/// The lines of a calibration run: when each anchor's next line came.
#[derive(Debug, Clone, Default)]
struct Timeline {
    /// (anchor, time since the request) of each acknowledgement, in order; the response last.
    events: Vec<(Anchor, Duration)>,
    /// When the response came.
    end: Duration,
}

impl Timeline {
    /// The time from `anchor` to the line after it.
    fn gap(&self, anchor: Anchor) -> Duration {
        let at = |a: Anchor| {
            if a == Anchor::Request {
                Some((0, Duration::ZERO))
            } else {
                self.events
                    .iter()
                    .position(|(x, _)| *x == a)
                    .map(|i| (i + 1, self.events[i].1))
            }
        };
        let Some((next, start)) = at(anchor) else {
            return Duration::from_millis(1);
        };
        let next_time = self.events.get(next).map_or(self.end, |(_, t)| *t);
        next_time.saturating_sub(start)
    }
}

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

/// The most a trial's journal may hold, in bytes written plus a little per call (omp
/// 13.19.0 writes about 50 MB in a default trial); the rest is refused, and the trial
/// fails.
const MAX_JOURNAL_BYTES: usize = 1 << 30;

/// Mixed into the seed for the power-loss points, so that a trial's plan is the same
/// with and without `--power-loss`.
const POWER_SALT: u64 = 0x706f_7765_725f_6c6f;

/// What was wrong with the adapter itself in a trial: a failed or missing answer, lines
/// that are not acks (the first one).
fn adapter_findings(outcome: &Outcome, stderr: &str, timeout: Duration) -> Vec<Finding> {
    let adapter = |reason: String| Finding {
        file: String::new(),
        line: None,
        kind: FindingKind::Adapter { reason },
    };
    let mut findings = Vec::new();
    match &outcome.end {
        End::Killed | End::Answered(Ok(_)) => {}
        End::Answered(Err(e)) => findings.push(adapter(format!("the apply failed: {e}"))),
        End::Refused(e) => findings.push(adapter(format!(
            "{e} (PROTOCOL.md \"Ack mode\"); the trial was stopped there"
        ))),
        End::Exited(None) => findings.push(adapter(format!(
            "it closed its stdout before its answer{stderr}"
        ))),
        End::Exited(Some(status)) => findings.push(adapter(format!(
            "it exited with {status} before its answer{stderr}"
        ))),
        End::TimedOut => findings.push(adapter(format!(
            "no answer within {} s{stderr}",
            timeout.as_secs()
        ))),
    }
    if let Some(junk) = outcome.junk.first() {
        findings.push(adapter(format!(
            "a line that is not an ack or the response: {junk}"
        )));
    }
    findings
}

/// Writes `files` (relative path, bytes) under `dir`, with the `sessions/` and `home/`
/// folders every trial directory has: every file that can be written, and the first
/// error (a journal can name `a` and `a/b`).
fn write_files(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), CrashError> {
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

/// How a trial's `apply` ended.
enum End {
    /// Killed at its kill point.
    Killed,
    /// It answered (before any kill).
    Answered(Result<Value, String>),
    /// It exited on its own (with this status, in words, when known).
    Exited(Option<String>),
    /// It sent an ack the protocol does not allow, and was killed at once.
    Refused(AckError),
    /// It did not answer in time.
    TimedOut,
}

/// What the adapter said in a trial.
struct Outcome {
    /// The acks accepted ([`Ledger`]): at most the open's and one per planned step.
    acks: Vec<Ack>,
    /// The journal's calls (`PROTOCOL.md` "Journal"), each with the number of acks
    /// written before it.
    journal: Vec<(power::FsOp, usize)>,
    junk: Vec<String>,
    timeline: Timeline,
    end: End,
}

/// A trial's `apply`: the request and what its acks are checked against.
struct Request<'a> {
    /// The request's case name (acks name it).
    case: &'a str,
    /// The request.
    value: &'a Value,
    /// What each planned step is.
    kinds: &'a [StepKind],
    /// The trial directory (journal paths are read inside it).
    dir: &'a Path,
}

/// What is read of a trial's adapter while it runs.
struct Reading<'a> {
    request: &'a Request<'a>,
    t0: Instant,
    kill: Option<(KillPoint, Duration)>,
    /// When to kill (set once the kill point's anchor has come).
    kill_at: Option<Instant>,
    acks: Ledger,
    /// Lines read since the request (an ack error names its line).
    lines: usize,
    journal: Vec<(power::FsOp, usize)>,
    journal_bytes: usize,
    junk: Vec<String>,
    timeline: Timeline,
    end: End,
}

impl Reading<'_> {
    /// Records one event; `true` when the `apply` has ended.
    fn record(&mut self, event: Event) -> bool {
        if !matches!(event, Event::Eof | Event::Exited(_) | Event::Timeout) {
            self.lines += 1;
        }
        match event {
            Event::Ack(ack) => self.ack(ack),
            Event::BadAck(why) => {
                self.end = End::Refused(AckError {
                    line: self.lines,
                    kind: acks::AckErrorKind::Malformed(why),
                });
                true
            }
            Event::Response(r) => {
                self.timeline.end = self.t0.elapsed();
                self.end = End::Answered(r);
                true
            }
            Event::Fs(line) => {
                self.fs(&line);
                false
            }
            Event::Junk(j) => {
                self.junk(j);
                false
            }
            Event::Eof => {
                self.end = End::Exited(None);
                true
            }
            Event::Exited(status) => {
                self.end = End::Exited(Some(answers::describe_exit(status)));
                true
            }
            Event::Timeout => false,
        }
    }

    /// An ack: accepted (and the kill timed from it when it is the kill point's
    /// anchor), or the end of the `apply`.
    fn ack(&mut self, ack: Ack) -> bool {
        let anchor = ack.step.map_or(Anchor::Open, Anchor::Step);
        if let Err(e) = self.acks.accept(ack, self.lines) {
            self.end = End::Refused(e);
            return true;
        }
        self.timeline.events.push((anchor, self.t0.elapsed()));
        if let Some((k, delay)) = self.kill {
            if k.after == anchor && self.kill_at.is_none() {
                self.kill_at = Some(Instant::now() + delay);
            }
        }
        false
    }

    /// A journal line, kept up to [`MAX_JOURNAL_BYTES`].
    fn fs(&mut self, line: &Value) {
        match power::FsOp::read(line, self.request.dir) {
            Ok(_) if self.journal_bytes >= MAX_JOURNAL_BYTES => self.junk(format!(
                "a journal of more than {} MiB",
                MAX_JOURNAL_BYTES >> 20
            )),
            Ok(op) => {
                self.journal_bytes += op.size();
                self.journal.push((op, self.acks.acks().len()));
            }
            Err(why) => self.junk(format!("a journal line: {why}")),
        }
    }

    /// A line that is neither an ack nor the response: the first five are kept.
    fn junk(&mut self, line: String) {
        if self.junk.len() < 5 {
            self.junk.push(line);
        }
    }

    fn into_outcome(self) -> Outcome {
        Outcome {
            acks: self.acks.into_acks(),
            journal: self.journal,
            junk: self.junk,
            timeline: self.timeline,
            end: self.end,
        }
    }
}

/// Sends `request`, reads acknowledgements, and kills at `kill`; then reads every line
/// the adapter wrote before it died. An ack the protocol does not allow ends the
/// `apply` at once (the adapter is killed).
fn drive(
    process: &mut Process,
    request: &Request<'_>,
    kill: Option<(KillPoint, Duration)>,
    timeout: Duration,
) -> Outcome {
    process.send(serde_json::to_vec(request.value).unwrap_or_default());
    let t0 = Instant::now();
    let deadline = t0 + timeout;
    let mut reading = Reading {
        request,
        t0,
        kill,
        kill_at: match kill {
            Some((k, delay)) if k.after == Anchor::Request => Some(t0 + delay),
            _ => None,
        },
        acks: Ledger::new(request.kinds),
        lines: 0,
        journal: Vec::new(),
        journal_bytes: 0,
        junk: Vec::new(),
        timeline: Timeline::default(),
        end: End::TimedOut,
    };
    loop {
        let now = Instant::now();
        if reading.kill_at.is_some_and(|at| now >= at) {
            process.kill();
            reading.end = End::Killed;
            break;
        }
        if now >= deadline {
            break;
        }
        let until = reading.kill_at.map_or(deadline, |at| at.min(deadline));
        let event = process.next(request.case, until);
        if reading.record(event) {
            break;
        }
    }
    process.kill();
    // Lines written before the kill are still in the pipe: they were acknowledged.
    if matches!(reading.end, End::Killed) {
        drain(process, &mut reading);
    }
    reading.into_outcome()
}

/// Reads what a killed adapter left in the pipe, for at most 5 s (the kill point is
/// not moved by the acks read here).
fn drain(process: &mut Process, reading: &mut Reading<'_>) {
    reading.kill = None;
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let event = process.next(reading.request.case, until);
        if matches!(event, Event::Eof | Event::Exited(_) | Event::Timeout) {
            break;
        }
        if reading.record(event) {
            break;
        }
    }
}

/// Replaces `{"$result": N}` in a step by what step N returned (as the adapters do).
pub fn substitute(step: &Value, results: &[Value]) -> Value {
    session_conformance::execute::substitute(step, results)
}

/// Writes a failing trial as a case: `case.json` (the steps that ran, the kill point,
/// the findings, the command that reruns it) and `input/session.jsonl` (the v1 file); the
/// caller adds `left/`, the session files as the kill or the power loss left them.
fn write_case(
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

fn io_error(path: &Path, e: &std::io::Error) -> CrashError {
    CrashError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
