//! The language servers of one session: which spec serves a file, one server per (spec,
//! project root) started lazily on the first file of its language, restarted after a crash
//! on the next file, and notices about exits for the caller to show.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use larik_protocol::sync::locked;

use crate::LspError;
use crate::client::{LanguageServer, ServerOptions, Timeouts};
use crate::diagnostics::{DiagnosticsReport, DiagnosticsWait};
use crate::specs::{ServerSpec, find_command, find_root};

/// How many times one server may crash before it is not restarted any more.
const MAX_RESTARTS: u32 = 3;

/// Everything the manager needs; it reads no environment variables itself.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// The session's project directory: the fallback root and where relative commands resolve.
    pub project_root: PathBuf,
    /// The directories of the PATH to look commands up in.
    pub path_dirs: Vec<PathBuf>,
    /// Where `lsp-<name>.log` files go.
    pub log_dir: PathBuf,
    /// Configured servers: one with a built-in name replaces that built-in; others are
    /// added, and are tried before the built-ins for their extensions.
    pub servers: Vec<ServerSpec>,
    /// Names of servers not to use.
    pub disabled: Vec<String>,
    /// Time limits for every server.
    pub timeouts: Timeouts,
}

/// Something the caller should tell the user or the model about a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The server's name.
    pub server: String,
    /// The project root it served.
    pub root: PathBuf,
    /// One line saying what happened.
    pub message: String,
}

type Key = (String, PathBuf);

#[derive(Default)]
struct Servers {
    running: HashMap<Key, Arc<LanguageServer>>,
    restarts: HashMap<Key, u32>,
    /// Servers not to start again, with the reason.
    given_up: HashMap<Key, String>,
}

/// The set of child language servers for a session.
pub struct LanguageServers {
    project_root: PathBuf,
    log_dir: PathBuf,
    timeouts: Timeouts,
    /// Usable specs with their resolved commands, in the order they are tried.
    specs: Vec<(ServerSpec, PathBuf)>,
    servers: Mutex<Servers>,
    notices: Arc<Mutex<Vec<Notice>>>,
}

