//! Where sessions live: the agent directory, the per-project session directories, and
//! the terminal breadcrumbs that `--continue` reads. (New files are named
//! `<file timestamp>_<session id>.jsonl` by the [`crate::session::SessionManager`].)
//!
//! Seed 000 "Default session file location"; seed 001 "Directory scope" and
//! "--continue resolution and terminal breadcrumb preference"; clauses stores.1, stores.2, stores.11, stores.12.

use std::path::{Path, PathBuf};

use crate::model::Profile;

/// The environment variable both implementations honour for the agent directory.
pub const AGENT_DIR_ENV: &str = "PI_CODING_AGENT_DIR";

/// omp's name for its folder under the home directory (default `.omp`).
pub const CONFIG_DIR_ENV: &str = "PI_CONFIG_DIR";

/// The terminal-id environment variables, in the order seed 001 tries them after the TTY,
/// with the prefix each id gets (pi-tui `getTerminalId`).
pub const TERMINAL_ENV: [(&str, &str); 4] = [
    ("KITTY_WINDOW_ID", "kitty-"),
    ("TMUX_PANE", "tmux-"),
    ("TERM_SESSION_ID", "apple-"),
    ("WT_SESSION", "wt-"),
];

/// Reads an environment variable.
pub type Env<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// The per-profile rules of the store.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The agent directory: from `$PI_CODING_AGENT_DIR` when set (`Some`), else the
    /// default under the home.
    pub agent_dir: fn(Option<&str>, &Path, &Env<'_>) -> PathBuf,
    /// Every project's sessions share `<agent>/sessions/` (003 "Session directory
    /// layout"), told apart by the header's `cwd`; else each project has
    /// `sessions/--<cwd-encoded>--/`.
    pub flat_sessions: bool,
}

impl Rules {
    /// The rules of `profile`.
    /// Clauses: stores.16.
    pub fn for_profile(profile: Profile) -> Rules {
        match profile {
            Profile::Pi => Rules {
                agent_dir: pi_agent_dir,
                flat_sessions: false,
            },
            Profile::Omp => Rules {
                agent_dir: omp_agent_dir,
                flat_sessions: false,
            },
            Profile::Operator => Rules {
                agent_dir: operator_agent_dir,
                flat_sessions: true,
            },
        }
    }
}

/// pi-mono 0.73.1 `getAgentDir`: `$PI_CODING_AGENT_DIR` with `~` expanded, else `<home>/.pi/agent`.
fn pi_agent_dir(set: Option<&str>, home: &Path, _env: &Env<'_>) -> PathBuf {
    match set {
        Some(dir) => expand_home(dir, home),
        None => home.join(".pi").join("agent"),
    }
}

/// omp 13.19.0: `$PI_CODING_AGENT_DIR` as written, else `<home>/<$PI_CONFIG_DIR or .omp>/agent`.
/// (omp's XDG locations apply only after `omp config migrate`, and are not modelled.)
fn omp_agent_dir(set: Option<&str>, home: &Path, env: &Env<'_>) -> PathBuf {
    if let Some(dir) = set {
        return PathBuf::from(dir);
    }
    let folder = env(CONFIG_DIR_ENV)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| ".omp".to_owned());
    home.join(folder).join("agent")
}

/// 003: `$PI_CODING_AGENT_DIR` with `~` expanded (the kit's override), else
/// `<home>/.operator/profiles/<$OPERATOR_PROFILE or "default">` (003 names the
/// folder `profiles/<name>`; 003 is silent on how the name is chosen).
fn operator_agent_dir(set: Option<&str>, home: &Path, env: &Env<'_>) -> PathBuf {
    if let Some(dir) = set {
        return expand_home(dir, home);
    }
    let name = env("OPERATOR_PROFILE")
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    home.join(".operator").join("profiles").join(name)
}

/// An agent directory and the folders inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    /// `~/.pi/agent`, `~/.omp/agent`, or the `PI_CODING_AGENT_DIR` override.
    pub agent_dir: PathBuf,
}

