//! `validate`: check session files against the schemas and the tree rules.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use session_conformance_cli::validate::{self, Finding, Level, Options, Schemas};
use session_reference::model::Profile;

use super::{ignore_broken_pipe, status, OutputFormat, ProfileChoice};

/// Check session files against the schemas and the tree rules; directories are searched for *.jsonl.
///
/// Each finding: FILE:LINE: error|warning: message [entry id] (JSON pointer).
/// Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage or IO error.
#[derive(clap::Args)]
pub struct Args {
    /// Files, directories (a session store such as ~/.omp/agent/sessions), or `-` for stdin.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The profile, or `auto` to decide from each file's content.
    #[arg(long, value_enum, default_value_t = ProfileChoice::Auto)]
    profile: ProfileChoice,
    /// The blob store to resolve `blob:sha256:` references in (default: ~/.omp/agent/blobs when it exists).
    #[arg(long)]
    blob_dir: Option<PathBuf>,
    /// Output: text lines, or JSON Lines (one record per finding, then a summary).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    format: OutputFormat,
}

/// Runs `validate`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    validate_paths(
        &args.paths,
        args.profile.profile(),
        args.blob_dir,
        args.format,
    )
}

/// Validates files and folders and prints the findings and a summary (also `sessions check`).
pub fn validate_paths(
    paths: &[PathBuf],
    profile: Option<Profile>,
    blob_dir: Option<PathBuf>,
    format: OutputFormat,
) -> Result<ExitCode, String> {
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
        let results: Vec<(Vec<Finding>, Profile)> = if path.as_os_str() == "-" {
            vec![validate::validate_reader(
                "-",
                io::stdin().lock(),
                &schemas,
                &options,
            )]
        } else {
            validate::validate_path(path, &schemas, &options)
                .map_err(|e| format!("{}: {e}", path.display()))?
        };
        for (findings, used) in results {
            files += 1;
            for finding in &findings {
                match finding.level {
                    Level::Error => errors += 1,
                    Level::Warning => warnings += 1,
                }
                let line = if format == OutputFormat::Json {
                    finding.to_json().to_string()
                } else {
                    finding.to_string()
                };
                writeln!(out, "{line}").or_else(ignore_broken_pipe)?;
            }
            if profile.is_none() && format == OutputFormat::Text && !findings.is_empty() {
                writeln!(out, "  (profile {used}, decided from the content)")
                    .or_else(ignore_broken_pipe)?;
            }
        }
    }
    if format == OutputFormat::Json {
        let summary = serde_json::json!({"type": "summary", "files": files, "errors": errors, "warnings": warnings});
        writeln!(out, "{summary}").or_else(ignore_broken_pipe)?;
    } else {
        writeln!(
            out,
            "{files} file(s), {errors} error(s), {warnings} warning(s)"
        )
        .or_else(ignore_broken_pipe)?;
    }
    Ok(status(errors == 0))
}
