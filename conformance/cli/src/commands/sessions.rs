//! `sessions`: look at a session store without writing to it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use session_conformance_cli::sessions::{self, Place};

use super::{OutputFormat, ProfileChoice};

/// Look at a session store (~/.pi/agent, ~/.omp/agent or $PI_CODING_AGENT_DIR): list its
/// sessions, show one, explain what `--resume VALUE` opens, validate every file.
///
/// Nothing is written to the store.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
    /// The dialect; `auto`: omp when only ~/.omp/agent/sessions exists, operator when only
    /// ~/.operator/profiles/<name>/sessions does, else pi.
    #[arg(long, global = true, value_enum, default_value_t = ProfileChoice::Auto)]
    profile: ProfileChoice,
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
enum Command {
    /// List sessions: id, name, messages, modified (newest first).
    ///
    /// By default each file's first 4 KB is read, so large stores list fast; a message
    /// count that did not fit ends in `+`. `--full` reads whole files (the resume picker's view).
    /// A folder that cannot be read is named on stderr and skipped; the rest is listed,
    /// and the exit status is 1.
    List {
        /// Every project of the store, not only this one.
        #[arg(long)]
        all: bool,
        /// Read whole files: the profile's SessionInfo (title, first message, all message text).
        #[arg(long)]
        full: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
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
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
}

/// Runs `sessions`.
pub fn run(args: Args) -> Result<ExitCode, String> {
    let cwd = match args.cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir()
            .map_err(|e| format!("current directory: {e}"))?
            .to_string_lossy()
            .into_owned(),
    };
    let place = Place::new(args.profile.profile(), args.agent_dir, cwd, args.dir);
    let text = match args.command {
        Command::List { all, full, format } => {
            let json = format == OutputFormat::Json;
            let text = if full {
                sessions::list_full(&place, all, json)
            } else {
                sessions::list_quick(&place, all, json)
            };
            print!("{text}");
            let unreadable = sessions::unreadable_folders(&place, all);
            for folder in &unreadable {
                eprintln!("warning: {folder}");
            }
            return Ok(if unreadable.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
        Command::Show { session } => sessions::show(&place, &session).map_err(|e| e.to_string())?,
        Command::Resolve { value } => sessions::resolve(&place, &value),
        Command::Check { format } => {
            let root = sessions::check_root(&place);
            sessions::exists(&root).map_err(|e| e.to_string())?;
            return super::validate::validate_paths(&[root], Some(place.profile), None, format);
        }
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
