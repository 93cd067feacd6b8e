//! The servers of a process. Each configured server connects in the background as soon
//! as a session names it (nothing waits for it then); its state is watched by whoever
//! needs it: a context's first request waits for it at most its connect wait, `/mcp`
//! reads it as it stands. A server is shared by every session whose configuration
//! defines it the same way; one that failed or whose session ended is started again
//! when the next session (or `/clear`) asks for it, and one no session uses any more is
//! stopped when the pool is told a session ended.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use larik_protocol::sync::locked;
use tokio::sync::watch;

use crate::cache::ToolCache;
use crate::connect::{self, Connection};
use crate::elicit::Askers;
use crate::listing::ListedTool;
use crate::log::ServerLog;
use crate::oauth::authorized::LoginNeeded;
use crate::oauth::store::TokenFile;
use crate::oauth::{self, PendingLogin};
use crate::spec::ServerSpec;

/// Where a server stands.
#[derive(Clone)]
pub(crate) enum State {
    /// Not started: it starts on the first call of a tool it listed before.
    Idle(Arc<Vec<ListedTool>>),
    Connecting,
    Ready(Arc<Connection>),
    Failed(String),
}

/// Where a server stands, as `/mcp` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Not started yet: it starts on the first call of one of its tools.
    Idle {
        /// How many tools it listed when it last ran.
        tools: usize,
    },
    /// Starting, or waiting for its handshake.
    Connecting,
    /// Connected, offering this many tools.
    Ready {
        /// How many tools it lists.
        tools: usize,
    },
    /// Could not connect, or stopped; why.
    Failed(String),
    /// A remote server that turned Larik away until the user logs in.
    NeedsLogin,
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerStatus::Idle { tools } => write!(
                f,
                "not started: it starts on the first call of one of its {tools} tools"
            ),
            ServerStatus::Connecting => f.write_str("connecting"),
            ServerStatus::Ready { tools: 1 } => f.write_str("ready with 1 tool"),
            ServerStatus::Ready { tools } => write!(f, "ready with {tools} tools"),
            ServerStatus::Failed(why) => write!(f, "failed: {why}"),
            ServerStatus::NeedsLogin => f.write_str("needs login"),
        }
    }
}

/// One server and its connection.
pub struct Server {
    spec: ServerSpec,
    log: Arc<ServerLog>,
    state: watch::Sender<State>,
    cache: ToolCache,
    /// Where logins are kept.
    auth_dir: PathBuf,
    /// Set when it turned Larik away for want of a login.
    login_needed: LoginNeeded,
    /// Who answers its questions: the askers of the calls waiting on it.
    askers: Arc<Askers>,
}

impl Server {
    /// The server `spec` defines, logging in `logs_dir`: connecting in the background now,
    /// or, for a lazy server whose tool list `cache` holds, idle until a call needs it.
    fn open(
        spec: ServerSpec,
        logs_dir: &std::path::Path,
        cache: ToolCache,
        auth_dir: PathBuf,
    ) -> Arc<Server> {
        let log = Arc::new(ServerLog::open(logs_dir, &spec.name));
        let known = spec.lazy.then(|| cache.read(&spec)).flatten();
        let idle = known.is_some();
        let first = match known {
            Some(tools) => State::Idle(Arc::new(tools)),
            None => State::Connecting,
        };
        let (state, _) = watch::channel(first);
        let server = Arc::new(Server {
            spec,
            log,
            state,
            cache,
            auth_dir,
            login_needed: LoginNeeded::default(),
            askers: Arc::default(),
        });
        if !idle {
            Arc::clone(&server).connect_in_background();
        }
        server
    }

    /// Connects on a task of its own; the state says when it is done.
    fn connect_in_background(self: Arc<Self>) {
        tokio::spawn(async move {
            let connected = connect::connect(
                &self.spec,
                Arc::clone(&self.log),
                &self.auth_dir,
                &self.login_needed,
                &self.askers,
            )
            .await;
            let state = match connected {
                Ok(connection) => {
                    if self.spec.lazy {
                        let tools = Arc::clone(&*connection.tools.lock().await);
                        self.keep_tools(&tools);
                    }
                    State::Ready(Arc::new(connection))
                }
                Err(why) => {
                    self.log.line(&format!("failed: {why}"));
                    State::Failed(why)
                }
            };
            self.state.send_replace(state);
        });
    }

