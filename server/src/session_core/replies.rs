//! The text of the replies Larik gives itself (`/model` and `/mode` without a name,
//! `/cost`, `/rewind` and `/resume` without an argument, `/config`), the modes' names and
//! descriptions, and the models on offer.

use larik_protocol::PermissionMode;
use larik_providers::KNOWN_MODELS;

use super::{LocalReply, Reopen, State};
use crate::assembly::McpExtension;
use crate::control;

/// A human name and description for each mode.
pub fn mode_text(mode: PermissionMode) -> (&'static str, &'static str) {
    match mode {
        PermissionMode::Default => ("Default", "Ask before edits and commands"),
        PermissionMode::AcceptEdits => (
            "Accept Edits",
            "Edit files in the project without asking; ask before commands",
        ),
        PermissionMode::Plan => ("Plan", "Read and search only; no edits, no commands"),
        PermissionMode::BypassPermissions => {
            ("Bypass Permissions", "Run everything without asking")
        }
    }
}

/// The models to offer: every known model of a provider with a key, plus the current one.
pub fn offered_models(current: &str, providers_with_keys: &[String]) -> Vec<String> {
    let mut models: Vec<String> = KNOWN_MODELS
        .iter()
        .filter(|known| providers_with_keys.iter().any(|p| p == known.provider))
        .map(|known| known.name())
        .collect();
    if !models.iter().any(|model| model == current) {
        models.insert(0, current.to_string());
    }
    models
}

/// The text of a local reply, from the session's state now.
pub(super) fn local_reply(reply: LocalReply, state: &State, reopen: &Reopen) -> String {
    match reply {
        LocalReply::Models => {
            let mut text = format!("Current model: `{}`\n\nAvailable:\n", state.model);
            for model in offered_models(&state.model, &state.providers_with_keys) {
                text.push_str(&format!("- `{model}`\n"));
            }
            text.push_str("\nSwitch with `/model provider/model`.");
            text
        }
        LocalReply::Modes => {
            let mut text = format!("Current mode: `{}`\n\n", state.mode);
            for mode in PermissionMode::ALL {
                let (_, description) = mode_text(mode);
                text.push_str(&format!("- `{mode}`: {description}\n"));
            }
            text.push_str("\nSwitch with `/mode NAME`.");
            text
        }
        LocalReply::Cost => {
            control::cost_text(&state.usage, &state.usage_by_model, state.budget.as_deref())
        }
        LocalReply::Prompts => match reopen.process.store.load(&state.session_path) {
            Ok(loaded) => control::prompts_text(&loaded),
            Err(error) => format!("**Error:** cannot read this session's file: {error}"),
        },
        LocalReply::Sessions => {
            control::sessions_text(&reopen.process.store, &state.cwd, &state.session_id)
        }
        LocalReply::Config => control::config_text(&reopen.process.env, &state.cwd),
        LocalReply::Worktrees(action) => {
            let text = crate::assembly::worktrees(&reopen.process.env)
                .map_err(|error| error.to_string())
                .and_then(|worktrees| control::worktrees_text(&worktrees, &state.cwd, &action));
            text.unwrap_or_else(|error| format!("**Error:** {error}"))
        }
        LocalReply::Mcp => reopen.process.mcp.report(&reopen.process.env, &state.cwd),
        LocalReply::Skills => control::skills_text(&reopen.process.env, &state.cwd),
        LocalReply::McpApprove(name) => {
            match McpExtension::approve(&reopen.process.env, &state.cwd, &name) {
                Ok(text) => text,
                Err(error) => format!("**Error:** {error}"),
            }
        }
        LocalReply::McpLogout(name) => {
            match reopen
                .process
                .mcp
                .logout(&reopen.process.env, &state.cwd, &name)
            {
                Ok(text) => text,
                Err(error) => format!("**Error:** {error}"),
            }
        }
        LocalReply::SetConfig { key, value } => {
            match control::set_config(&reopen.process.env, &state.cwd, &key, &value) {
                Ok(text) => text,
                Err(error) => format!("**Error:** {error}"),
            }
        }
    }
}
