//! The calls of an `apply` step (`PROTOCOL.md`'s call table): `SessionManager`
//! methods by their camelCase names. On the wire a call is its name, the step's `call`.

/// One `SessionManager` call of an `apply` step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Call {
    /// `appendMessage`.
    AppendMessage,
    /// `appendThinkingLevelChange`.
    AppendThinkingLevelChange,
    /// `appendModelChange` (each profile its own fields).
    AppendModelChange,
    /// `appendCompaction`.
    AppendCompaction,
    /// `appendCustomEntry`.
    AppendCustomEntry,
    /// `appendCustomMessageEntry`.
    AppendCustomMessageEntry,
    /// `appendLabelChange`.
    AppendLabelChange,
    /// `appendSessionInfo` (pi, operator).
    AppendSessionInfo,
    /// `appendTtsrInjection` (omp).
    AppendTtsrInjection,
    /// `appendSessionInit` (omp).
    AppendSessionInit,
    /// `appendModeChange` (omp).
    AppendModeChange,
    /// `branch`.
    Branch,
    /// `resetLeaf`.
    ResetLeaf,
    /// `branchWithSummary`.
    BranchWithSummary,
    /// `createBranchedSession`.
    CreateBranchedSession,
    /// `flush`.
    Flush,
    /// `newSession` (`parentSession?`; pi also `id?`).
    NewSession,
    /// `fork` (omp): the session copied to a new file.
    Fork,
    /// `setSessionName` (omp): the header's `title`.
    SetSessionName,
    /// `rewriteEntries` (omp): the whole file rewritten from memory.
    RewriteEntries,
    /// `moveTo` (omp): the session moved to another cwd's project folder.
    MoveTo,
    /// `getLeafId` (a query: it reads, `PROTOCOL.md` "Queries").
    GetLeafId,
    /// `getHeader`.
    GetHeader,
    /// `getEntry`.
    GetEntry,
    /// `getEntries`.
    GetEntries,
    /// `getBranch`.
    GetBranch,
    /// `getPath` (pi's name for `getBranch`).
    GetPath,
    /// `getChildren`.
    GetChildren,
    /// `getLabel`.
    GetLabel,
    /// `getTree`.
    GetTree,
    /// `buildSessionContext`.
    BuildSessionContext,
}

impl Call {
    /// Every call, in the call table's order.
    pub const ALL: [Call; 31] = [
        Call::AppendMessage,
        Call::AppendThinkingLevelChange,
        Call::AppendModelChange,
        Call::AppendCompaction,
        Call::AppendCustomEntry,
        Call::AppendCustomMessageEntry,
        Call::AppendLabelChange,
        Call::AppendSessionInfo,
        Call::AppendTtsrInjection,
        Call::AppendSessionInit,
        Call::AppendModeChange,
        Call::Branch,
        Call::ResetLeaf,
        Call::BranchWithSummary,
        Call::CreateBranchedSession,
        Call::Flush,
        Call::NewSession,
        Call::Fork,
        Call::SetSessionName,
        Call::RewriteEntries,
        Call::MoveTo,
        Call::GetLeafId,
        Call::GetHeader,
        Call::GetEntry,
        Call::GetEntries,
        Call::GetBranch,
        Call::GetPath,
        Call::GetChildren,
        Call::GetLabel,
        Call::GetTree,
        Call::BuildSessionContext,
    ];

    /// The call's camelCase name, as a step names it.
    pub fn name(self) -> &'static str {
        match self {
            Call::AppendMessage => "appendMessage",
            Call::AppendThinkingLevelChange => "appendThinkingLevelChange",
            Call::AppendModelChange => "appendModelChange",
            Call::AppendCompaction => "appendCompaction",
            Call::AppendCustomEntry => "appendCustomEntry",
            Call::AppendCustomMessageEntry => "appendCustomMessageEntry",
            Call::AppendLabelChange => "appendLabelChange",
            Call::AppendSessionInfo => "appendSessionInfo",
            Call::AppendTtsrInjection => "appendTtsrInjection",
            Call::AppendSessionInit => "appendSessionInit",
            Call::AppendModeChange => "appendModeChange",
            Call::Branch => "branch",
            Call::ResetLeaf => "resetLeaf",
            Call::BranchWithSummary => "branchWithSummary",
            Call::CreateBranchedSession => "createBranchedSession",
            Call::Flush => "flush",
            Call::NewSession => "newSession",
            Call::Fork => "fork",
            Call::SetSessionName => "setSessionName",
            Call::RewriteEntries => "rewriteEntries",
            Call::MoveTo => "moveTo",
            Call::GetLeafId => "getLeafId",
            Call::GetHeader => "getHeader",
            Call::GetEntry => "getEntry",
            Call::GetEntries => "getEntries",
            Call::GetBranch => "getBranch",
            Call::GetPath => "getPath",
            Call::GetChildren => "getChildren",
            Call::GetLabel => "getLabel",
            Call::GetTree => "getTree",
            Call::BuildSessionContext => "buildSessionContext",
        }
    }

    /// The call named `name` (camelCase), if the table has it.
    pub fn from_name(name: &str) -> Option<Call> {
        Call::ALL.into_iter().find(|call| call.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_is_found_by_its_name() {
        for call in Call::ALL {
            assert_eq!(Call::from_name(call.name()), Some(call));
        }
        assert_eq!(Call::from_name("append_message"), None);
        assert_eq!(Call::from_name(""), None);
    }
}
