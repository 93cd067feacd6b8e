//! Turns the command line and the environment into an agent configuration and the session
//! it writes to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use larik_agent::Budget;
use larik_agent::{AgentConfig, RuleStore, SessionState};
use larik_checkpoints::CheckpointStore;
use larik_config::{Environment, LspSettings, Settings};
use larik_lsp::{
    DiagnosticsWait, LanguageServers, ManagerConfig, ServerFeedback, ServerSpec, Timeouts,
};
use larik_permissions::{RuleSet, normalize_tool_name};
use larik_protocol::{Message, PermissionMode};
use larik_providers::{
    Endpoint, ModelRegistry, ModelRole, ModelSettings, PROVIDERS, Prices, split_model_name,
};
use larik_sandbox::{Sandbox, SandboxOptions};
use larik_session::{LoadedSession, SessionMeta, SessionStore};
use std::time::SystemTime;

use crate::cli::{AgentOptions, Cli, split_rules};

/// What the front end needs to start an agent.
pub struct Prepared {
    /// The agent's settings.
    pub config: AgentConfig,
    /// The session it writes to.
    pub session: SessionState,
    /// With `--rewind`, the prompt the branch was cut before.
    pub rewound_prompt: Option<Message>,
    /// Things the user should know before the run (skipped lines of a session file,
    /// configuration that was not used).
    pub warnings: Vec<String>,
    /// The project's configuration files, merged.
    pub settings: Settings,
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
    let (settings, mut warnings) = project_settings(env, &cwd);

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

    let model = match &previous {
        Some(loaded) if args.agent.model.is_none() => model_of(loaded),
        _ => new_session_model(&args.agent, &settings, env, &mut warnings)?,
    };
    let mut config = agent_config(&args.agent, env, cwd.clone(), model.clone())?;

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
                    pending_notes: Vec::new(),
                }
            } else if let Some(prompt_number) = args.rewind {
                let (writer, prompt) = store.rewind(&loaded, prompt_number)?;
                let keep = loaded.prompt_indexes[prompt_number - 1];
                rewound_prompt = Some(prompt);
                SessionState {
                    writer,
                    messages: loaded.messages[..keep].to_vec(),
                    usage: Default::default(),
                    pending_notes: Vec::new(),
                }
            } else {
                let writer = store.resume(&loaded)?;
                SessionState {
                    writer,
                    messages: loaded.messages,
                    usage: loaded.usage,
                    pending_notes: loaded.pending_notes,
                }
            }
        }
    };

    configure_session(
        &args.agent,
        env,
        &settings,
        session.writer.id(),
        &mut config,
        &mut warnings,
    )?;
    Ok(Prepared {
        config,
        session,
        rewound_prompt,
        warnings,
        settings,
    })
}

/// The configuration files of the project `cwd` belongs to, merged, and what the user
/// should hear about them (files that could not be used, settings that were ignored).
pub fn project_settings(env: &Environment, cwd: &Path) -> (Settings, Vec<String>) {
    let loaded = larik_config::load(&env.config_context(cwd));
    let notices = loaded
        .notices
        .iter()
        .map(|notice| format!("configuration: {notice}"))
        .collect();
    (loaded.settings, notices)
}

/// The model a new session starts with: the one named on the command line, else
/// `LARIK_MODEL`, else the configuration's (when it names a known provider), else the
/// default of the first provider with a key.
pub fn new_session_model(
    options: &AgentOptions,
    settings: &Settings,
    env: &Environment,
    warnings: &mut Vec<String>,
) -> anyhow::Result<String> {
    // The registry's own notices are reported once, by `configure_session`.
    let registry = model_registry(settings, &mut Vec::new());
    if let Some(model) = &options.model {
        return registry
            .resolve(model)
            .map_err(|error| anyhow!("--model: {error}"));
    }
    if let Some(model) = env.get("LARIK_MODEL") {
        return registry
            .resolve(model)
            .map_err(|error| anyhow!("LARIK_MODEL: {error}"));
    }
    if let Some(model) = &settings.model {
        match registry.resolve(model) {
            Ok(model) => return Ok(model),
            Err(error) => warnings.push(format!("configuration: `model` ignored: {error:#}")),
        }
    }
    if let Some(model) = registry.model_for(ModelRole::Default) {
        return Ok(model.to_string());
    }
    Ok(env.default_model()?)
}

