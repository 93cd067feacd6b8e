//! Larik's front ends as a library: [`run`] is the whole `larik` command (parse the command
//! line, hand off to a front end), and takes the extensions a build adds to Larik's own.
//!
//! The `larik` binary calls it with none. Every front end lives in its own module, starts
//! its sessions through the assembly (where extensions contribute tools, loop hooks, slash
//! commands and prompt sections), and speaks to the agent through the protocol crate's `Op`
//! and `Event`. `larik -p` exits with 2 when the error is the user's to fix — a bad flag, a
//! missing key, no such session — and 1 otherwise.

mod acp;
mod approve;
mod assembly;
mod browser;
mod cli;
mod commands;
mod config;
mod control;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod headless;
mod lsp;
mod mcp;
mod memory;
mod session_core;
mod sessions;
mod trace;
mod undo;
mod worktrees;

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

pub use assembly::{Contributions, Extension, Notice, NoticeSource, Scope, SetupError, ShutDown};
pub use commands::CommandSpec;

/// Runs `larik` with the command line of this process, Larik's own extensions and
/// `extensions`.
pub fn run(extensions: Vec<Arc<dyn Extension>>) -> ExitCode {
    match try_run(extensions) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("larik: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn try_run(extensions: Vec<Arc<dyn Extension>>) -> anyhow::Result<ExitCode> {
    memory::return_large_blocks_to_the_system();
    let args = cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match args.command {
        Some(cli::Command::Sessions { json }) => sessions::list(json),
        Some(cli::Command::Approve { keys, all }) => approve::run(&keys, all),
        Some(cli::Command::Config { action }) => config::run(action),
        Some(cli::Command::Mcp { action }) => runtime.block_on(mcp::run(action)),
        Some(cli::Command::Trace { id }) => trace::summary::run(&id),
        Some(cli::Command::Skills) => {
            let env = assembly::environment();
            let text = control::skills_text(&env, &std::env::current_dir()?);
            println!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Some(cli::Command::Worktrees { action }) => worktrees::run(match action {
            None => control::WorktreeAction::List,
            Some(cli::WorktreesAction::Merge { name }) => control::WorktreeAction::Merge(name),
            Some(cli::WorktreesAction::Discard { name }) => control::WorktreeAction::Discard(name),
        }),
        Some(cli::Command::Acp { agent }) => runtime.block_on(acp::run(agent, extensions)),
        Some(cli::Command::Lsp { agent }) => {
            let code = runtime.block_on(lsp::run(agent, extensions));
            // Stdin is read on a blocking thread that only returns when the editor closes
            // the pipe; after `exit` Larik must not wait for that.
            runtime.shutdown_background();
            code
        }
        None => match runtime.block_on(headless::run(args, extensions)) {
            Ok(code) => Ok(code),
            // `larik -p` tells a mistake the user can fix (exit 2) from a failure (exit 1).
            Err(error) => {
                eprintln!("larik: {error}");
                Ok(ExitCode::from(if error.is_usage() { 2 } else { 1 }))
            }
        },
    }
}
