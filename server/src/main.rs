//! The `larik` binary: parses the command line and hands off to a front end.
//!
//! `main` only calls [`try_main`] and prints the error; every front end lives in its own
//! module and speaks to the agent through the protocol crate's `Op` and `Event`.

mod acp;
mod approve;
mod cli;
mod headless;
mod lsp;
mod sessions;
mod setup;
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
        None => runtime.block_on(headless::run(args)),
    }
}
