//! Turns the command line and the environment into an agent configuration and the session
//! it writes to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use larik_agent::{AgentConfig, SessionState};
use larik_config::Environment;
use larik_lsp::{DiagnosticsWait, LanguageServers, ManagerConfig, ServerFeedback, Timeouts};
use larik_permissions::{RuleSet, normalize_tool_name};
use larik_protocol::{Message, PermissionMode};
use larik_providers::{Endpoint, PROVIDERS, split_model_name};
use larik_session::{LoadedSession, SessionMeta, SessionStore};

use crate::cli::{AgentOptions, Cli, split_rules};

/// What the front end needs to start an agent.
pub struct Prepared {
    /// The agent's settings.
    pub config: AgentConfig,
    /// The session it writes to.
    pub session: SessionState,
    /// With `--rewind`, the prompt the branch was cut before.
    pub rewound_prompt: Option<Message>,
    /// Things the user should know before the run (e.g. skipped lines of a session file).
    pub warnings: Vec<String>,
}

/// The process environment, captured once. Variables that are not UTF-8 cannot be any
/// Larik setting; they are skipped rather than fail the run.
pub fn environment() -> Environment {
    Environment::from_pairs(
        std::env::vars_os()
            .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?))),
    )
}

/// Builds the agent configuration and opens or creates the session.
pub fn prepare(args: &Cli, env: &Environment, cwd: PathBuf) -> anyhow::Result<Prepared> {
    let store = SessionStore::new(env.data_dir()?);
    let mut warnings = Vec::new();

    let previous = if args.continue_session {
        let latest = store
            .latest(&cwd)?
            .ok_or_else(|| anyhow!("no earlier session in {} to continue", cwd.display()))?;
        Some(store.load(&latest.path)?)
    } else if let Some(id) = &args.resume {
        let path = store.find(&cwd, id)?;
        Some(store.load(&path)?)
    } else {
        if args.fork || args.rewind.is_some() {
            bail!("--fork and --rewind need a session: add -c or --resume ID");
        }
        None
    };

    let model = match (&args.agent.model, &previous) {
        (Some(model), _) => model.clone(),
        (None, Some(loaded)) => model_of(loaded),
        (None, None) => env.default_model()?,
    };
    let config = agent_config(&args.agent, env, cwd.clone(), model.clone())?;

    let mut rewound_prompt = None;
    let session = match previous {
        None => new_session(&store, cwd, &model)?,
        Some(loaded) => {
            warnings.extend(
                loaded
                    .warnings
                    .iter()
                    .map(|warning| format!("{}: {warning}", loaded.path.display())),
            );
            if args.fork {
                let writer = store.fork(&loaded, loaded.messages.len())?;
                SessionState {
                    writer,
                    messages: loaded.messages,
                    usage: Default::default(),
                }
            } else if let Some(prompt_number) = args.rewind {
                let (writer, prompt) = store.rewind(&loaded, prompt_number)?;
                let keep = loaded.prompt_indexes[prompt_number - 1];
                rewound_prompt = Some(prompt);
                SessionState {
                    writer,
                    messages: loaded.messages[..keep].to_vec(),
                    usage: Default::default(),
                }
            } else {
                let writer = store.resume(&loaded)?;
                SessionState {
                    writer,
                    messages: loaded.messages,
                    usage: loaded.usage,
                }
            }
        }
    };

    Ok(Prepared {
        config,
        session,
        rewound_prompt,
        warnings,
    })
}

/// The agent configuration for `cwd` and `model` from the options and the environment.
pub fn agent_config(
    options: &AgentOptions,
    env: &Environment,
    cwd: PathBuf,
    model: String,
) -> anyhow::Result<AgentConfig> {
    split_model_name(&model)?;
    let mut config = AgentConfig::new(cwd, model);
    config.home = env.home();
    config.endpoints = PROVIDERS
        .iter()
        .map(|provider| {
            let endpoint = env.provider_endpoint(provider);
            (
                provider.to_string(),
                Endpoint {
                    api_key: endpoint.api_key,
                    base_url: endpoint.base_url,
                },
            )
        })
        .collect();
    if let Some(mode) = &options.permission_mode {
        config.mode = parse_mode(mode)?;
    }
    if let Some(max_turns) = options.max_turns {
        if max_turns == 0 {
            bail!("--max-turns must be at least 1");
        }
        config.max_requests_per_turn = max_turns;
    }
    config.rules = rules(options, &mut config)?;
    config.system_prompt = options.system_prompt.clone();
    config.append_system_prompt = options.append_system_prompt.clone();
    Ok(config)
}

