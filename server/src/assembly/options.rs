//! The command line's agent options and the configuration files, turned into the parts of
//! an agent configuration that do not depend on the session: the model (and the registry
//! that names it), the permission mode and rules, the turn cap, the budget, the prompt
//! texts. Every check of a flag lives here, so a bad one is the same error in every front
//! end.

use std::sync::Arc;

use larik_agent::{AgentConfig, Budget};
use larik_config::{Environment, Settings};
use larik_permissions::{RuleSet, mcp_server_rule_covers, normalize_tool_name};
use larik_protocol::PermissionMode;
use larik_providers::{
    Endpoint, ModelRegistry, ModelRole, ModelSettings, PROVIDERS, Prices, split_model_name,
};
use larik_tools::{LateToolSet, LateTools, LateToolsAsk, ToolRegistry};

use super::error::{Notice, SetupError};
use crate::cli::{AgentOptions, split_rules};

/// Checks the options alone (mode, rules, model name, turn cap, budget), so a front end
/// that starts sessions later refuses bad flags at once.
pub fn check_options(options: &AgentOptions) -> Result<(), SetupError> {
    // A bare word may be an alias from the project's configuration, known only per session.
    if let Some(model) = &options.model
        && model.contains('/')
    {
        split_model_name(model)?;
    }
    base_config(
        options,
        &Environment::default(),
        "/".into(),
        "anthropic/check".into(),
    )
    .map(drop)
}

/// A permission mode by its name, or an error listing the names.
pub fn parse_mode(name: &str) -> Result<PermissionMode, SetupError> {
    PermissionMode::parse(name).ok_or_else(|| {
        SetupError::usage(format!(
            "unknown permission mode `{name}` (choose one of: {})",
            PermissionMode::ALL.map(PermissionMode::as_str).join(", ")
        ))
    })
}

/// Larik's table of models with the configuration's `models`, `aliases` and `roles`; an
/// entry that cannot be used is left out with a notice.
pub fn model_registry(settings: &Settings, notices: &mut Vec<Notice>) -> ModelRegistry {
    let config = &settings.models;
    let mut registry = ModelRegistry::default();
    for (name, entry) in &config.models {
        let settings = ModelSettings {
            context_window: entry.context_window,
            max_output_tokens: entry.max_output_tokens,
            prices: entry.prices.map(|prices| Prices {
                input: prices.input,
                output: prices.output,
                cache_read: prices.cache_read,
                cache_write: prices.cache_write,
            }),
        };
        if let Err(error) = registry.set_model(name, settings) {
            notices.push(Notice::configuration(format!(
                "`models.{name}` ignored: {error}"
            )));
        }
    }
    for (alias, target) in &config.aliases {
        if let Err(error) = registry.set_alias(alias, target) {
            notices.push(Notice::configuration(format!(
                "`aliases.{alias}` ignored: {error}"
            )));
        }
    }
    for (role, model) in &config.roles {
        if let Some(role) = ModelRole::from_name(role)
            && let Err(error) = registry.set_role(role, model)
        {
            notices.push(Notice::configuration(format!(
                "`roles.{}` ignored: {error}",
                role.as_str()
            )));
        }
    }
    registry
}

/// The model a new session starts with: the one named on the command line, else
/// `LARIK_MODEL`, else the configuration's (when it resolves), else the default role's,
/// else the default of the first provider with a key.
pub fn new_session_model(
    options: &AgentOptions,
    settings: &Settings,
    registry: &ModelRegistry,
    env: &Environment,
    notices: &mut Vec<Notice>,
) -> Result<String, SetupError> {
    if let Some(model) = &options.model {
        return registry
            .resolve(model)
            .map_err(|error| SetupError::usage(format!("--model: {error}")));
    }
    if let Some(model) = env.get("LARIK_MODEL") {
        return registry
            .resolve(model)
            .map_err(|error| SetupError::usage(format!("LARIK_MODEL: {error}")));
    }
    if let Some(model) = &settings.model {
        match registry.resolve(model) {
            Ok(model) => return Ok(model),
            Err(error) => {
                notices.push(Notice::configuration(format!("`model` ignored: {error:#}")))
            }
        }
    }
    if let Some(model) = registry.model_for(ModelRole::Default) {
        return Ok(model.to_string());
    }
    Ok(env.default_model()?)
}

/// The agent configuration for `cwd` and `model` from the options and the environment
/// alone; [`apply_settings`] adds what the configuration files say.
pub fn base_config(
    options: &AgentOptions,
    env: &Environment,
    cwd: std::path::PathBuf,
    model: String,
) -> Result<AgentConfig, SetupError> {
    if let Some(cap) = options.max_budget_usd
        && !(cap.is_finite() && cap > 0.0)
    {
        return Err(SetupError::usage(
            "--max-budget-usd must be a positive number of dollars",
        ));
    }
    let mut config = AgentConfig::new(cwd, model);
    config.home = env.home();
    config.user_config_dir = env.config_dir();
    let timeout = env.api_timeout()?;
    config.endpoints = PROVIDERS
        .iter()
        .map(|provider| {
            let endpoint = env.provider_endpoint(provider);
            (
                provider.to_string(),
                Endpoint {
                    api_key: endpoint.api_key,
                    base_url: endpoint.base_url,
                    timeout,
                },
            )
        })
        .collect();
    if let Some(retries) = env.max_retries()? {
        config.retry.max_attempts = retries.saturating_add(1);
    }
    if let Some(mode) = &options.permission_mode {
        config.mode = parse_mode(mode)?;
    }
    if let Some(max_turns) = options.max_turns {
        if max_turns == 0 {
            return Err(SetupError::usage("--max-turns must be at least 1"));
        }
        config.max_requests_per_turn = max_turns;
    }
    config.rules = rules(options)?;
    config.system_prompt = options.system_prompt.clone();
    config.append_system_prompt = options.append_system_prompt.clone();
    Ok(config)
}

