//! The model settings of a configuration file: `models` (per-model context window, output
//! limit and prices), `aliases`, `roles`, `max_budget_usd` and `auto_compact_share`.
//!
//! Prices and windows decide what a session is charged against its budget, so `models`
//! counts only from personal files or once approved; a shared file may lower the budget
//! (never raise it) and name aliases and roles, which only choose among the models the
//! user's own keys reach.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::Layer;

/// US dollars per million tokens of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PriceSettings {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
    /// Input written to the prompt cache.
    pub cache_write: f64,
}

/// One entry of `models`, keyed by `provider/model`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelEntrySettings {
    /// `context_window`, in tokens (for Ollama also the window Larik asks it to load).
    pub context_window: Option<u64>,
    /// `max_output_tokens`.
    pub max_output_tokens: Option<u32>,
    /// `prices`.
    pub prices: Option<PriceSettings>,
}

/// What a role written as an object sets for its subagents besides its `model`; each
/// only narrows what a subagent may do, so shared files may set them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleSettings {
    /// `max_turns`: most model requests of each subagent.
    pub max_turns: Option<u32>,
    /// `isolation`: `"worktree"` to give each subagent a git worktree of its own.
    pub isolation: Option<String>,
    /// `context: "minimal"`: subagents get only the environment and the project's own
    /// instruction files in their system prompt.
    pub minimal_context: bool,
    /// `max_budget_usd`: a spending cap for each subagent.
    pub max_budget_usd: Option<f64>,
}

/// Everything about models and spending.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelConfig {
    /// `models`, by `provider/model`.
    pub models: BTreeMap<String, ModelEntrySettings>,
    /// `aliases`: a bare name → the model it stands for.
    pub aliases: BTreeMap<String, String>,
    /// `roles`: `default`, `worker`, `explore` → a model name or alias (a role's `model`).
    pub roles: BTreeMap<String, String>,
    /// The rest of a role written as an object: its subagents' limits and context.
    pub role_settings: BTreeMap<String, RoleSettings>,
    /// `max_budget_usd`: the lowest cap any file set.
    pub max_budget_usd: Option<f64>,
    /// `auto_compact_share`: `Some(None)` when a file turned automatic compaction off with
    /// `false`.
    pub auto_compact_share: Option<Option<f64>>,
}

const ROLES: [&str; 3] = ["default", "worker", "explore"];

