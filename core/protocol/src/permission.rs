//! Permission modes and the choices offered when the agent asks.

use serde::{Deserialize, Serialize};

/// How freely tools may run, in Claude Code's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PermissionMode {
    /// Read-only tools run; anything else asks unless a rule allows it.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// Like `default`, and file edits inside the project run without asking.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Only read-only tools run; the model is planning, not changing.
    #[serde(rename = "plan")]
    Plan,
    /// Everything runs without asking; deny rules still hold.
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode, in the order a front end should list them.
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
    ];

    /// The wire name (`default`, `acceptEdits`, `plan`, `bypassPermissions`).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// Parses a wire name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == name)
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the user answered to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Run this call.
    AllowOnce,
    /// Run this call and add an allow rule for the rest of the session.
    AllowAlways,
    /// Refuse this call.
    RejectOnce,
    /// Refuse this call and add a deny rule for the rest of the session.
    RejectAlways,
    /// The front end gave up on the question (for example the turn was cancelled).
    Cancelled,
}

impl PermissionDecision {
    /// The wire name (`allow_once`, `allow_always`, `reject_once`, `reject_always`,
    /// `cancelled`), the same the serde form uses; front ends use it as option ids.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionDecision::AllowOnce => "allow_once",
            PermissionDecision::AllowAlways => "allow_always",
            PermissionDecision::RejectOnce => "reject_once",
            PermissionDecision::RejectAlways => "reject_always",
            PermissionDecision::Cancelled => "cancelled",
        }
    }

    /// Whether the call may run.
    pub fn allows(self) -> bool {
        matches!(
            self,
            PermissionDecision::AllowOnce | PermissionDecision::AllowAlways
        )
    }
}

/// The kind of a permission option, so a front end can style it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    /// Allow this once.
    AllowOnce,
    /// Allow and remember.
    AllowAlways,
    /// Reject this once.
    RejectOnce,
    /// Reject and remember.
    RejectAlways,
}

/// One choice offered to the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionOption {
    /// The decision this option stands for.
    pub decision: PermissionDecision,
    /// The option's kind.
    pub kind: PermissionOptionKind,
    /// A label for the user, e.g. "Always allow `Bash(git status:*)`".
    pub label: String,
}

impl PermissionOption {
    /// The four standard options; `rule` is the rule "always" would add.
    pub fn standard(rule: &str) -> Vec<PermissionOption> {
        vec![
            PermissionOption {
                decision: PermissionDecision::AllowOnce,
                kind: PermissionOptionKind::AllowOnce,
                label: "Allow once".into(),
            },
            PermissionOption {
                decision: PermissionDecision::AllowAlways,
                kind: PermissionOptionKind::AllowAlways,
                label: format!("Always allow {rule}"),
            },
            PermissionOption {
                decision: PermissionDecision::RejectOnce,
                kind: PermissionOptionKind::RejectOnce,
                label: "Reject".into(),
            },
            PermissionOption {
                decision: PermissionDecision::RejectAlways,
                kind: PermissionOptionKind::RejectAlways,
                label: format!("Always reject {rule}"),
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decisions_name_is_its_serde_form() {
        for decision in [
            PermissionDecision::AllowOnce,
            PermissionDecision::AllowAlways,
            PermissionDecision::RejectOnce,
            PermissionDecision::RejectAlways,
            PermissionDecision::Cancelled,
        ] {
            assert_eq!(
                serde_json::to_value(decision).expect("serializes"),
                decision.as_str()
            );
        }
    }
}