/// Larik's table of models with the configuration's `models`, `aliases` and `roles`; an
/// entry that cannot be used is left out with a warning.
pub fn model_registry(settings: &Settings, warnings: &mut Vec<String>) -> ModelRegistry {
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
            warnings.push(format!("configuration: `models.{name}` ignored: {error}"));
        }
    }
    for (alias, target) in &config.aliases {
        if let Err(error) = registry.set_alias(alias, target) {
            warnings.push(format!("configuration: `aliases.{alias}` ignored: {error}"));
        }
    }
    for (role, model) in &config.roles {
        if let Some(role) = ModelRole::from_name(role)
            && let Err(error) = registry.set_role(role, model)
        {
            warnings.push(format!(
                "configuration: `roles.{}` ignored: {error}",
                role.as_str()
            ));
        }
    }
    registry
}

/// Completes the configuration of the session `session_id` for every front end: what the
/// project's configuration files add to the command line's settings (mode, rules), the
/// command sandbox and the session's checkpoint store. Notices for the user go to
/// `notices`.
pub fn configure_session(
    options: &AgentOptions,
    env: &Environment,
    settings: &Settings,
    session_id: &str,
    config: &mut AgentConfig,
    notices: &mut Vec<String>,
) -> anyhow::Result<()> {
    notices.extend(apply_settings(options, settings, config));
    config.models = model_registry(settings, notices);
    if let Some(cap) = options.max_budget_usd.or(settings.models.max_budget_usd) {
        config.budget = Some(Arc::new(Budget::new(cap, 0.0)));
    }
    if let Some(share) = settings.models.auto_compact_share {
        config.auto_compact_share = share;
    }
    config.sandbox = Arc::new(sandbox(env, &config.cwd, settings));
    config.checkpoints = Some(checkpoints(env, &config.cwd, session_id)?);
    Ok(())
}

/// The command sandbox for the project `cwd` belongs to: on unless the configuration or
/// `LARIK_SANDBOX=off` switches it off, with the configuration's extra writable paths and
/// network, the temp directories writable, and bubblewrap looked up on `PATH`. What the user
/// should hear once (no sandbox available, or a weaker one) the agent says when the first
/// command asks for it.
fn sandbox(env: &Environment, cwd: &Path, settings: &Settings) -> Sandbox {
    let switched_off = env
        .get("LARIK_SANDBOX")
        .is_some_and(|value| value.trim() == "off");
    let mut temp_dirs = vec![PathBuf::from("/tmp"), PathBuf::from("/var/tmp")];
    temp_dirs.extend(env.get("TMPDIR").map(PathBuf::from));
    let options = SandboxOptions {
        enabled: settings.sandbox.enabled.unwrap_or(true) && !switched_off,
        writable_paths: settings.sandbox.writable_paths.clone(),
        network_allow: settings.sandbox.network_allow.clone(),
        temp_dirs,
        path_dirs: path_dirs(env),
    };
    Sandbox::configure(&larik_config::project_root(cwd), &options)
}

/// "Always" answers kept in the user's personal settings for the project (see
/// `larik_config::persist_allow_rule`).
struct PersonalRules {
    config_dir: PathBuf,
    project_root: PathBuf,
}

impl RuleStore for PersonalRules {
    fn keep(&self, rule: &str, allow: bool) -> Result<(), String> {
        let kept = if allow {
            larik_config::persist_allow_rule(&self.config_dir, &self.project_root, rule)
        } else {
            larik_config::persist_deny_rule(&self.config_dir, &self.project_root, rule)
        };
        kept.map(drop).map_err(|error| error.to_string())
    }
}

/// Where "always" answers for the project `cwd` belongs to are kept: the personal
/// project settings file, when there is a config directory.
pub fn rule_store(env: &Environment, cwd: &Path) -> Option<Arc<dyn RuleStore>> {
    let config_dir = env.config_dir()?;
    Some(Arc::new(PersonalRules {
        config_dir,
        project_root: larik_config::project_root(cwd),
    }))
}

/// The checkpoint store of a session, for `/undo`: `<data dir>/checkpoints/<session id>/`,
/// confined to the project `cwd` belongs to.
fn checkpoints(
    env: &Environment,
    cwd: &Path,
    session_id: &str,
) -> anyhow::Result<Arc<CheckpointStore>> {
    let dir = env.data_dir()?.join("checkpoints").join(session_id);
    let store = CheckpointStore::open(dir, larik_config::project_root(cwd))
        .context("cannot open the session's checkpoints")?;
    Ok(Arc::new(store))
}

/// Deletes the checkpoints of sessions older than `checkpoint_retention_days` (7 by
/// default; negative keeps them forever; personal files only, since it covers every
/// project), on a thread of its own so start-up does not wait for it. Sessions open in any
/// process are left alone (their stores hold a lock). [`Pruning::finish`] waits for it and
/// returns a warning for each directory that could not be deleted.
pub fn prune_checkpoints(env: &Environment, settings: &Settings) -> Pruning {
    let data_dir = env.data_dir().ok();
    let days = settings.checkpoint_retention_days.unwrap_or(7);
    Pruning(std::thread::spawn(move || prune_now(data_dir, days)))
}

