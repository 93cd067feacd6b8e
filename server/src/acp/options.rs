//! The session settings an editor shows as pickers: permission modes (`session/set_mode`)
//! and the `mode` and `model` config options (`session/set_config_option`), plus the
//! slash commands the editor's prompt box completes.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, SessionConfigKind, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOption, SessionConfigSelectOptions,
    SessionMode, SessionModeState, UnstructuredCommandInput,
};
use larik_protocol::{PermissionMode, ReasoningEffort};
use larik_providers::known_model;

use crate::commands::SlashCommands;
pub use crate::session_core::{mode_text, offered_models};

/// The config option id of the permission mode.
pub const MODE_OPTION: &str = "mode";
/// The config option id of the model.
pub const MODEL_OPTION: &str = "model";
/// The config option id of the reasoning effort.
pub const THOUGHT_OPTION: &str = "thought_level";
/// The thought level value that leaves the effort to the provider.
pub const DEFAULT_THOUGHT: &str = "default";

/// The thought level value for an effort.
pub fn thought_value(effort: Option<ReasoningEffort>) -> &'static str {
    effort.map_or(DEFAULT_THOUGHT, ReasoningEffort::as_str)
}

/// A thought level value that stands for no effort.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown thought level `{0}`")]
pub struct UnknownThought(pub String);

/// The effort a thought level value stands for.
pub fn parse_thought(value: &str) -> Result<Option<ReasoningEffort>, UnknownThought> {
    if value == DEFAULT_THOUGHT {
        return Ok(None);
    }
    ReasoningEffort::parse(value)
        .map(Some)
        .ok_or_else(|| UnknownThought(value.to_string()))
}

/// The modes, with `current` selected.
pub fn mode_state(current: PermissionMode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        PermissionMode::ALL
            .iter()
            .map(|mode| {
                let (name, description) = mode_text(*mode);
                SessionMode::new(mode.as_str(), name).description(description.to_string())
            })
            .collect::<Vec<_>>(),
    )
}

/// The config options for a session on `model` in `mode`; the thought level only for the
/// known models, which all reason.
pub fn config_options(
    mode: PermissionMode,
    model: &str,
    reasoning: Option<ReasoningEffort>,
    offered: &[String],
) -> Vec<SessionConfigOption> {
    let modes = PermissionMode::ALL
        .iter()
        .map(|mode| {
            let (name, description) = mode_text(*mode);
            SessionConfigSelectOption::new(mode.as_str(), name).description(description.to_string())
        })
        .collect::<Vec<_>>();
    let models = offered
        .iter()
        .map(|name| {
            let label = known_model(name).map_or(name.as_str(), |known| known.label);
            SessionConfigSelectOption::new(name.clone(), label.to_string())
                .description(name.clone())
        })
        .collect::<Vec<_>>();
    let mut options = vec![
        SessionConfigOption::select(MODE_OPTION, "Mode", mode.as_str(), modes)
            .category(SessionConfigOptionCategory::Mode)
            .description("When Larik asks before acting".to_string()),
        SessionConfigOption::select(MODEL_OPTION, "Model", model.to_string(), models)
            .category(SessionConfigOptionCategory::Model)
            .description("The model that answers".to_string()),
    ];
    if known_model(model).is_some() {
        let mut levels = vec![
            SessionConfigSelectOption::new(DEFAULT_THOUGHT, "Default")
                .description("The model's own default".to_string()),
        ];
        levels.extend(ReasoningEffort::ALL.map(|effort| {
            let name = match effort {
                ReasoningEffort::Low => "Low",
                ReasoningEffort::Medium => "Medium",
                ReasoningEffort::High => "High",
            };
            SessionConfigSelectOption::new(effort.as_str(), name)
        }));
        options.push(
            SessionConfigOption::select(
                THOUGHT_OPTION,
                "Thinking",
                thought_value(reasoning),
                levels,
            )
            .category(SessionConfigOptionCategory::ThoughtLevel)
            .description("How hard the model thinks before answering".to_string()),
        );
    }
    options
}

/// The value a select option has now.
pub fn current_value(option: &SessionConfigOption) -> Option<String> {
    match &option.kind {
        SessionConfigKind::Select(select) => Some(select.current_value.to_string()),
        _ => None,
    }
}

/// Whether a select option lists `value`.
pub fn offers(option: &SessionConfigOption, value: &str) -> bool {
    match &option.kind {
        SessionConfigKind::Select(select) => match &select.options {
            SessionConfigSelectOptions::Ungrouped(options) => options
                .iter()
                .any(|option| option.value.to_string() == value),
            SessionConfigSelectOptions::Grouped(groups) => groups
                .iter()
                .flat_map(|group| &group.options)
                .any(|option| option.value.to_string() == value),
            _ => false,
        },
        _ => false,
    }
}

/// Makes `value` the current value of a select option.
pub fn select(option: &mut SessionConfigOption, value: &str) {
    if let SessionConfigKind::Select(select) = &mut option.kind {
        select.current_value = value.to_string().into();
    }
}

/// The slash commands as the editor's prompt box offers them.
pub fn available_commands(commands: &SlashCommands) -> Vec<AvailableCommand> {
    commands
        .advertised()
        .iter()
        .map(|spec| {
            let command = AvailableCommand::new(spec.name.as_str(), spec.description.as_str());
            match &spec.hint {
                Some(hint) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint.as_str()),
                )),
                None => command,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn config_options_select_the_current_mode_and_model() {
        let offered = offered_models("openai/gpt-5", &["openai".to_string()]);
        assert!(offered.contains(&"openai/gpt-5-mini".to_string()));
        assert!(!offered.iter().any(|model| model.starts_with("anthropic/")));
        let options = config_options(PermissionMode::Plan, "openai/gpt-5", None, &offered);
        let value = serde_json::to_value(&options).expect("serializes");
        assert_eq!(value[0]["id"], "mode");
        assert_eq!(value[0]["category"], "mode");
        assert_eq!(value[0]["currentValue"], "plan");
        assert_eq!(value[1]["id"], "model");
        assert_eq!(value[1]["currentValue"], "openai/gpt-5");
        let values: Vec<&Value> = value[1]["options"]
            .as_array()
            .expect("options")
            .iter()
            .map(|option| &option["value"])
            .collect();
        assert!(values.contains(&&json!("openai/gpt-5-mini")));
        assert_eq!(value[2]["id"], "thought_level");
        assert_eq!(value[2]["category"], "thought_level");
        assert_eq!(value[2]["currentValue"], "default");
    }

    #[test]
    fn thought_levels_round_trip_and_unknown_models_have_none() {
        for effort in [
            None,
            Some(ReasoningEffort::Low),
            Some(ReasoningEffort::High),
        ] {
            assert_eq!(parse_thought(thought_value(effort)), Ok(effort));
        }
        assert!(parse_thought("extreme").is_err());
        let options = config_options(PermissionMode::Default, "openai/custom", None, &[]);
        assert_eq!(options.len(), 2);
    }

    #[test]
    fn an_unknown_current_model_is_still_offered() {
        let offered = offered_models("anthropic/claude-next", &[]);
        assert_eq!(offered, ["anthropic/claude-next"]);
    }

    #[test]
    fn modes_list_all_four_with_the_current_one() {
        let value = serde_json::to_value(mode_state(PermissionMode::AcceptEdits)).expect("ok");
        assert_eq!(value["currentModeId"], "acceptEdits");
        assert_eq!(value["availableModes"].as_array().map(Vec::len), Some(4));
    }
}
