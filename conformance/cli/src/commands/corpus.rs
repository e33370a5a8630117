//! `corpus check`: lint every case of a corpus; `corpus export`: write out the corpus the
//! binary carries.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use session_conformance::{bundle, corpus};

use super::{corpus_dir, spec_dir, status};

/// Corpus maintenance.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lint every case: unknown keys, names, duplicate ids, missing and orphaned goldens;
    /// and the clauses: every cited clause is in the specification, and (for the corpus
    /// found here or built in, or with --spec) every clause is cited by a case or says
    /// (`Not observable:`) why none can see it.
    Check {
        /// Corpus directory (default: corpus/cases when it is here, else the corpus built
        /// into the binary).
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// The specification's folder (default: docs/spec when it is here, else the one
        /// built into the binary).
        #[arg(long)]
        spec: Option<PathBuf>,
    },
    /// Write the corpus, schemas and specification the binary carries into DIR (DIR/cases/…,
    /// DIR/README.md, DIR/schemas/…, DIR/spec/…), for harnesses in other languages. DIR
    /// must be new or empty.
    Export {
        /// The folder to write (created when missing).
        dir: PathBuf,
    },
}

/// Runs `corpus`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let (corpus, spec, coverage) = match args.command {
        Command::Check { corpus, spec } => {
            // A corpus of one's own (generated, a slice) need not cite every clause.
            let coverage = if corpus.is_some() && spec.is_none() {
                corpus::Coverage::CitedOnly
            } else {
                corpus::Coverage::Every
            };
            (
                corpus_dir(corpus.as_deref())?,
                spec_dir(spec.as_deref())?,
                coverage,
            )
        }
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
    let spec = corpus::Spec::read(&spec).map_err(|e| e.to_string())?;
    let problems = corpus::check_with_spec(&corpus, &spec, coverage);
    for p in &problems {
        println!("{p}");
    }
    let count = corpus::load(&corpus).map_or(0, |c| c.len());
    println!("{count} cases, {} problem(s)", problems.len());
    Ok(status(problems.is_empty()))
}
