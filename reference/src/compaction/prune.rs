//! omp's tool-output pruning (`pruneToolOutputs`, omp 13.19.0 `session/compaction/pruning.ts`),
//! the first of omp's two phases before a threshold compaction; document 004 names the same
//! two-phase idea in its comparison ("Two-Phase Compaction").
//!
//! Walking back from the newest tool result, the most recent `protectTokens` of output and
//! the outputs of protected tools are kept; every older output is a candidate. The candidates
//! are pruned only when together they save at least `minimumSavings` tokens. The reference
//! plans the pruning and reports it; it does not change the entries.

use serde_json::Value;

use super::tokens::{ceil_quarter, estimate_tokens};
use super::{js_len, message_of, Rules};
use crate::model::Entry;

/// `PruneConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneConfig {
    /// `protectTokens`: the most recent tool output kept intact.
    pub protect_tokens: i64,
    /// `minimumSavings`: prune only when the candidates save this much.
    pub minimum_savings: i64,
    /// `protectedTools`: tools whose output is never pruned.
    pub protected_tools: Vec<String>,
}

impl Default for PruneConfig {
    /// `DEFAULT_PRUNE_CONFIG`: 40,000 protected, 20,000 minimum, `skill` and `read` protected.
    fn default() -> Self {
        PruneConfig {
            protect_tokens: 40_000,
            minimum_savings: 20_000,
            protected_tools: vec!["skill".to_owned(), "read".to_owned()],
        }
    }
}

/// `PruneResult`, with the path indices of the tool results that would be pruned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneResult {
    /// `prunedCount`.
    pub pruned_count: usize,
    /// `tokensSaved`.
    pub tokens_saved: i64,
    /// The entries pruned, newest first.
    pub pruned: Vec<usize>,
}

/// The notice a pruned output is replaced with.
pub fn pruned_notice(tokens: i64) -> String {
    format!("[Output truncated - {tokens} tokens]")
}

/// `pruneToolOutputs(entries, config)`: which tool results omp would prune, and the tokens
/// saved (each output's estimate less its notice's).
/// Clauses: compaction.15.
pub fn prune_tool_outputs(path: &[&Entry], config: &PruneConfig, rules: &Rules) -> PruneResult {
    let mut accumulated = 0;
    let mut candidates: Vec<(usize, i64)> = Vec::new();
    for (i, entry) in path.iter().enumerate().rev() {
        if entry.role().as_deref() != Some("toolResult") {
            continue;
        }
        let message = message_of(entry).unwrap_or_default();
        let tokens = estimate_tokens(&message, rules);
        let tool = message
            .get("toolName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let protected = config.protected_tools.iter().any(|t| t == tool);
        let already = message.get("prunedAt").is_some();
        if !already && accumulated >= config.protect_tokens && !protected {
            candidates.push((i, tokens));
        }
        accumulated += tokens;
    }
    let saved: i64 = candidates.iter().map(|(_, tokens)| savings(*tokens)).sum();
    if saved < config.minimum_savings || candidates.is_empty() {
        return PruneResult::default();
    }
    PruneResult {
        pruned_count: candidates.len(),
        tokens_saved: saved,
        pruned: candidates.into_iter().map(|(i, _)| i).collect(),
    }
}

fn savings(tokens: i64) -> i64 {
    (tokens - ceil_quarter(js_len(&pruned_notice(tokens)))).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Profile;
    use serde_json::json;

    fn result(tool: &str, chars: usize) -> Entry {
        let value = json!({"type":"message","id":"r","message":{"role":"toolResult","toolName":tool,"content":[{"type":"text","text":"x".repeat(chars)}]}});
        Entry::from_text(value.to_string(), 1, Profile::Pi)
    }

    #[test]
    fn prunes_old_outputs_beyond_the_protected_tail() {
        let entries = [
            result("bash", 120_000),
            result("bash", 160_000),
            result("read", 200_000),
        ];
        let path: Vec<&Entry> = entries.iter().collect();
        let r = prune_tool_outputs(
            &path,
            &PruneConfig::default(),
            &Rules::for_profile(Profile::Omp),
        );
        // read (50,000) is protected by name; bash 40,000 is the first past 40,000: pruned; so is 30,000.
        assert_eq!(r.pruned, [1, 0]);
        assert_eq!(r.tokens_saved, (40_000 - 9) + (30_000 - 9));
    }

    #[test]
    fn small_savings_prune_nothing() {
        let entries = [result("bash", 4000), result("bash", 200_000)];
        let path: Vec<&Entry> = entries.iter().collect();
        let r = prune_tool_outputs(
            &path,
            &PruneConfig::default(),
            &Rules::for_profile(Profile::Omp),
        );
        assert_eq!(r, PruneResult::default());
    }
}
