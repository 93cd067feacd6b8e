//! The one way a session is put together, for every front end.
//!
//! A front end describes what the user asked for and what it supplies itself in a
//! [`SessionRequest`] (the working directory, which session to open, the file access, the
//! ask policy, the editor's MCP servers) and calls [`Process::assemble`] once. That reads
//! the project's configuration, picks the model, opens or creates the session file, builds
//! the agent configuration (mode, rules, budget, sandbox, checkpoints), asks every
//! extension for its contributions (tools, late tool sources, loop hooks, slash commands,
//! prompt sections, an edit checker, notices, things to shut down), applies the
//! disallowed-tools filter once to the finished registry (and to what the late sources
//! give), and starts the agent. The [`Process`] is the state shared by all
//! sessions of one `larik` process: the environment, the session store, the extensions
//! (with their caches, such as the language servers of each project) and the checkpoint
//! upkeep; [`Process::shutdown`] ends it.

mod error;
mod extension;
mod hooks;
mod language_servers;
mod mcp;
mod open;
mod options;
mod skills;
mod subagents;
mod upkeep;
mod web;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use larik_agent::{AgentHandle, AskPolicy, Budget, PromptSection};
use larik_config::{Environment, Settings};
use larik_protocol::{Message, PermissionMode, ReasoningEffort, Usage};
use larik_session::SessionStore;
use larik_tools::FileAccess;

pub use error::{Notice, NoticeSource, SetupError};
pub use extension::{Contributions, EditorMcpServer, Extension, Scope, ShutDown};
#[cfg(feature = "fuzzing")]
pub(crate) use hooks::{
    compact_outcome, messages_and_blocks, permission_outcome, prompt_outcome, start_outcome,
    stop_outcome, tool_call_outcome, tool_result_outcome,
};
pub use mcp::McpExtension;
pub use open::{Branch, Open};
pub use options::{check_options, parse_mode};
pub use upkeep::{environment, prefetch_tls};

use crate::cli::AgentOptions;
use crate::commands::CommandSpec;
use larik_protocol::sync::locked;
use upkeep::Pruning;

/// Makes the file access of a session from its id (called again each time the session
/// continues in another file, by `/clear`, `/fork`, `/rewind` or `/resume`).
pub type FilesFor = Arc<dyn Fn(&str) -> Arc<dyn FileAccess> + Send + Sync>;

/// What a session that continues elsewhere (`/clear`, `/fork`, `/rewind`, `/resume`) keeps
/// of the one it leaves: the permission mode, the reasoning effort, and, unless it resumes
/// another session (which continues with its own), the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    /// The model to go on with, as `provider/model`; `None` for the stored session's own.
    pub model: Option<String>,
    /// The permission mode.
    pub mode: PermissionMode,
    /// The reasoning effort.
    pub reasoning: Option<ReasoningEffort>,
}

/// What a front end asks for when it starts a session.
pub struct SessionRequest {
    /// The working directory (absolute).
    pub cwd: PathBuf,
    /// Which session to open.
    pub open: Open,
    /// Where the file tools read and write text, made for the session's id once it is
    /// known; `None` for the disk.
    pub files: Option<FilesFor>,
    /// What calls that need approval do.
    pub ask_policy: AskPolicy,
    /// MCP servers the editor gave for this session.
    pub editor_mcp_servers: Vec<EditorMcpServer>,
    /// What the session carries over from the one it continues, if any.
    pub carried: Option<Carried>,
}

impl SessionRequest {
    /// A request to open `open` in `cwd`, asking the front end about approvals, with the
    /// files on disk and no editor MCP servers.
    pub fn new(cwd: PathBuf, open: Open) -> Self {
        SessionRequest {
            cwd,
            open,
            files: None,
            ask_policy: AskPolicy::Ask,
            editor_mcp_servers: Vec::new(),
            carried: None,
        }
    }
}

/// A started session.
pub struct Assembled {
    /// Its running agent.
    pub agent: AgentHandle,
    /// Its id.
    pub session_id: String,
    /// Its file.
    pub session_path: PathBuf,
    /// The model it starts with.
    pub model: String,
    /// The permission mode it starts in.
    pub mode: PermissionMode,
    /// The reasoning effort it starts with.
    pub reasoning: Option<ReasoningEffort>,
    /// Usage so far (a resumed session keeps its total).
    pub usage: Usage,
    /// The same usage by model.
    pub usage_by_model: BTreeMap<String, Usage>,
    /// Its spending cap, if any.
    pub budget: Option<Arc<Budget>>,
    /// With a rewind, the prompt the branch was cut before.
    pub rewound_prompt: Option<Message>,
    /// For a branch (fork or rewind), how many messages of the source it kept.
    pub fork_at: Option<usize>,
    /// What the user should hear before the first answer.
    pub notices: Vec<Notice>,
    /// The slash commands extensions add for this session.
    pub commands: Vec<CommandSpec>,
}