impl LanguageServers {
    /// Resolves which servers can be used: configured and built-in specs, minus the disabled
    /// ones and those whose command is not found.
    pub fn new(config: ManagerConfig) -> Self {
        let project_root =
            std::fs::canonicalize(&config.project_root).unwrap_or(config.project_root);
        let mut all: Vec<ServerSpec> = config.servers.clone();
        for builtin in ServerSpec::defaults() {
            if !all.iter().any(|spec| spec.name == builtin.name) {
                all.push(builtin);
            }
        }
        let specs = all
            .into_iter()
            .filter(|spec| !config.disabled.contains(&spec.name))
            .filter_map(|spec| {
                let command = find_command(&spec.command, &config.path_dirs, &project_root)?;
                Some((spec, command))
            })
            .collect();
        Self {
            project_root,
            log_dir: config.log_dir,
            timeouts: config.timeouts,
            specs,
            servers: Mutex::new(Servers::default()),
            notices: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The names of the servers that can be used, in the order they are tried.
    pub fn available(&self) -> Vec<&str> {
        self.specs
            .iter()
            .map(|(spec, _)| spec.name.as_str())
            .collect()
    }

    /// The spec that serves `path`, if any.
    pub fn spec_for(&self, path: &Path) -> Option<&ServerSpec> {
        self.specs
            .iter()
            .map(|(spec, _)| spec)
            .find(|spec| spec.serves(path))
    }

    /// The server for `path`, started if needed: `None` when no usable server serves its
    /// language. A server that exited is replaced by a new one (up to a few times); one that
    /// failed to initialize is not started again, and its error is returned. Needs a tokio
    /// runtime.
    pub fn server_for(&self, path: &Path) -> Result<Option<Arc<LanguageServer>>, LspError> {
        let Some((spec, command)) = self.specs.iter().find(|(spec, _)| spec.serves(path)) else {
            return Ok(None);
        };
        let root = find_root(path, &spec.root_markers, &self.project_root);
        let key = (spec.name.clone(), root.clone());
        let mut servers = locked(&self.servers);
        if let Some(reason) = servers.given_up.get(&key) {
            return Err(LspError::Initialize {
                reason: reason.clone(),
            });
        }
        if let Some(server) = servers.running.get(&key).cloned() {
            if server.failed_to_initialize() {
                let reason = format!(
                    "{} did not initialize; it will not be started again",
                    spec.name
                );
                servers.running.remove(&key);
                servers.given_up.insert(key, reason.clone());
                return Err(LspError::Initialize { reason });
            }
            if server.exited().is_none() {
                return Ok(Some(server));
            }
            servers.running.remove(&key);
            let restarts = servers.restarts.entry(key.clone()).or_insert(0);
            *restarts += 1;
            if *restarts > MAX_RESTARTS {
                let reason = format!(
                    "{} crashed {MAX_RESTARTS} times; it will not be started again",
                    spec.name
                );
                servers.given_up.insert(key, reason.clone());
                self.notice(&spec.name, &root, &reason);
                return Err(LspError::Initialize { reason });
            }
        }
        let notices = self.notices.clone();
        let (name, hook_root) = (spec.name.clone(), root.clone());
        let options = ServerOptions {
            name: spec.name.clone(),
            command: command.clone(),
            args: spec.args.clone(),
            root: root.clone(),
            log_path: self.log_path(&spec.name),
            timeouts: self.timeouts,
            checks_on_save: spec.checks_on_save,
            on_exit: Some(Arc::new(move |reason: &str| {
                push_notice(
                    &notices,
                    Notice {
                        server: name.clone(),
                        root: hook_root.clone(),
                        message: format!(
                            "{name} stopped ({reason}); it restarts on the next file it serves"
                        ),
                    },
                );
            })),
        };
        match LanguageServer::start(options) {
            Ok(server) => {
                let server = Arc::new(server);
                servers.running.insert(key, server.clone());
                Ok(Some(server))
            }
            Err(error) => {
                let reason = error.to_string();
                servers.given_up.insert(key, reason.clone());
                self.notice(&spec.name, &root, &reason);
                Err(error)
            }
        }
    }

    /// Syncs `text` (just written to `path`) to its server and waits for fresh diagnostics;
    /// `None` when no server serves the file. See [`LanguageServer::diagnostics_after_change`].
    pub async fn diagnostics_after_change(
        &self,
        path: &Path,
        text: &str,
        wait: DiagnosticsWait,
    ) -> Result<Option<DiagnosticsReport>, LspError> {
        let path = canonical(path);
        let Some(server) = self.server_for(&path)? else {
            return Ok(None);
        };
        server
            .diagnostics_after_change(&path, text, wait)
            .await
            .map(Some)
    }

    /// Starts the file's server if needed and opens the file in it, so a later edit finds
    /// it warm; `false` when no server serves the file.
    pub async fn open(&self, path: &Path, text: &str) -> Result<bool, LspError> {
        let path = canonical(path);
        let Some(server) = self.server_for(&path)? else {
            return Ok(false);
        };
        server.open_if_closed(&path, text).await?;
        Ok(true)
    }

    /// Sends `text`, just written to `path`, to its server (opening the file there or
    /// replacing the text it has); `false` when no server serves the file.
    pub async fn update(&self, path: &Path, text: &str) -> Result<bool, LspError> {
        let path = canonical(path);
        let Some(server) = self.server_for(&path)? else {
            return Ok(false);
        };
        server.open_or_update(&path, text).await?;
        Ok(true)
    }

    /// The log file of the server called `name`.
    pub fn log_path(&self, name: &str) -> PathBuf {
        self.log_dir.join(format!("lsp-{name}.log"))
    }

    /// The log of the server called `name`, when there is one it can be appended to: a
    /// server whose log could not be opened (the data directory full or read-only) runs
    /// without one, and a message should not send the user to it.
    pub fn open_log(&self, name: &str) -> Option<PathBuf> {
        let path = self.log_path(name);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .is_ok()
            .then_some(path)
    }

    /// How many pieces of output that are not LSP messages the running server for `path`
    /// has written (0 when none runs). See [`LanguageServer::unreadable_output`].
    pub fn unreadable_output(&self, path: &Path) -> u64 {
        let path = canonical(path);
        let Some((spec, _)) = self.specs.iter().find(|(spec, _)| spec.serves(&path)) else {
            return 0;
        };
        let key = (
            spec.name.clone(),
            find_root(&path, &spec.root_markers, &self.project_root),
        );
        locked(&self.servers)
            .running
            .get(&key)
            .map_or(0, |server| server.unreadable_output())
    }

    /// The servers currently running (or starting).
    pub fn running(&self) -> Vec<Arc<LanguageServer>> {
        locked(&self.servers)
            .running
            .values()
            .filter(|server| server.exited().is_none())
            .cloned()
            .collect()
    }

    /// The notices gathered since the last call (server exits, servers given up on).
    pub fn take_notices(&self) -> Vec<Notice> {
        std::mem::take(&mut *locked(&self.notices))
    }

    /// Shuts every server down, politely first.
    pub async fn shutdown(&self) {
        let servers: Vec<_> = locked(&self.servers)
            .running
            .drain()
            .map(|(_, server)| server)
            .collect();
        for server in servers {
            server.shutdown().await;
        }
    }

    fn notice(&self, server: &str, root: &Path, message: &str) {
        push_notice(
            &self.notices,
            Notice {
                server: server.into(),
                root: root.to_path_buf(),
                message: message.into(),
            },
        );
    }
}

fn push_notice(notices: &Mutex<Vec<Notice>>, notice: Notice) {
    locked(notices).push(notice);
}

/// The path servers will report back: symlinks resolved, so URIs from the server match.
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