/// The checkpoint pruning of a long-running front end (ACP, LSP): with the settings of the
/// project it starts in, all on a thread of its own; [`Pruning::finish`] on the way out.
pub fn prune_checkpoints_for_cwd(env: &Environment) -> Pruning {
    let env = env.clone();
    Pruning(std::thread::spawn(move || {
        let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
        let (settings, _) = project_settings(&env, &cwd);
        prune_now(
            env.data_dir().ok(),
            settings.checkpoint_retention_days.unwrap_or(7),
        )
    }))
}

fn prune_now(data_dir: Option<PathBuf>, days: i64) -> Vec<String> {
    let Some(data_dir) = data_dir else {
        return Vec::new();
    };
    match larik_checkpoints::prune(&data_dir.join("checkpoints"), days, SystemTime::now()) {
        Ok(report) => report
            .failed
            .iter()
            .map(|(path, why)| {
                format!("could not delete old checkpoints {}: {why}", path.display())
            })
            .collect(),
        Err(error) => vec![format!("could not prune old checkpoints: {error}")],
    }
}

/// Old checkpoints being deleted (see [`prune_checkpoints`]).
pub struct Pruning(std::thread::JoinHandle<Vec<String>>);

impl Pruning {
    /// Waits until the old checkpoints are deleted; returns what could not be.
    pub fn finish(self) -> Vec<String> {
        self.0
            .join()
            .unwrap_or_else(|_| vec!["pruning old checkpoints failed".to_string()])
    }
}

/// Loads the root certificates on a thread of its own when the model the front end will
/// most likely start with (`model` from the command line, else `LARIK_MODEL` or the first
/// provider with a key) is reached over TLS, so its first request does not wait for them;
/// a plain `http://` endpoint (a local server) needs none. Only a head start: whatever the
/// guess, a client loads them itself when it needs them.
pub fn prefetch_tls(env: &Environment, model: Option<&str>) {
    let model = model
        .map(str::to_string)
        .or_else(|| env.default_model().ok());
    let uses_tls = match model.as_deref().map(split_model_name) {
        Some(Ok((provider, _))) => {
            let endpoint = env.provider_endpoint(provider);
            larik_providers::endpoint_uses_tls(
                provider,
                &Endpoint {
                    api_key: endpoint.api_key,
                    base_url: endpoint.base_url,
                },
            )
        }
        // An alias (resolved per project) or no model at all: most likely a hosted one.
        _ => true,
    };
    if uses_tls {
        std::thread::spawn(larik_providers::prepare_tls);
    }
}

/// The directories of `PATH`.
fn path_dirs(env: &Environment) -> Vec<PathBuf> {
    env.get("PATH")
        .map(|path| std::env::split_paths(path).collect())
        .unwrap_or_default()
}

/// Applies what the configuration files say and the command line did not: the permission
/// mode, and the allow, ask and deny rules (added to the command line's). Returns a warning
/// for each rule that does not parse; the others still apply.
fn apply_settings(
    options: &AgentOptions,
    settings: &Settings,
    config: &mut AgentConfig,
) -> Vec<String> {
    if options.permission_mode.is_none()
        && let Some(mode) = settings.permissions.default_mode
    {
        config.mode = mode;
    }
    let mut warnings = Vec::new();
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
                warnings.push(format!(
                    "configuration: {}: `permissions.{kind}` rule `{}` ignored: {error}",
                    configured.file.display(),
                    configured.rule
                ));
            }
        }
    }
    warnings
}

/// The agent configuration for `cwd` and `model` from the options and the environment.
pub fn agent_config(
    options: &AgentOptions,
    env: &Environment,
    cwd: PathBuf,
    model: String,
) -> anyhow::Result<AgentConfig> {
    if let Some(cap) = options.max_budget_usd
        && !(cap.is_finite() && cap > 0.0)
    {
        bail!("--max-budget-usd must be a positive number of dollars");
    }
    let mut config = AgentConfig::new(cwd, model);
    config.home = env.home();
    config.user_config_dir = env.config_dir();
    config.rule_store = rule_store(env, &config.cwd);
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
    // A bare word may be an alias from the project's configuration, known only per session.
    if let Some(model) = &options.model
        && model.contains('/')
    {
        split_model_name(model)?;
    }
    let model = options
        .model
        .clone()
        .unwrap_or_else(|| "anthropic/check".to_string());
    agent_config(options, env, PathBuf::from("/"), model).map(drop)
}

