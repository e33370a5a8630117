//! What `validate` reports: a [`Finding`] (its file, line, [`Level`] and message), and
//! the findings of one file as they are gathered, listed up to [`MAX_LISTED_FINDINGS`]
//! a pass and counted past it.

use std::fmt;

use serde_json::{json, Value};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Worth knowing; the file still loads as intended.
    Warning,
    /// The file breaks the format.
    Error,
}

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file (`-` for stdin).
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// Error or warning.
    pub level: Level,
    /// What is wrong.
    pub message: String,
    /// The entry id concerned.
    pub id: Option<String>,
    /// JSON Pointer inside the line.
    pub pointer: Option<String>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.level {
            Level::Warning => "warning",
            Level::Error => "error",
        };
        write!(f, "{}:{}: {level}: {}", self.file, self.line, self.message)?;
        if let Some(id) = &self.id {
            write!(f, " [{id}]")?;
        }
        if let Some(pointer) = &self.pointer {
            write!(f, " ({pointer})")?;
        }
        Ok(())
    }
}

impl Finding {
    /// The finding as a JSON record.
    pub fn to_json(&self) -> Value {
        let level = if self.level == Level::Error {
            "error"
        } else {
            "warning"
        };
        json!({"file": self.file, "line": self.line, "level": level, "message": self.message, "id": self.id, "pointer": self.pointer})
    }
}

/// The most findings listed for one file (in each of its two passes: the lines, then
/// the tree). Past it they are only counted, and one last finding says how many there
/// were: a file of millions of bad lines costs the memory of its bytes, not a record
/// per line.
pub const MAX_LISTED_FINDINGS: usize = 1_000;

/// The findings of one file.
pub(super) struct Findings<'a> {
    file: &'a str,
    pub(super) list: Vec<Finding>,
    /// Errors and warnings past [`MAX_LISTED_FINDINGS`].
    pub(super) unlisted_errors: usize,
    pub(super) unlisted_warnings: usize,
}

impl<'a> Findings<'a> {
    pub(super) fn new(file: &'a str) -> Findings<'a> {
        Findings {
            file,
            list: Vec::new(),
            unlisted_errors: 0,
            unlisted_warnings: 0,
        }
    }

    /// The listed findings, and last, when some were only counted, one that says how
    /// many (an error when any of them was).
    pub(super) fn into_list(mut self) -> Vec<Finding> {
        let (errors, warnings) = (self.unlisted_errors, self.unlisted_warnings);
        if errors + warnings > 0 {
            self.list.push(Finding {
                file: self.file.to_owned(),
                line: 0,
                level: if errors > 0 {
                    Level::Error
                } else {
                    Level::Warning
                },
                message: format!(
                    "{} more finding(s) not listed ({errors} error(s), {warnings} warning(s)); \
                     the first {MAX_LISTED_FINDINGS} of each pass are",
                    errors + warnings
                ),
                id: None,
                pointer: None,
            });
        }
        self.list
    }

    pub(super) fn add(
        &mut self,
        line: usize,
        level: Level,
        message: String,
        id: Option<String>,
        pointer: Option<String>,
    ) {
        if self.list.len() >= MAX_LISTED_FINDINGS {
            match level {
                Level::Error => self.unlisted_errors += 1,
                Level::Warning => self.unlisted_warnings += 1,
            }
            return;
        }
        self.list.push(Finding {
            file: self.file.to_owned(),
            line,
            level,
            message,
            id,
            pointer,
        });
    }
}
