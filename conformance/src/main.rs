//! `session-conformance`: run the session corpus against any implementation, bless goldens, serve the reference, inspect sessions.

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use session_conformance::harness::{self, Harness};
use session_conformance::protocol::{Request, Response};
use session_conformance::report::{self, Format, ProfileRun};
use session_conformance::{corpus, execute, fuzz, inspect, plan, runner, schema};
use session_reference::model::Profile;

/// mimalloc keeps freed memory for reuse: a run allocates and frees the same few
/// hundred kilobytes per case, which glibc's allocator hands back to the system
/// and faults in again. `main` turns its purging off too (see `allocator`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Conformance kit for the JSONL session format of pi-mono and oh-my-pi.
///
/// The main job: `session-conformance run` runs every corpus case against the
/// built-in reference. Point `--adapter` at an executable that speaks
/// conformance/PROTOCOL.md to test another implementation.
#[derive(Parser)]
#[command(name = "session-conformance", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run corpus cases against an implementation and compare with the goldens.
    ///
    /// Exit status: 0 when every selected case passed (or is a listed divergence),
    /// 1 when any failed, 2 on usage errors or when the adapter cannot start.
    Run(RunArgs),
    /// Regenerate goldens from the reference and print the diff of each file changed (refused when CI is set).
    Bless {
        /// Corpus directory.
        #[arg(long, default_value = "corpus/cases")]
        corpus: PathBuf,
        /// Only cases whose group/name or id matches this glob.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Speak the adapter protocol on stdin/stdout with the reference (so other harnesses can call it).
    Serve {
        /// The profile to serve.
        #[arg(long, value_parser = parse_profile)]
        profile: Profile,
        /// Answer one request and exit.
        #[arg(long)]
        one_shot: bool,
    },
    /// Write generated cases (with goldens from the reference) as a corpus any implementation can run.
    ///
    /// The same seed writes byte-identical output. Run them with `run --corpus DIR`.
    Generate {
        /// The seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// How many cases.
        #[arg(long, default_value_t = 100)]
        count: usize,
        /// The output corpus directory (cases go to DIR/generated/).
        #[arg(long)]
        out: PathBuf,
        /// The profile the cases are for.
        #[arg(long, value_parser = parse_profile, default_value = "pi")]
        profile: Profile,
    },
    /// Differential testing: run generated cases through an adapter and the reference;
    /// shrink the first disagreement and write it as a case ready for corpus/cases/regression/.
    ///
    /// Exit status: 0 no disagreement, 1 a disagreement was found, 2 usage or adapter error.
    Fuzz {
        /// The adapter command (arguments that start with `-` go after `--`).
        #[arg(long, num_args = 1.., value_name = "CMD", required = true)]
        adapter: Vec<String>,
        /// More adapter arguments.
        #[arg(last = true)]
        adapter_args: Vec<String>,
        /// The profile.
        #[arg(long, value_parser = parse_profile)]
        profile: Profile,
        /// How many generated cases at most.
        #[arg(long, default_value_t = 200)]
        cases: usize,
        /// The seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Stop after this many seconds.
        #[arg(long, default_value_t = 600)]
        budget: u64,
        /// Seconds an adapter may take per case.
        #[arg(long, default_value_t = 20)]
        timeout: u64,
        /// Where to write the shrunk case.
        #[arg(long, default_value = "fuzz-findings")]
        out: PathBuf,
        /// Remove this object key from both outputs before comparing (repeatable), to look past a known divergence.
        #[arg(long = "ignore-key", value_name = "KEY")]
        ignore_keys: Vec<String>,
    },
    /// Check session files against the schemas and the tree rules; directories are searched for *.jsonl.
    ///
    /// Each finding: FILE:LINE: error|warning: message [entry id] (JSON pointer).
    /// Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage or IO error.
    Validate {
        /// Files, directories (a session store such as ~/.omp/agent/sessions), or `-` for stdin.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The profile, or `auto` to decide from each file's content.
        #[arg(long, default_value = "auto")]
        profile: String,
        /// The blob store to resolve `blob:sha256:` references in (default: ~/.omp/agent/blobs when it exists).
        #[arg(long)]
        blob_dir: Option<PathBuf>,
        /// Output: text lines, or JSON Lines (one record per finding, then a summary).
        #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
        format: TreeFormat,
    },
    /// Check or regenerate the JSON Schemas in schemas/ from the Rust types; `schema diff` compares two sets.
    Schema {
        #[command(subcommand)]
        action: Option<SchemaCommand>,
        /// Write the schemas (default: only check that they are current; exit 1 if not).
        #[arg(long)]
        write: bool,
        /// The schemas directory.
        #[arg(long, default_value = "schemas")]
        dir: PathBuf,
    },
    /// Render the JSON reports of several runs (`run --format json`, one per implementation)
    /// as one conformance matrix: implementations as columns, case groups and tags as rows.
    ///
    /// Writes a self-contained HTML page (--html; a cell opens its cases' diffs and divergence
    /// reasons) and/or a Markdown table (--markdown; on stdout when neither is given).
    Report(session_conformance::matrix::ReportArgs),
    /// Corpus maintenance.
    Corpus {
        #[command(subcommand)]
        command: CorpusCommand,
    },
    /// Print a session file as the reference loads it: {header, entries, leafId, diagnostics, migrated}. FILE is not changed.
    Load {
        /// The session file.
        file: PathBuf,
        /// The profile to read it as.
        #[arg(long, value_parser = parse_profile)]
        profile: Profile,
    },
    /// Print the context (what is sent to the model) in the profile's JSON shape, as one line
    /// of JSON whose stored messages are written exactly as the file holds them. FILE is read
    /// once (a regular file or a pipe) and not changed.
    Context {
        /// The session file.
        file: PathBuf,
        /// The profile.
        #[arg(long, value_parser = parse_profile)]
        profile: Profile,
        /// Build the context at this entry instead of the leaf.
        #[arg(long, conflicts_with = "no_leaf")]
        leaf: Option<String>,
        /// Build the context for a null leaf (the empty context).
        #[arg(long)]
        no_leaf: bool,
    },
    /// Look at a session store (~/.pi/agent, ~/.omp/agent or $PI_CODING_AGENT_DIR): list its
    /// sessions, show one, explain what `--resume VALUE` opens, validate every file.
    ///
    /// Nothing is written to the store.
    Sessions(SessionsArgs),
    /// Print the entry tree: an indented picture (text) or a flat pre-order list (json). FILE is not changed.
    Tree {
        /// The session file.
        file: PathBuf,
        /// The profile.
        #[arg(long, value_parser = parse_profile)]
        profile: Profile,
        /// Output format.
        #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
        format: TreeFormat,
    },
    /// Show a session's compaction plan (document 004): the context against the window, the
    /// cut, what would be summarised and kept, and the file lists. FILE is not changed.
    Compaction {
        /// The session file.
        file: PathBuf,
        /// The profile.
        #[arg(long, value_parser = parse_profile)]
        profile: Profile,
        /// The model's context window, in tokens.
        #[arg(long)]
        context_window: i64,
        /// Plan at this entry instead of the leaf.
        #[arg(long)]
        leaf: Option<String>,
        /// keepRecentTokens (default: the profile's, 20000).
        #[arg(long)]
        keep_recent_tokens: Option<i64>,
        /// reserveTokens (default: the profile's, 16384).
        #[arg(long)]
        reserve_tokens: Option<i64>,
        /// Output format (json: the `compaction` operation's output).
        #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
        format: TreeFormat,
    },
}

