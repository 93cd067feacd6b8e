//! The MCP extension: the servers of the project's configuration (personal files, and
//! shared ones once approved) and of the editor, started in the background through the
//! process's one [`ServerPool`] when a session is assembled, and handed to the agent as a
//! late tool source, so a context's first request waits for them at most their connect
//! wait. It also answers `/mcp`: every server of the project with its state, and logs in
//! to remote servers that ask for OAuth.

mod mentions;
mod specs;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use larik_config::{Environment, LoadedConfig};
use larik_mcp::{
    Answer, Asker, Question, SearchPolicy, Server, ServerPool, ServerSpec, ServerStatus,
    SessionTools,
};
use larik_protocol::sync::locked;

use super::error::{Notice, SetupError};
use super::extension::{Contributions, Extension, Scope, ShutDown};
use crate::commands::CommandSpec;

/// How long a login waits for the user to authorize in the browser.
const LOGIN_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// The servers of every session of this process.
pub struct McpExtension {
    pool: Arc<ServerPool>,
    /// The editor's servers last given for each project, for `/mcp`.
    editor_specs: Mutex<HashMap<PathBuf, Vec<ServerSpec>>>,
    /// The servers of each session (by id), whose prompts its slash commands run.
    session_servers: Mutex<HashMap<String, Vec<Arc<Server>>>>,
    /// Whether a session has handed over the pool's stop already (once per process).
    stop_handed_over: AtomicBool,
    /// Who answers the servers' questions for each session with a front end that can ask
    /// (by session id); `-p` has none.
    askers: Arc<Mutex<HashMap<String, Arc<dyn Asker>>>>,
}

impl McpExtension {
    /// The extension, logging each server to `<data_dir>/logs/mcp-<name>.log`.
    pub fn new(data_dir: &Path) -> Self {
        McpExtension {
            pool: Arc::new(ServerPool::new(data_dir)),
            editor_specs: Mutex::new(HashMap::new()),
            session_servers: Mutex::new(HashMap::new()),
            stop_handed_over: AtomicBool::new(false),
            askers: Arc::default(),
        }
    }

    /// Sets (or, with `None`, removes) who answers the servers' questions for the session
    /// `session_id`: its front end, while it runs.
    pub fn set_asker(&self, session_id: &str, asker: Option<Arc<dyn Asker>>) {
        let mut askers = locked(&self.askers);
        match asker {
            Some(asker) => askers.insert(session_id.to_string(), asker),
            None => askers.remove(session_id),
        };
    }

    /// `/mcp`: every server the project at `cwd` configures or the editor gave, with its
    /// state.
    pub fn report(&self, env: &Environment, cwd: &Path) -> String {
        let loaded = larik_config::load(&env.config_context(cwd));
        self.report_of(&loaded, env, cwd)
    }

