//! `larik worktrees [merge|discard NAME]`: `/worktrees` from the command line.

use std::io::Write;
use std::process::ExitCode;

use crate::control::{self, WorktreeAction};

/// Lists, merges or discards, and says what was done; a failure exits 1.
pub fn run(action: WorktreeAction) -> anyhow::Result<ExitCode> {
    let env = crate::assembly::environment();
    let cwd = std::env::current_dir()?;
    let worktrees = crate::assembly::worktrees(&env)?;
    match control::worktrees_text(&worktrees, &cwd, &action) {
        Ok(text) => {
            writeln!(std::io::stdout().lock(), "{text}")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("larik: {error}");
            Ok(ExitCode::FAILURE)
        }
    }
}
