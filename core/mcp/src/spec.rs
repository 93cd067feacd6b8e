//! What Larik knows of one MCP server before connecting: how to reach it, how long to wait
//! for it, and where its definition came from. Front ends and configuration build these;
//! this crate only reads them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// How long a server may take to start and answer `initialize`, unless configured.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a context's first request waits for a server still connecting, unless
/// configured.
pub const DEFAULT_CONNECT_WAIT: Duration = Duration::from_secs(5);
/// How long one tool call may take, unless configured.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);
/// Most tokens of one tool result passed to the model, unless configured (about four
/// characters each).
pub const DEFAULT_OUTPUT_TOKENS: usize = 25_000;

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TransportSpec {
    /// A child process spoken to on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: PathBuf,
    },
    /// Streamable HTTP: every message POSTed to one URL.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport: an event stream GET names where to POST messages.
    Sse {
        /// The event stream's URL.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

impl TransportSpec {
    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            TransportSpec::Stdio { .. } => "stdio",
            TransportSpec::Http { .. } => "http",
            TransportSpec::Sse { .. } => "sse",
        }
    }
}

/// How to log in to a remote server that asks for OAuth (`oauth` in its entry).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct OAuthSpec {
    /// A client registered with the authorization server beforehand; without one, Larik
    /// registers itself dynamically.
    pub client_id: Option<String>,
    /// That client's secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The port of the login's redirect listener on 127.0.0.1 (any free port when unset).
    pub callback_port: Option<u16>,
    /// The scopes to ask for (the server's own choice when empty).
    pub scopes: Vec<String>,
}

/// One server to connect to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerSpec {
    /// Its name, as the user configured it (tools are named `mcp__<name>__<tool>`).
    pub name: String,
    /// How to reach it.
    pub transport: TransportSpec,
    /// How long it may take to start and answer `initialize`.
    pub startup_timeout: Duration,
    /// How long a context's first request waits for it while it connects.
    pub connect_wait: Duration,
    /// How long one tool call may take.
    pub tool_timeout: Duration,
    /// Most tokens of one tool result passed to the model.
    pub output_tokens: usize,
    /// Started on the first call of one of its tools rather than with the session, when
    /// its tool list is known from an earlier start.
    pub lazy: bool,
    /// How to log in, when it asks for OAuth.
    pub oauth: OAuthSpec,
}

impl ServerSpec {
    /// A server called `name` reached by `transport`, with the default timeouts.
    pub fn new(name: impl Into<String>, transport: TransportSpec) -> Self {
        ServerSpec {
            name: name.into(),
            transport,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            connect_wait: DEFAULT_CONNECT_WAIT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            output_tokens: DEFAULT_OUTPUT_TOKENS,
            lazy: false,
            oauth: OAuthSpec::default(),
        }
    }
}
