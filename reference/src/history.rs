//! Prompt history: the SQLite store of seed 000 (`~/.omp/agent/history.db`), separate
//! from session replay.
//!
//! Seed 000 "HistoryStorage"; clause history.1. The table is `history(id, prompt, created_at, cwd)`,
//! an FTS5 index `history_fts` is kept in sync by an `AFTER INSERT` trigger, and a prompt
//! equal to the previous one is not stored again. Inserts here are synchronous (the real
//! store defers them with `setImmediate`; the rows are the same).

use std::path::Path;

use rusqlite::{params, Connection};
use serde::Serialize;

/// The schema, as omp 13.19.0 creates it.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    prompt TEXT NOT NULL,
    created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)),
    cwd TEXT
);
CREATE INDEX IF NOT EXISTS idx_history_created_at ON history(created_at DESC);
CREATE VIRTUAL TABLE IF NOT EXISTS history_fts USING fts5(prompt, content='history', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS history_ai AFTER INSERT ON history BEGIN
    INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);
END;
";

/// The most rows one query returns.
/// Clauses: history.3.
pub const MAX_LIMIT: usize = 1000;

/// One stored prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    /// The row id (increasing).
    pub id: i64,
    /// The prompt, trimmed.
    pub prompt: String,
    /// Seconds since the epoch.
    pub created_at: i64,
    /// The working directory it was typed in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// An open history database.
pub struct History {
    db: Connection,
    last_prompt: Option<String>,
}

impl History {
    /// Opens (creating when missing, with its folder) the database at `path`.
    /// Clauses: history.1.
    pub fn open(path: &Path) -> rusqlite::Result<History> {
        if let Some(dir) = path.parent() {
            // A missing folder is reported by the open below.
            let _ = std::fs::create_dir_all(dir);
        }
        History::with_connection(Connection::open(path)?)
    }

    /// A history in memory (tests, dry runs).
    pub fn in_memory() -> rusqlite::Result<History> {
        History::with_connection(Connection::open_in_memory()?)
    }

    fn with_connection(db: Connection) -> rusqlite::Result<History> {
        // Opened as omp 13.19.0 opens it: a write-ahead log, synced at checkpoints
        // rather than at every insert. `journal_mode` answers with the mode now in
        // use (`memory` for a database in memory, which has no log).
        db.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
        db.pragma_update(None, "synchronous", "NORMAL")?;
        db.execute_batch(SCHEMA)?;
        let last_prompt = db
            .query_row(
                "SELECT prompt FROM history ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .ok();
        Ok(History { db, last_prompt })
    }

    /// Stores a prompt, trimmed; an empty prompt, or one equal to the last stored, is skipped.
    /// Returns whether a row was added.
    /// Clauses: history.2, history.5.
    pub fn add(&mut self, prompt: &str, cwd: Option<&str>) -> rusqlite::Result<bool> {
        let trimmed = prompt.trim_matches(crate::parse::is_js_whitespace);
        if trimmed.is_empty() || self.last_prompt.as_deref() == Some(trimmed) {
            return Ok(false);
        }
        self.db
            .prepare_cached("INSERT INTO history (prompt, cwd) VALUES (?1, ?2)")?
            .execute(params![trimmed, cwd])?;
        self.last_prompt = Some(trimmed.to_owned());
        Ok(true)
    }

    /// The `limit` newest prompts (at most [`MAX_LIMIT`]).
    /// Clauses: history.3.
    pub fn recent(&self, limit: usize) -> rusqlite::Result<Vec<HistoryEntry>> {
        self.rows(
            "SELECT id, prompt, created_at, cwd FROM history ORDER BY created_at DESC, id DESC LIMIT ?1",
            None,
            limit,
        )
    }

    /// Prompts matching every whitespace-separated token of `query` as an FTS5 prefix,
    /// newest first; none for a blank query.
    /// Clauses: history.4.
    pub fn search(&self, query: &str, limit: usize) -> rusqlite::Result<Vec<HistoryEntry>> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        self.rows(
            "SELECT h.id, h.prompt, h.created_at, h.cwd FROM history_fts f JOIN history h ON h.id = f.rowid \
             WHERE history_fts MATCH ?1 ORDER BY h.created_at DESC, h.id DESC LIMIT ?2",
            Some(&fts),
            limit,
        )
    }

    /// The names of the tables, indexes and triggers in the database, sorted.
    /// Clauses: history.1.
    pub fn schema_objects(&self) -> rusqlite::Result<Vec<String>> {
        let mut stmt = self
            .db
            .prepare("SELECT type || ' ' || name FROM sqlite_master ORDER BY type, name")?;
        let names = stmt.query_map([], |r| r.get(0))?;
        names.collect()
    }