#[derive(clap::Args)]
struct SessionsArgs {
    #[command(subcommand)]
    command: SessionsCommand,
    /// The dialect: `pi`, `omp`, `operator`, or `auto` (omp when only ~/.omp/agent/sessions exists, operator when only ~/.operator/profiles/<name>/sessions does).
    #[arg(long, global = true, default_value = "auto")]
    profile: String,
    /// The agent directory (default: $PI_CODING_AGENT_DIR, else ~/.pi/agent or ~/.omp/agent).
    #[arg(long, global = true)]
    agent_dir: Option<PathBuf>,
    /// The project's working directory (default: the current directory).
    #[arg(long, global = true)]
    cwd: Option<String>,
    /// A session directory to use instead of the project's (`--session-dir`).
    #[arg(long, global = true)]
    dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// List sessions: id, name, messages, modified (newest first).
    ///
    /// By default each file's first 4 KB is read, so large stores list fast; a message
    /// count that did not fit ends in `+`. `--full` reads whole files (the resume picker's view).
    List {
        /// Every project of the store, not only this one.
        #[arg(long)]
        all: bool,
        /// Read whole files: the profile's SessionInfo (title, first message, all message text).
        #[arg(long)]
        full: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
        format: TreeFormat,
    },
    /// Show a session (a path or an id prefix): the tree picture and the context at the leaf.
    Show {
        /// A session file, or an id prefix resolved as `--resume` does.
        session: String,
    },
    /// Explain what `--resume VALUE` would open: path or id prefix, this project or another,
    /// ambiguous prefixes, and the fork question.
    Resolve {
        /// The `--resume` value.
        value: String,
    },
    /// Validate every session file of the store (or of `--dir`), as `validate` does.
    Check {
        /// Output format.
        #[arg(long, value_enum, default_value_t = TreeFormat::Text)]
        format: TreeFormat,
    },
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// Classify every change between two schema sets as compatible, narrowing or breaking.
    ///
    /// OLD and NEW are folders, or `git:REV` for the schemas/ folder at a git revision.
    /// Exit status: 0 nothing breaking, 1 a breaking change, 2 usage or IO error.
    Diff {
        /// The old schema set.
        old: String,
        /// The new schema set.
        new: String,
    },
}

