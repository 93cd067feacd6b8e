//! `/worktrees` (every front end) and `larik worktrees`: the git worktrees subagents left
//! with commits, with what each changes, merged into the checkout or discarded.

use std::path::Path;

use larik_subagents::{Merged, Worktrees};

use crate::assembly::SetupError;

/// What `/worktrees` is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeAction {
    /// List the kept worktrees.
    List,
    /// Merge one into the checkout and remove it.
    Merge(String),
    /// Remove one and its branch.
    Discard(String),
}

/// The action `/worktrees [merge|discard NAME]` names.
pub fn worktree_action(argument: Option<&str>) -> Result<WorktreeAction, SetupError> {
    let Some(argument) = argument else {
        return Ok(WorktreeAction::List);
    };
    let words: Vec<&str> = argument.split_whitespace().collect();
    match words.as_slice() {
        ["merge", name] => Ok(WorktreeAction::Merge((*name).to_string())),
        ["discard", name] => Ok(WorktreeAction::Discard((*name).to_string())),
        _ => Err(SetupError::usage(format!(
            "`/worktrees {argument}`: use `/worktrees`, `/worktrees merge NAME` or \
             `/worktrees discard NAME`"
        ))),
    }
}

/// Carries out `action` for the repository `cwd` is in; the text for the user, or why it
/// could not be done.
pub fn worktrees_text(
    worktrees: &Worktrees,
    cwd: &Path,
    action: &WorktreeAction,
) -> Result<String, String> {
    match action {
        WorktreeAction::List => {
            let kept = worktrees.list(cwd).map_err(|error| error.to_string())?;
            if kept.is_empty() {
                return Ok("No subagent worktrees are kept for this repository.".into());
            }
            let mut text = String::from("Subagent worktrees kept for review:\n");
            for kept in &kept {
                let in_use = if kept.in_use {
                    ", a subagent works in it"
                } else {
                    ""
                };
                text.push_str(&format!(
                    "- `{}` on `{}` ({}): {} file(s), +{} -{}{in_use}\n",
                    kept.name,
                    kept.branch,
                    kept.label,
                    kept.files.len(),
                    kept.insertions,
                    kept.deletions
                ));
                for file in &kept.files {
                    text.push_str(&format!("    {file}\n"));
                }
            }
            text.push_str(
                "Review one with `git diff BASE...BRANCH`; take it with `/worktrees merge \
                 NAME`, drop it with `/worktrees discard NAME`.",
            );
            Ok(text)
        }
        WorktreeAction::Merge(name) => {
            let merged = worktrees
                .merge(cwd, name)
                .map_err(|error| format!("cannot merge `{name}`: {error}"))?;
            Ok(match merged {
                Merged::FastForward => {
                    format!("Merged `{name}` (fast-forward); its worktree and branch are removed.")
                }
                Merged::Commit(id) => format!(
                    "Merged `{name}` with commit {}; its worktree and branch are removed.",
                    &id[..id.len().min(10)]
                ),
                Merged::UpToDate => {
                    format!("`{name}` held nothing new; its worktree and branch are removed.")
                }
            })
        }
        WorktreeAction::Discard(name) => {
            worktrees
                .discard(cwd, name)
                .map_err(|error| format!("cannot discard `{name}`: {error}"))?;
            Ok(format!(
                "Discarded `{name}`: its worktree and branch are removed."
            ))
        }
    }
}
