//! Shared set-up for tests and benches that run the agent against the testkit's fake model
//! server: a config whose providers point at the server, a fresh session file, and the agent
//! spawned on both. Included with `#[path]` so each test target compiles its own copy.

use std::path::{Path, PathBuf};
use std::time::Duration;

use larik_agent::{AgentConfig, AgentHandle, SessionState};
use larik_protocol::Message;
use larik_providers::{Endpoint, RetryPolicy};
use larik_session::{SessionMeta, SessionStore, SessionWriter};
use larik_testkit::{FakeModelServer, OllamaModelInfo};

/// The Ollama model `config_for` registers with the server, as `provider/model`.
pub const OLLAMA: &str = "ollama/qwen3:8b";

/// The trained context length the fake Ollama server reports for [`OLLAMA`].
pub const OLLAMA_CONTEXT: u64 = 131_072;

/// A config for `model` (`provider/model`) in `cwd` with every wire format's endpoint
/// (anthropic, openai, openai-compat, gemini, ollama) aimed at `server` with the key `key`,
/// [`OLLAMA`] known to the server, and a retry policy fast enough that a retried failure
/// costs milliseconds.
pub fn config_for(server: &FakeModelServer, cwd: PathBuf, model: &str) -> AgentConfig {
    let mut config = AgentConfig::new(cwd, model);
    let (_, ollama_model) = OLLAMA.split_once('/').expect("OLLAMA is provider/model");
    // The Ollama client asks `/api/show` about its model; an unknown one is a 404.
    server.set_ollama_model(OllamaModelInfo::new(ollama_model, OLLAMA_CONTEXT));
    for (provider, base_url) in [
        ("anthropic", server.anthropic_base_url()),
        ("openai", server.openai_base_url()),
        ("openai-compat", server.openai_chat_base_url()),
        ("gemini", server.gemini_base_url()),
        ("ollama", server.ollama_base_url()),
    ] {
        config.endpoints.insert(
            provider.into(),
            Endpoint {
                api_key: Some("key".into()),
                base_url: Some(base_url),
                ..Default::default()
            },
        );
    }
    config.retry = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    };
    config
}

/// A new session file under `data` for `cwd`, recorded as using `model` (`provider/model`).
pub fn new_session(data: &Path, cwd: PathBuf, model: &str) -> SessionWriter {
    let (provider, name) = model.split_once('/').expect("model is provider/model");
    SessionStore::new(data)
        .create(SessionMeta {
            cwd,
            provider: provider.into(),
            model: name.into(),
            fork_of: None,
            fork_at: None,
        })
        .expect("session file is created")
}

/// Spawns the agent on `config`, writing to `writer` and starting from `history`.
pub fn spawn(config: AgentConfig, writer: SessionWriter, history: Vec<Message>) -> AgentHandle {
    larik_agent::spawn(
        config,
        SessionState {
            writer,
            messages: history,
            usage: Default::default(),
            pending_notes: Vec::new(),
            starts_with_summary: false,
        },
    )
    .expect("agent starts")
}

/// The command sandbox a user gets by default for `root` (bubblewrap when `bwrap` is on
/// the PATH, else Landlock), with `temp_dirs` writable, and its name for a report.
#[allow(dead_code)] // not every test target runs commands
pub fn user_sandbox(
    root: &Path,
    temp_dirs: Vec<PathBuf>,
) -> (larik_sandbox::Sandbox, &'static str) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let sandbox = larik_sandbox::Sandbox::configure(
        root,
        &larik_sandbox::SandboxOptions {
            enabled: true,
            writable_paths: Vec::new(),
            network_allow: Vec::new(),
            temp_dirs,
            path_dirs: std::env::split_paths(&path).collect(),
        },
    );
    let name = match sandbox.kind() {
        larik_sandbox::SandboxKind::Bubblewrap => "bubblewrap",
        larik_sandbox::SandboxKind::Landlock => "Landlock",
        larik_sandbox::SandboxKind::Unconfined => "no sandbox",
    };
    (sandbox, name)
}
