//! Running a corpus against one adapter, in parallel, and blessing goldens from the reference.
//!
//! Rust implementers can call [`Harness`] from their own `cargo test`:
//!
//! ```no_run
//! use session_conformance::harness::Harness;
//! use session_reference::model::Profile;
//! let run = Harness::new("corpus/cases").profile(Profile::Pi).run_reference().unwrap();
//! assert!(run.results.iter().all(|r| !r.status.is_failure()));
//! ```

use std::fs;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use globset::{Glob, GlobMatcher};
use serde_json::Value;
use session_reference::model::Profile;

use crate::adapter::{Adapter, Failure, ProcessAdapter, ReferenceAdapter};
use crate::affinity;
use crate::corpus::{self, Case, CaseError, CorpusError};
use crate::normalize::canonical;
use crate::protocol::Hello;
use crate::report::ProfileRun;
use crate::runner::{produce, run_case, unified_diff, CaseResult, Divergences, Status};
use crate::watch::Watched;

/// Why a run or `bless` could not be done (a case that fails is a result, not an error).
#[derive(Debug)]
#[non_exhaustive]
pub enum HarnessError {
    /// A case filter that is not a glob.
    BadFilter {
        /// The glob as given.
        glob: String,
        /// The glob parser's message.
        message: String,
    },
    /// The corpus could not be read.
    Corpus(CorpusError),
    /// The adapter did not start, or did not say hello.
    AdapterStart(Failure),
    /// The adapter implements another profile than the run's.
    WrongProfile {
        /// The profile its hello names.
        adapter: String,
        /// The run's profile.
        profile: Profile,
    },
    /// A thread of the run panicked (a bug of the harness).
    Panicked {
        /// What the thread was doing: `the adapter's start`, `a worker`.
        what: &'static str,
    },
    /// There was no job to run (no adapter was made).
    NoJob,
    /// `bless`: a case names a profile the kit does not know.
    UnknownProfile {
        /// The case's `group/name`.
        case: String,
        /// Why the name is not a profile.
        message: String,
    },
    /// `bless`: the reference gave no output for a case.
    Reference {
        /// The case's `group/name`.
        case: String,
        /// How the case ended.
        status: Status,
        /// What the reference said.
        message: String,
    },
    /// `bless`: some selected cases cannot run ([`corpus::Case::refused`]); the
    /// others were blessed.
    CaseErrors {
        /// The golden files written for the others.
        written: usize,
        /// Each refused case's error.
        errors: Vec<CaseError>,
    },
    /// `bless`: a golden could not be written or removed.
    Io {
        /// The golden.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

impl std::fmt::Display for HarnessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HarnessError::BadFilter { glob, message } => {
                write!(f, "bad --filter {glob:?}: {message}")
            }
            HarnessError::Corpus(error) => error.fmt(f),
            HarnessError::AdapterStart(failure) => {
                write!(f, "the adapter did not start: {failure}")
            }
            HarnessError::WrongProfile { adapter, profile } => {
                write!(f, "adapter implements profile {adapter:?}, not {profile}")
            }
            HarnessError::Panicked { what } => write!(f, "{what} panicked"),
            HarnessError::NoJob => f.write_str("no job to run"),
            HarnessError::UnknownProfile { case, message } => write!(f, "{case}: {message}"),
            HarnessError::Reference {
                case,
                status,
                message,
            } => write!(f, "{case}: {}: {message}", status.name()),
            HarnessError::CaseErrors { written, errors } => {
                write!(
                    f,
                    "{} case error(s), {written} golden file(s) written",
                    errors.len()
                )?;
                errors
                    .iter()
                    .try_for_each(|error| write!(f, "\ncase error: {error}"))
            }
            HarnessError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for HarnessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HarnessError::Corpus(error) => Some(error),
            HarnessError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<CorpusError> for HarnessError {
    fn from(error: CorpusError) -> HarnessError {
        HarnessError::Corpus(error)
    }
}

/// A glob that selects cases by `group/name` or id.
fn case_glob(glob: &str) -> Result<GlobMatcher, HarnessError> {
    Glob::new(glob)
        .map(|g| g.compile_matcher())
        .map_err(|e| HarnessError::BadFilter {
            glob: glob.to_owned(),
            message: e.to_string(),
        })
}

/// A configured run.
pub struct Harness {
    corpus: PathBuf,
    profile: Profile,
    filter: Option<GlobMatcher>,
    divergences: Divergences,
    jobs: usize,
    timeout: Duration,
    progress: bool,
    pin: bool,
    loaded: Option<Arc<Vec<Case>>>,
}

impl Harness {
    /// A run over the corpus at `corpus`, profile `pi`, one job, 30 s per case.
    pub fn new(corpus: impl Into<PathBuf>) -> Harness {
        Harness {
            corpus: corpus.into(),
            profile: Profile::Pi,
            filter: None,
            divergences: Divergences::new(),
            jobs: 1,
            timeout: Duration::from_secs(30),
            progress: false,
            pin: true,
            loaded: None,
        }
    }

    /// Whether each job and its adapter stay on one CPU when there are fewer jobs than
    /// CPUs (the default; see [`affinity`]).
    #[must_use]
    pub fn pin_cpus(mut self, on: bool) -> Harness {
        self.pin = on;
        self
    }

    /// The profile under test.
    #[must_use]
    pub fn profile(mut self, profile: Profile) -> Harness {
        self.profile = profile;
        self
    }

    /// Only cases whose `group/name` or id matches the glob.
    pub fn filter(mut self, glob: &str) -> Result<Harness, HarnessError> {
        self.filter = Some(case_glob(glob)?);
        Ok(self)
    }

    /// Known divergences: cases by id (with their signatures), globs, tags and extra
    /// entry types, each with its reason ([`crate::divergences`]).
    #[must_use]
    pub fn ignore(mut self, divergences: Divergences) -> Harness {
        self.divergences = divergences;
        self
    }

    /// Parallel adapters.
    #[must_use]
    pub fn jobs(mut self, jobs: usize) -> Harness {
        self.jobs = jobs.max(1);
        self
    }

    /// Time limit per case.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Harness {
        self.timeout = timeout;
        self
    }

    /// Show a progress line on a terminal.
    #[must_use]
    pub fn progress(mut self, on: bool) -> Harness {
        self.progress = on && std::io::stderr().is_terminal();
        self
    }

    /// Loads the corpus now, so later runs do not read it again.
    pub fn preload(mut self) -> Result<Harness, CorpusError> {
        self.loaded = Some(Arc::new(corpus::load(&self.corpus)?));
        Ok(self)
    }

    /// Runs over `cases`, loaded already (by [`corpus::load`] from this harness's corpus),
    /// instead of reading the corpus: harnesses for several profiles can share one load,
    /// and with it what each case works out on its first run (see [`corpus::Derived`]).
    #[must_use]
    pub fn loaded(mut self, cases: Arc<Vec<Case>>) -> Harness {
        self.loaded = Some(cases);
        self
    }

    /// The selected cases for the profile.
    pub fn cases(&self) -> Result<Vec<Case>, CorpusError> {
        self.with_cases(|cases| cases.iter().map(|&c| c.clone()).collect())
    }

    /// Calls `f` with the selected cases, borrowed from the preloaded corpus when there is one.
    fn with_cases<R>(&self, f: impl FnOnce(&[&Case]) -> R) -> Result<R, CorpusError> {
        let read;
        let all = if let Some(cases) = &self.loaded {
            cases
        } else {
            read = corpus::load(&self.corpus)?;
            &read
        };
        let chosen: Vec<&Case> = all
            .iter()
            .filter(|c| c.applies_to(self.profile) && self.selected(c))
            .collect();
        Ok(f(&chosen))
    }

    fn selected(&self, case: &Case) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.is_match(case.full_name()) || f.is_match(case.id()))
    }

    /// The profile under test.
    pub fn profile_under_test(&self) -> Profile {
        self.profile
    }

    /// Runs the selected cases whose ids are in `ids` ([`crate::trials`]).
    pub(crate) fn run_ids(
        &self,
        ids: &[String],
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
    ) -> Result<ProfileRun, HarnessError> {
        let ids: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        self.with_cases(|cases| {
            let chosen: Vec<&Case> = cases
                .iter()
                .copied()
                .filter(|c| ids.contains(c.id().as_str()))
                .collect();
            self.run_cases(&chosen, make)
        })?
    }

    /// Runs against the built-in reference.
    pub fn run_reference(&self) -> Result<ProfileRun, HarnessError> {
        let profile = self.profile;
        self.run_with(&|| Box::new(ReferenceAdapter::new(profile)))
    }

    /// Runs against an adapter executable.
    pub fn run_process(&self, argv: &[String], one_shot: bool) -> Result<ProfileRun, HarnessError> {
        let (profile, timeout) = (self.profile, self.timeout);
        self.run_with(&|| {
            Box::new(ProcessAdapter::new(argv.to_vec(), profile, one_shot).with_timeout(timeout))
        })
    }

    /// Runs with adapters made by `make` (one per job).
    pub fn run_with(
        &self,
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
    ) -> Result<ProfileRun, HarnessError> {
        self.with_cases(|cases| self.run_cases(cases, make))?
    }

    fn run_cases(
        &self,
        cases: &[&Case],
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
    ) -> Result<ProfileRun, HarnessError> {
        let pin = self.pinning();
        let jobs = self.jobs.min(cases.len().max(1));
        let (started, hello) = self.start(jobs, make, &pin)?;
        let order = heaviest_first(cases);
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<CaseResult>>> = Mutex::new(vec![None; cases.len()]);
        std::thread::scope(|scope| {
            for (job, mut adapter) in started.into_iter().enumerate() {
                let (pin, hello) = (&pin, &hello);
                let (order, next, done, results) = (&order, &next, &done, &results);
                scope.spawn(move || {
                    pin(job);
                    while let Some(&i) = order.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let case = cases[i];
                        let result = self.run_one(case, &mut adapter, hello, make);
                        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                        if self.progress {
                            eprint!(
                                "\r\x1b[K[{n}/{}] {} {}",
                                cases.len(),
                                case.id(),
                                crate::guard::printable(&case.full_name())
                            );
                        }
                        if let Ok(mut r) = results.lock() {
                            r[i] = Some(result);
                        }
                    }
                });
            }
        });
        if self.progress {
            eprint!("\r\x1b[K");
        }
        let results = results
            .into_inner()
            .map_err(|_| HarnessError::Panicked { what: "a worker" })?
            .into_iter()
            .flatten()
            .collect();
        Ok(ProfileRun {
            profile: self.profile,
            hello,
            results,
        })
    }

    /// What pins job `j` and its adapter to CPU `cpus[j]`: with fewer jobs than CPUs (see
    /// `affinity`). With as many jobs as CPUs or more, every CPU is kept busy anyway, and
    /// measured runs were faster when the scheduler was left free to balance them.
    fn pinning(&self) -> impl Fn(usize) + Sync {
        let cpus = affinity::available();
        let pinned = self.pin && self.jobs < cpus.len();
        move |job: usize| {
            if pinned {
                affinity::pin_current_thread(cpus[job % cpus.len()]);
            }
        }
    }

    /// Starts `jobs` adapters at once, each from a thread pinned to its job's CPU (the
    /// caller's thread stays unpinned), so that no job waits for another's start; each
    /// is [`Watched`]. The first one's hello is the run's: its failure (a panic or a hang
    /// included) is the run's error. An adapter lost in its hello is replaced by a fresh
    /// one, which says hello as its first case starts it.
    pub(crate) fn start(
        &self,
        jobs: usize,
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
        pin: &(dyn Fn(usize) + Sync),
    ) -> Result<(Vec<Watched>, Hello), HarnessError> {
        let started: Vec<(Watched, Result<Hello, Failure>)> = std::thread::scope(|scope| {
            let starting: Vec<_> = (0..jobs)
                .map(|job| {
                    scope.spawn(move || {
                        pin(job);
                        let mut adapter = Watched::make(make, self.timeout);
                        let hello = adapter.hello();
                        (adapter, hello)
                    })
                })
                .collect();
            starting
                .into_iter()
                .map(std::thread::ScopedJoinHandle::join)
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|_| HarnessError::Panicked {
            what: "the adapter's start",
        })?;
        let hello = match started.first() {
            Some((_, Ok(hello))) => hello.clone(),
            Some((_, Err(e))) => return Err(HarnessError::AdapterStart(e.clone())),
            None => return Err(HarnessError::NoJob),
        };
        if hello.profile != self.profile.name() {
            return Err(HarnessError::WrongProfile {
                adapter: hello.profile,
                profile: self.profile,
            });
        }
        let adapters = started
            .into_iter()
            .map(|(adapter, _)| self.renewed(adapter, make))
            .collect();
        Ok((adapters, hello))
    }

    /// Runs one case on a job's adapter and bounds the texts its result keeps
    /// ([`CaseResult::bound_texts`]). An adapter lost in the case (a call that panicked
    /// or did not return) is replaced by a fresh one from `make` for the job's next case.
    pub(crate) fn run_one(
        &self,
        case: &Case,
        adapter: &mut Watched,
        hello: &Hello,
        make: &(dyn Fn() -> Box<dyn Adapter> + Sync),
    ) -> CaseResult {
        let mut result = run_case(
            case,
            self.profile,
            adapter,
            hello,
            self.timeout,
            &self.divergences,
        );
        result.bound_texts();
        if adapter.is_lost() {
            *adapter = Watched::make(make, self.timeout);
        }
        result
    }

    /// `adapter`, or a fresh one from `make` when it is lost.
    fn renewed(&self, adapter: Watched, make: &(dyn Fn() -> Box<dyn Adapter> + Sync)) -> Watched {
        if adapter.is_lost() {
            Watched::make(make, self.timeout)
        } else {
            adapter
        }
    }
}

