//! `larik lsp`: Larik as a language server over stdio (contract: `docs/lsp.md`). Built on
//! `tower-lsp-server`; `lsp/backend.rs` answers the messages, `lsp/session.rs` runs one
//! agent per session, `lsp/documents.rs` serves open documents and offers edits to the
//! editor, `lsp/protocol.rs` declares Larik's own messages.

mod backend;
mod documents;
mod elicit;
mod protocol;
mod session;
mod transport;

use std::process::ExitCode;
use std::sync::Arc;

use tower_lsp_server::{LspService, Server};

use crate::assembly::{self, Extension, Process};
use crate::cli::AgentOptions;
use backend::Backend;

/// Serves the Language Server Protocol on stdin and stdout until the editor exits.
pub async fn run(
    options: AgentOptions,
    extensions: Vec<Arc<dyn Extension>>,
) -> anyhow::Result<ExitCode> {
    let env = assembly::environment();
    assembly::prefetch_tls(&env, options.model.as_deref());
    let process = Arc::new(Process::new(env, options, extensions)?);
    process.prune_checkpoints_for(std::env::current_dir().unwrap_or_else(|_| "/".into()));
    let shared = Arc::clone(&process);
    let (service, socket) = LspService::build(move |client| Backend::new(client, shared))
        .custom_method("larik/newSession", Backend::new_session)
        .custom_method("larik/prompt", Backend::prompt)
        .custom_method("larik/cancel", Backend::cancel)
        .custom_method("larik/closeSession", Backend::close_session)
        .custom_method("larik/commands", Backend::slash_commands)
        .custom_method("larik/sessions", Backend::sessions)
        .custom_method("larik/setMode", Backend::set_mode)
        .custom_method("larik/setModel", Backend::set_model)
        .custom_method("window/workDoneProgress/cancel", Backend::progress_cancel)
        .finish();
    // The service talks to the editor through a screen that answers malformed messages
    // itself (see transport.rs).
    let (service_input, editor_side_input) = tokio::io::duplex(1 << 20);
    let (editor_side_output, service_output) = tokio::io::duplex(1 << 20);
    let (errors, error_frames) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(transport::screen_input(
        tokio::io::stdin(),
        editor_side_input,
        errors,
    ));
    let writer = tokio::spawn(transport::merge_output(
        editor_side_output,
        tokio::io::stdout(),
        error_frames,
    ));
    Server::new(service_input, service_output, socket)
        .concurrency_level(16)
        .serve(service)
        .await;
    let _ = writer.await;
    for notice in process.shutdown().await {
        eprintln!("larik: warning: {notice}");
    }
    Ok(ExitCode::SUCCESS)
}
