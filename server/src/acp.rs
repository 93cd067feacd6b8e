//! `larik acp`: the Agent Client Protocol (v1) on stdin/stdout, for Zed and every other
//! ACP editor.
//!
//! This module only translates: each ACP session runs an ordinary agent from
//! `larik_agent`, fed with `Op`s, whose `Event`s become `session/update`s (see
//! [`session`]). Sessions are the same JSONL files `larik -p` writes, so a session started
//! headless can be loaded in the editor and the other way round. Handlers answer quickly;
//! anything that waits on the editor (permissions, file access) runs in its own task, so
//! `session/cancel` and permission answers are read while a prompt runs.

pub(crate) mod content;
pub(crate) mod editor_mcp;
mod elicit;
mod files;
pub(crate) mod options;
pub(crate) mod server;
pub(crate) mod session;
mod subagents;
mod updates;

use std::process::ExitCode;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, ForkSessionRequest, InitializeRequest,
    ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    ResumeSessionRequest, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::{Agent, ByteStreams, ConnectTo, Error};
use tokio::sync::mpsc;

use crate::assembly::{self, Extension, Process};
use crate::cli::AgentOptions;
use crate::session_core::Command;
use server::{Server, config_option_answer, gone};

/// Bytes buffered between the connection and stdin or stdout, each way. A larger buffer is
/// a ring its writes walk through page by page: with the ACP crate's default of 8 MiB, a
/// long session's memory grew by every byte it had written until both rings were resident.
/// A longer line passes through in parts.
const STDIO_BUFFER: usize = 64 * 1024;

/// Serves ACP on stdin/stdout until the editor closes the connection.
pub async fn run(
    options: AgentOptions,
    extensions: Vec<Arc<dyn Extension>>,
) -> anyhow::Result<ExitCode> {
    let env = assembly::environment();
    // Sessions start when the editor asks; have the root certificates ready by then, and
    // old checkpoints gone.
    assembly::prefetch_tls(&env, options.model.as_deref());
    let process = Process::new(env, options, extensions)?;
    process.prune_checkpoints_for(std::env::current_dir().unwrap_or_else(|_| "/".into()));
    let server = Arc::new(Server::new(process));
    let stdio = ByteStreams::new(
        blocking::Unblock::with_capacity(STDIO_BUFFER, std::io::stdout()),
        blocking::Unblock::with_capacity(STDIO_BUFFER, std::io::stdin()),
    );
    let result = serve(Arc::clone(&server), stdio).await;
    server.close_all().await;
    for notice in server.shutdown().await {
        eprintln!("larik: warning: {notice}");
    }
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(error) => Err(anyhow::anyhow!("the ACP connection failed: {error}")),
    }
}

/// Serves ACP on `transport` until the editor closes it.
pub(crate) async fn serve(
    server: Arc<Server>,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), Error> {
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11) = (
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
    );
    Agent
        .v1()
        .name("larik")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _connection| {
                responder.respond(s1.initialize(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, connection| {
                let created = s2.new_session(request, connection.clone());
                let session_id = created
                    .as_ref()
                    .ok()
                    .map(|created| created.session_id.clone());
                responder.respond_with_result(created)?;
                // The editor learns the session id from the response; updates come after it.
                if let Some(session_id) = session_id {
                    s2.announce_commands(&session_id, &connection);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ForkSessionRequest, responder, connection| {
                let forked = s11.fork_session(request, connection.clone());
                let session_id = forked.as_ref().ok().map(|forked| forked.session_id.clone());
                responder.respond_with_result(forked)?;
                if let Some(session_id) = session_id {
                    s11.announce_commands(&session_id, &connection);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, connection| {
                responder.respond_with_result(s3.load_session(request, connection).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, connection| {
                responder.respond_with_result(s4.resume_session(request, connection).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _connection| {
                responder.respond_with_result(s5.list_sessions(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, _connection| {
                let server = Arc::clone(&s6);
                // Closing waits for the agent to stop; let other messages through meanwhile.
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(server.close_session(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _connection| {
                match s7.prompt_work(&request) {
                    Ok((commands, work)) => {
                        // The session task answers when the prompt ends.
                        if let Err(mpsc::error::SendError(Command::Prompt(_, responder))) =
                            commands.send(Command::Prompt(work, responder))
                        {
                            responder.respond_with_error(gone(&request.session_id))?;
                        }
                        Ok(())
                    }
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _connection| {
                responder.respond_with_result(s8.set_mode(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _connection| {
                let session_id = request.session_id.clone();
                match s9.set_config_option(request) {
                    // Sent in request order; only the wait for the answer leaves the loop.
                    Ok(answer) => {
                        tokio::spawn(async move {
                            let answer = config_option_answer(&session_id, answer).await;
                            let _ = responder.respond_with_result(answer);
                        });
                        Ok(())
                    }
                    Err(error) => responder.respond_with_error(error),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _connection| {
                if let Ok(commands) = s10.commands(&notification.session_id) {
                    let _ = commands.send(Command::Cancel);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}
