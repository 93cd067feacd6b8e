//! Turns the command line and the environment into an agent configuration and the session
//! it writes to.

use std::path::PathBuf;

use anyhow::{Context, anyhow, bail};
use larik_agent::{AgentConfig, SessionState};
use larik_config::Environment;
use larik_permissions::{RuleSet, normalize_tool_name};
use larik_protocol::{Message, PermissionMode};
use larik_providers::{Endpoint, PROVIDERS, split_model_name};
use larik_session::{SessionMeta, SessionStore};

use crate::cli::{Cli, split_rules};

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

    let model = match (&args.model, &previous) {
        (Some(model), _) => model.clone(),
        // The model that answered last, so a switch made during the session sticks.
        (None, Some(loaded)) => loaded
            .messages
            .iter()
            .rev()
            .find_map(|message| message.model.clone())
            .unwrap_or_else(|| format!("{}/{}", loaded.meta.provider, loaded.meta.model)),
        (None, None) => env.default_model()?,
    };
    let (provider, model_id) = split_model_name(&model)?;

    let mut config = AgentConfig::new(cwd.clone(), model.clone());
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
    if let Some(mode) = &args.permission_mode {
        config.mode = PermissionMode::parse(mode).ok_or_else(|| {
            anyhow!(
                "unknown permission mode `{mode}` (choose one of: {})",
                PermissionMode::ALL.map(PermissionMode::as_str).join(", ")
            )
        })?;
    }
    if let Some(max_turns) = args.max_turns {
        if max_turns == 0 {
            bail!("--max-turns must be at least 1");
        }
        config.max_requests_per_turn = max_turns;
    }
    config.rules = rules(args, &mut config)?;
    config.system_prompt = args.system_prompt.clone();
    config.append_system_prompt = args.append_system_prompt.clone();

    let mut rewound_prompt = None;
    let session = match previous {
        None => SessionState {
            writer: store.create(SessionMeta {
                cwd,
                provider: provider.to_string(),
                model: model_id.to_string(),
                fork_of: None,
                fork_at: None,
            })?,
            messages: Vec::new(),
            usage: Default::default(),
        },
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

/// Allow and deny rules from the command line; bare tool names in `--disallowedTools` also
/// take the tool away from the model.
fn rules(args: &Cli, config: &mut AgentConfig) -> anyhow::Result<RuleSet> {
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
        if !text.contains('(') {
            // A bare name hides the tool from the model too (`Bash`, `MultiEdit`, `grep`).
            let wanted = normalize_tool_name(&text);
            for name in config.tools.names() {
                if normalize_tool_name(&name) == wanted {
                    config.tools.remove(&name);
                }
            }
        }
    }
    Ok(rules)
}