/// The indices of `cases`, heaviest first: parallel jobs then finish together
/// instead of one job running a large case alone at the end.
fn heaviest_first(cases: &[&Case]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by_cached_key(|&i| std::cmp::Reverse(weight(cases[i])));
    order
}

/// A case's rough cost: the bytes of its inputs and of its arguments once expanded.
fn weight(case: &Case) -> usize {
    case.inputs.values().map(Vec::len).sum::<usize>() + expanded_len(&case.file.args)
}

/// About how long `args` is in JSON once its `$repeat` templates are expanded.
fn expanded_len(args: &Value) -> usize {
    match args {
        Value::Object(map) => match map.get("$repeat").and_then(Value::as_array) {
            Some(repeat) => {
                let unit = repeat.first().and_then(Value::as_str).map_or(0, str::len);
                let count = repeat.get(1).and_then(Value::as_u64).unwrap_or(0);
                unit.saturating_mul(usize::try_from(count).unwrap_or(usize::MAX))
            }
            None => map.iter().map(|(k, v)| k.len() + expanded_len(v)).sum(),
        },
        Value::Array(items) => items.iter().map(expanded_len).sum(),
        Value::String(s) => s.len(),
        _ => 8,
    }
}

/// Regenerates goldens from the reference for the selected cases; prints each file
/// written and its diff. Returns the number of files written; when a selected case
/// cannot run ([`Case::refused`]), the others are blessed and the case errors returned
/// ([`HarnessError::CaseErrors`]).
pub fn bless(
    corpus: &Path,
    filter: Option<&str>,
    out: &mut dyn Write,
) -> Result<usize, HarnessError> {
    let matcher = filter.map(case_glob).transpose()?;
    let cases = corpus::load(corpus)?;
    let mut written = 0;
    let mut errors = Vec::new();
    for case in cases.iter().filter(|c| {
        matcher
            .as_ref()
            .is_none_or(|m| m.is_match(c.full_name()) || m.is_match(c.id()))
    }) {
        if let Some(error) = &case.refused {
            errors.push(error.clone());
            continue;
        }
        let mut outputs = Vec::new();
        for name in &case.file.profiles {
            let profile: Profile =
                name.parse()
                    .map_err(|message| HarnessError::UnknownProfile {
                        case: case.full_name(),
                        message,
                    })?;
            let mut adapter = ReferenceAdapter::new(profile);
            let hello = crate::execute::hello(profile);
            let (value, _) = produce(case, profile, &mut adapter, &hello, Duration::from_mins(10))
                .map_err(|(status, message)| HarnessError::Reference {
                    case: case.full_name(),
                    status,
                    message,
                })?;
            outputs.push((profile, canonical(&value)));
        }
        let shared = outputs.windows(2).all(|w| w[0].1 == w[1].1);
        let targets: Vec<(PathBuf, &str)> = if shared {
            outputs
                .first()
                .map(|(_, t)| vec![(case.dir.join("expected.json"), t.as_str())])
                .unwrap_or_default()
        } else {
            outputs
                .iter()
                .map(|(p, t)| {
                    (
                        case.dir.join(format!("expected.{}.json", p.name())),
                        t.as_str(),
                    )
                })
                .collect()
        };
        let stale: Vec<PathBuf> = std::iter::once(case.dir.join("expected.json"))
            .chain(
                Profile::ALL
                    .iter()
                    .map(|p| case.dir.join(format!("expected.{}.json", p.name()))),
            )
            .filter(|p| p.exists() && !targets.iter().any(|(t, _)| t == p))
            .collect();
        for path in stale {
            fs::remove_file(&path).map_err(|error| HarnessError::Io {
                path: path.clone(),
                error,
            })?;
            let _ = writeln!(out, "removed {}", path.display());
        }
        for (path, text) in targets {
            // A golden is a regular file of the case folder: a link (which could lead out
            // of the corpus), a FIFO or a device there is refused, never written through.
            let kind = fs::symlink_metadata(&path).map(|m| m.file_type());
            if kind.as_ref().is_ok_and(|k| !k.is_file()) {
                let what = kind.map_or("special", crate::guard::kind_name);
                return Err(HarnessError::Io {
                    path: path.clone(),
                    error: std::io::Error::other(format!(
                        "is a {what}; a golden is a regular file, not written"
                    )),
                });
            }
            let old = match crate::guard::read_regular(&path, crate::guard::MAX_FILE_BYTES) {
                Ok(crate::guard::Contents::Bytes(bytes)) => {
                    String::from_utf8(bytes).unwrap_or_default()
                }
                _ => String::new(),
            };
            if old == text {
                continue;
            }
            // A new file renamed over the old one (its mode kept): never written through a link.
            session_reference::storage::replace_own_file(&path, text.as_bytes()).map_err(
                |error| HarnessError::Io {
                    path: path.clone(),
                    error,
                },
            )?;
            written += 1;
            let _ = writeln!(out, "wrote {}", path.display());
            if !old.is_empty() {
                let _ = write!(out, "{}", unified_diff(&old, text, &path.to_string_lossy()));
            }
        }
    }
    if errors.is_empty() {
        Ok(written)
    } else {
        Err(HarnessError::CaseErrors { written, errors })
    }
}

/// Whether every result passed or was an expected divergence or skip.
pub fn all_good(runs: &[ProfileRun]) -> bool {
    runs.iter()
        .flat_map(|r| &r.results)
        .all(|r| !r.status.is_failure() || r.status == Status::Skipped)
}
