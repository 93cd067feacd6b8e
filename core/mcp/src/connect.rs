//! One connection to a server: the transport its spec names, the MCP handshake within the
//! startup timeout, and the client side of the session (what Larik tells the server about
//! itself, and what it does with the server's notifications: a changed tool, resource or
//! prompt list is noted, to be read again at the next fresh context; log messages go to
//! the server's log).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::process::Child;
use tokio::sync::Mutex;

use crate::log::ServerLog;
use crate::spec::{ServerSpec, TransportSpec};
use crate::{sse, stdio};

/// What a server's notifications said changed since its lists were last read.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub(crate) tools: AtomicBool,
    pub(crate) resources: AtomicBool,
    pub(crate) prompts: AtomicBool,
}

/// Larik's side of an MCP session.
pub(crate) struct Handler {
    changes: Arc<Changes>,
    log: Arc<ServerLog>,
}

impl Handler {
    /// Notes a change; logs only the first of a run, so a flood of notifications costs a
    /// flag each.
    fn note(&self, flag: &AtomicBool, what: &str) {
        if !flag.swap(true, Ordering::Relaxed) {
            self.log
                .line(&format!("the server says its {what} list changed"));
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("larik", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.note(&self.changes.tools, "tool");
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.note(&self.changes.resources, "resource");
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.note(&self.changes.prompts, "prompt");
    }
}

/// A live MCP session with one server.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Handler>,
    pub(crate) changes: Arc<Changes>,
    /// The process of a stdio server.
    child: Mutex<Option<Child>>,
    /// Whether the server offers resources.
    pub(crate) has_resources: bool,
    /// Whether the server offers prompts.
    pub(crate) has_prompts: bool,
    /// The server's prompt list (each prompt's JSON), read at connect and again after it
    /// says the list changed.
    pub(crate) prompts: Mutex<Vec<Value>>,
    /// The server's tool list as it sent it (each tool's JSON), read at connect and again
    /// after it says the list changed.
    pub(crate) tools: Mutex<Arc<Vec<Value>>>,
}

impl Connection {
    /// Reads the tool list again if the server said it changed; whether it did.
    pub(crate) async fn refresh_tools(&self) -> Result<bool, String> {
        if !self.changes.tools.swap(false, Ordering::Relaxed) {
            return Ok(false);
        }
        let tools = list_tools(&self.service).await?;
        *self.tools.lock().await = Arc::new(tools);
        Ok(true)
    }

    /// The prompt list, read again if the server said it changed.
    pub(crate) async fn current_prompts(&self) -> Result<Vec<Value>, String> {
        if self.has_prompts && self.changes.prompts.swap(false, Ordering::Relaxed) {
            *self.prompts.lock().await = list_prompts(&self.service).await?;
        }
        Ok(self.prompts.lock().await.clone())
    }

    /// Whether the session has ended (the process exited, the stream closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_transport_closed()
    }

    /// Ends the session and stops the server's process.
    pub(crate) async fn close(&self) {
        self.service.cancellation_token().cancel();
        if let Some(mut child) = self.child.lock().await.take() {
            stdio::stop(&mut child);
            let _ = child.wait().await;
        }
    }
}

/// Connects to `spec`'s server and reads its tool list, all within its startup timeout.
pub(crate) async fn connect(spec: &ServerSpec, log: Arc<ServerLog>) -> Result<Connection, String> {
    log.line(&format!("connecting ({})", describe(&spec.transport)));
    let changes = Arc::new(Changes::default());
    let handler = Handler {
        changes: Arc::clone(&changes),
        log: Arc::clone(&log),
    };
    let started = async {
        let mut child = None;
        let service = match &spec.transport {
            TransportSpec::Stdio { command, .. } => {
                let started = stdio::start(&spec.transport, &log)
                    .map_err(|error| format!("cannot start `{command}`: {error}"))?;
                child = Some(started.child);
                handler
                    .serve((started.stdout, started.stdin))
                    .await
                    .map_err(|error| format!("the MCP handshake failed: {error}"))?
            }
            TransportSpec::Http { url, headers } => {
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(header_map(headers)?);
                let transport = StreamableHttpClientTransport::with_client(http_client()?, config);
                handler
                    .serve(transport)
                    .await
                    .map_err(|error| format!("the MCP handshake failed: {error}"))?
            }
            TransportSpec::Sse { url, headers } => {
                let headers = header_map(headers)?.into_iter().collect();
                let transport =
                    sse::connect(http_client()?, url, headers, Arc::clone(&log)).await?;
                handler
                    .serve(transport)
                    .await
                    .map_err(|error| format!("the MCP handshake failed: {error}"))?
            }
        };
        let tools = list_tools(&service).await?;
        let offers_prompts = service
            .peer_info()
            .is_some_and(|info| info.capabilities.prompts.is_some());
        let prompts = if offers_prompts {
            list_prompts(&service).await?
        } else {
            Vec::new()
        };
        Ok::<_, String>((service, child, tools, prompts))
    };
    let (service, child, tools, prompts) =
        match tokio::time::timeout(spec.startup_timeout, started).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(format!(
                    "it did not answer within its startup timeout ({} s)",
                    spec.startup_timeout.as_secs_f64()
                ));
            }
        };
    let capabilities = service
        .peer_info()
        .map(|info| serde_json::to_value(&info.capabilities).unwrap_or_default())
        .unwrap_or_default();
    log.line(&format!("ready with {} tools", tools.len()));
    Ok(Connection {
        has_resources: capabilities.get("resources").is_some(),
        has_prompts: capabilities.get("prompts").is_some(),
        prompts: Mutex::new(prompts),
        service,
        changes,
        child: Mutex::new(child),
        tools: Mutex::new(Arc::new(tools)),
    })
}

/// Every tool the server lists, page by page, each as the JSON it sent.
async fn list_tools(service: &RunningService<RoleClient, Handler>) -> Result<Vec<Value>, String> {
    let tools = service
        .peer()
        .list_all_tools()
        .await
        .map_err(|error| format!("cannot list its tools: {error}"))?;
    Ok(tools
        .iter()
        .filter_map(|tool| serde_json::to_value(tool).ok())
        .collect())
}

/// Every prompt the server lists, each as the JSON it sent.
async fn list_prompts(service: &RunningService<RoleClient, Handler>) -> Result<Vec<Value>, String> {
    let prompts = service
        .peer()
        .list_all_prompts()
        .await
        .map_err(|error| format!("cannot list its prompts: {error}"))?;
    Ok(prompts
        .iter()
        .filter_map(|prompt| serde_json::to_value(prompt).ok())
        .collect())
}

/// The HTTP client for remote servers.
fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .build()
        .map_err(|error| format!("cannot set up HTTP: {error}"))
}

/// `headers` as HTTP headers; a name or value HTTP does not allow is an error.
fn header_map(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{name}` is not a valid header name"))?;
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| format!("the value of header `{name}` is not valid"))?;
            Ok((header, value))
        })
        .collect()
}

/// How the log names a transport.
fn describe(transport: &TransportSpec) -> String {
    match transport {
        TransportSpec::Stdio {
            command, args, cwd, ..
        } => format!("stdio: {command} {} in {}", args.join(" "), cwd.display()),
        TransportSpec::Http { url, .. } => format!("streamable HTTP: {url}"),
        TransportSpec::Sse { url, .. } => format!("SSE: {url}"),
    }
}
