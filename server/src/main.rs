//! The `larik` binary: parses the command line and hands off to a front end.
//!
//! `main` only calls [`try_main`] and prints the error (`larik -p` exits with 2 when it is
//! the user's to fix — a bad flag, a missing key, no such session — and 1 otherwise);
//! every front end lives in its own module, starts its sessions through [`assembly`], and
//! speaks to the agent through the protocol crate's `Op` and `Event`.

mod acp;
mod approve;
mod assembly;
mod cli;
mod commands;
mod headless;
mod lock;
mod lsp;
mod session_core;
mod sessions;
mod undo;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    match try_main() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("larik: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn try_main() -> anyhow::Result<ExitCode> {
    let args = cli::Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match args.command {
        Some(cli::Command::Sessions { json }) => sessions::list(json),
        Some(cli::Command::Approve { keys, all }) => approve::run(&keys, all),
        Some(cli::Command::Acp { agent }) => runtime.block_on(acp::run(agent)),
        Some(cli::Command::Lsp { agent }) => {
            let code = runtime.block_on(lsp::run(agent));
            // Stdin is read on a blocking thread that only returns when the editor closes
            // the pipe; after `exit` Larik must not wait for that.
            runtime.shutdown_background();
            code
        }
        None => match runtime.block_on(headless::run(args)) {
            Ok(code) => Ok(code),
            // `larik -p` tells a mistake the user can fix (exit 2) from a failure (exit 1).
            Err(error) => {
                eprintln!("larik: {error}");
                Ok(ExitCode::from(if error.is_usage() { 2 } else { 1 }))
            }
        },
    }
}
