//! The model registry: Larik's table of known models ([`crate::models`]) with what the
//! user's configuration adds or overrides — context windows, output limits and prices of
//! models the table does not know (a model behind OpenRouter, a local model), short aliases,
//! and which model plays each role.
//!
//! Names are always `provider/model`; an alias is a bare word (`sonnet`, or one the user
//! defines) that stands for one. Configured aliases win over the built-in ones.

use std::collections::BTreeMap;

use larik_protocol::Usage;

use crate::models::{ALIASES, Prices, known_model};
use crate::pricing::priced;
use crate::{ProviderError, split_model_name};

/// What the configuration says about one model; unset fields fall back to the table.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModelSettings {
    /// The context window in tokens. For a local server (Ollama) this is also the window
    /// Larik asks it to load.
    pub context_window: Option<u64>,
    /// The most output tokens one answer may have.
    pub max_output_tokens: Option<u32>,
    /// Prices per million tokens.
    pub prices: Option<Prices>,
}

/// The jobs a model can be given. Subtasks run on the `worker` or `explore` model; both
/// fall back to the `default` one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ModelRole {
    /// The model a session starts with.
    Default,
    /// Subtasks that change things.
    Worker,
    /// Read-only searching and reading subtasks.
    Explore,
}

impl ModelRole {
    /// Every role, in order.
    pub const ALL: [ModelRole; 3] = [ModelRole::Default, ModelRole::Worker, ModelRole::Explore];

    /// The role's name in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelRole::Default => "default",
            ModelRole::Worker => "worker",
            ModelRole::Explore => "explore",
        }
    }

    /// The role named `name`.
    pub fn from_name(name: &str) -> Option<ModelRole> {
        ModelRole::ALL
            .into_iter()
            .find(|role| role.as_str() == name)
    }
}

/// The known models with the configuration's additions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRegistry {
    models: BTreeMap<String, ModelSettings>,
    aliases: BTreeMap<String, String>,
    roles: BTreeMap<ModelRole, String>,
}

impl ModelRegistry {
    /// Settings for the model `name` (`provider/model`).
    pub fn set_model(&mut self, name: &str, settings: ModelSettings) -> Result<(), ProviderError> {
        split_model_name(name)?;
        self.models.insert(name.to_string(), settings);
        Ok(())
    }

    /// Makes `alias` stand for `target` (a `provider/model` or a built-in alias).
    pub fn set_alias(&mut self, alias: &str, target: &str) -> Result<(), ProviderError> {
        if alias.is_empty() || alias.contains('/') || alias.chars().any(char::is_whitespace) {
            return Err(ProviderError::BadModelName {
                name: alias.to_string(),
            });
        }
        let target = self.resolve(target)?;
        self.aliases.insert(alias.to_string(), target);
        Ok(())
    }

    /// Gives `role` to the model `name` (a `provider/model` or an alias).
    pub fn set_role(&mut self, role: ModelRole, name: &str) -> Result<(), ProviderError> {
        let name = self.resolve(name)?;
        self.roles.insert(role, name);
        Ok(())
    }

    /// The `provider/model` that `name` stands for: itself, or what an alias names.
    pub fn resolve(&self, name: &str) -> Result<String, ProviderError> {
        let name = name.trim();
        if name.contains('/') {
            split_model_name(name)?;
            return Ok(name.to_string());
        }
        self.aliases
            .get(name)
            .cloned()
            .or_else(|| {
                ALIASES
                    .iter()
                    .find(|(alias, _)| *alias == name)
                    .map(|(_, target)| target.to_string())
            })
            .ok_or_else(|| ProviderError::BadModelName {
                name: name.to_string(),
            })
    }

    /// The model configured for `role`, falling back to the `default` role's; `None` when
    /// neither is configured.
    pub fn model_for(&self, role: ModelRole) -> Option<&str> {
        self.roles
            .get(&role)
            .or_else(|| self.roles.get(&ModelRole::Default))
            .map(String::as_str)
    }

    /// The aliases in force, configured ones first, as `(alias, provider/model)`.
    pub fn aliases(&self) -> Vec<(String, String)> {
        let configured = self
            .aliases
            .iter()
            .map(|(alias, target)| (alias.clone(), target.clone()));
        let built_in = ALIASES
            .iter()
            .filter(|(alias, _)| !self.aliases.contains_key(*alias))
            .map(|(alias, target)| (alias.to_string(), target.to_string()));
        configured.chain(built_in).collect()
    }

    /// The context window of `name` in tokens, when configured or known.
    pub fn context_window(&self, name: &str) -> Option<u64> {
        self.models
            .get(name)
            .and_then(|settings| settings.context_window)
            .or_else(|| known_model(name).map(|known| known.context_window))
    }

