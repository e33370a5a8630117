//! The session picker's search: which listed sessions a query keeps, best match first.
//!
//! Seed 001 "Session selector component behavior" ("fuzzy search across session
//! id/title/cwd/first message/all messages/path"); omp 13.19.0
//! `modes/components/session-selector.ts` `#filterSessions` over `utils/fuzzy.ts`.

use serde_json::Value;

use crate::listing::SessionInfo;
use crate::parse::is_js_whitespace;

/// The sessions of `sessions` (in list order) that every whitespace-separated token of
/// `query` fuzzy-matches ([`fuzzy_score`]), sorted by the sum of their scores, lowest
/// first; ties keep list order. A blank query keeps every session in order.
/// Clauses: stores.17.
pub fn search<'a>(sessions: &'a [SessionInfo], query: &str) -> Vec<&'a SessionInfo> {
    let tokens: Vec<&str> = query
        .split(is_js_whitespace)
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.is_empty() {
        return sessions.iter().collect();
    }
    let mut kept: Vec<(f64, &SessionInfo)> = sessions
        .iter()
        .filter_map(|info| {
            let text = haystack(info);
            let mut total = 0.0;
            for token in &tokens {
                total += fuzzy_score(token, &text)?;
            }
            Some((total, info))
        })
        .collect();
    // A stable sort, as `Array.prototype.sort` is.
    kept.sort_by(|a, b| a.0.total_cmp(&b.0));
    kept.into_iter().map(|(_, info)| info).collect()
}

/// The text a session is searched by: its id, title, cwd, first message, all messages'
/// text and path, the empty ones left out, joined by a space.
/// Clauses: stores.17.
pub fn haystack(info: &SessionInfo) -> String {
    let title = match &info.title {
        Some(Value::String(s)) => s.clone(),
        // `title ?? ""` of a non-string title: JavaScript's `String(value)` in the join.
        Some(Value::Null | Value::Bool(false)) | None => String::new(),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => String::new(),
        Some(other) => js_string(other),
    };
    let path = info.path.to_string_lossy();
    let parts = [
        info.id.as_deref().unwrap_or_default(),
        &title,
        &info.cwd,
        &info.first_message,
        &info.all_messages_text,
        &path,
    ];
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<&str>>()
        .join(" ")
}

/// `fuzzyMatch(query, text)`: `None` unless every character of `query` appears in `text`
/// in order (both lowercased; UTF-16 units). Else the score, lower is better: each match
/// adds a tenth of its index; a match right after the previous one subtracts 5 × the run's
/// length so far, one after a gap adds 2 per skipped unit; a match at the start or after
/// whitespace, `-`, `_`, `.` or `/` subtracts 10. An empty query scores 0.
/// Clauses: stores.17.
pub fn fuzzy_score(query: &str, text: &str) -> Option<f64> {
    let query: Vec<u16> = query.to_lowercase().encode_utf16().collect();
    let text: Vec<u16> = text.to_lowercase().encode_utf16().collect();
    if query.is_empty() {
        return Some(0.0);
    }
    if query.len() > text.len() {
        return None;
    }
    let (mut q, mut score, mut last, mut run) = (0usize, 0.0f64, None::<usize>, 0u32);
    for (i, &unit) in text.iter().enumerate() {
        if q == query.len() {
            break;
        }
        if unit != query[q] {
            continue;
        }
        match last {
            Some(l) if l + 1 == i => {
                run += 1;
                score -= f64::from(run) * 5.0;
            }
            Some(l) => {
                run = 0;
                score += to_f64(i - l - 1) * 2.0;
            }
            None => run = 0,
        }
        if i == 0 || is_boundary(text[i - 1]) {
            score -= 10.0;
        }
        score += to_f64(i) * 0.1;
        last = Some(i);
        q += 1;
    }
    (q == query.len()).then_some(score)
}

/// `/[\s\-_./]/` of one UTF-16 unit.
fn is_boundary(unit: u16) -> bool {
    char::from_u32(u32::from(unit)).is_some_and(|c| is_js_whitespace(c) || "-_./".contains(c))
}

/// An index as a double (indexes stay far below 2^53).
fn to_f64(n: usize) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let x = n as f64;
    x
}

/// JavaScript's `String(value)` for the non-string titles a header may hold.
fn js_string(value: &Value) -> String {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn info(id: &str, first: &str) -> SessionInfo {
        SessionInfo {
            path: PathBuf::from(format!("/a/{id}.jsonl")),
            id: Some(id.to_owned()),
            cwd: "/proj".to_owned(),
            title: None,
            name: None,
            parent_session_path: None,
            created: None,
            modified: String::new(),
            message_count: 1,
            first_message: first.to_owned(),
            all_messages_text: first.to_owned(),
            modified_ms: 0,
        }
    }

    #[test]
    fn scores_follow_fuzzy_ts() {
        let table = [
            ("", "abc", Some(0.0)),
            ("abcd", "abc", None),
            ("ba", "abc", None),
            ("a", "abc", Some(-10.0)),
            // a at 0: -10; b at 1: run 1 → -5, +0.1; c at 2: run 2 → -10, +0.2.
            ("abc", "abc", Some(-10.0 - 5.0 + 0.1 - 10.0 + 0.2)),
            // f at 0: -10; o at 2: gap 1 → +2, +0.2; o at 4: +2, +0.4.
            (
                "foo",
                "f_o_o",
                Some(-10.0 + 2.0 - 10.0 + 0.2 + 2.0 - 10.0 + 0.4),
            ),
            ("B", "ab", Some(0.1)),
        ];
        for (query, text, want) in table {
            let got = fuzzy_score(query, text);
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{query:?} {text:?}: {g}"),
                (g, w) => assert_eq!(g, w, "{query:?} {text:?}"),
            }
        }
    }

    #[test]
    fn every_token_must_match_and_the_best_comes_first() {
        let sessions = [info("s1", "fix the parser"), info("s2", "parser")];
        let ids = |query: &str| -> Vec<String> {
            search(&sessions, query)
                .into_iter()
                .filter_map(|i| i.id.clone())
                .collect()
        };
        assert_eq!(ids("   "), ["s1", "s2"]);
        assert_eq!(ids("fix parser"), ["s1"]);
        assert_eq!(ids("zzz"), Vec::<String>::new());
        assert_eq!(ids("s2"), ["s2"]);
        assert_eq!(
            haystack(&sessions[0]),
            "s1 /proj fix the parser fix the parser /a/s1.jsonl"
        );
    }
}
