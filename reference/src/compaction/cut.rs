//! Where to cut: document 004, "Compaction" (`findCutPoint`: walk backwards accumulating
//! tokens; cut only at a valid point, never at a tool result; a cut inside a turn is a split
//! turn, `CutPointResult { firstKeptEntryIndex, turnStartIndex, isSplitTurn }`).

use super::tokens::estimate_tokens;
use super::{message_of, CutRule, Rules};
use crate::model::{Entry, EntryKind};

/// `CutPointResult`: where the kept part starts and, for a split turn, where that turn began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// `firstKeptEntryIndex`: the index (in the path) of the first entry kept.
    pub first_kept_entry_index: usize,
    /// `turnStartIndex`: the user message (or bash execution, branch summary, custom
    /// message) that starts the turn the cut falls in; `None` (JavaScript's −1) when the cut
    /// is at a user message or no turn start exists.
    pub turn_start_index: Option<usize>,
    /// `isSplitTurn`: the cut is not at a user message and a turn start was found.
    pub is_split_turn: bool,
}

/// Whether the entry at a path index is a valid cut point under `rules`.
///
/// pi-mono and omp: a message entry of any role but `toolResult` (pi counts `custom`, omp
/// `hookMessage`, among the roles it lists), and every `branch_summary` and
/// `custom_message` entry. Document 004 read strictly: user and assistant messages only.
/// Clauses: compaction.7.
pub fn is_valid_cut_point(entry: &Entry, rules: &Rules) -> bool {
    let role = entry.role().unwrap_or_default();
    match rules.cut_rule {
        CutRule::UserOrAssistant => matches!(role.as_str(), "user" | "assistant"),
        CutRule::AnyButToolResult => {
            matches!(
                role.as_str(),
                "bashExecution" | "branchSummary" | "compactionSummary" | "user" | "assistant"
            ) || (!role.is_empty() && role == rules.custom_role)
                || matches!(
                    entry.kind,
                    EntryKind::BranchSummary | EntryKind::CustomMessage
                )
        }
    }
}

/// `findTurnStartIndex`: walking back from `entry_index` to `start_index`, the first
/// `branch_summary` or `custom_message` entry, or user or bash execution message.
/// Clauses: compaction.8.
pub fn find_turn_start_index(
    path: &[&Entry],
    entry_index: usize,
    start_index: usize,
) -> Option<usize> {
    (start_index..=entry_index).rev().find(|&i| {
        matches!(
            path[i].kind,
            EntryKind::BranchSummary | EntryKind::CustomMessage
        ) || matches!(path[i].role().as_deref(), Some("user" | "bashExecution"))
    })
}

