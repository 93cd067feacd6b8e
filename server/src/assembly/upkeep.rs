//! What a session needs from its surroundings besides its configuration: the process
//! environment, the command sandbox, the checkpoint store and where "always" answers are
//! kept; and the process's upkeep: root certificates loaded ahead, old checkpoints pruned.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use larik_agent::RuleStore;
use larik_checkpoints::CheckpointStore;
use larik_config::{Environment, Settings};
use larik_providers::{Endpoint, split_model_name};
use larik_sandbox::{Sandbox, SandboxOptions};

use super::error::{Notice, NoticeSource, SetupError};

/// The process environment, captured once. Variables that are not UTF-8 cannot be any
/// Larik setting; they are skipped rather than fail the run.
pub fn environment() -> Environment {
    Environment::from_pairs(
        std::env::vars_os()
            .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?))),
    )
}

/// The directories of `PATH`.
pub(super) fn path_dirs(env: &Environment) -> Vec<PathBuf> {
    env.get("PATH")
        .map(|path| std::env::split_paths(path).collect())
        .unwrap_or_default()
}

/// The command sandbox for the project `cwd` belongs to: on unless the configuration or
/// `LARIK_SANDBOX=off` switches it off, with the configuration's extra writable paths and
/// network, the temp directories writable, and bubblewrap looked up on `PATH`. What the user
/// should hear once (no sandbox available, or a weaker one) the agent says when the first
/// command asks for it.
pub(super) fn sandbox(env: &Environment, cwd: &Path, settings: &Settings) -> Sandbox {
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

/// The checkpoint store of a session, for `/undo`: `<data dir>/checkpoints/<session id>/`,
/// confined to the project `cwd` belongs to.
pub(super) fn checkpoints(
    data_dir: &Path,
    cwd: &Path,
    session_id: &str,
) -> Result<Arc<CheckpointStore>, SetupError> {
    let dir = data_dir.join("checkpoints").join(session_id);
    let store = CheckpointStore::open(dir, larik_config::project_root(cwd)).map_err(|error| {
        SetupError::internal(format!("cannot open the session's checkpoints: {error}"))
    })?;
    Ok(Arc::new(store))
}

/// "Always" answers kept in the user's personal settings for the project (see
/// `larik_config::persist_allow_rule`).
struct PersonalRules {
    config_dir: PathBuf,
    project_root: PathBuf,
}

impl RuleStore for PersonalRules {
    fn keep(
        &self,
        rule: &str,
        allow: bool,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let kept = if allow {
            larik_config::persist_allow_rule(&self.config_dir, &self.project_root, rule)
        } else {
            larik_config::persist_deny_rule(&self.config_dir, &self.project_root, rule)
        };
        kept.map(drop).map_err(Into::into)
    }
}

/// Where "always" answers for the project `cwd` belongs to are kept: the personal
/// project settings file, when there is a config directory.
pub(super) fn rule_store(env: &Environment, cwd: &Path) -> Option<Arc<dyn RuleStore>> {
    let config_dir = env.config_dir()?;
    Some(Arc::new(PersonalRules {
        config_dir,
        project_root: larik_config::project_root(cwd),
    }))
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
                    ..Default::default()
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

/// Old checkpoints being deleted, on a thread of its own so start-up does not wait.
pub(super) struct Pruning(std::thread::JoinHandle<Vec<Notice>>);

impl Pruning {
    /// Deletes the checkpoints of sessions older than `checkpoint_retention_days` (7 by
    /// default; negative keeps them forever; personal files only, since it covers every
    /// project), the setting asked of `retention_days` on the pruning thread. Sessions open
    /// in any process are left alone (their stores hold a lock).
    pub(super) fn start(
        data_dir: PathBuf,
        retention_days: impl FnOnce() -> Option<i64> + Send + 'static,
    ) -> Pruning {
        Pruning(std::thread::spawn(move || {
            let days = retention_days().unwrap_or(7);
            prune_now(&data_dir, days)
        }))
    }

    /// Waits until the old checkpoints are deleted; returns what could not be.
    pub(super) fn finish(self) -> Vec<Notice> {
        self.0
            .join()
            .unwrap_or_else(|_| vec![checkpoints_notice("pruning old checkpoints failed".into())])
    }
}

fn checkpoints_notice(text: String) -> Notice {
    Notice {
        source: NoticeSource::Checkpoints,
        text,
    }
}

fn prune_now(data_dir: &Path, days: i64) -> Vec<Notice> {
    match larik_checkpoints::prune(&data_dir.join("checkpoints"), days, SystemTime::now()) {
        Ok(report) => report
            .failed
            .iter()
            .map(|(path, why)| {
                checkpoints_notice(format!(
                    "could not delete old checkpoints {}: {why}",
                    path.display()
                ))
            })
            .collect(),
        Err(error) => vec![checkpoints_notice(format!(
            "could not prune old checkpoints: {error}"
        ))],
    }
}