impl Store {
    /// A store rooted at `agent_dir`.
    pub fn new(agent_dir: impl Into<PathBuf>) -> Store {
        Store {
            agent_dir: agent_dir.into(),
        }
    }

    /// The default store of `profile`: `$PI_CODING_AGENT_DIR` or the profile's folder
    /// under `home` ([`Rules::agent_dir`]). `env` reads a variable.
    /// Clauses: stores.1.
    pub fn default_for(profile: Profile, home: &Path, env: &Env<'_>) -> Store {
        let set = env(AGENT_DIR_ENV).filter(|d| !d.is_empty());
        Store::new((Rules::for_profile(profile).agent_dir)(
            set.as_deref(),
            home,
            env,
        ))
    }

    /// `<agent>/sessions`: one folder per project.
    /// Clauses: stores.1.
    pub fn sessions_root(&self) -> PathBuf {
        self.agent_dir.join("sessions")
    }

    /// `<agent>/sessions/--<cwd-encoded>--`: the project's session directory.
    /// Clauses: stores.1.
    pub fn session_dir(&self, cwd: &str) -> PathBuf {
        self.sessions_root().join(encode_cwd(cwd))
    }

    /// `<agent>/terminal-sessions`: one breadcrumb per terminal (omp).
    pub fn breadcrumbs_dir(&self) -> PathBuf {
        self.agent_dir.join("terminal-sessions")
    }

    /// `<agent>/history.db`: the prompt history (omp).
    pub fn history_db(&self) -> PathBuf {
        self.agent_dir.join("history.db")
    }
}

/// `~` and `~/…` expanded against `home`.
pub fn expand_home(dir: &str, home: &Path) -> PathBuf {
    if dir == "~" {
        home.to_path_buf()
    } else if let Some(rest) = dir.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(dir)
    }
}

/// The project folder name of seed 000: one leading `/` or `\` removed, every `/`, `\`
/// and `:` replaced by `-`, wrapped in `--…--`.
///
/// The result is always one path component that is neither `.` nor `..` and holds no
/// separator, so it can never point outside the sessions root. Distinct cwds may collide
/// (`/a:b` and `/a/b` both give `--a-b--`), as in both real implementations.
/// Clauses: stores.2.
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd
        .strip_prefix('/')
        .or_else(|| cwd.strip_prefix('\\'))
        .unwrap_or(cwd);
    let body: String = trimmed
        .chars()
        .map(|c| match c {
            '/' | '\\' | ':' | '\0' => '-',
            c => c,
        })
        .collect();
    format!("--{body}--")
}

/// The terminal id: from the TTY path (`/dev/pts/3` → `pts-3`), else the first terminal
/// environment variable that is set ([`TERMINAL_ENV`]). `None` when the terminal is unknown.
///
/// The id names a breadcrumb file, so it is always one path component: `/`, `\\` and
/// NUL become `-`, and a TTY path that would give `.` or `..` gives no id.
/// Clauses: stores.12.
pub fn terminal_id(tty: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(rest) = tty.and_then(|t| t.strip_prefix("/dev/")) {
        let id = one_component(rest);
        return (!matches!(id.as_str(), "" | "." | "..")).then_some(id);
    }
    TERMINAL_ENV.iter().find_map(|(name, prefix)| {
        env(name)
            .filter(|v| !v.is_empty())
            .map(|v| format!("{prefix}{}", one_component(&v)))
    })
}

/// `text` with every path separator (and NUL) replaced by `-`.
fn one_component(text: &str) -> String {
    text.replace(['/', '\\', '\0'], "-")
}

/// A terminal breadcrumb: the cwd and the session file it last used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breadcrumb {
    /// The working directory of that session.
    pub cwd: String,
    /// The session file.
    pub file: PathBuf,
}