    /// `/mcp` for the configuration `loaded`.
    fn report_of(&self, loaded: &LoadedConfig, env: &Environment, cwd: &Path) -> String {
        let lines = self.lines(loaded, env, cwd);
        if lines.is_empty() {
            return "No MCP servers are configured for this project. Add one with `larik mcp \
                    add`, in `.mcp.json`, or in your personal `config.json`."
                .to_string();
        }
        let mut text = String::from("MCP servers:\n");
        for line in lines.values() {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(
            "\nA server that becomes ready (or approved) during a context joins at the next \
             fresh context (`/clear`).",
        );
        text
    }

    /// One line per server of `loaded` and of the editor, by name: where it comes from and
    /// how it stands.
    fn lines(
        &self,
        loaded: &LoadedConfig,
        env: &Environment,
        cwd: &Path,
    ) -> BTreeMap<String, String> {
        let mut lines: BTreeMap<String, String> = BTreeMap::new();
        for (name, server) in &loaded.settings.mcp_servers {
            let from = server.file.display();
            let line = if server.disabled {
                "disabled".to_string()
            } else {
                match specs::from_settings(name, server, cwd, env) {
                    Ok(spec) => self.state_of(&spec),
                    Err(why) => format!("not usable: {why}"),
                }
            };
            lines.insert(name.clone(), format!("- **{name}** ({from}): {line}"));
        }
        for pending in &loaded.pending_approvals {
            let Some(name) = pending.key.strip_prefix("mcpServers.") else {
                continue;
            };
            let changed = if pending.stale {
                " (changed since it was approved)"
            } else {
                ""
            };
            lines.insert(
                name.to_string(),
                format!(
                    "- **{name}** ({}): unapproved{changed}; approve with `/mcp approve {name}` \
                     or `larik approve {}`",
                    pending.file.display(),
                    pending.approval_key()
                ),
            );
        }
        let editor = locked(&self.editor_specs)
            .get(cwd)
            .cloned()
            .unwrap_or_default();
        for spec in editor {
            lines.insert(
                spec.name.clone(),
                format!(
                    "- **{}** (from the editor): {}",
                    spec.name,
                    self.state_of(&spec)
                ),
            );
        }
        lines
    }

    /// Approves the shared server `name` of the project at `cwd` (`/mcp approve NAME`).
    pub fn approve(env: &Environment, cwd: &Path, name: &str) -> Result<String, String> {
        let context = env.config_context(cwd);
        let Some(config_dir) = context.config_dir.clone() else {
            return Err("no personal config directory to keep approvals in".to_string());
        };
        let loaded = larik_config::load(&context);
        let key = format!("mcpServers.{name}");
        let pending = loaded
            .pending_approvals
            .iter()
            .find(|pending| pending.key == key)
            .ok_or_else(|| format!("no MCP server `{name}` waits for approval here"))?;
        larik_config::approve_pending(&config_dir, &context.project_root, pending)
            .map_err(|error| error.to_string())?;
        Ok(format!(
            "Approved the MCP server `{name}` ({}); it starts at the next fresh context \
             (`/clear`).",
            pending.value
        ))
    }

    /// `/mcp` once each configured server has connected or failed (each within its
    /// startup timeout): the check `larik mcp list` and `larik -p /mcp` make.
    pub async fn check(&self, env: &Environment, cwd: &Path) -> String {
        let loaded = larik_config::load(&env.config_context(cwd));
        self.start_and_settle(&loaded, env, cwd, None).await;
        self.report_of(&loaded, env, cwd)
    }

    /// The `/mcp` line of the configured server `name` once it has connected or failed
    /// (the check `larik mcp get` makes); `None` when no server has that name.
    pub async fn check_one(&self, env: &Environment, cwd: &Path, name: &str) -> Option<String> {
        let loaded = larik_config::load(&env.config_context(cwd));
        self.start_and_settle(&loaded, env, cwd, Some(name)).await;
        self.lines(&loaded, env, cwd).remove(name)
    }

    /// Starts the servers `loaded` configures (only `only`, when given) and waits for
    /// each to connect or fail, within its startup timeout.
    async fn start_and_settle(
        &self,
        loaded: &LoadedConfig,
        env: &Environment,
        cwd: &Path,
        only: Option<&str>,
    ) {
        let specs: Vec<ServerSpec> = configured(&loaded.settings, cwd, env, &mut Vec::new())
            .into_iter()
            .filter(|(name, _)| only.is_none_or(|only| only == name))
            .map(|(_, spec)| spec)
            .collect();
        let servers = self.pool.servers_for(&specs);
        futures::future::join_all(servers.iter().map(|server| server.settled())).await;
    }

    /// The text of the MCP prompt `/command argument` of the session `session_id`, or why
    /// there is none.
    pub async fn expand_prompt(
        &self,
        session_id: &str,
        command: &str,
        argument: Option<&str>,
    ) -> Result<String, String> {
        let servers = locked(&self.session_servers)
            .get(session_id)
            .cloned()
            .unwrap_or_default();
        larik_mcp::expand_prompt(&servers, command, argument).await
    }

    /// The session `session_id` has ended (or moved on, its agent stopped): its servers
    /// that no other session uses are stopped.
    pub async fn session_ended(&self, session_id: &str) {
        locked(&self.session_servers).remove(session_id);
        self.stop_unused().await;
    }

    /// Stops the servers no session uses any more.
    pub async fn stop_unused(&self) {
        self.pool.stop_unused().await;
    }

    /// The MCP prompts of the session `session_id` as commands: those of its servers that
    /// are ready now.
    pub fn prompt_commands(&self, session_id: &str) -> Vec<CommandSpec> {
        let servers = locked(&self.session_servers)
            .get(session_id)
            .cloned()
            .unwrap_or_default();
        prompt_specs(&servers)
    }

    /// Stops every server it started.
    pub async fn shutdown(&self) {
        self.pool.shutdown().await;
    }

    /// The server `name` of the project at `cwd`: the editor's, else the configured one.
    fn spec_named(&self, env: &Environment, cwd: &Path, name: &str) -> Result<ServerSpec, String> {
        let editor = locked(&self.editor_specs)
            .get(cwd)
            .and_then(|specs| specs.iter().find(|spec| spec.name == name).cloned());
        if let Some(spec) = editor {
            return Ok(spec);
        }
        let loaded = larik_config::load(&env.config_context(cwd));
        let Some(server) = loaded.settings.mcp_servers.get(name) else {
            return Err(format!("no MCP server `{name}` is configured here"));
        };
        specs::from_settings(name, server, cwd, env)
    }

    /// Forgets the login of the remote server `name` of the project at `cwd`.
    pub fn logout(&self, env: &Environment, cwd: &Path, name: &str) -> Result<String, String> {
        let spec = self.spec_named(env, cwd, name)?;
        Ok(if self.pool.logout(&spec)? {
            format!("Forgot the login of the MCP server `{name}`.")
        } else {
            format!("No login of the MCP server `{name}` was kept.")
        })
    }

    /// Logs in to the remote server `name` of the project at `cwd` (`/mcp login`, `larik
    /// mcp login`): opens the browser on the authorization page, tells `tell` the URL and
    /// the browser program (if one was started), and waits at most [`LOGIN_WAIT`] for the
    /// user to authorize Larik. The server's state once connected again.
    pub async fn login_and_wait(
        &self,
        env: &Environment,
        cwd: &Path,
        name: &str,
        tell: impl FnOnce(&str, Option<String>),
    ) -> Result<String, String> {
        let spec = self.spec_named(env, cwd, name)?;
        let pending = self.pool.begin_login(&spec).await?;
        let opened = crate::browser::open(pending.url(), env);
        tell(pending.url(), opened);
        let status = self.pool.complete_login(&spec, pending, LOGIN_WAIT).await?;
        Ok(status.to_string())
    }

    /// How `/mcp` shows the state of the server `spec` defines.
    fn state_of(&self, spec: &ServerSpec) -> String {
        match self.pool.status_of(spec) {
            Some(ServerStatus::NeedsLogin) => {
                format!("needs login: {}", larik_mcp::login_hint(&spec.name))
            }
            Some(status) => status.to_string(),
            None => "not started (it starts with the next session or `/clear`)".to_string(),
        }
    }
}

impl Extension for McpExtension {
    fn name(&self) -> &'static str {
        larik_mcp::SOURCE
    }