    /// Keeps a lazy server's tool list for later sessions.
    pub(crate) fn keep_tools(&self, tools: &[ListedTool]) {
        if let Err(why) = self.cache.write(&self.spec, tools) {
            self.log
                .line(&format!("cannot keep the tool list for later: {why}"));
        }
    }

    /// Its connection; an idle server is started first and waited for (within its
    /// startup timeout, which its connection attempt keeps).
    pub(crate) async fn started(self: &Arc<Self>) -> Option<Arc<Connection>> {
        let was_idle = self.state.send_if_modified(|state| {
            if matches!(state, State::Idle(_)) {
                *state = State::Connecting;
                true
            } else {
                false
            }
        });
        if was_idle {
            self.log.line("starting on first use");
            Arc::clone(self).connect_in_background();
        }
        self.settled().await;
        self.connection()
    }

    /// The tool list a session offers for it: the live one when ready, the kept one while
    /// idle.
    pub(crate) async fn offered_tools(&self) -> Option<Arc<Vec<ListedTool>>> {
        let state = self.state.borrow().clone();
        match state {
            State::Idle(tools) => Some(tools),
            State::Ready(connection) if !connection.is_closed() => {
                Some(Arc::clone(&*connection.tools.lock().await))
            }
            _ => None,
        }
    }

    /// The askers of the calls waiting on it.
    pub(crate) fn askers(&self) -> &Arc<Askers> {
        &self.askers
    }

    /// Its definition.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Its log file.
    pub fn log_path(&self) -> &std::path::Path {
        self.log.path()
    }

    /// Where it stands now.
    pub fn status(&self) -> ServerStatus {
        let state = self.state.borrow();
        if self.login_needed.load(Ordering::Relaxed) && !matches!(*state, State::Connecting) {
            return ServerStatus::NeedsLogin;
        }
        match &*state {
            State::Idle(tools) => ServerStatus::Idle { tools: tools.len() },
            State::Connecting => ServerStatus::Connecting,
            State::Ready(connection) if connection.is_closed() => {
                ServerStatus::Failed("the server stopped".to_string())
            }
            State::Ready(connection) => ServerStatus::Ready {
                tools: connection
                    .tools
                    .try_lock()
                    .map(|tools| tools.len())
                    .unwrap_or_default(),
            },
            State::Failed(why) => ServerStatus::Failed(why.clone()),
        }
    }

    /// Its connection, when it is ready.
    pub(crate) fn connection(&self) -> Option<Arc<Connection>> {
        if self.login_needed.load(Ordering::Relaxed) {
            return None;
        }
        match &*self.state.borrow() {
            State::Ready(connection) if !connection.is_closed() => Some(Arc::clone(connection)),
            _ => None,
        }
    }

    /// Its connection once ready, waiting at most `wait` while it connects.
    pub(crate) async fn ready_within(&self, wait: Duration) -> Option<Arc<Connection>> {
        let mut states = self.state.subscribe();
        let settled = states.wait_for(|state| !matches!(state, State::Connecting));
        let _ = tokio::time::timeout(wait, settled).await;
        self.connection()
    }

    /// Waits until it is no longer connecting (ready, or failed with why).
    pub async fn settled(&self) -> ServerStatus {
        let mut states = self.state.subscribe();
        let _ = states
            .wait_for(|state| !matches!(state, State::Connecting))
            .await;
        self.status()
    }

    /// Whether a session asking for it now should start it again: it failed, or its
    /// process or stream ended.
    fn needs_restart(&self) -> bool {
        if self.login_needed.load(Ordering::Relaxed) {
            return !matches!(*self.state.borrow(), State::Connecting);
        }
        match &*self.state.borrow() {
            State::Idle(_) | State::Connecting => false,
            State::Ready(connection) => connection.is_closed(),
            State::Failed(_) => true,
        }
    }

    /// Whether it is ready and offers resources.
    pub(crate) fn has_resources(&self) -> bool {
        self.connection()
            .is_some_and(|connection| connection.has_resources)
    }