    /// The output limit of `name`, when configured or known.
    pub fn max_output_tokens(&self, name: &str) -> Option<u32> {
        self.models
            .get(name)
            .and_then(|settings| settings.max_output_tokens)
            .or_else(|| known_model(name).map(|known| known.max_output))
    }

    /// The prices of `name`, when configured or known.
    pub fn prices(&self, name: &str) -> Option<Prices> {
        self.models
            .get(name)
            .and_then(|settings| settings.prices)
            .or_else(|| known_model(name).map(|known| known.prices))
    }

    /// What `usage` cost on `name`, when its prices are configured or known.
    pub fn cost_usd(&self, name: &str, usage: &Usage) -> Option<f64> {
        self.prices(name).map(|prices| priced(&prices, usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> ModelSettings {
        ModelSettings {
            context_window: Some(65_536),
            max_output_tokens: Some(8_192),
            prices: Some(Prices {
                input: 0.5,
                output: 1.5,
                cache_read: 0.05,
                cache_write: 0.0,
            }),
        }
    }

    #[test]
    fn aliases_resolve_configured_first_then_built_in() {
        let mut registry = ModelRegistry::default();
        assert_eq!(
            registry.resolve("sonnet").expect("built in"),
            "anthropic/claude-sonnet-4-5"
        );
        registry
            .set_alias("sonnet", "opus")
            .expect("alias of an alias");
        registry
            .set_alias("local", "ollama/qwen3-coder:30b")
            .expect("alias");
        assert_eq!(
            registry.resolve("sonnet").expect("configured"),
            "anthropic/claude-opus-4-5"
        );
        assert_eq!(
            registry.resolve(" local ").expect("configured"),
            "ollama/qwen3-coder:30b"
        );
        assert_eq!(
            registry
                .resolve("openrouter/qwen/qwen3-coder")
                .expect("full name"),
            "openrouter/qwen/qwen3-coder"
        );
        assert!(matches!(
            registry.resolve("nonsense"),
            Err(ProviderError::BadModelName { .. })
        ));
        assert!(registry.set_alias("a/b", "sonnet").is_err());
        assert!(registry.set_alias("x", "missing").is_err());
        let aliases = registry.aliases();
        assert_eq!(aliases[0].0, "local");
        assert_eq!(
            aliases
                .iter()
                .filter(|(alias, _)| alias == "sonnet")
                .count(),
            1
        );
    }

    #[test]
    fn configured_models_override_the_table_and_fill_its_gaps() {
        let mut registry = ModelRegistry::default();
        registry
            .set_model("ollama/qwen3-coder:30b", local())
            .expect("model");
        registry
            .set_model(
                "anthropic/claude-sonnet-4-5",
                ModelSettings {
                    context_window: Some(1_000_000),
                    ..ModelSettings::default()
                },
            )
            .expect("model");
        assert_eq!(
            registry.context_window("ollama/qwen3-coder:30b"),
            Some(65_536)
        );
        assert_eq!(
            registry.context_window("anthropic/claude-sonnet-4-5"),
            Some(1_000_000)
        );
        assert_eq!(
            registry.max_output_tokens("anthropic/claude-sonnet-4-5"),
            Some(64_000),
            "unset fields come from the table"
        );
        assert_eq!(registry.context_window("vllm/unknown"), None);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 0,
            ..Usage::default()
        };
        let cost = registry
            .cost_usd("ollama/qwen3-coder:30b", &usage)
            .expect("priced");
        assert!((cost - 2.05).abs() < 1e-9, "{cost}");
        let sonnet = registry
            .cost_usd("anthropic/claude-sonnet-4-5", &usage)
            .expect("listed");
        assert!((sonnet - 18.30).abs() < 1e-9, "{sonnet}");
        assert_eq!(registry.cost_usd("vllm/unknown", &usage), None);
        assert!(registry.set_model("no-slash", local()).is_err());
    }

    #[test]
    fn roles_fall_back_to_the_default_model() {
        let mut registry = ModelRegistry::default();
        assert_eq!(registry.model_for(ModelRole::Worker), None);
        registry
            .set_role(ModelRole::Default, "sonnet")
            .expect("role");
        registry
            .set_role(ModelRole::Explore, "haiku")
            .expect("role");
        assert_eq!(
            registry.model_for(ModelRole::Worker),
            Some("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(
            registry.model_for(ModelRole::Explore),
            Some("anthropic/claude-haiku-4-5")
        );
        assert_eq!(ModelRole::from_name("worker"), Some(ModelRole::Worker));
        assert_eq!(ModelRole::from_name("boss"), None);
    }
}