/// What every session of one `larik` process shares.
pub struct Process {
    /// The process environment.
    pub env: Environment,
    /// The session files.
    pub store: SessionStore,
    options: AgentOptions,
    data_dir: PathBuf,
    extensions: Vec<Arc<dyn Extension>>,
    /// The MCP servers (one of `extensions`), for `/mcp`.
    pub mcp: Arc<McpExtension>,
    /// The pruning of old checkpoints, started once per process.
    pruning: Mutex<Option<Pruning>>,
    /// What to stop when the process ends.
    shutdown: Mutex<Vec<Arc<dyn ShutDown>>>,
}

impl Process {
    /// The shared state of a process whose sessions start with `options`, which are
    /// checked here, with Larik's extensions and then `added`.
    pub fn new(
        env: Environment,
        options: AgentOptions,
        added: Vec<Arc<dyn Extension>>,
    ) -> Result<Process, SetupError> {
        check_options(&options)?;
        let data_dir = env.data_dir()?;
        let mcp = Arc::new(McpExtension::new(&data_dir));
        let extensions = own_extensions()
            .into_iter()
            .chain([Arc::clone(&mcp) as Arc<dyn Extension>])
            .chain(added)
            .collect();
        Ok(Process {
            store: SessionStore::new(&data_dir),
            env,
            options,
            data_dir,
            extensions,
            mcp,
            pruning: Mutex::new(None),
            shutdown: Mutex::new(Vec::new()),
        })
    }

    /// Starts deleting old checkpoints on a thread of its own, with the settings of the
    /// project `cwd` belongs to (read there too), unless this process started already.
    pub fn prune_checkpoints_for(&self, cwd: PathBuf) {
        let env = self.env.clone();
        self.prune_checkpoints_once(move || {
            project_settings(&env, &cwd).0.checkpoint_retention_days
        });
    }

    fn prune_checkpoints_once(
        &self,
        retention_days: impl FnOnce() -> Option<i64> + Send + 'static,
    ) {
        let mut pruning = locked(&self.pruning);
        if pruning.is_none() {
            *pruning = Some(Pruning::start(self.data_dir.clone(), retention_days));
        }
    }

    /// The providers with an API key, for the models an editor offers.
    pub fn providers_with_keys(&self) -> Vec<String> {
        larik_providers::PROVIDERS
            .iter()
            .filter(|provider| self.env.provider_endpoint(provider).api_key.is_some())
            .map(|provider| provider.to_string())
            .collect()
    }

    /// Starts the session `request` describes.
    pub fn assemble(&self, request: SessionRequest) -> Result<Assembled, SetupError> {
        let SessionRequest {
            cwd,
            open,
            files,
            ask_policy,
            editor_mcp_servers,
            carried,
        } = request;
        let (settings, mut notices) = project_settings(&self.env, &cwd);
        let mut registry_notices = Vec::new();
        let registry = options::model_registry(&settings, &mut registry_notices);
        let stored = open.load(&self.store, &cwd)?;
        let start = match &stored {
            None => larik_agent::hooks::StartSource::Startup,
            Some(stored) if stored.branch == Branch::Clear => {
                larik_agent::hooks::StartSource::Clear
            }
            Some(_) => larik_agent::hooks::StartSource::Resume,
        };
        // A session that moves keeps its model; a stored one continues with its own.
        let carried_model = carried.as_ref().and_then(|carried| carried.model.clone());
        let model = match (&stored, carried_model) {
            (_, Some(model)) => model,
            (Some(stored), None) if self.options.model.is_none() => stored.model(),
            _ => options::new_session_model(
                &self.options,
                &settings,
                &registry,
                &self.env,
                &mut notices,
            )?,
        };
        let mut config = options::base_config(&self.options, &self.env, cwd.clone(), model)?;
        let (session, rewound_prompt, fork_at, usage_by_model) = match stored {
            None => (
                open::create(&self.store, &cwd, &config.model)?,
                None,
                None,
                BTreeMap::new(),
            ),
            Some(stored) => {
                let opened = stored.open(&self.store)?;
                notices.extend(opened.notices);
                (
                    opened.session,
                    opened.rewound,
                    opened.fork_at,
                    opened.usage_by_model,
                )
            }
        };
        let session_id = session.writer.id().to_string();
        let session_path = session.writer.path().to_path_buf();

        options::apply_settings(&self.options, &settings, &mut config, &mut notices);
        if let Some(carried) = carried {
            config.mode = carried.mode;
            config.reasoning = carried.reasoning;
        }
        notices.extend(registry_notices);
        config.models = registry;
        config.rule_store = upkeep::rule_store(&self.env, &cwd);
        config.sandbox = Arc::new(upkeep::sandbox(&self.env, &cwd, &settings));
        config.checkpoints = Some(upkeep::checkpoints(&self.data_dir, &cwd, &session_id)?);
        if self.debug_trace(&settings) {
            config.trace = debug_trace(&config, &session_path, &mut notices);
        }
        config.ask_policy = ask_policy;
        config.start = start;
        if let Some(files) = files {
            config.files = files(&session_id);
        }
        // The session's own checkpoints are open (and so kept) before any pruning starts.
        let retention_days = settings.checkpoint_retention_days;
        self.prune_checkpoints_once(move || retention_days);

        let scope = Scope {
            env: &self.env,
            cwd: &cwd,
            session_id: &session_id,
            settings: &settings,
            editor_mcp_servers: &editor_mcp_servers,
        };
        let mut commands = Vec::new();
        for extension in &self.extensions {
            let mut contributions = Contributions::default();
            extension
                .contribute(&scope, &mut contributions)
                .map_err(|error| error.context(extension.name()))?;
            let Contributions {
                tools,
                late_tools,
                hooks,
                commands: added,
                prompt_sections,
                edit_feedback,
                notices: extension_notices,
                shutdown,
            } = contributions;
            // Labelled with the extension's name, as `/context` shows them.
            for tool in tools {
                config.tools.register_from(tool, extension.name());
            }
            config.late_tools.extend(
                late_tools
                    .into_iter()
                    .map(|source| options::without_disallowed_tools(&self.options, source)),
            );
            config.prompt_sections.extend(
                prompt_sections
                    .into_iter()
                    .map(|text| PromptSection::new(extension.name(), text)),
            );
            config.hooks.extend(hooks);
            commands.extend(added);
            // One edit checker per session: the first contribution wins.
            if config.feedback.is_none() {
                config.feedback = edit_feedback;
            }
            notices.extend(extension_notices);
            locked(&self.shutdown).extend(shutdown);
        }
        options::hide_disallowed_tools(&self.options, &mut config.tools);

        let (mode, reasoning, usage, budget) = (
            config.mode,
            config.reasoning,
            session.usage,
            config.budget.clone(),
        );
        let model = config.model.clone();
        let agent = larik_agent::spawn(config, session)?;
        Ok(Assembled {
            agent,
            session_id,
            session_path,
            model,
            mode,
            reasoning,
            usage,
            usage_by_model,
            budget,
            rewound_prompt,
            fork_at,
            notices,
            commands,
        })
    }

