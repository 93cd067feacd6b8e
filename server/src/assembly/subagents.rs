//! The subagents extension: the `task` tool of each session, with the subagent definitions
//! found for its project (a file that cannot be read is one notice) and the roles read
//! from the configuration again for every task, so a change applies without a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use larik_config::{Environment, ModelConfig};
use larik_subagents::{
    DefinitionRoots, Isolation, Role, RoleSource, Roles, TaskStopTool, TaskTool, TaskWaitTool,
    discover,
};

use super::error::{Notice, SetupError};
use super::extension::{Contributions, Extension, Scope};

/// Subagents: the `task` tool.
#[derive(Default)]
pub struct SubagentExtension;

impl Extension for SubagentExtension {
    fn name(&self) -> &'static str {
        "subagents"
    }

    fn contribute(&self, scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError> {
        let roots = DefinitionRoots {
            home: scope.env.home(),
            config_dir: scope.env.config_dir(),
            repo_root: larik_config::project_root(scope.cwd),
            cwd: scope.cwd.to_path_buf(),
        };
        let discovered = discover(&roots);
        into.notices.extend(
            discovered
                .notices
                .into_iter()
                .map(|notice| Notice::configuration(format!("subagent definition {notice}"))),
        );
        let roles = Arc::new(ConfiguredRoles {
            env: scope.env.clone(),
            cwd: scope.cwd.to_path_buf(),
        });
        let max_depth = scope.settings.subagents_max_depth.unwrap_or(1);
        // The roles the session starts with decide the schema (read from the files this
        // assembly merged already); every task reads them again.
        let offers_model = roles_of(&scope.settings.models).any_model();
        let task = TaskTool::new(
            discovered.definitions,
            roles,
            max_depth,
            super::worktrees(scope.env)?,
        )
        .offering_model(offers_model);
        into.tools.push(Arc::new(task));
        into.tools.push(Arc::new(TaskWaitTool));
        into.tools.push(Arc::new(TaskStopTool));
        Ok(())
    }
}

/// The roles of a project's configuration, read when asked.
struct ConfiguredRoles {
    env: Environment,
    cwd: PathBuf,
}

impl RoleSource for ConfiguredRoles {
    fn roles(&self) -> Roles {
        roles_of(&configured_models(&self.env, &self.cwd))
    }
}

fn configured_models(env: &Environment, cwd: &Path) -> ModelConfig {
    larik_config::load(&env.config_context(cwd)).settings.models
}

/// The roles `config` sets.
fn roles_of(config: &ModelConfig) -> Roles {
    let role = |name: &str| {
        let settings = config.role_settings.get(name).cloned().unwrap_or_default();
        Role {
            model: config.roles.get(name).cloned(),
            max_turns: settings.max_turns,
            isolation: settings
                .isolation
                .filter(|isolation| isolation == "worktree")
                .map(|_| Isolation::Worktree),
            minimal_context: settings.minimal_context,
            max_budget_usd: settings.max_budget_usd,
        }
    };
    Roles {
        default: role("default"),
        worker: role("worker"),
        explore: role("explore"),
        configured_aliases: config.aliases.keys().cloned().collect(),
    }
}