/// Applies what the configuration files say and the command line did not: the permission
/// mode, the allow, ask and deny rules (added to the command line's), the budget and the
/// compaction threshold. A rule that does not parse is a notice; the others still apply.
pub fn apply_settings(
    options: &AgentOptions,
    settings: &Settings,
    config: &mut AgentConfig,
    notices: &mut Vec<Notice>,
) {
    if options.permission_mode.is_none()
        && let Some(mode) = settings.permissions.default_mode
    {
        config.mode = mode;
    }
    let permissions = &settings.permissions;
    let lists = [
        ("allow", &permissions.allow),
        ("ask", &permissions.ask),
        ("deny", &permissions.deny),
    ];
    for (kind, rules) in lists {
        for configured in rules {
            let added = match kind {
                "allow" => config.rules.add_allow(&configured.rule),
                "ask" => config.rules.add_ask(&configured.rule),
                _ => config.rules.add_deny(&configured.rule),
            };
            if let Err(error) = added {
                notices.push(Notice::configuration(format!(
                    "{}: `permissions.{kind}` rule `{}` ignored: {error}",
                    configured.file.display(),
                    configured.rule
                )));
            }
        }
    }
    if let Some(cap) = options.max_budget_usd.or(settings.models.max_budget_usd) {
        config.budget = Some(Arc::new(Budget::new(cap, 0.0)));
    }
    if let Some(share) = settings.models.auto_compact_share {
        config.auto_compact_share = share;
    }
}

/// Allow and deny rules from the options.
fn rules(options: &AgentOptions) -> Result<RuleSet, SetupError> {
    let mut rules = RuleSet::default();
    for text in split_rules(&options.allowed_tools) {
        rules
            .add_allow(&text)
            .map_err(|error| SetupError::usage(format!("in --allowedTools `{text}`: {error}")))?;
    }
    for text in split_rules(&options.disallowed_tools) {
        rules.add_deny(&text).map_err(|error| {
            SetupError::usage(format!("in --disallowedTools `{text}`: {error}"))
        })?;
    }
    Ok(rules)
}

/// A bare name in `--disallowedTools` hides the tool from the model too (`Bash`,
/// `MultiEdit`, `grep`), besides denying its calls.
pub fn hide_disallowed_tools(options: &AgentOptions, tools: &mut ToolRegistry) {
    let disallowed = Disallowed::of(options);
    for name in tools.names() {
        if disallowed.covers(&name) {
            tools.remove(&name);
        }
    }
}

/// `source` with the tools `--disallowedTools` names left out of what it gives.
pub fn without_disallowed_tools(
    options: &AgentOptions,
    source: Arc<dyn LateTools>,
) -> Arc<dyn LateTools> {
    let disallowed = Disallowed::of(options);
    if disallowed.names.is_empty() {
        return source;
    }
    Arc::new(FilteredLateTools {
        source,
        disallowed: Arc::new(disallowed),
    })
}

/// The tool names `--disallowedTools` takes away (bare names; a rule with a specifier
/// only denies calls).
struct Disallowed {
    names: Vec<String>,
}

impl Disallowed {
    fn of(options: &AgentOptions) -> Self {
        Disallowed {
            names: split_rules(&options.disallowed_tools)
                .into_iter()
                .filter(|text| !text.contains('('))
                .collect(),
        }
    }

    /// Whether `tool` is named, in any spelling, or is a tool of a server named as
    /// `mcp__<server>` or `mcp__<server>__*`.
    fn covers(&self, tool: &str) -> bool {
        let wanted = normalize_tool_name(tool);
        self.names.iter().any(|name| {
            if normalize_tool_name(name) == wanted {
                return true;
            }
            mcp_server_rule_covers(name, tool)
        })
    }
}

/// A late tool source whose disallowed tools are left out.
struct FilteredLateTools {
    source: Arc<dyn LateTools>,
    disallowed: Arc<Disallowed>,
}

#[async_trait::async_trait]
impl LateTools for FilteredLateTools {
    fn source(&self) -> &str {
        self.source.source()
    }

    async fn tools(&self, mut ask: LateToolsAsk) -> LateToolSet {
        let disallowed = Arc::clone(&self.disallowed);
        let earlier = ask.hidden.take();
        ask.hidden = Some(Arc::new(move |name: &str| {
            disallowed.covers(name) || earlier.as_ref().is_some_and(|hidden| hidden(name))
        }));
        let mut set = self.source.tools(ask).await;
        set.tools
            .retain(|tool| !self.disallowed.covers(tool.name()));
        set
    }
}
