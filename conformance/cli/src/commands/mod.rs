//! The CLI's commands, one file each. `main.rs` parses the arguments with clap and
//! hands each command its arguments; what a command does lives in the library.

pub mod bless;
pub mod compaction;
pub mod context;
pub mod corpus;
pub mod crash;
pub mod fuzz;
pub mod generate;
pub mod load;
pub mod protocol;
pub mod report;
pub mod run;
pub mod schema;
pub mod serve;
pub mod sessions;
pub mod tree;
pub mod validate;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use session_reference::model::Profile;

/// What a command that prints a report writes: lines for people, or JSON.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OutputFormat {
    /// Text for people.
    Text,
    /// JSON (one document, or JSON Lines where the command says so).
    Json,
}

/// `--profile` of the commands that may decide it from the input (`auto`).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ProfileChoice {
    /// Decide from the content (or, for a store, from which store exists).
    Auto,
    /// pi-mono.
    Pi,
    /// oh-my-pi.
    Omp,
    /// Document 003's snake_case dialect.
    Operator,
}

impl ProfileChoice {
    /// The profile chosen, or `None` for `auto`.
    pub fn profile(self) -> Option<Profile> {
        match self {
            ProfileChoice::Auto => None,
            ProfileChoice::Pi => Some(Profile::Pi),
            ProfileChoice::Omp => Some(Profile::Omp),
            ProfileChoice::Operator => Some(Profile::Operator),
        }
    }
}

/// Parses a profile name for clap (`pi`, `omp`, `operator`).
pub fn parse_profile(s: &str) -> Result<Profile, String> {
    s.parse()
}

/// The corpus's cases folder: `given`, else `corpus/cases` when it is here, else the
/// corpus the binary carries (unpacked into the cache on first use).
pub fn corpus_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    built_in_unless(given, Path::new("corpus/cases"), "cases")
}

/// The schemas folder: `given`, else `schemas` when it is here, else the schemas the
/// binary carries.
pub fn schemas_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    built_in_unless(given, Path::new("schemas"), "schemas")
}

/// The specification's folder: `given`, else `docs/spec` when it is here, else the
/// specification the binary carries.
pub fn spec_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    built_in_unless(given, Path::new("docs/spec"), "spec")
}

fn built_in_unless(given: Option<&Path>, here: &Path, part: &str) -> Result<PathBuf, String> {
    if let Some(dir) = given {
        return Ok(dir.to_path_buf());
    }
    if here.is_dir() {
        return Ok(here.to_path_buf());
    }
    let unpacked = session_conformance::bundle::unpacked().map_err(|e| e.to_string())?;
    Ok(unpacked.join(part))
}

/// Prints a JSON value in the kit's canonical form.
pub fn print_json(value: &serde_json::Value) -> Result<ExitCode, String> {
    write_stdout(&session_conformance::canonical::canonical_js(value))
}

/// Writes `text` to stdout; a closed pipe (`| head`) ends the program quietly.
pub fn write_stdout(text: &str) -> Result<ExitCode, String> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .or_else(ignore_broken_pipe)?;
    Ok(ExitCode::SUCCESS)
}

/// A closed stdout ends the program with status 0; any other error is reported.
#[allow(clippy::needless_pass_by_value)] // used as `or_else(ignore_broken_pipe)`
pub fn ignore_broken_pipe(e: io::Error) -> Result<(), String> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Err(format!("stdout: {e}"))
}

/// Exit status 0 when `ok`, else 1.
pub fn status(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Which implementation a command runs: `--adapter` and the arguments after `--`.
#[derive(clap::Args)]
pub struct AdapterArgs {
    /// `reference` (built in, the default) or an adapter command and its arguments (no shell).
    /// Arguments that start with `-` go after `--`: `--adapter bin -- serve --profile pi`.
    #[arg(long, num_args = 1.., value_name = "CMD")]
    pub adapter: Vec<String>,
    /// More adapter arguments (after `--`), appended to `--adapter`.
    #[arg(last = true, value_name = "ADAPTER-ARGS")]
    pub rest: Vec<String>,
}

impl AdapterArgs {
    /// Whether the built-in reference runs (no `--adapter`, or `--adapter reference`).
    pub fn is_reference(&self) -> bool {
        self.adapter.is_empty() || self.adapter == ["reference"]
    }

    /// The adapter's command line: `--adapter` then the arguments after `--`.
    pub fn command(&self) -> Vec<String> {
        self.adapter.iter().chain(&self.rest).cloned().collect()
    }

    /// The profiles to run: those given, else `reference_default` for the reference; an
    /// adapter needs `--profile`.
    pub fn profiles(
        &self,
        given: &[Profile],
        reference_default: &[Profile],
    ) -> Result<Vec<Profile>, String> {
        match (given, self.is_reference()) {
            ([], true) => Ok(reference_default.to_vec()),
            ([], false) => Err("--profile is required with an adapter command".into()),
            (p, _) => Ok(p.to_vec()),
        }
    }
}