impl Layer<'_> {
    /// Merges the model keys; returns whether `key` was one of them.
    pub(super) fn model_key(&mut self, key: &str, value: &Value, config: &mut ModelConfig) -> bool {
        match key {
            "models" => self.models(value, &mut config.models),
            "aliases" => {
                if let Some(object) = self.object("aliases", value) {
                    for (alias, target) in object {
                        if let Some(target) = self.string(&format!("aliases.{alias}"), target) {
                            config.aliases.insert(alias.clone(), target);
                        }
                    }
                }
            }
            "roles" => {
                if let Some(object) = self.object("roles", value) {
                    for (role, model) in object {
                        if !ROLES.contains(&role.as_str()) {
                            self.notice(format!(
                                "`roles.{role}` ignored: the roles are default, worker and explore"
                            ));
                        } else if let Value::Object(fields) = model {
                            self.role_object(role, fields, config);
                        } else if let Some(model) = self.string(&format!("roles.{role}"), model) {
                            config.roles.insert(role.clone(), model);
                        }
                    }
                }
            }
            "max_budget_usd" => match value.as_f64() {
                Some(cap) if cap > 0.0 && cap.is_finite() => {
                    // Every file may lower the cap; none may raise another's.
                    let lowest = config.max_budget_usd.map_or(cap, |set| set.min(cap));
                    config.max_budget_usd = Some(lowest);
                }
                _ => self.wrong_type("max_budget_usd", "a positive number of dollars", value),
            },
            "auto_compact_share" => match value {
                Value::Bool(false) => config.auto_compact_share = Some(None),
                _ => match value.as_f64() {
                    Some(share) if share > 0.0 && share <= 1.0 => {
                        config.auto_compact_share = Some(Some(share));
                    }
                    _ => self.wrong_type(
                        "auto_compact_share",
                        "a number above 0 and at most 1, or false",
                        value,
                    ),
                },
            },
            _ => return false,
        }
        true
    }

    /// A role written as an object: `model`, `max_turns`, `isolation`, `context`,
    /// `max_budget_usd`; later files win field by field.
    fn role_object(&mut self, role: &str, fields: &Map<String, Value>, config: &mut ModelConfig) {
        let mut settings = config.role_settings.get(role).cloned().unwrap_or_default();
        for (field, value) in fields {
            let key = format!("roles.{role}.{field}");
            match field.as_str() {
                "model" => {
                    if let Some(model) = self.string(&key, value) {
                        config.roles.insert(role.to_string(), model);
                    }
                }
                "max_turns" => match value.as_u64().and_then(|turns| u32::try_from(turns).ok()) {
                    Some(turns) if turns > 0 => settings.max_turns = Some(turns),
                    _ => self.wrong_type(&key, "a positive whole number", value),
                },
                "isolation" => match value.as_str() {
                    Some("worktree") => settings.isolation = Some("worktree".into()),
                    Some("none") => settings.isolation = None,
                    _ => self.wrong_type(&key, "\"worktree\" or \"none\"", value),
                },
                "context" => match value.as_str() {
                    Some("minimal") => settings.minimal_context = true,
                    Some("full") => settings.minimal_context = false,
                    _ => self.wrong_type(&key, "\"minimal\" or \"full\"", value),
                },
                "max_budget_usd" => match value.as_f64() {
                    Some(cap) if cap > 0.0 && cap.is_finite() => {
                        settings.max_budget_usd = Some(cap);
                    }
                    _ => self.wrong_type(&key, "a positive number of dollars", value),
                },
                other => self.notice(format!(
                    "`roles.{role}.{other}` ignored: not a role setting"
                )),
            }
        }
        config.role_settings.insert(role.to_string(), settings);
    }

    fn models(&mut self, value: &Value, models: &mut BTreeMap<String, ModelEntrySettings>) {
        let Some(object) = self.object("models", value) else {
            return;
        };
        if !self.may_loosen(
            "models",
            value,
            "set the context windows and prices the budget is counted with",
        ) {
            return;
        }
        for (name, entry) in object {
            let key = format!("models.{name}");
            if !name.contains('/') {
                self.notice(format!("`{key}` ignored: name models as provider/model"));
                continue;
            }
            let Some(entry) = self.object(&key, entry) else {
                continue;
            };
            if let Some(settings) = self.model_entry(&key, entry) {
                models.insert(name.clone(), settings);
            }
        }
    }

    fn model_entry(&mut self, key: &str, entry: &Map<String, Value>) -> Option<ModelEntrySettings> {
        let mut settings = ModelEntrySettings::default();
        for (field, value) in entry {
            let name = format!("{key}.{field}");
            match field.as_str() {
                "context_window" => match value.as_u64().filter(|tokens| *tokens > 0) {
                    Some(tokens) => settings.context_window = Some(tokens),
                    None => {
                        self.wrong_type(&name, "a positive whole number of tokens", value);
                        return None;
                    }
                },
                "max_output_tokens" => {
                    match value
                        .as_u64()
                        .filter(|tokens| *tokens > 0)
                        .and_then(|tokens| u32::try_from(tokens).ok())
                    {
                        Some(tokens) => settings.max_output_tokens = Some(tokens),
                        None => {
                            self.wrong_type(&name, "a positive whole number of tokens", value);
                            return None;
                        }
                    }
                }
                "prices" => {
                    let object = self.object(&name, value)?;
                    settings.prices = Some(self.prices(&name, object)?);
                }
                _ => self.notice(format!("`{name}` ignored: not a model setting")),
            }
        }
        Some(settings)
    }

    fn prices(&mut self, key: &str, object: &Map<String, Value>) -> Option<PriceSettings> {
        let mut prices = PriceSettings::default();
        for (field, value) in object {
            let slot = match field.as_str() {
                "input" => &mut prices.input,
                "output" => &mut prices.output,
                "cache_read" => &mut prices.cache_read,
                "cache_write" => &mut prices.cache_write,
                _ => {
                    self.notice(format!(
                        "`{key}.{field}` ignored: prices are input, output, cache_read and \
                         cache_write"
                    ));
                    continue;
                }
            };
            match value
                .as_f64()
                .filter(|price| *price >= 0.0 && price.is_finite())
            {
                Some(price) => *slot = price,
                None => {
                    self.wrong_type(
                        &format!("{key}.{field}"),
                        "dollars per million tokens",
                        value,
                    );
                    return None;
                }
            }
        }
        Some(prices)
    }
}
