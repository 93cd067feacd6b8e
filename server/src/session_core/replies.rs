//! The text of the replies Larik gives itself (`/model` and `/mode` without a name,
//! `/cost`), the modes' names and descriptions, and the models on offer.

use larik_protocol::PermissionMode;
use larik_providers::KNOWN_MODELS;

use super::{LocalReply, State};

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
pub(super) fn local_reply(reply: LocalReply, state: &State) -> String {
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
            let usage = &state.usage;
            let mut text = format!(
                "This session so far: {} input tokens ({} read from cache, {} written to \
                 cache), {} output tokens, cost {}.",
                usage.input_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.output_tokens,
                usage.cost_text()
            );
            if let Some(budget) = &state.budget {
                text.push_str(&format!(
                    " Budget: ${:.4} of ${:.2} spent.",
                    budget.spent_usd(),
                    budget.cap_usd()
                ));
            }
            text
        }
    }
}
