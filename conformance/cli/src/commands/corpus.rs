//! `corpus check`: lint every case of a corpus; `corpus export`: write out the corpus (and
//! the schemas, specification and protocol) the binary carries; `corpus spec-sections`:
//! write each clause's cases and listed divergences into the specification.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use session_conformance::{bundle, corpus, divergences};
use session_conformance_cli::spec_sections::{self, Listed};

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
        /// into the binary). One that is not a folder, or holds no case, is an error (exit 2).
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// The specification's folder (default: docs/spec when it is here, else the one
        /// built into the binary).
        #[arg(long)]
        spec: Option<PathBuf>,
    },
    /// Write the corpus, schemas, specification and adapter protocol the binary carries
    /// into DIR (DIR/cases/…, DIR/README.md, DIR/schemas/…, DIR/spec/…, DIR/PROTOCOL.md),
    /// for harnesses in other languages; the README's and PROTOCOL.md's paths name that
    /// layout. DIR must be new or empty.
    Export {
        /// The folder to write (created when missing).
        dir: PathBuf,
    },
    /// Write the generated part of each clause of the specification (what follows its line
    /// `<!-- generated: cases -->`, up to `<!-- end generated -->`): the cases that cite the
    /// clause, and for each divergence list the reasons it gives for those cases, as a run
    /// would excuse them.
    SpecSections {
        /// Corpus directory (default: corpus/cases when it is here, else the built-in corpus).
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// The specification's folder to rewrite (default: docs/spec).
        #[arg(long, default_value = "docs/spec")]
        spec: PathBuf,
        /// An implementation's divergence list, as `NAME=FILE` (`pi-mono 0.73.1=conformance/adapters/pi-mono/expected-divergences`);
        /// repeat it, in the order the sections list them.
        #[arg(long = "list", value_name = "NAME=FILE")]
        lists: Vec<String>,
        /// Write nothing; exit 1 when a file's generated parts are not current (for CI).
        #[arg(long)]
        check: bool,
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
        Command::SpecSections {
            corpus,
            spec,
            lists,
            check,
        } => return spec_sections(&corpus_dir(corpus.as_deref())?, &spec, &lists, check),
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
    // A corpus that is not a folder, or holds no case, is an error (exit 2), not a pass.
    let cases = corpus::load(&corpus).map_err(|e| e.to_string())?;
    let spec = corpus::Spec::read(&spec).map_err(|e| e.to_string())?;
    let problems = corpus::check_loaded(&cases, &spec, coverage);
    for p in &problems {
        println!("{p}");
    }
    println!("{} cases, {} problem(s)", cases.len(), problems.len());
    Ok(status(problems.is_empty()))
}

/// `corpus spec-sections`: rewrites (or, with `check`, checks) the generated parts of the
/// specification files in `spec`.
fn spec_sections(
    corpus: &Path,
    spec: &Path,
    lists: &[String],
    check: bool,
) -> Result<ExitCode, String> {
    let cases = corpus::load(corpus).map_err(|e| e.to_string())?;
    let lists = lists
        .iter()
        .map(|arg| {
            let (name, file) = arg
                .split_once('=')
                .ok_or_else(|| format!("--list {arg}: not NAME=FILE"))?;
            let list = divergences::read(Path::new(file)).map_err(|e| e.to_string())?;
            Ok(Listed {
                name: name.to_owned(),
                list,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let stale = spec_sections::rewrite(spec, &cases, &lists, check)?;
    let stale: Vec<String> = stale.iter().map(|f| f.display().to_string()).collect();
    match (stale.is_empty(), check) {
        (true, _) => println!("{}: every generated part is current", spec.display()),
        (false, true) => {
            eprintln!(
                "stale generated parts in {}; run scripts/spec_generate.sh",
                stale.join(", ")
            );
            return Ok(ExitCode::FAILURE);
        }
        (false, false) => println!("wrote {}", stale.join(", ")),
    }
    Ok(ExitCode::SUCCESS)
}
