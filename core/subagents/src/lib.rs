//! Subagents: child agents the model starts with a fresh context. This crate holds what a
//! child is made from (the [`Definition`]s of Claude Code's agent files, `<name>.md` with
//! YAML frontmatter, and Larik's built-ins, discovered by precedence from the user's and
//! the project's folders by [`discover`]; the [`Roles`] of the configuration) and the
//! [`TaskTool`] that starts one through the agent it runs in, queued in [`Slots`].

mod definitions;
mod roles;
mod slots;
mod task;
mod waiting;
mod worktree;

pub use definitions::{
    Definition, DefinitionRoots, Discovered, Isolation, Origin, builtins, discover, parse,
};
pub use roles::{ModelChoice, Role, RoleSource, Roles, choose_model};
pub use slots::{MAX_RUNNING, Slots};
pub use task::{MAX_CHILD_TURNS, TaskTool};
pub use waiting::{TaskStopTool, TaskWaitTool};
pub use worktree::{Created, Finished, Kept, Merged, WorktreeError, Worktrees};