impl Breadcrumb {
    /// Reads a breadcrumb file's text: the trimmed text's first two lines (cwd, then file).
    /// `None` when it has fewer than two lines.
    pub fn parse(text: &str) -> Option<Breadcrumb> {
        let mut lines = text.trim().lines();
        let cwd = lines.next()?;
        let file = lines.next()?;
        Some(Breadcrumb {
            cwd: cwd.to_owned(),
            file: PathBuf::from(file),
        })
    }

    /// The file's text: `cwd\nfile\n`.
    pub fn to_text(&self) -> String {
        format!("{}\n{}\n", self.cwd, self.file.display())
    }

    /// Whether it may be used from `cwd`: same directory (compared after lexical
    /// normalisation) and the session file still exists as a file.
    pub fn valid_for(&self, cwd: &str) -> bool {
        normalize_path(&self.cwd) == normalize_path(cwd) && self.file.is_file()
    }
}

/// The most bytes read of a breadcrumb (two paths and two newlines fit many times over).
pub const MAX_BREADCRUMB_BYTES: u64 = 64 << 10;

/// Reads the breadcrumb of `terminal` in `store`; `None` when missing or unreadable. Only
/// a regular file of at most [`MAX_BREADCRUMB_BYTES`] is read: a link, a FIFO or a
/// device there is unreadable, never followed, waited on or read without end.
/// Clauses: stores.11.
pub fn read_breadcrumb(store: &Store, terminal: &str) -> Option<Breadcrumb> {
    let path = store.breadcrumbs_dir().join(terminal);
    let bytes = crate::storage::read_own_file(&path, MAX_BREADCRUMB_BYTES).ok()??;
    Breadcrumb::parse(&String::from_utf8_lossy(&bytes))
}

/// Writes the breadcrumb of `terminal`, replacing what is there without following a link
/// (a link in `terminal-sessions/` is replaced, its target left alone). Best effort: a
/// failure is returned for the caller to ignore or log, and never fails the session
/// operation (seed 001).
/// Clauses: stores.12.
pub fn write_breadcrumb(store: &Store, terminal: &str, crumb: &Breadcrumb) -> std::io::Result<()> {
    let path = store.breadcrumbs_dir().join(terminal);
    crate::storage::replace_own_file(&path, crumb.to_text().as_bytes())
}

