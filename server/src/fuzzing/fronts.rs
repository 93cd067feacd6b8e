//! Larik's ACP and LSP front ends served in-process over in-memory streams, and what their
//! handlers make of the parameters only a running session acts on.
//!
//! The front ends run in a process whose home is a folder the caller gives and whose model
//! resolves to nothing, so every session is refused before it starts (no file is written,
//! no server is started, no model is asked); everything before that point is the real code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::ByteStreams;
use agent_client_protocol::v1::schema::{
    NewSessionRequest, PromptRequest, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use larik_config::Environment;
use larik_protocol::{PermissionMode, ReasoningEffort};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::acp::editor_mcp::editor_mcp_server;
use crate::acp::options::{config_options, current_value, offered_models};
use crate::acp::server::{Server, prompt_work};
use crate::acp::session::choose_config_option;
use crate::assembly::{Process, parse_mode};
use crate::cli::AgentOptions;
use crate::commands::SlashCommands;
use crate::lsp::backend::larik_requests::{self, PromptParams, parse};
use crate::lsp::documents::Documents;

/// The model every session of the fuzzed front ends asks for: no alias of that name
/// exists, so sessions are refused.
pub const NO_MODEL: &str = "larik-fuzz-no-such-model";

/// Where the process with home `home` keeps its data (its sessions under `sessions/`).
pub fn data_dir(home: &Path) -> PathBuf {
    home.join("share").join("larik")
}

/// The process the front ends serve in.
fn process(home: &Path) -> Process {
    let home_text = home.display().to_string();
    let env = Environment::from_pairs([
        ("HOME".to_string(), home_text.clone()),
        (
            "XDG_DATA_HOME".to_string(),
            home.join("share").display().to_string(),
        ),
        (
            "XDG_CONFIG_HOME".to_string(),
            home.join("config").display().to_string(),
        ),
        ("LARIK_LSP".to_string(), "off".to_string()),
        ("LARIK_SANDBOX".to_string(), "off".to_string()),
    ]);
    let options = AgentOptions {
        model: Some(NO_MODEL.to_string()),
        ..AgentOptions::default()
    };
    Process::new(env, options, Vec::new()).expect("the options and the home are valid")
}

/// Serves `larik acp` on one editor connection as it does on stdio: newline-delimited
/// JSON-RPC read from `input`, answers and notifications written to `output`, until
/// `input` ends; then every session is closed.
pub async fn serve_acp<I, O>(home: &Path, input: I, output: O) -> Result<(), String>
where
    I: futures::AsyncRead + Send + 'static,
    O: futures::AsyncWrite + Send + 'static,
{
    let server = Arc::new(Server::new(process(home)));
    let result = crate::acp::serve(Arc::clone(&server), ByteStreams::new(output, input)).await;
    server.close_all().await;
    let _ = server.shutdown().await;
    result.map_err(|error| error.to_string())
}

/// Serves `larik lsp` on one editor connection: frames from `input`, frames to `output`,
/// until the editor exits or `input` ends.
pub async fn serve_lsp<I, O>(home: &Path, input: I, output: O)
where
    I: AsyncRead + Unpin + Send + 'static,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let process = Arc::new(process(home));
    crate::lsp::serve(input, output, Arc::clone(&process)).await;
    let _ = process.shutdown().await;
}

/// A select config option as a session offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOption {
    /// Its id.
    pub id: String,
    /// Its current value.
    pub current: Option<String>,
}

/// What a session would make of an ACP request's params.
#[derive(Debug)]
pub enum AcpSessionWork {
    /// `session/prompt`: the work it asks for, or the error it is answered with.
    Prompt(Result<String, String>),
    /// `session/set_mode`: the mode, or the error.
    Mode(Result<PermissionMode, String>),
    /// `session/set_config_option` on a session of a known model: the value asked for
    /// (`None` when it is not a value id), the options before, and after the change or the
    /// error.
    ConfigOption {
        /// The option's id.
        config_id: String,
        /// The value, when it is a value id.
        value: Option<String>,
        /// The options before.
        before: Vec<ConfigOption>,
        /// The options after, or why the change was refused.
        after: Result<Vec<ConfigOption>, String>,
    },
    /// `session/new` and the like: how many MCP servers were given and how many Larik
    /// takes.
    McpServers {
        /// Given.
        given: usize,
        /// Taken.
        taken: usize,
    },
}

/// What a running session would make of the params of an ACP request `method`, decoded as
/// the connection decodes them; `None` for other methods and params that do not decode
/// (the connection answers those itself).
pub fn acp_session_work(method: &str, params: &Value) -> Option<AcpSessionWork> {
    Some(match method {
        "session/prompt" => {
            let request: PromptRequest = serde_json::from_value(params.clone()).ok()?;
            AcpSessionWork::Prompt(
                prompt_work(&request.prompt, &SlashCommands::default())
                    .map(|work| format!("{work:?}"))
                    .map_err(|error| error.to_string()),
            )
        }
        "session/set_mode" => {
            let request: SetSessionModeRequest = serde_json::from_value(params.clone()).ok()?;
            AcpSessionWork::Mode(
                parse_mode(&request.mode_id.to_string()).map_err(|error| error.to_string()),
            )
        }
        "session/set_config_option" => {
            let request: SetSessionConfigOptionRequest =
                serde_json::from_value(params.clone()).ok()?;
            let model = "anthropic/claude-sonnet-4-5";
            let providers = ["anthropic".to_string(), "openai".to_string()];
            let options = config_options(
                PermissionMode::AcceptEdits,
                model,
                Some(ReasoningEffort::High),
                &offered_models(model, &providers),
            );
            let listed = |options: &[agent_client_protocol::v1::schema::SessionConfigOption]| {
                options
                    .iter()
                    .map(|option| ConfigOption {
                        id: option.id.to_string(),
                        current: current_value(option),
                    })
                    .collect::<Vec<_>>()
            };
            let before = listed(&options);
            let config_id = request.config_id.to_string();
            let value = request.value.as_value_id().map(ToString::to_string);
            let after = match &value {
                Some(value) => choose_config_option(options, &config_id, value)
                    .map(|(options, _)| listed(&options))
                    .map_err(|error| error.to_string()),
                None => Err("this option takes one of its listed values".to_string()),
            };
            AcpSessionWork::ConfigOption {
                config_id,
                value,
                before,
                after,
            }
        }
        "session/new" => {
            let request: NewSessionRequest = serde_json::from_value(params.clone()).ok()?;
            AcpSessionWork::McpServers {
                given: request.mcp_servers.len(),
                taken: request
                    .mcp_servers
                    .iter()
                    .filter_map(editor_mcp_server)
                    .count(),
            }
        }
        _ => return None,
    })
}

/// What a session with Larik's own slash commands would make of `larik/prompt`'s params
/// (with one document open, `file:///p/main.rs`): the work, or the error it is answered
/// with.
pub fn lsp_prompt_work(params: &Value) -> Result<String, String> {
    let params: PromptParams = parse(params.clone()).map_err(|error| error.message.to_string())?;
    let documents = Documents::default();
    documents.set(
        PathBuf::from("/p/main.rs"),
        "fn main() {\n    println!(\"h\u{e9}llo \u{1F600}\");\n}\n".to_string(),
    );
    larik_requests::prompt_work(&params, || Ok(SlashCommands::default()), &documents)
        .map(|work| format!("{work:?}"))
        .map_err(|error| error.message.to_string())
}