    fn contribute(&self, scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError> {
        let mut wanted = configured(scope.settings, scope.cwd, scope.env, &mut into.notices);
        // The editor's server of a name replaces the configured one.
        let mut editor: Vec<ServerSpec> = Vec::new();
        for server in scope.editor_mcp_servers {
            match specs::from_editor(server, scope.cwd, scope.env) {
                Ok(spec) => editor.push(spec),
                Err(why) => into.notices.push(Notice::configuration(format!(
                    "the editor's MCP server `{}` is not started: {why}",
                    server.name()
                ))),
            }
        }
        locked(&self.editor_specs).insert(scope.cwd.to_path_buf(), editor.clone());
        for spec in editor {
            wanted.insert(spec.name.clone(), spec);
        }
        let specs: Vec<ServerSpec> = wanted.into_values().collect();
        let servers = self.pool.servers_for(&specs);
        locked(&self.session_servers).insert(scope.session_id.to_string(), servers.clone());
        if servers.is_empty() {
            return Ok(());
        }
        into.hooks
            .push(Arc::new(mentions::ResourceMentions::new(servers.clone())));
        // The prompts of the servers ready now; the others' run all the same by name, and
        // are listed once their server is ready (see `prompt_commands`).
        into.commands.extend(prompt_specs(&servers));
        if !self.stop_handed_over.swap(true, Ordering::Relaxed) {
            into.shutdown
                .push(Arc::new(StopPool(Arc::clone(&self.pool))));
        }
        let mut search = SearchPolicy::default();
        if let Some(share) = scope.settings.mcp_search_share {
            search.share = share;
        }
        if let Some(count) = scope.settings.mcp_search_count {
            search.count = usize::try_from(count).unwrap_or(usize::MAX);
        }
        let asker = SessionAsker {
            askers: Arc::clone(&self.askers),
            session_id: scope.session_id.to_string(),
        };
        into.late_tools.push(Arc::new(
            SessionTools::new(servers, search).with_asker(Arc::new(asker)),
        ));
        Ok(())
    }
}

/// The prompts of the ready ones of `servers`, as commands.
fn prompt_specs(servers: &[Arc<Server>]) -> Vec<CommandSpec> {
    larik_mcp::prompt_commands(servers)
        .into_iter()
        .map(|prompt| {
            let hint = (!prompt.arguments.is_empty()).then(|| prompt.arguments.join(" "));
            CommandSpec::mcp_prompt(&prompt.name, &prompt.description, hint.as_deref())
        })
        .collect()
}

/// The specs of the servers `settings` configures and does not disable, by name; one that
/// cannot be used is left out with a notice.
fn configured(
    settings: &larik_config::Settings,
    cwd: &Path,
    env: &Environment,
    notices: &mut Vec<Notice>,
) -> BTreeMap<String, ServerSpec> {
    let mut wanted = BTreeMap::new();
    for (name, server) in &settings.mcp_servers {
        if server.disabled {
            continue;
        }
        match specs::from_settings(name, server, cwd, env) {
            Ok(spec) => {
                wanted.insert(name.clone(), spec);
            }
            Err(why) => notices.push(Notice::configuration(format!(
                "MCP server `{name}` ({}) is not started: {why}",
                server.file.display()
            ))),
        }
    }
    wanted
}

/// The servers' questions of one session, put to whoever answers for it when asked.
struct SessionAsker {
    askers: Arc<Mutex<HashMap<String, Arc<dyn Asker>>>>,
    session_id: String,
}

#[async_trait::async_trait]
impl Asker for SessionAsker {
    async fn ask(&self, question: Question) -> Result<Answer, String> {
        let asker = locked(&self.askers).get(&self.session_id).cloned();
        match asker {
            Some(asker) => asker.ask(question).await,
            None => Err(format!(
                "Larik runs without an editor here (`larik -p`), so it cannot ask the user: \
                 {}",
                question.message
            )),
        }
    }
}

/// Stops every server when the process ends.
struct StopPool(Arc<ServerPool>);

#[async_trait::async_trait]
impl ShutDown for StopPool {
    async fn shut_down(&self) {
        self.0.shutdown().await;
    }
}
