//! One `apply` step run on a session: the call table of `PROTOCOL.md` (each [`Call`]
//! as the profile's `SessionManager` method), its queries, the operator dialect's
//! snake_case names, and `{"$result": N}` replaced by an earlier step's value.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use session_reference::context::LeafChoice;
use session_reference::entries;
use session_reference::locations::Store;
use session_reference::model::{camel_step, Profile};
use session_reference::session::{NewSession, SessionError, SessionManager};

use super::call::Call;
use super::read::tree_output;

/// Replaces `{"$result": N}` by the value step N returned.
pub fn substitute(value: &Value, results: &[Value]) -> Value {
    match value {
        Value::Object(map) => {
            if let (1, Some(n)) = (map.len(), map.get("$result").and_then(Value::as_u64)) {
                return usize::try_from(n)
                    .ok()
                    .and_then(|n| results.get(n))
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), substitute(v, results)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, results)).collect()),
        other => other.clone(),
    }
}

/// Runs one `apply` step (PROTOCOL.md's call table) on a session; returns the call's value.
///
/// `dir` is the case directory: `moveTo` moves the session into the project folder of
/// the store at `<dir>/home/.omp/agent`, where the omp adapter points the library.
/// Clauses: tree.6.
pub fn run_step(
    sm: &mut SessionManager,
    step: &Value,
    profile: Profile,
    dir: &Path,
) -> Result<Value, SessionError> {
    // The operator dialect's calls are 003's snake_case names (PROTOCOL.md).
    let camel;
    let step = if profile == Profile::Operator {
        camel = camel_step(step);
        &camel
    } else {
        step
    };
    let arg = |name: &str| step.get(name).cloned().unwrap_or(Value::Null);
    let opt = |name: &str| step.get(name).cloned();
    let str_arg = |name: &str| {
        step.get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let id = |r: Result<String, SessionError>| r.map(Value::from);
    let call = step["call"].as_str().and_then(Call::from_name);
    match (call, profile) {
        (Some(Call::AppendMessage), _) => id(sm.append_message(arg("message"))),
        (Some(Call::AppendThinkingLevelChange), _) => {
            id(sm.append(&entries::ThinkingLevelChange {
                thinking_level: arg("thinkingLevel"),
            }))
        }
        (Some(Call::AppendModelChange), Profile::Pi) => id(sm.append(&entries::PiModelChange {
            provider: arg("provider"),
            model_id: arg("modelId"),
        })),
        (Some(Call::AppendModelChange), Profile::Operator) => {
            id(sm.append(&entries::ModelIdChange {
                provider: opt("provider"),
                model_id: arg("modelId"),
            }))
        }
        (Some(Call::AppendModelChange), Profile::Omp) => id(sm.append(&entries::OmpModelChange {
            model: arg("model"),
            role: opt("role"),
        })),
        (Some(Call::AppendCompaction), Profile::Pi | Profile::Operator) => {
            id(sm.append(&entries::PiCompaction {
                summary: arg("summary"),
                first_kept_entry_id: arg("firstKeptEntryId"),
                tokens_before: arg("tokensBefore"),
                details: opt("details"),
                from_hook: opt("fromHook"),
            }))
        }
        (Some(Call::AppendCompaction), Profile::Omp) => id(sm.append(&entries::OmpCompaction {
            summary: arg("summary"),
            short_summary: opt("shortSummary"),
            first_kept_entry_id: arg("firstKeptEntryId"),
            tokens_before: arg("tokensBefore"),
            details: opt("details"),
            preserve_data: opt("preserveData"),
            from_extension: opt("fromExtension"),
        })),
        (Some(Call::AppendCustomEntry), _) => id(sm.append(&entries::Custom {
            custom_type: arg("customType"),
            data: opt("data"),
        })),
        (Some(Call::AppendCustomMessageEntry), _) => id(sm.append(&entries::CustomMessage {
            custom_type: arg("customType"),
            content: arg("content"),
            display: arg("display"),
            details: opt("details"),
        })),
        (Some(Call::AppendLabelChange), _) => {
            id(sm.append_label_change(&str_arg("targetId"), opt("label")))
        }
        (Some(Call::AppendSessionInfo), Profile::Pi | Profile::Operator) => {
            id(sm.append_session_info(&str_arg("name")))
        }
        (Some(Call::AppendTtsrInjection), Profile::Omp) => id(sm.append(&entries::TtsrInjection {
            injected_rules: arg("injectedRules"),
        })),
        (Some(Call::AppendSessionInit), Profile::Omp) => id(sm.append(&entries::SessionInit {
            system_prompt: arg("systemPrompt"),
            task: arg("task"),
            tools: arg("tools"),
            output_schema: opt("outputSchema"),
        })),
        (Some(Call::AppendModeChange), Profile::Omp) => id(sm.append(&entries::ModeChange {
            mode: arg("mode"),
            data: opt("data"),
        })),
        (Some(Call::Branch), _) => sm.branch(&str_arg("id")).map(|()| Value::Null),
        (Some(Call::ResetLeaf), _) => {
            sm.reset_leaf();
            Ok(Value::Null)
        }
        (Some(Call::BranchWithSummary), _) => {
            let from = step
                .get("fromId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let (from_hook, from_extension) = if profile == Profile::Omp {
                (None, opt("fromExtension"))
            } else {
                (opt("fromHook"), None)
            };
            let summary = entries::BranchSummary {
                from_id: String::new(),
                summary: arg("summary"),
                details: opt("details"),
                from_hook,
                from_extension,
            };
            id(sm.branch_with_summary(from.as_deref(), summary))
        }
        (Some(Call::CreateBranchedSession), _) => {
            let leaf = step
                .get("leafId")
                .and_then(Value::as_str)
                .map(str::to_owned);
            sm.create_branched_session(leaf.as_deref()).map(path_value)
        }
        (Some(Call::Flush), _) => sm.flush().map(|()| Value::Null),
        (Some(Call::NewSession), _) => {
            let options = NewSession {
                id: (profile == Profile::Pi).then(|| step["id"].as_str().map(str::to_owned)).flatten(),
                parent_session: step["parentSession"].as_str().map(str::to_owned),
            };
            sm.new_session(options).map(path_value)
        }
        (Some(Call::Fork), Profile::Omp) => Ok(sm.fork()?.map_or(Value::Null, |(old, new)| {
            json!({"oldSessionFile": path_value(Some(old)), "newSessionFile": path_value(Some(new))})
        })),
        (Some(Call::SetSessionName), Profile::Omp) => {
            sm.set_session_name(&str_arg("name")).map(|()| Value::Null)
        }
        (Some(Call::RewriteEntries), Profile::Omp) => sm.rewrite_entries().map(|()| Value::Null),
        (Some(Call::MoveTo), Profile::Omp) => {
            let cwd = str_arg("cwd");
            let store = Store::new(dir.join("home/.omp/agent"));
            sm.move_to(&cwd, store.session_dir(&cwd))
                .map(|()| Value::Null)
        }
        (call, _) => query(sm, call, step),
    }
}

/// A file a call returns, as a JSON string (`null` for none).
fn path_value(path: Option<PathBuf>) -> Value {
    path.map(|p| p.to_string_lossy().into_owned()).into()
}

/// The calls of 002 that read instead of write (PROTOCOL.md "Queries"): what the
/// session holds in memory at that step, written or not. An unknown call is an error.
fn query(sm: &SessionManager, call: Option<Call>, step: &Value) -> Result<Value, SessionError> {
    let entries = |list: Vec<&session_reference::model::Entry>| -> Value {
        list.into_iter().map(|e| sm.resolved(e)).collect()
    };
    let id = step.get("id").and_then(Value::as_str);
    match call {
        Some(Call::GetLeafId) => Ok(sm.leaf_id().into()),
        Some(Call::GetHeader) => {
            Ok(session_reference::raw::parse_value(sm.header().raw.get()).unwrap_or(Value::Null))
        }
        Some(Call::GetEntry) => Ok(id
            .and_then(|id| sm.get_entry(id))
            .map_or(Value::Null, |e| sm.resolved(e))),
        Some(Call::GetEntries) => Ok(entries(sm.entries().iter().collect())),
        Some(Call::GetBranch | Call::GetPath) => Ok(entries(
            sm.get_branch(step.get("fromId").and_then(Value::as_str)),
        )),
        Some(Call::GetChildren) => Ok(entries(
            sm.get_children(step.get("parentId").and_then(Value::as_str)),
        )),
        Some(Call::GetLabel) => Ok(id.and_then(|id| sm.get_label(id)).into()),
        Some(Call::GetTree) => Ok(tree_output(sm)["nodes"].take()),
        Some(Call::BuildSessionContext) => {
            Ok(sm.context_json(sm.leaf_id().map_or(LeafChoice::Null, LeafChoice::Id)))
        }
        _ => Err(SessionError::Io {
            path: PathBuf::new(),
            message: "unsupported call".into(),
        }),
    }
}