    fn rows(
        &self,
        sql: &str,
        query: Option<&str>,
        limit: usize,
    ) -> rusqlite::Result<Vec<HistoryEntry>> {
        let limit = i64::try_from(limit.min(MAX_LIMIT)).unwrap_or(0);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut stmt = self.db.prepare_cached(sql)?;
        let map = |r: &rusqlite::Row<'_>| {
            Ok(HistoryEntry {
                id: r.get(0)?,
                prompt: r.get(1)?,
                created_at: r.get(2)?,
                cwd: r.get(3)?,
            })
        };
        let rows = match query {
            Some(q) => stmt.query_map(params![q, limit], map)?.collect(),
            None => stmt.query_map(params![limit], map)?.collect(),
        };
        rows
    }
}

/// The FTS5 query of a search: each token quoted (`"` doubled) with a prefix `*`,
/// joined by spaces (AND); `None` when the query has no token.
/// Clauses: history.4.
pub fn fts_query(query: &str) -> Option<String> {
    let tokens: Vec<String> = query
        .split_whitespace()
        .map(|t| format!("\"{}\"*", t.replace('"', "\"\"")))
        .collect();
    (!tokens.is_empty()).then(|| tokens.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts(entries: &[HistoryEntry]) -> Vec<&str> {
        entries.iter().map(|e| e.prompt.as_str()).collect()
    }

    #[test]
    fn consecutive_duplicates_and_blank_prompts_are_dropped() {
        let mut h = History::in_memory().expect("db");
        let added: Vec<bool> = ["one", " one ", "two", "one", "   ", ""]
            .iter()
            .map(|p| h.add(p, Some("/p")).expect("add"))
            .collect();
        assert_eq!(added, [true, false, true, true, false, false]);
        let recent = h.recent(10).expect("recent");
        assert_eq!(prompts(&recent), ["one", "two", "one"]);
        assert_eq!(recent[0].cwd.as_deref(), Some("/p"));
        assert!(
            recent[0].created_at > 1_700_000_000,
            "seconds since the epoch"
        );
        assert_eq!(prompts(&h.recent(1).expect("recent")), ["one"]);
        assert!(h.recent(0).expect("recent").is_empty());
    }

    #[test]
    fn search_is_an_fts_prefix_and_of_every_token() {
        let mut h = History::in_memory().expect("db");
        for p in [
            "fix the parser",
            "parse tree",
            "write docs",
            "say \"hi\" there",
        ] {
            h.add(p, None).expect("add");
        }
        let find = |q: &str| prompts(&h.search(q, 10).expect("search")).join("|");
        assert_eq!(find("pars"), "parse tree|fix the parser");
        assert_eq!(find("fix pars"), "fix the parser");
        assert_eq!(find("docs"), "write docs");
        assert_eq!(find("\"hi\""), "say \"hi\" there");
        assert_eq!(find("   "), "");
        assert_eq!(find("cond"), "", "no substring fallback in 13.19.0");
    }

    /// What SQLite says of a database file: its journal mode, its integrity, and the
    /// SQL of every object in it.
    fn describe(path: &Path) -> (String, String, Vec<String>) {
        let db = Connection::open(path).expect("open");
        let one = |sql: &str| db.query_row(sql, [], |r| r.get::<_, String>(0)).expect(sql);
        let mut stmt = db
            .prepare("SELECT type || ' ' || name || ' ' || ifnull(sql, '') FROM sqlite_master ORDER BY 1")
            .expect("prepare");
        let objects = stmt.query_map([], |r| r.get(0)).expect("query");
        let objects = objects.collect::<rusqlite::Result<_>>().expect("rows");
        (
            one("PRAGMA journal_mode"),
            one("PRAGMA integrity_check"),
            objects,
        )
    }

    #[test]
    fn a_new_database_holds_the_schema_in_wal_mode() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("history.db");
        drop(History::open(&path).expect("open"));
        let (mode, integrity, objects) = describe(&path);
        assert_eq!((mode.as_str(), integrity.as_str()), ("wal", "ok"));
        assert_eq!(objects.len(), 9, "{objects:?}");
    }

    #[test]
    fn an_existing_file_is_not_replaced() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("history.db");
        std::fs::write(&path, b"not a database").expect("write");
        assert!(History::open(&path).is_err());
        assert_eq!(std::fs::read(&path).expect("read"), b"not a database");
    }

    #[test]
    fn the_schema_and_the_last_prompt_survive_reopening() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("agent/history.db");
        {
            let mut h = History::open(&path).expect("open");
            h.add("same", None).expect("add");
        }
        let mut h = History::open(&path).expect("reopen");
        assert!(
            !h.add("same", None).expect("add"),
            "the last prompt is read back"
        );
        let objects = h.schema_objects().expect("schema");
        for name in [
            "table history",
            "table history_fts",
            "index idx_history_created_at",
            "trigger history_ai",
        ] {
            assert!(objects.iter().any(|o| o == name), "{name} in {objects:?}");
        }
        assert_eq!(fts_query("a \"b"), Some("\"a\"* \"\"\"b\"*".to_owned()));
    }
}
