//! `corpus check`: lint every case of a corpus.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use session_conformance::corpus;

use super::status;

/// Corpus maintenance.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lint every case: unknown keys, names, duplicate ids, missing and orphaned goldens.
    Check {
        /// Corpus directory.
        #[arg(long, default_value = "corpus/cases")]
        corpus: PathBuf,
    },
}

/// Runs `corpus`.
#[allow(clippy::unnecessary_wraps)] // every command returns the same type
pub fn run(args: Args) -> Result<ExitCode, String> {
    let Command::Check { corpus } = args.command;
    let problems = corpus::check(&corpus);
    for p in &problems {
        println!("{p}");
    }
    let count = corpus::load(&corpus).map_or(0, |c| c.len());
    println!("{count} cases, {} problem(s)", problems.len());
    Ok(status(problems.is_empty()))
}