/// Checks the options alone (mode, rules, model name, turn cap), so a front end that starts
/// agents later can refuse bad flags at once.
pub fn check_options(options: &AgentOptions, env: &Environment) -> anyhow::Result<()> {
    let model = options
        .model
        .clone()
        .unwrap_or_else(|| "anthropic/check".to_string());
    agent_config(options, env, PathBuf::from("/"), model).map(drop)
}

/// The language servers for the project at `cwd`, unless `LARIK_LSP=off`:
/// the built-in servers found on `PATH`, minus those named in `LARIK_LSP_DISABLE`
/// (comma-separated), logging to `<data dir>/logs/lsp-<name>.log`.
pub fn language_servers(
    env: &Environment,
    cwd: &Path,
) -> anyhow::Result<Option<Arc<LanguageServers>>> {
    if env
        .get("LARIK_LSP")
        .is_some_and(|value| value.trim() == "off")
    {
        return Ok(None);
    }
    let path_dirs = env
        .get("PATH")
        .map(|path| std::env::split_paths(path).collect())
        .unwrap_or_default();
    let disabled = env
        .get("LARIK_LSP_DISABLE")
        .map(|names| {
            names
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(Arc::new(LanguageServers::new(ManagerConfig {
        project_root: cwd.to_path_buf(),
        path_dirs,
        log_dir: env.data_dir()?.join("logs"),
        servers: Vec::new(),
        disabled,
        timeouts: Timeouts::default(),
    }))))
}

/// Gives the agent the language servers: the edit tools' checker, and the `lsp` and
/// `apply_code_action` tools (unless a bare `--disallowedTools` name hides them).
pub fn attach_language_servers(
    options: &AgentOptions,
    config: &mut AgentConfig,
    servers: Option<&Arc<LanguageServers>>,
) {
    let Some(servers) = servers else { return };
    larik_lsp::register_lsp_tools(&mut config.tools, servers);
    hide_disallowed_tools(options, config);
    config.feedback = Some(Arc::new(ServerFeedback::new(
        Arc::clone(servers),
        DiagnosticsWait::default(),
    )));
}

/// A permission mode by its name, or an error listing the names.
pub fn parse_mode(name: &str) -> anyhow::Result<PermissionMode> {
    PermissionMode::parse(name).ok_or_else(|| {
        anyhow!(
            "unknown permission mode `{name}` (choose one of: {})",
            PermissionMode::ALL.map(PermissionMode::as_str).join(", ")
        )
    })
}

/// The model a resumed session continues with: the one that answered last, so a switch made
/// during the session sticks.
pub fn model_of(loaded: &LoadedSession) -> String {
    loaded
        .messages
        .iter()
        .rev()
        .find_map(|message| message.model.clone())
        .unwrap_or_else(|| format!("{}/{}", loaded.meta.provider, loaded.meta.model))
}

/// Creates a new, empty session for `cwd` answered by `model`.
pub fn new_session(
    store: &SessionStore,
    cwd: PathBuf,
    model: &str,
) -> anyhow::Result<SessionState> {
    let (provider, model_id) = split_model_name(model)?;
    Ok(SessionState {
        writer: store.create(SessionMeta {
            cwd,
            provider: provider.to_string(),
            model: model_id.to_string(),
            fork_of: None,
            fork_at: None,
        })?,
        messages: Vec::new(),
        usage: Default::default(),
    })
}

/// Allow and deny rules from the options; bare tool names in `--disallowedTools` also
/// take the tool away from the model.
fn rules(args: &AgentOptions, config: &mut AgentConfig) -> anyhow::Result<RuleSet> {
    let mut rules = RuleSet::default();
    for text in split_rules(&args.allowed_tools) {
        rules
            .add_allow(&text)
            .with_context(|| format!("in --allowedTools `{text}`"))?;
    }
    for text in split_rules(&args.disallowed_tools) {
        rules
            .add_deny(&text)
            .with_context(|| format!("in --disallowedTools `{text}`"))?;
    }
    hide_disallowed_tools(args, config);
    Ok(rules)
}

/// A bare name in `--disallowedTools` hides the tool from the model too (`Bash`,
/// `MultiEdit`, `grep`), besides denying its calls.
fn hide_disallowed_tools(args: &AgentOptions, config: &mut AgentConfig) {
    for text in split_rules(&args.disallowed_tools) {
        if text.contains('(') {
            continue;
        }
        let wanted = normalize_tool_name(&text);
        for name in config.tools.names() {
            if normalize_tool_name(&name) == wanted {
                config.tools.remove(&name);
            }
        }
    }
}