/// `findCutPoint` over `path[start..end]`: keep about `keep_recent_tokens`.
///
/// Walk back from the newest message entry, adding estimates; at the first entry where the
/// sum reaches the budget (`>=`), cut at the first valid cut point at or after it. Without
/// reaching it, cut at the first valid cut point (keep everything). Then move the cut back
/// over the non-message entries just before it (settings, labels), stopping at a compaction.
/// With no valid cut point at all, the cut is `start` and no turn is split.
/// Clauses: compaction.6.
pub fn find_cut_point(
    path: &[&Entry],
    start: usize,
    end: usize,
    keep_recent_tokens: i64,
    rules: &Rules,
) -> CutPoint {
    let end = end.min(path.len());
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| is_valid_cut_point(path[i], rules))
        .collect();
    let Some(&first) = cut_points.first() else {
        return CutPoint {
            first_kept_entry_index: start,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut = match budget_reached_at(path, start, end, keep_recent_tokens, rules) {
        Some(i) => cut_points
            .iter()
            .copied()
            .find(|&c| c >= i)
            .unwrap_or(first),
        None => first,
    };
    while cut > start {
        if matches!(
            path[cut - 1].kind,
            EntryKind::Compaction | EntryKind::Message
        ) {
            break;
        }
        cut -= 1;
    }
    let at_user = path[cut].role().as_deref() == Some("user");
    let turn_start_index = if at_user {
        None
    } else {
        find_turn_start_index(path, cut, start)
    };
    CutPoint {
        first_kept_entry_index: cut,
        turn_start_index,
        is_split_turn: !at_user && turn_start_index.is_some(),
    }
}

/// The index of the message entry at which the estimates, summed from the newest back,
/// first reach `budget`.
fn budget_reached_at(
    path: &[&Entry],
    start: usize,
    end: usize,
    budget: i64,
    rules: &Rules,
) -> Option<usize> {
    let mut accumulated = 0;
    for i in (start..end).rev() {
        let Some(message) = message_of(path[i]) else {
            continue;
        };
        accumulated += estimate_tokens(&message, rules);
        if accumulated >= budget {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;
    use serde_json::{json, Value};

    fn entry(value: &Value) -> Entry {
        Entry::from_text(value.to_string(), 1, Profile::Pi)
    }

    fn msg(role: &str, text: &str) -> Entry {
        let content = if role == "assistant" || role == "toolResult" {
            json!([{"type":"text","text":text}])
        } else {
            json!(text)
        };
        entry(&json!({"type":"message","id":"x","message":{"role":role,"content":content}}))
    }

    fn cut(path: &[Entry], keep: i64) -> CutPoint {
        let refs: Vec<&Entry> = path.iter().collect();
        find_cut_point(&refs, 0, refs.len(), keep, &Rules::for_profile(Profile::Pi))
    }

    #[test]
    fn cuts_at_the_user_message_that_reaches_the_budget() {
        let path = [
            msg("user", &"a".repeat(40)),
            msg("assistant", &"b".repeat(40)),
            msg("user", &"c".repeat(40)),
            msg("assistant", &"d".repeat(40)),
        ];
        let c = cut(&path, 20);
        assert_eq!(
            (
                c.first_kept_entry_index,
                c.turn_start_index,
                c.is_split_turn
            ),
            (2, None, false)
        );
    }

    #[test]
    fn never_cuts_at_a_tool_result() {
        let path = [
            msg("user", "hi"),
            msg("assistant", "x"),
            msg("toolResult", &"r".repeat(400)),
        ];
        let c = cut(&path, 10);
        // The budget is reached at the tool result; no cut point follows it, so keep all.
        assert_eq!(c.first_kept_entry_index, 0);
    }

    #[test]
    fn an_assistant_cut_splits_its_turn() {
        let path = [
            msg("user", "go"),
            msg("assistant", &"a".repeat(80)),
            msg("assistant", &"b".repeat(80)),
        ];
        let c = cut(&path, 20);
        assert_eq!(
            (
                c.first_kept_entry_index,
                c.turn_start_index,
                c.is_split_turn
            ),
            (2, Some(0), true)
        );
    }

    #[test]
    fn the_strict_reading_skips_custom_messages() {
        let custom = entry(
            &json!({"type":"custom_message","id":"c","customType":"k","content":"x","display":true}),
        );
        let mut rules = Rules::for_profile(Profile::Pi);
        assert!(is_valid_cut_point(&custom, &rules));
        rules.cut_rule = CutRule::UserOrAssistant;
        assert!(!is_valid_cut_point(&custom, &rules));
        assert!(is_valid_cut_point(&msg("assistant", "a"), &rules));
        assert!(!is_valid_cut_point(&msg("toolResult", "a"), &rules));
    }

    #[test]
    fn the_cut_takes_the_settings_entries_before_it() {
        let setting =
            entry(&json!({"type":"thinking_level_change","id":"t","thinkingLevel":"high"}));
        let path = [
            msg("user", &"a".repeat(80)),
            setting,
            msg("user", &"b".repeat(80)),
        ];
        assert_eq!(cut(&path, 20).first_kept_entry_index, 1);
    }
}
