//! `larik lsp`: Larik as a language server over stdio (contract: `docs/lsp.md`). Built on
//! `tower-lsp-server`; `lsp/backend.rs` answers the messages, `lsp/session.rs` runs one
//! agent per session, `lsp/documents.rs` serves open documents and offers edits to the
//! editor, `lsp/protocol.rs` declares Larik's own messages.

pub(crate) mod backend;
pub(crate) mod documents;
mod elicit;
mod protocol;
mod session;
mod transport;

use std::process::ExitCode;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
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
    serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        Arc::clone(&process),
    )
    .await;
    for notice in process.shutdown().await {
        eprintln!("larik: warning: {notice}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Serves the Language Server Protocol to the editor on `input` and `output` until it
/// exits or closes `input`, starting sessions in `process`.
pub(crate) async fn serve<I, O>(input: I, output: O, process: Arc<Process>)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (service, socket) = LspService::build(move |client| Backend::new(client, process))
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
    tokio::spawn(transport::screen_input(input, editor_side_input, errors));
    let writer = tokio::spawn(transport::merge_output(
        editor_side_output,
        output,
        error_frames,
    ));
    Server::new(service_input, service_output, socket)
        .concurrency_level(16)
        .serve(service)
        .await;
    let _ = writer.await;
}