    /// One line per resource and resource template it lists.
    pub(crate) async fn list_resources(&self) -> Result<Vec<String>, String> {
        let connection = self.connected()?;
        let within = self.spec.tool_timeout;
        let peer = connection.service.peer();
        let listed = async {
            let resources = peer
                .list_all_resources()
                .await
                .map_err(|error| format!("cannot list its resources: {error}"))?;
            // Templates are optional; a server without them answers with an error.
            let templates = peer.list_all_resource_templates().await.unwrap_or_default();
            Ok::<_, String>((resources, templates))
        };
        let (resources, templates) = tokio::time::timeout(within, listed)
            .await
            .map_err(|_| format!("no answer within {} s", within.as_secs_f64()))??;
        Ok(resource_lines(&resources, &templates))
    }

    /// The resource at `uri`, as the model reads it; a server still starting (or idle) is
    /// waited for within its startup timeout.
    pub async fn read_resource(self: &Arc<Self>, uri: &str) -> larik_tools::ToolOutput {
        let Some(connection) = self.started().await else {
            return larik_tools::ToolOutput::error(self.not_connected());
        };
        let within = self.spec.tool_timeout;
        let read = connection
            .service
            .read_resource(rmcp::model::ReadResourceRequestParams::new(uri));
        match tokio::time::timeout(within, read).await {
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(result) => crate::content::resource_output(&result, self.spec.output_tokens),
                Err(error) => larik_tools::ToolOutput::error(format!(
                    "The MCP server `{}` answered with contents Larik cannot read: {error}",
                    self.name()
                )),
            },
            Ok(Err(error)) => larik_tools::ToolOutput::error(format!(
                "The MCP server `{}` could not read `{uri}`: {error}",
                self.name()
            )),
            Err(_) => larik_tools::ToolOutput::error(format!(
                "The MCP server `{}` did not answer within {} s.",
                self.name(),
                within.as_secs_f64()
            )),
        }
    }

    /// Its connection, or why there is none.
    fn connected(&self) -> Result<Arc<Connection>, String> {
        self.connection().ok_or_else(|| self.not_connected())
    }

    /// Why there is no connection, for the model.
    fn not_connected(&self) -> String {
        format!(
            "The MCP server `{}` is not connected ({}).",
            self.name(),
            self.status()
        )
    }

    /// Notes in its log that a call found it gone.
    pub(crate) fn note(&self, text: &str) {
        self.log.line(text);
    }

    /// Ends its session and stops its process.
    pub async fn stop(&self) {
        let connection = match &*self.state.borrow() {
            State::Ready(connection) => Some(Arc::clone(connection)),
            _ => None,
        };
        if let Some(connection) = connection {
            connection.close().await;
        }
        self.state
            .send_replace(State::Failed("stopped".to_string()));
    }
}

/// Every server this process started, by definition.
pub struct ServerPool {
    logs_dir: PathBuf,
    auth_dir: PathBuf,
    cache: ToolCache,
    servers: Mutex<HashMap<ServerSpec, Arc<Server>>>,
}

impl ServerPool {
    /// A pool in the data directory `data_dir`: servers log to `logs/mcp-<name>.log`, the
    /// tool lists of lazy servers are kept in `mcp-tools.json`, logins in `mcp-auth/`.
    pub fn new(data_dir: &std::path::Path) -> Self {
        ServerPool {
            logs_dir: data_dir.join("logs"),
            auth_dir: data_dir.join("mcp-auth"),
            cache: ToolCache::new(data_dir.join("mcp-tools.json")),
            servers: Mutex::new(HashMap::new()),
        }
    }

    /// The servers `specs` define, started now unless one with the same definition runs
    /// (or is connecting, or idle) already. Must be called inside a tokio runtime.
    pub fn servers_for(&self, specs: &[ServerSpec]) -> Vec<Arc<Server>> {
        let mut servers = locked(&self.servers);
        specs
            .iter()
            .map(|spec| {
                if let Some(server) = servers.get(spec)
                    && !server.needs_restart()
                {
                    return Arc::clone(server);
                }
                self.open(&mut servers, spec)
            })
            .collect()
    }

    /// Opens the server `spec` defines, in place of any that ran.
    fn open(
        &self,
        servers: &mut HashMap<ServerSpec, Arc<Server>>,
        spec: &ServerSpec,
    ) -> Arc<Server> {
        let server = Server::open(
            spec.clone(),
            &self.logs_dir,
            self.cache.clone(),
            self.auth_dir.clone(),
        );
        servers.insert(spec.clone(), Arc::clone(&server));
        server
    }