/// The language servers for the project at `cwd`, unless `LARIK_LSP=off` or the
/// configuration says `"lsp": false`: the configured and built-in servers found on `PATH`,
/// minus those disabled in the configuration or named in `LARIK_LSP_DISABLE`
/// (comma-separated), logging to `<data dir>/logs/lsp-<name>.log`. A configured server that
/// cannot be used is left out with a warning.
pub fn language_servers(
    env: &Environment,
    cwd: &Path,
    settings: &LspSettings,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Option<Arc<LanguageServers>>> {
    if !settings.enabled
        || env
            .get("LARIK_LSP")
            .is_some_and(|value| value.trim() == "off")
    {
        return Ok(None);
    }
    let path_dirs = path_dirs(env);
    let mut disabled: Vec<String> = env
        .get("LARIK_LSP_DISABLE")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect();
    let mut servers = Vec::new();
    for (name, configured) in &settings.servers {
        if configured.disabled {
            disabled.push(name.clone());
            continue;
        }
        match configured_server(name, configured) {
            Ok(Some(spec)) => servers.push(spec),
            Ok(None) => {}
            Err(reason) => warnings.push(format!(
                "configuration: language server `{name}` not used: {reason}"
            )),
        }
    }
    Ok(Some(Arc::new(LanguageServers::new(ManagerConfig {
        project_root: cwd.to_path_buf(),
        path_dirs,
        log_dir: env.data_dir()?.join("logs"),
        servers,
        disabled,
        timeouts: Timeouts::default(),
    }))))
}

/// The spec of a configured server: a built-in one with the configured fields replaced, or
/// a new one, which needs a command and the extensions it serves. `None` when the entry
/// changes nothing.
fn configured_server(
    name: &str,
    configured: &larik_config::LspServerSettings,
) -> Result<Option<ServerSpec>, String> {
    let builtin = ServerSpec::defaults()
        .into_iter()
        .find(|spec| spec.name == name);
    let changes_something = configured.command.is_some()
        || configured.args.is_some()
        || configured.extensions.is_some()
        || configured.root_markers.is_some()
        || configured.check_on_save.is_some();
    if !changes_something {
        return Ok(None);
    }
    let mut spec = match builtin {
        Some(spec) => spec,
        None => {
            let Some(command) = &configured.command else {
                return Err("it needs a `command`".into());
            };
            if configured.extensions.as_ref().is_none_or(Vec::is_empty) {
                return Err("it needs the `extensions` it serves".into());
            }
            ServerSpec::new(name, command, &[], &[], &[])
        }
    };
    if let Some(command) = &configured.command {
        spec.command.clone_from(command);
    }
    if let Some(args) = &configured.args {
        spec.args.clone_from(args);
    }
    if let Some(extensions) = &configured.extensions {
        spec.extensions = extensions
            .iter()
            .map(|extension| extension.trim_start_matches('.').to_string())
            .collect();
    }
    if let Some(markers) = &configured.root_markers {
        spec.root_markers.clone_from(markers);
    }
    if let Some(check) = configured.check_on_save {
        spec.checks_on_save = check;
    }
    Ok(Some(spec))
}

/// The language servers of each project a long-running front end (ACP, LSP) serves, started
/// with the first session there (and that session's configuration), shared by the later
/// ones.
#[derive(Default)]
pub struct ProjectServers {
    by_cwd: std::sync::Mutex<std::collections::HashMap<PathBuf, Option<Arc<LanguageServers>>>>,
}

impl ProjectServers {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<PathBuf, Option<Arc<LanguageServers>>>>
    {
        self.by_cwd
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The servers of the project at `cwd` (see [`language_servers`]), started on first use.
    pub fn for_project(
        &self,
        env: &Environment,
        cwd: &Path,
        settings: &LspSettings,
        warnings: &mut Vec<String>,
    ) -> anyhow::Result<Option<Arc<LanguageServers>>> {
        let mut all = self.lock();
        if let Some(servers) = all.get(cwd) {
            return Ok(servers.clone());
        }
        let servers = language_servers(env, cwd, settings, warnings)?;
        all.insert(cwd.to_path_buf(), servers.clone());
        Ok(servers)
    }

    /// Stops every project's servers.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<LanguageServers>> = self
            .lock()
            .drain()
            .filter_map(|(_, servers)| servers)
            .collect();
        for servers in servers {
            servers.shutdown().await;
        }
    }
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

/// A stored session reopened to append to it, with the model it continues with: the
/// command line's, else the one that answered last.
pub fn resumed(
    options: &AgentOptions,
    store: &SessionStore,
    loaded: LoadedSession,
) -> anyhow::Result<(String, SessionState)> {
    let model = options.model.clone().unwrap_or_else(|| model_of(&loaded));
    let writer = store.resume(&loaded)?;
    Ok((
        model,
        SessionState {
            writer,
            messages: loaded.messages,
            usage: loaded.usage,
            pending_notes: loaded.pending_notes,
        },
    ))
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
        pending_notes: Vec::new(),
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
