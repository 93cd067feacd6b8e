//! Roles: what the configuration says about the models and limits of subagents, and how a
//! child's model is chosen from the task, its definition, its role and the parent.
//!
//! A role (`default`, `worker`, `explore`) may name a model and set `max_turns`,
//! `isolation`, `context: minimal` and `max_budget_usd`; an unset field of `worker` or
//! `explore` is the `default` role's. The built-in `explore` definition plays the
//! `explore` role, every other definition `worker`. The roles are read again for every
//! task, so a change applies without a restart.

use crate::definitions::{Definition, Isolation};

/// One role's settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Role {
    /// Its model: `provider/model` or an alias.
    pub model: Option<String>,
    /// Most model requests of a child.
    pub max_turns: Option<u32>,
    /// Where its children work.
    pub isolation: Option<Isolation>,
    /// Whether its children get only the environment and the project's own instruction
    /// files in their system prompt (`context: minimal`).
    pub minimal_context: bool,
    /// A spending cap for each child, in US dollars.
    pub max_budget_usd: Option<f64>,
}

impl Role {
    /// This role with its unset fields taken from `fallback`.
    fn or(&self, fallback: &Role) -> Role {
        Role {
            model: self.model.clone().or_else(|| fallback.model.clone()),
            max_turns: self.max_turns.or(fallback.max_turns),
            isolation: self.isolation.or(fallback.isolation),
            minimal_context: self.minimal_context || fallback.minimal_context,
            max_budget_usd: self.max_budget_usd.or(fallback.max_budget_usd),
        }
    }
}

/// The roles as the configuration has them now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Roles {
    /// `default`.
    pub default: Role,
    /// `worker`.
    pub worker: Role,
    /// `explore`.
    pub explore: Role,
    /// The aliases the configuration defines (so `sonnet` mapped by the user is theirs,
    /// not Anthropic's).
    pub configured_aliases: Vec<String>,
}

/// Where the roles come from: read again for every task.
pub trait RoleSource: Send + Sync {
    /// The roles as configured now.
    fn roles(&self) -> Roles;
}

impl Roles {
    /// The role named `name`, with the `default` role's settings where unset; `None` for a
    /// name that is no role.
    pub fn named(&self, name: &str) -> Option<Role> {
        match name {
            "default" => Some(self.default.clone()),
            "worker" => Some(self.worker.or(&self.default)),
            "explore" => Some(self.explore.or(&self.default)),
            _ => None,
        }
    }

    /// The role a definition's children play: `explore` for the built-in explorer, else
    /// `worker`.
    pub fn of(&self, definition: &Definition) -> Role {
        let name = if definition.name == "explore" {
            "explore"
        } else {
            "worker"
        };
        self.named(name).unwrap_or_default()
    }

    /// Whether any role names a model (the `task` tool offers its `model` input then).
    pub fn any_model(&self) -> bool {
        [&self.default, &self.worker, &self.explore]
            .iter()
            .any(|role| role.model.is_some())
    }
}

/// The model a child runs, and what the parent should hear about the choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// `provider/model` or an alias; `None` for the parent's model.
    pub model: Option<String>,
    /// Why a model asked for is not used, when it is not.
    pub notice: Option<String>,
}

/// Claude Code's model aliases, which name Anthropic models.
const ANTHROPIC_ALIASES: [&str; 3] = ["opus", "sonnet", "haiku"];

/// Chooses a child's model: the task's `model` input, else the definition's, else its
/// role's, else the parent's (`parent_model`, as `provider/model`). The first of them that
/// is given decides; a role name stands for that role's model (the parent's when the role
/// names none). `opus`, `sonnet` and `haiku`, unless the configuration defines them, are
/// used only when the parent runs on Anthropic; elsewhere the parent's model, with a
/// notice.
pub fn choose_model(
    task_model: Option<&str>,
    definition: &Definition,
    roles: &Roles,
    parent_model: &str,
) -> ModelChoice {
    let role_model = roles.of(definition).model;
    let Some(asked) = task_model
        .map(str::to_string)
        .or_else(|| definition.model.clone())
        .or(role_model)
    else {
        return ModelChoice {
            model: None,
            notice: None,
        };
    };
    let asked = match roles.named(&asked) {
        Some(role) => match role.model {
            Some(model) => model,
            None => {
                return ModelChoice {
                    model: None,
                    notice: None,
                };
            }
        },
        None => asked,
    };
    let on_anthropic = parent_model.starts_with("anthropic/");
    if ANTHROPIC_ALIASES.contains(&asked.as_str())
        && !on_anthropic
        && !roles.configured_aliases.contains(&asked)
    {
        return ModelChoice {
            model: None,
            notice: Some(format!(
                "`{asked}` names an Anthropic model and this session runs {parent_model}; \
                 the subagent uses {parent_model}"
            )),
        };
    }
    ModelChoice {
        model: Some(asked),
        notice: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definitions::builtins;

    fn definition(name: &str) -> Definition {
        builtins()
            .into_iter()
            .find(|definition| definition.name == name)
            .expect("built-in")
    }

    #[test]
    fn the_task_then_the_definition_then_the_role_then_the_parent_decide() {
        let mut roles = Roles::default();
        let mut explore = definition("explore");
        let parent = "openai/gpt-5";
        assert_eq!(choose_model(None, &explore, &roles, parent).model, None);
        roles.default.model = Some("openai/gpt-5-mini".into());
        assert_eq!(
            choose_model(None, &explore, &roles, parent)
                .model
                .as_deref(),
            Some("openai/gpt-5-mini")
        );
        roles.explore.model = Some("ollama/qwen3".into());
        assert_eq!(
            choose_model(None, &explore, &roles, parent)
                .model
                .as_deref(),
            Some("ollama/qwen3")
        );
        explore.model = Some("gemini/gemini-2.5-flash".into());
        assert_eq!(
            choose_model(None, &explore, &roles, parent)
                .model
                .as_deref(),
            Some("gemini/gemini-2.5-flash")
        );
        assert_eq!(
            choose_model(Some("worker"), &explore, &roles, parent)
                .model
                .as_deref(),
            Some("openai/gpt-5-mini"),
            "a role name stands for its model, the default role's when unset"
        );
    }

    #[test]
    fn anthropic_aliases_apply_only_on_anthropic_unless_configured() {
        let mut roles = Roles::default();
        let general = definition("general-purpose");
        let elsewhere = choose_model(Some("haiku"), &general, &roles, "openai/gpt-5");
        assert_eq!(elsewhere.model, None);
        assert!(
            elsewhere
                .notice
                .is_some_and(|notice| notice.contains("openai/gpt-5"))
        );
        let anthropic = choose_model(
            Some("haiku"),
            &general,
            &roles,
            "anthropic/claude-sonnet-4-5",
        );
        assert_eq!(anthropic.model.as_deref(), Some("haiku"));
        roles.configured_aliases.push("haiku".into());
        let mapped = choose_model(Some("haiku"), &general, &roles, "openai/gpt-5");
        assert_eq!(mapped.model.as_deref(), Some("haiku"));
        assert_eq!(mapped.notice, None);
    }
}