    /// Whether sessions write a debug trace: `--debug`, `LARIK_DEBUG` set to anything but
    /// `0` or `false`, or `"debug": true` in a personal file.
    fn debug_trace(&self, settings: &Settings) -> bool {
        let env = self
            .env
            .get("LARIK_DEBUG")
            .is_some_and(|value| !matches!(value, "0" | "false"));
        self.options.debug || env || settings.debug == Some(true)
    }

    /// Ends the process's sessions' shared state: background jobs the model started are
    /// killed, every extension's servers stopped, the checkpoint pruning waited for.
    /// Returns what the user should hear (checkpoints that could not be deleted).
    pub async fn shutdown(&self) -> Vec<Notice> {
        larik_sandbox::kill_started_groups();
        let shutdown: Vec<Arc<dyn ShutDown>> = locked(&self.shutdown).drain(..).collect();
        for item in shutdown {
            item.shut_down().await;
        }
        let pruning = locked(&self.pruning).take();
        pruning.map(Pruning::finish).unwrap_or_default()
    }
}

/// Where subagents' git worktrees are kept: `<data dir>/worktrees`.
pub fn worktrees(env: &Environment) -> Result<larik_subagents::Worktrees, SetupError> {
    Ok(larik_subagents::Worktrees::new(
        env.data_dir()?.join("worktrees"),
    ))
}

/// The configuration files of the project `cwd` belongs to, merged, and what the user
/// should hear about them (files that could not be used, settings that were ignored).
fn project_settings(env: &Environment, cwd: &std::path::Path) -> (Settings, Vec<Notice>) {
    let loaded = larik_config::load(&env.config_context(cwd));
    let notices = loaded
        .notices
        .iter()
        .map(|notice| Notice::configuration(notice.to_string()))
        .collect();
    (loaded.settings, notices)
}

/// The debug trace of the session file at `session_path`, with the providers' keys kept
/// out of it; a trace that cannot be written is a notice.
fn debug_trace(
    config: &larik_agent::AgentConfig,
    session_path: &std::path::Path,
    notices: &mut Vec<Notice>,
) -> Option<larik_agent::DebugTrace> {
    let secrets = config
        .endpoints
        .values()
        .filter_map(|endpoint| endpoint.api_key.clone())
        .collect();
    match crate::trace::Trace::open(session_path, secrets) {
        Some(trace) => {
            let trace = Arc::new(trace);
            Some(larik_agent::DebugTrace {
                events: trace.clone(),
                http: trace,
            })
        }
        None => {
            notices.push(Notice::configuration(format!(
                "the debug trace cannot be written to {}",
                crate::trace::trace_dir(session_path).display()
            )));
            None
        }
    }
}

/// Larik's own extensions, in the order they contribute.
fn own_extensions() -> Vec<Arc<dyn Extension>> {
    vec![
        Arc::new(language_servers::LanguageServerExtension::default()),
        Arc::new(subagents::SubagentExtension),
        Arc::new(hooks::HookExtension),
        Arc::new(skills::SkillExtension),
        Arc::new(web::WebExtension::default()),
    ]
}
