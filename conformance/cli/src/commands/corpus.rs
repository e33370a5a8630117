//! `corpus check`: lint every case of a corpus; `corpus export`: write out the corpus the
//! binary carries.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use session_conformance::{bundle, corpus};

use super::{corpus_dir, status};

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
        /// Corpus directory (default: corpus/cases when it is here, else the corpus built
        /// into the binary).
        #[arg(long)]
        corpus: Option<PathBuf>,
    },
    /// Write the corpus and schemas the binary carries into DIR (DIR/cases/…, DIR/README.md,
    /// DIR/schemas/…), for harnesses in other languages. DIR must be new or empty.
    Export {
        /// The folder to write (created when missing).
        dir: PathBuf,
    },
}

/// Runs `corpus`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let corpus = match args.command {
        Command::Check { corpus } => corpus_dir(corpus.as_deref())?,
        Command::Export { dir } => {
            let files = bundle::export(&dir).map_err(|e| e.to_string())?;
            println!(
                "{}: wrote {files} files (corpus {})",
                dir.display(),
                bundle::embedded_version()
            );
            return Ok(ExitCode::SUCCESS);
        }
    };
    let problems = corpus::check(&corpus);
    for p in &problems {
        println!("{p}");
    }
    let count = corpus::load(&corpus).map_or(0, |c| c.len());
    println!("{count} cases, {} problem(s)", problems.len());
    Ok(status(problems.is_empty()))
}