#[derive(Subcommand)]
enum CorpusCommand {
    /// Lint every case: unknown keys, names, duplicate ids, missing and orphaned goldens.
    Check {
        /// Corpus directory.
        #[arg(long, default_value = "corpus/cases")]
        corpus: PathBuf,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// `reference` (built in, the default) or an adapter command and its arguments (no shell).
    /// Arguments that start with `-` go after `--`: `--adapter bin -- serve --profile pi`.
    #[arg(long, num_args = 1.., value_name = "CMD")]
    adapter: Vec<String>,
    /// More adapter arguments (after `--`), appended to `--adapter`.
    #[arg(last = true, value_name = "ADAPTER-ARGS")]
    adapter_args: Vec<String>,
    /// Profile(s) to run; default: both for the reference, required for an adapter.
    #[arg(long, value_parser = parse_profile)]
    profile: Vec<Profile>,
    /// Corpus directory.
    #[arg(long, default_value = "corpus/cases")]
    corpus: PathBuf,
    /// Only cases whose group/name (e.g. `parse/*`) or id matches this glob.
    #[arg(long)]
    filter: Option<String>,
    /// Known divergences: lines of `CASE-ID reason`.
    #[arg(long)]
    expect: Option<PathBuf>,
    /// Cases run in parallel (one adapter process each); default: the number of CPUs.
    #[arg(long)]
    jobs: Option<usize>,
    /// Seconds an adapter may take per case.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// Start the adapter once per case (one request on stdin, one response on stdout).
    #[arg(long)]
    one_shot: bool,
    /// Let jobs and adapters move between CPUs. By default (Linux), when there are
    /// fewer jobs than CPUs, each job and its adapter stay on one CPU: a request and
    /// its answer then take turns on it instead of waking an idle CPU each time, which
    /// is slow on virtual machines.
    #[arg(long)]
    no_pin: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Colour in text reports.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum TreeFormat {
    Text,
    Json,
}

fn parse_profile(s: &str) -> Result<Profile, String> {
    s.parse()
}

fn main() -> ExitCode {
    #[allow(unsafe_code)]
    // SAFETY: the first thing `main` does, before any other thread runs.
    unsafe {
        session_conformance::allocator::keep_freed_memory();
    }
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("session-conformance: {message}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Run(args) => run(&args),
        Command::Bless { corpus, filter } => {
            if std::env::var_os("CI").is_some() {
                return Err(
                    "bless is refused when CI is set: goldens are reviewed changes, not CI output"
                        .into(),
                );
            }
            let mut stdout = io::stdout();
            let written = harness::bless(&corpus, filter.as_deref(), &mut stdout)?;
            eprintln!("session-conformance: {written} golden file(s) written");
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { profile, one_shot } => serve(profile, one_shot),
        Command::Sessions(args) => sessions_command(args),
        Command::Report(args) => {
            write_stdout(&session_conformance::matrix::command(&args).map_err(|e| e.to_string())?)
        }
        Command::Validate {
            paths,
            profile,
            blob_dir,
            format,
        } => validate_paths(&paths, &profile, blob_dir, format),
        Command::Generate {
            seed,
            count,
            out,
            profile,
        } => {
            let n = fuzz::generate(seed, count, profile, &out)?;
            eprintln!(
                "session-conformance: {n} case(s) written to {}",
                out.join("generated").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Fuzz {
            adapter,
            adapter_args,
            profile,
            cases,
            seed,
            budget,
            timeout,
            out,
            ignore_keys,
        } => {
            let options = fuzz::FuzzOptions {
                argv: adapter.into_iter().chain(adapter_args).collect(),
                profile,
                cases,
                seed,
                budget: Duration::from_secs(budget),
                out,
                timeout: Duration::from_secs(timeout),
                ignore_keys,
            };
            let mut progress: Box<dyn Write> = if io::stderr().is_terminal() {
                Box::new(io::stderr())
            } else {
                Box::new(io::sink())
            };
            let (ran, finding) = fuzz::fuzz(&options, &mut progress)?;
            match finding {
                None => {
                    println!("{ran} generated case(s), no disagreement");
                    Ok(ExitCode::SUCCESS)
                }
                Some(f) => {
                    println!(
                        "disagreement after {ran} case(s); shrunk from {} to {} steps: {}",
                        f.steps.0,
                        f.steps.1,
                        f.dir.display()
                    );
                    print!("{}", f.diff);
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Schema {
            action: Some(SchemaCommand::Diff { old, new }),
            ..
        } => {
            let (old, new) = (schema_set(&old)?, schema_set(&new)?);
            let changes = session_conformance::schema_diff::diff_sets(&old, &new);
            let breaking = changes
                .iter()
                .filter(|c| c.impact == session_conformance::schema_diff::Impact::Breaking)
                .count();
            let mut out: String = changes.iter().map(|c| c.to_string() + "\n").collect();
            {
                use std::fmt::Write as _;
                let _ = writeln!(out, "{} change(s), {breaking} breaking", changes.len());
            }
            write_stdout(&out)?;
            Ok(if breaking > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Schema { write, dir, .. } => {
            if write {
                for path in schema::write(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
                    println!("wrote {}", path.display());
                }
                return Ok(ExitCode::SUCCESS);
            }
            let stale = schema::stale(&dir);
            for path in &stale {
                println!(
                    "{}: stale; run `session-conformance schema --write`",
                    path.display()
                );
            }
            Ok(if stale.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Corpus {
            command: CorpusCommand::Check { corpus },
        } => {
            let problems = corpus::check(&corpus);
            for p in &problems {
                println!("{p}");
            }
            let count = corpus::load(&corpus).map_or(0, |c| c.len());
            println!("{count} cases, {} problem(s)", problems.len());
            Ok(if problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Load { file, profile } => {
            print_json(&inspect::load(&file, profile).map_err(|e| e.to_string())?)
        }
        Command::Context {
            file,
            profile,
            leaf,
            no_leaf,
        } => {
            let choice = if no_leaf {
                Some(None)
            } else {
                leaf.as_deref().map(Some)
            };
            // One line of JSON, each stored message exactly as the file holds it.
            let sm = inspect::open(&file, profile).map_err(|e| e.to_string())?;
            let leaf = inspect::leaf_choice(&sm, &file, choice).map_err(|e| e.to_string())?;
            let mut out = io::BufWriter::new(io::stdout().lock());
            serde_json::to_writer(&mut out, &sm.context(leaf))
                .map_err(io::Error::from)
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush())
                .or_else(ignore_broken_pipe)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Tree {
            file,
            profile,
            format,
        } => {
            if format == TreeFormat::Json {
                print_json(&inspect::tree_json(&file, profile).map_err(|e| e.to_string())?)
            } else {
                write_stdout(&inspect::tree_text(&file, profile).map_err(|e| e.to_string())?)
            }
        }
        Command::Compaction {
            file,
            profile,
            context_window,
            leaf,
            keep_recent_tokens,
            reserve_tokens,
            format,
        } => {
            let options = plan::PlanOptions {
                context_window,
                leaf,
                keep_recent_tokens,
                reserve_tokens,
            };
            if format == TreeFormat::Json {
                print_json(
                    &plan::compaction_json(&file, profile, &options).map_err(|e| e.to_string())?,
                )
            } else {
                write_stdout(
                    &plan::compaction_text(&file, profile, &options).map_err(|e| e.to_string())?,
                )
            }
        }
    }
}

fn run(args: &RunArgs) -> Result<ExitCode, String> {
    let reference = args.adapter.is_empty() || args.adapter == ["reference"];
    let profiles = match (&args.profile[..], reference) {
        ([], true) => Profile::ALL.to_vec(),
        ([], false) => return Err("--profile is required with an adapter command".into()),
        (p, _) => p.to_vec(),
    };
    if !args.corpus.is_dir() {
        return Err(format!(
            "{}: corpus directory not found (use --corpus)",
            args.corpus.display()
        ));
    }
    let divergences = match &args.expect {
        Some(path) => runner::read_divergences(path)?,
        None => runner::Divergences::new(),
    };
    // Read once for every profile: a case of several profiles shares its goldens and
    // known tokens between their runs.
    let cases = std::sync::Arc::new(corpus::load(&args.corpus).map_err(|e| e.to_string())?);
    let mut runs: Vec<ProfileRun> = Vec::new();
    for profile in profiles {
        let mut harness = Harness::new(&args.corpus)
            .loaded(std::sync::Arc::clone(&cases))
            .profile(profile)
            .ignore(divergences.clone())
            .jobs(
                args.jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
            )
            .timeout(Duration::from_secs(args.timeout))
            .pin_cpus(!args.no_pin)
            .progress(args.format == Format::Text);
        if let Some(glob) = &args.filter {
            harness = harness.filter(glob)?;
        }
        let run = if reference {
            harness.run_reference()?
        } else {
            let command: Vec<String> = args
                .adapter
                .iter()
                .chain(&args.adapter_args)
                .cloned()
                .collect();
            harness.run_process(&command, args.one_shot)?
        };
        runs.push(run);
    }
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::env::var_os("NO_COLOR").is_none() && io::stdout().is_terminal(),
    };
    let text = match args.format {
        Format::Text => report::text(&runs, color),
        Format::Json => report::json_lines(&runs, &corpus_hash(&args.corpus)),
        Format::Junit => report::junit(&runs),
    };
    write_stdout(&text)?;
    Ok(if harness::all_good(&runs) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A schema set: a folder, or `git:REV` (schemas/ at that revision).
fn schema_set(spec: &str) -> Result<std::collections::BTreeMap<String, serde_json::Value>, String> {
    let Some(rev) = spec.strip_prefix("git:") else {
        return session_conformance::schema_diff::read_dir(Path::new(spec));
    };
    let git = |args: &[&str]| -> Result<String, String> {
        let output = std::process::Command::new("git")
            .args(args)
            .output()
            .map_err(|e| format!("git: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let mut set = std::collections::BTreeMap::new();
    for file in git(&["ls-tree", "-r", "--name-only", rev, "schemas/"])?
        .lines()
        .filter(|f| {
            Path::new(f)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        })
    {
        let text = git(&["show", &format!("{rev}:{file}")])?;
        let value = serde_json::from_str(&text).map_err(|e| format!("{rev}:{file}: {e}"))?;
        set.insert(file.trim_start_matches("schemas/").to_owned(), value);
    }
    Ok(set)
}

fn sessions_command(args: SessionsArgs) -> Result<ExitCode, String> {
    use session_conformance::sessions::{self, Place};
    let profile = match args.profile.as_str() {
        "auto" => None,
        other => Some(parse_profile(other)?),
    };
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir()
            .map_err(|e| format!("current directory: {e}"))?
            .to_string_lossy()
            .into_owned(),
    };
    let place = Place::new(profile, args.agent_dir, cwd, args.dir);
    let text = match args.command {
        SessionsCommand::List { all, full, format } => {
            let json = format == TreeFormat::Json;
            if full {
                sessions::list_full(&place, all, json)
            } else {
                sessions::list_quick(&place, all, json)
            }
        }
        SessionsCommand::Show { session } => {
            sessions::show(&place, &session).map_err(|e| e.to_string())?
        }
        SessionsCommand::Resolve { value } => sessions::resolve(&place, &value),
        SessionsCommand::Check { format } => {
            let root = sessions::check_root(&place);
            sessions::exists(&root)?;
            return validate_paths(&[root], place.profile.name(), None, format);
        }
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn validate_paths(
    paths: &[PathBuf],
    profile: &str,
    blob_dir: Option<PathBuf>,
    format: TreeFormat,
) -> Result<ExitCode, String> {
    use session_conformance::validate::{self, Level, Options, Schemas};
    let profile = if profile == "auto" {
        None
    } else {
        Some(parse_profile(profile)?)
    };
    // Blob references resolve against the default store (~/.omp/agent/blobs) when it exists.
    let blob_dir = blob_dir.or_else(|| {
        std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".omp/agent/blobs"))
            .filter(|d| d.is_dir())
    });
    let options = Options { profile, blob_dir };
    let schemas = Schemas::new();
    let (mut files, mut errors, mut warnings) = (0, 0, 0);
    let mut out = io::stdout().lock();
    for path in paths {
        let results: Vec<(Vec<validate::Finding>, Profile)> = if path.as_os_str() == "-" {
            vec![validate::validate_reader(
                "-",
                io::stdin().lock(),
                &schemas,
                &options,
            )]
        } else {
            let list = validate::files(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut results = Vec::with_capacity(list.len());
            for file in list {
                results.push(
                    validate::validate_file(&file, &schemas, &options)
                        .map_err(|e| format!("{}: {e}", file.display()))?,
                );
            }
            results
        };
        for (findings, used) in results {
            files += 1;
            for finding in &findings {
                match finding.level {
                    Level::Error => errors += 1,
                    Level::Warning => warnings += 1,
                }
                let line = if format == TreeFormat::Json {
                    finding.to_json().to_string()
                } else {
                    finding.to_string()
                };
                writeln!(out, "{line}").or_else(ignore_broken_pipe)?;
            }
            if profile.is_none() && format == TreeFormat::Text && !findings.is_empty() {
                writeln!(out, "  (profile {used}, decided from the content)")
                    .or_else(ignore_broken_pipe)?;
            }
        }
    }
    let summary = format!("{files} file(s), {errors} error(s), {warnings} warning(s)");
    if format == TreeFormat::Json {
        writeln!(out, "{}", serde_json::json!({"type": "summary", "files": files, "errors": errors, "warnings": warnings})).or_else(ignore_broken_pipe)?;
    } else {
        writeln!(out, "{summary}").or_else(ignore_broken_pipe)?;
    }
    Ok(if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn serve(profile: Profile, one_shot: bool) -> Result<ExitCode, String> {
    // Reads of 64 KiB (what a pipe holds) go past stdin's own 8 KiB buffer.
    let mut stdin = io::BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut stdout = io::stdout().lock();
    // One buffer for every request and one for every reply: a request may carry
    // 500,000-character strings, and growing a fresh buffer to that size each time
    // costs more than reading it.
    let mut line = Vec::new();
    let mut reply = Vec::new();
    loop {
        line.clear();
        // Bytes, not a `String`: the JSON parser checks the text is UTF-8 as it reads it.
        if stdin
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("stdin: {e}"))?
            == 0
        {
            break;
        }
        if is_blank(&line) {
            continue;
        }
        reply.clear();
        match read_line(&line) {
            Incoming::Request(request) => {
                serde_json::to_writer(&mut reply, &execute::execute(request))
            }
            Incoming::Hello => serde_json::to_writer(&mut reply, &execute::hello(profile)),
            Incoming::Bye => return Ok(ExitCode::SUCCESS),
            Incoming::Bad(error) => serde_json::to_writer(&mut reply, &error),
        }
        .map_err(|e| format!("reply: {e}"))?;
        reply.push(b'\n');
        stdout
            .write_all(&reply)
            .and_then(|()| stdout.flush())
            .or_else(ignore_broken_pipe)?;
        if one_shot {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What a line of `serve`'s input asks for.
enum Incoming {
    /// A case to run.
    Request(Request),
    /// The runner's greeting: answered with the reference's hello.
    Hello,
    /// The end of the run.
    Bye,
    /// Not JSON, or not a request: the error to answer with.
    Bad(Response),
}

/// Reads one line of `serve`'s input.
fn read_line(line: &[u8]) -> Incoming {
    // Most lines are requests: read as one directly, their arguments are built once.
    if let Ok(request) = serde_json::from_slice::<Request>(line) {
        if request.kind != "hello" && request.kind != "bye" {
            return Incoming::Request(request);
        }
    }
    // Any other line is read as a value first: a greeting, a farewell, or what is wrong.
    let value = match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(value) => value,
        Err(e) => return Incoming::Bad(Response::error("", "exception", format!("not JSON: {e}"))),
    };
    match value["type"].as_str() {
        Some("hello") => Incoming::Hello,
        Some("bye") => Incoming::Bye,
        _ => {
            let case = value["case"].as_str().unwrap_or_default().to_owned();
            // Moved, not cloned: a request may carry 500,000-character strings.
            match serde_json::from_value::<Request>(value) {
                Ok(request) => Incoming::Request(request),
                Err(e) => Incoming::Bad(Response::error(
                    &case,
                    "exception",
                    format!("bad request: {e}"),
                )),
            }
        }
    }
}

/// Whether a request line is only whitespace (Unicode's, as `str::trim` has it). Only
/// a line whose first other byte is not ASCII is checked as text: a request starts
/// with `{`, and may carry half a million characters.
fn is_blank(line: &[u8]) -> bool {
    match line
        .iter()
        .find(|&&b| !(b.is_ascii() && char::from(b).is_whitespace()))
    {
        None => true,
        Some(&b) if !b.is_ascii() => std::str::from_utf8(line).is_ok_and(|t| t.trim().is_empty()),
        Some(_) => false,
    }
}

fn print_json(value: &serde_json::Value) -> Result<ExitCode, String> {
    write_stdout(&session_conformance::normalize::canonical(value))
}

fn write_stdout(text: &str) -> Result<ExitCode, String> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .or_else(ignore_broken_pipe)?;
    Ok(ExitCode::SUCCESS)
}

#[allow(clippy::needless_pass_by_value)] // used as `or_else(ignore_broken_pipe)`
fn ignore_broken_pipe(e: io::Error) -> Result<(), String> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Err(format!("stdout: {e}"))
}

fn corpus_hash(root: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for case in corpus::load(root).unwrap_or_default() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&case.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for f in files {
            hasher.update(f.to_string_lossy().as_bytes());
            hasher.update(std::fs::read(&f).unwrap_or_default());
        }
        for (name, bytes) in &case.inputs {
            hasher.update(name.as_bytes());
            hasher.update(bytes);
        }
    }
    hasher.finalize().iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    })
}
