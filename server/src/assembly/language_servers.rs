//! The language-server extension: the child language servers of each project (started with
//! the project's first session and that session's configuration, shared by the later ones,
//! stopped when the process ends), the edit tools' checker that reports their diagnostics,
//! and the `lsp` and `apply_code_action` tools.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use larik_config::{Environment, LspServerSettings, LspSettings};
use larik_lsp::{
    DiagnosticsWait, LanguageServers, ManagerConfig, ServerFeedback, ServerSpec, Timeouts,
};
use larik_tools::ToolRegistry;

use super::error::{Notice, SetupError};
use super::extension::{Contributions, Extension, Scope, ShutDown};
use super::upkeep::path_dirs;
use larik_protocol::sync::locked;

/// The language servers of every project this process serves.
#[derive(Default)]
pub struct LanguageServerExtension {
    by_project: Arc<Mutex<HashMap<PathBuf, Option<Arc<LanguageServers>>>>>,
}

impl Extension for LanguageServerExtension {
    fn name(&self) -> &'static str {
        "language servers"
    }

    fn contribute(&self, scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError> {
        let servers = {
            let mut all = locked(&self.by_project);
            match all.get(scope.cwd) {
                Some(servers) => servers.clone(),
                None => {
                    let servers = language_servers(
                        scope.env,
                        scope.cwd,
                        &scope.settings.lsp,
                        &mut into.notices,
                    )?;
                    if all.is_empty() {
                        // Once per process: the stop covers every project's servers.
                        into.shutdown
                            .push(Arc::new(StopServers(Arc::clone(&self.by_project))));
                    }
                    all.insert(scope.cwd.to_path_buf(), servers.clone());
                    servers
                }
            }
        };
        let Some(servers) = servers else {
            return Ok(());
        };
        let mut tools = ToolRegistry::default();
        larik_lsp::register_lsp_tools(&mut tools, &servers);
        into.tools.extend(tools.iter().cloned());
        into.edit_feedback = Some(Arc::new(ServerFeedback::new(
            servers,
            DiagnosticsWait::default(),
        )));
        Ok(())
    }
}

/// Stops every project's servers.
struct StopServers(Arc<Mutex<HashMap<PathBuf, Option<Arc<LanguageServers>>>>>);

#[async_trait::async_trait]
impl ShutDown for StopServers {
    async fn shut_down(&self) {
        let servers: Vec<Arc<LanguageServers>> = locked(&self.0)
            .drain()
            .filter_map(|(_, servers)| servers)
            .collect();
        for servers in servers {
            servers.shutdown().await;
        }
    }
}

/// The language servers for the project at `cwd`, unless `LARIK_LSP=off` or the
/// configuration says `"lsp": false`: the configured and built-in servers found on `PATH`,
/// minus those disabled in the configuration or named in `LARIK_LSP_DISABLE`
/// (comma-separated), logging to `<data dir>/logs/lsp-<name>.log`. A configured server that
/// cannot be used is left out with a notice.
fn language_servers(
    env: &Environment,
    cwd: &Path,
    settings: &LspSettings,
    notices: &mut Vec<Notice>,
) -> Result<Option<Arc<LanguageServers>>, SetupError> {
    if !settings.enabled
        || env
            .get("LARIK_LSP")
            .is_some_and(|value| value.trim() == "off")
    {
        return Ok(None);
    }
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
            Err(reason) => notices.push(Notice::configuration(format!(
                "language server `{name}` not used: {reason}"
            ))),
        }
    }
    Ok(Some(Arc::new(LanguageServers::new(ManagerConfig {
        project_root: cwd.to_path_buf(),
        path_dirs: path_dirs(env),
        log_dir: env.data_dir()?.join("logs"),
        servers,
        disabled,
        timeouts: Timeouts::default(),
    }))))
}

/// Why a configured server cannot be used.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    #[error("it needs a `command`")]
    NoCommand,
    #[error("it needs the `extensions` it serves")]
    NoExtensions,
}

/// The spec of a configured server: a built-in one with the configured fields replaced, or
/// a new one, which needs a command and the extensions it serves. `None` when the entry
/// changes nothing.
fn configured_server(
    name: &str,
    configured: &LspServerSettings,
) -> Result<Option<ServerSpec>, Unusable> {
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
                return Err(Unusable::NoCommand);
            };
            if configured.extensions.as_ref().is_none_or(Vec::is_empty) {
                return Err(Unusable::NoExtensions);
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
