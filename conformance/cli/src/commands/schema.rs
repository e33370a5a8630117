//! `schema`: check or regenerate the JSON Schemas in schemas/; `schema diff` compares two sets.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use session_conformance::schema;
use session_conformance_cli::schema_diff::{self, Impact};

use super::{schemas_dir, status, write_stdout};

/// Check or regenerate the JSON Schemas in schemas/ from the Rust types; `schema diff` compares two sets.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// Write the schemas (default: only check that they are current; exit 1 if not).
    #[arg(long)]
    write: bool,
    /// The schemas directory (default: schemas when it is here; to check, else the schemas
    /// built into the binary).
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Action {
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

/// Runs `schema`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    if let Some(Action::Diff { old, new }) = args.action {
        return diff(&old, &new);
    }
    if args.write {
        let dir = args.dir.unwrap_or_else(|| PathBuf::from("schemas"));
        for path in schema::write(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            println!("wrote {}", path.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let dir = schemas_dir(args.dir.as_deref())?;
    if !dir.is_dir() {
        return Err(format!(
            "{}: no schemas folder here; run from the repository root or pass --dir",
            dir.display()
        ));
    }
    let stale = schema::stale(&dir);
    for path in &stale {
        println!(
            "{}: stale; run `session-conformance schema --write`",
            path.display()
        );
    }
    if stale.is_empty() {
        println!(
            "{}: {} schema(s), all current",
            dir.display(),
            schema::generate().len()
        );
    }
    Ok(status(stale.is_empty()))
}

fn diff(old: &str, new: &str) -> Result<ExitCode, String> {
    let set = |spec| schema_diff::schema_set(spec).map_err(|e| e.to_string());
    let (old, new) = (set(old)?, set(new)?);
    let changes = schema_diff::diff_sets(&old, &new);
    let breaking = changes
        .iter()
        .filter(|c| c.impact == Impact::Breaking)
        .count();
    let mut out: String = changes.iter().map(|c| c.to_string() + "\n").collect();
    let _ = writeln!(out, "{} change(s), {breaking} breaking", changes.len());
    write_stdout(&out)?;
    Ok(status(breaking == 0))
}