    /// Starts logging in to the remote server `spec` defines: discovery, the client, the
    /// redirect listener and the URL for the user to open.
    pub async fn begin_login(&self, spec: &ServerSpec) -> Result<PendingLogin, String> {
        oauth::begin(spec, &self.auth_dir).await
    }

    /// Connects the server `spec` defines again (after a login), unless it is connected
    /// and not turned away.
    pub async fn reconnect(&self, spec: &ServerSpec) -> Arc<Server> {
        let running = locked(&self.servers).get(spec).cloned();
        if let Some(server) = &running {
            server.stop().await;
        }
        let mut servers = locked(&self.servers);
        self.open(&mut servers, spec)
    }

    /// Waits at most `within` for the user to finish `pending`, the login of the server
    /// `spec` defines; once done, connects the server again (with the login) and waits
    /// for it to connect or fail. The outcome goes to the server's log too.
    pub async fn complete_login(
        &self,
        spec: &ServerSpec,
        pending: PendingLogin,
        within: Duration,
    ) -> Result<ServerStatus, String> {
        let log = ServerLog::open(&self.logs_dir, &spec.name);
        match pending.finish(within).await {
            Ok(()) => {
                log.line("logged in");
                let server = self.reconnect(spec).await;
                Ok(server.settled().await)
            }
            Err(why) => {
                log.line(&format!("login failed: {why}"));
                Err(why)
            }
        }
    }

    /// Forgets the login kept for the remote server `spec` defines; whether there was one.
    pub fn logout(&self, spec: &ServerSpec) -> Result<bool, String> {
        let url = oauth::remote_url(spec)?;
        TokenFile::new(&self.auth_dir, &spec.name, url).remove()
    }

    /// The state of the server `spec` defines, if one was started.
    pub fn status_of(&self, spec: &ServerSpec) -> Option<ServerStatus> {
        locked(&self.servers)
            .get(spec)
            .map(|server| server.status())
    }

    /// Stops the servers no session uses any more (only the pool holds them); a server
    /// still connecting is left to a later call.
    pub async fn stop_unused(&self) {
        let unused: Vec<Arc<Server>> = {
            let mut servers = locked(&self.servers);
            let specs: Vec<ServerSpec> = servers
                .iter()
                .filter(|(_, server)| Arc::strong_count(server) == 1)
                .map(|(spec, _)| spec.clone())
                .collect();
            specs
                .iter()
                .filter_map(|spec| servers.remove(spec))
                .collect()
        };
        for server in unused {
            server.note("stopped: no session uses it any more");
            server.stop().await;
        }
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> = locked(&self.servers).drain().map(|(_, s)| s).collect();
        for server in servers {
            server.stop().await;
        }
    }
}

/// The lines of `list_mcp_resources` for the resources and resource templates a server
/// listed.
pub(crate) fn resource_lines(
    resources: &[rmcp::model::Resource],
    templates: &[rmcp::model::ResourceTemplate],
) -> Vec<String> {
    let field = |value: &serde_json::Value, name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut lines = Vec::new();
    for resource in resources
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
    {
        lines.push(describe_resource(
            &field(&resource, "uri"),
            &field(&resource, "name"),
            &field(&resource, "mimeType"),
            &field(&resource, "description"),
        ));
    }
    for template in templates
        .iter()
        .filter_map(|t| serde_json::to_value(t).ok())
    {
        lines.push(describe_resource(
            &format!("{} (template)", field(&template, "uriTemplate")),
            &field(&template, "name"),
            &field(&template, "mimeType"),
            &field(&template, "description"),
        ));
    }
    lines
}

/// One line of `list_mcp_resources`.
fn describe_resource(uri: &str, name: &str, mime: &str, description: &str) -> String {
    let mut line = uri.to_string();
    if !name.is_empty() {
        line.push_str(&format!(" — {name}"));
    }
    if !mime.is_empty() {
        line.push_str(&format!(" ({mime})"));
    }
    if !description.is_empty() {
        line.push_str(&format!(": {description}"));
    }
    line
}