/// A path normalised as Node's `path.resolve` does for an absolute path: `.` and empty
/// segments dropped, `..` pops, no trailing separator.
pub fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether a `--resume` value names a file rather than an id prefix: it holds `/` or `\`,
/// or ends in `.jsonl` (seed 001).
pub fn is_path_like(value: &str) -> bool {
    // Case-sensitive, as `endsWith(".jsonl")` is.
    #[allow(clippy::case_sensitive_file_extension_comparisons)]
    let jsonl = value.ends_with(".jsonl");
    value.contains('/') || value.contains('\\') || jsonl
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_encoding_follows_the_seed_and_stays_inside_the_root() {
        let table = [
            ("/home/u/proj", "--home-u-proj--"),
            ("/", "----"),
            ("/a/b/", "--a-b---"),
            (r"C:\Users\x\p", "--C--Users-x-p--"),
            ("relative/dir", "--relative-dir--"),
            ("/with space/ü/a.b", "--with space-ü-a.b--"),
            (r"\\server\share", "---server-share--"),
            ("//double", "---double--"),
            ("/a:b", "--a-b--"),
            ("", "----"),
            ("..", "--..--"),
            ("/../..", "--..-..--"),
            ("a\0b", "--a-b--"),
        ];
        let root = Path::new("/agent/sessions");
        for (cwd, want) in table {
            let got = encode_cwd(cwd);
            assert_eq!(got, want, "cwd {cwd:?}");
            let joined = root.join(&got);
            assert_eq!(joined.parent(), Some(root), "{cwd:?} escapes the root");
            assert!(got != "." && got != ".." && !got.contains(['/', '\\']));
        }
    }

    #[test]
    fn agent_dir_honours_the_override_and_expands_home() {
        let home = Path::new("/h");
        let none = |_: &str| None;
        assert_eq!(
            Store::default_for(Profile::Pi, home, &none).agent_dir,
            Path::new("/h/.pi/agent")
        );
        assert_eq!(
            Store::default_for(Profile::Omp, home, &none).agent_dir,
            Path::new("/h/.omp/agent")
        );
        for (value, want) in [("~", "/h"), ("~/x", "/h/x"), ("/abs", "/abs")] {
            let env = |k: &str| (k == AGENT_DIR_ENV).then(|| value.to_owned());
            assert_eq!(
                Store::default_for(Profile::Pi, home, &env).agent_dir,
                Path::new(want)
            );
        }
        let store = Store::new("/a");
        assert_eq!(store.session_dir("/p/q"), Path::new("/a/sessions/--p-q--"));
        assert_eq!(store.breadcrumbs_dir(), Path::new("/a/terminal-sessions"));
        assert_eq!(store.history_db(), Path::new("/a/history.db"));
    }

    #[test]
    fn terminal_ids_prefer_the_tty_then_the_environment_in_order() {
        let env = |k: &str| match k {
            "TMUX_PANE" => Some("%7".to_owned()),
            "WT_SESSION" => Some("w".to_owned()),
            _ => None,
        };
        assert_eq!(
            terminal_id(Some("/dev/pts/3"), &env).as_deref(),
            Some("pts-3")
        );
        assert_eq!(terminal_id(None, &env).as_deref(), Some("tmux-%7"));
        assert_eq!(terminal_id(Some("not-a-dev"), &|_| None), None);
        let kitty = |k: &str| (k != "WT_SESSION").then(|| "1".to_owned());
        assert_eq!(terminal_id(None, &kitty).as_deref(), Some("kitty-1"));
    }

    #[test]
    fn terminal_ids_are_one_path_component() {
        let hostile =
            |k: &str| (k == "KITTY_WINDOW_ID").then(|| "/../../../../tmp/OWNED".to_owned());
        assert_eq!(
            terminal_id(None, &hostile).as_deref(),
            Some("kitty--..-..-..-..-tmp-OWNED")
        );
        let windows = |k: &str| (k == "WT_SESSION").then(|| "..\\..\\x\0y".to_owned());
        assert_eq!(terminal_id(None, &windows).as_deref(), Some("wt-..-..-x-y"));
        for tty in ["/dev/..", "/dev/.", "/dev/"] {
            assert_eq!(terminal_id(Some(tty), &|_| None), None, "{tty}");
        }
        assert_eq!(
            terminal_id(Some("/dev/../etc"), &|_| None).as_deref(),
            Some("..-etc")
        );
    }

    #[test]
    fn breadcrumbs_need_two_lines_the_same_cwd_and_an_existing_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("s.jsonl");
        std::fs::write(&file, "{}\n").expect("write");
        let crumb = Breadcrumb::parse(&format!("/p/q/\n{}\n", file.display())).expect("two lines");
        assert!(crumb.valid_for("/p/q"));
        assert!(crumb.valid_for("/p/./q"));
        assert!(!crumb.valid_for("/p"));
        assert_eq!(Breadcrumb::parse("/only-one-line\n"), None);
        let gone = Breadcrumb {
            cwd: "/p/q".into(),
            file: dir.path().join("gone.jsonl"),
        };
        assert!(!gone.valid_for("/p/q"));
        let store = Store::new(dir.path());
        write_breadcrumb(&store, "kitty-1", &crumb).expect("write crumb");
        assert_eq!(read_breadcrumb(&store, "kitty-1"), Some(crumb));
    }

    #[test]
    fn path_like_values() {
        for (value, want) in [
            ("abc", false),
            ("a/b", true),
            (r"a\b", true),
            ("x.jsonl", true),
            ("x.JSONL", false),
            ("", false),
        ] {
            assert_eq!(is_path_like(value), want, "{value:?}");
        }
    }
}
