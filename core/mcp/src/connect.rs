//! One connection to a server: the transport its spec names, the MCP handshake within the
//! startup timeout, and the client side of the session (what Larik tells the server about
//! itself, and what it does with the server's notifications: a changed tool, resource or
//! prompt list is noted, to be read again at the next fresh context; log messages go to
//! the server's log; a question it asks goes to the asker of the call waiting on it).
//! Remote servers get the bearer token of a kept login.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::audit::Audit;
use crate::elicit::{self, Answer, Askers, Question};
use crate::listing::ListedTool;
use crate::log::ServerLog;
use crate::oauth::authorized::{Bearer, LoginNeeded, kept_login};
use crate::oauth::watched::Watched;
use crate::spec::{ServerSpec, TransportSpec};
use crate::stdio::ChildGroup;
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
    /// The server's name, for its questions.
    server: String,
    /// Who answers its questions.
    askers: Arc<Askers>,
    /// How many of the server's log messages were written.
    logged: std::sync::atomic::AtomicUsize,
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

/// The question a server's elicitation request puts to the user; `None` for one Larik
/// declines without asking (URL mode).
pub(crate) fn question_of(server: &str, request: &ElicitRequestParams) -> Option<Question> {
    let request = serde_json::to_value(request).unwrap_or_default();
    if request.get("url").is_some() {
        return None;
    }
    Some(Question {
        server: server.to_string(),
        message: request["message"].as_str().unwrap_or_default().to_string(),
        schema: request["requestedSchema"].clone(),
    })
}

/// What the server is told of the user's `answer` to a question of shape `schema`.
pub(crate) fn elicit_result(answer: Answer, schema: &Value) -> ElicitResult {
    match elicit::checked(answer, schema) {
        Answer::Accept(values) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values))
        }
        Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
        Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Form questions only: a server's question goes to the front end of the session
        // whose call waits on it.
        let capabilities: ClientCapabilities =
            serde_json::from_value(serde_json::json!({"elicitation": {"form": {}}}))
                .unwrap_or_default();
        ClientConfig::new(
            capabilities,
            Implementation::new("larik", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(question) = question_of(&self.server, &request) else {
            self.log
                .line("declined a question that opens a URL (not supported)");
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let Some(asker) = self.askers.current() else {
            self.log.line("declined a question asked outside a call");
            return Err(ErrorData::invalid_request(
                "Larik asks the user only while one of its calls waits on this server",
                None,
            ));
        };
        self.log
            .line(&format!("asks the user: {}", question.message));
        let schema = question.schema.clone();
        match asker.ask(question).await {
            Ok(answer) => Ok(elicit_result(answer, &schema)),
            Err(why) => {
                self.log.line(&format!("could not ask the user: {why}"));
                Err(ErrorData::invalid_request(why, None))
            }
        }
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

    // Logging is deprecated in the newest protocol; servers speaking the earlier ones,
    // which Larik negotiates, still log this way.
    #[expect(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let count = self.logged.fetch_add(1, Ordering::Relaxed);
        if count < MAX_LOG_MESSAGES {
            let level = serde_json::to_value(params.level).unwrap_or_default();
            self.log.line(&format!(
                "server log ({}): {}",
                level.as_str().unwrap_or("?"),
                params.data
            ));
        } else if count == MAX_LOG_MESSAGES {
            self.log
                .line("the server logs too much; its further messages are not written");
        }
    }
}

/// A live MCP session with one server.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Handler>,
    pub(crate) changes: Arc<Changes>,
    /// The process of a stdio server.
    child: Mutex<Option<ChildGroup>>,
    /// What a stdio server wrote that was no MCP message.
    pub(crate) audit: Option<Arc<Audit>>,
    /// Whether the server offers resources.
    pub(crate) has_resources: bool,
    /// Whether the server offers prompts.
    pub(crate) has_prompts: bool,
    /// The server's prompt list (each prompt's JSON), read at connect and again after it
    /// says the list changed.
    pub(crate) prompts: Mutex<Vec<Value>>,
    /// The server's tool list as it sent it (each tool's JSON), read at connect and again
    /// after it says the list changed.
    pub(crate) tools: Mutex<Arc<Vec<ListedTool>>>,
    /// How long a list may take when read again (the startup timeout).
    list_timeout: std::time::Duration,
}

impl Connection {
    /// Reads the tool list again if the server said it changed; whether it did. A server
    /// that does not answer within the list timeout keeps its old list (and the change
    /// stays noted, to be read at the next chance).
    pub(crate) async fn refresh_tools(&self) -> Result<bool, String> {
        if !self.changes.tools.swap(false, Ordering::Relaxed) {
            return Ok(false);
        }
        match self.bounded(list_tools(&self.service)).await {
            Ok(tools) => {
                *self.tools.lock().await = Arc::new(tools);
                Ok(true)
            }
            Err(why) => {
                self.changes.tools.store(true, Ordering::Relaxed);
                Err(why)
            }
        }
    }

    /// The prompt list, read again (within the list timeout) if the server said it
    /// changed.
    pub(crate) async fn current_prompts(&self) -> Result<Vec<Value>, String> {
        if self.has_prompts && self.changes.prompts.swap(false, Ordering::Relaxed) {
            match self.bounded(list_prompts(&self.service)).await {
                Ok(prompts) => *self.prompts.lock().await = prompts,
                Err(why) => {
                    self.changes.prompts.store(true, Ordering::Relaxed);
                    return Err(why);
                }
            }
        }
        Ok(self.prompts.lock().await.clone())
    }

    /// `listing`, or an error when the server takes longer than the list timeout.
    async fn bounded<T>(
        &self,
        listing: impl Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        tokio::time::timeout(self.list_timeout, listing)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "it did not list within {} s",
                    self.list_timeout.as_secs_f64()
                ))
            })
    }

    /// Whether the session has ended (the process exited, the stream closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_transport_closed()
    }

    /// Ends the session and stops the server's process.
    pub(crate) async fn close(&self) {
        self.service.cancellation_token().cancel();
        if let Some(mut child) = self.child.lock().await.take() {
            child.stop_and_wait().await;
        }
    }
}

/// Connects to `spec`'s server and reads its tool list, all within its startup timeout. A
/// remote server is sent the bearer token of its login kept in `auth_dir`, if any; when it
/// turns Larik away for want of one, `login_needed` is set.
pub(crate) async fn connect(
    spec: &ServerSpec,
    log: Arc<ServerLog>,
    auth_dir: &Path,
    login_needed: &LoginNeeded,
    askers: &Arc<Askers>,
) -> Result<Connection, String> {
    log.line(&format!("connecting ({})", describe(&spec.transport)));
    let changes = Arc::new(Changes::default());
    let handler = Handler {
        changes: Arc::clone(&changes),
        log: Arc::clone(&log),
        server: spec.name.clone(),
        askers: Arc::clone(askers),
        logged: std::sync::atomic::AtomicUsize::new(0),
    };
    // A stdio server's watch on its stdout, known once it started.
    let audit: OnceLock<Arc<Audit>> = OnceLock::new();
    let started = async {
        let mut child = None;
        let service = match &spec.transport {
            TransportSpec::Stdio { command, .. } => {
                let started = stdio::start(&spec.transport, &log)
                    .map_err(|error| format!("cannot start `{command}`: {error}"))?;
                let mut group = started.child;
                let _ = audit.set(started.audit);
                match handler.serve((started.stdout, started.stdin)).await {
                    Ok(service) => {
                        child = Some(group);
                        service
                    }
                    Err(error) => {
                        return Err(match group.exit_status(EXIT_GRACE).await {
                            Some(status) => format!(
                                "it exited ({status}) before the MCP handshake ended; its \
                                 stderr is in {}",
                                log.path().display()
                            ),
                            None => format!("the MCP handshake failed: {error}"),
                        });
                    }
                }
            }
            TransportSpec::Http { url, headers } => {
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(header_map(headers)?);
                let http = http_client()?;
                let login = kept_login(&spec.name, url, &spec.oauth, auth_dir).await?;
                let login_needed = Arc::clone(login_needed);
                let served = match login {
                    Some(manager) => {
                        let inner = AuthClient::new(http, manager);
                        let client = Watched {
                            login: Some(Arc::clone(&inner.auth_manager)),
                            inner,
                            login_needed,
                        };
                        handler
                            .serve(StreamableHttpClientTransport::with_client(client, config))
                            .await
                    }
                    None => {
                        let client = Watched {
                            inner: http,
                            login_needed,
                            login: None,
                        };
                        handler
                            .serve(StreamableHttpClientTransport::with_client(client, config))
                            .await
                    }
                };
                served.map_err(|error| format!("the MCP handshake failed: {error}"))?
            }
            TransportSpec::Sse { url, headers } => {
                let headers = header_map(headers)?.into_iter().collect();
                let bearer = kept_login(&spec.name, url, &spec.oauth, auth_dir)
                    .await?
                    .map(|manager| Bearer::new(manager, Arc::clone(login_needed)));
                let transport = sse::connect(
                    http_client()?,
                    url,
                    headers,
                    Arc::clone(&log),
                    bearer,
                    Arc::clone(login_needed),
                )
                .await?;
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
            Ok(Err(_)) if login_needed.load(Ordering::Relaxed) => {
                return Err("it needs a login".to_string());
            }
            Ok(result) => result?,
            Err(_) => {
                let mut why = format!(
                    "it did not answer within its startup timeout ({} s)",
                    spec.startup_timeout.as_secs_f64()
                );
                if let Some(wrote) = audit.get().and_then(|audit| audit.describe()) {
                    why = format!("{why}; {wrote}");
                }
                return Err(why);
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
        audit: audit.into_inner(),
        tools: Mutex::new(Arc::new(tools)),
        list_timeout: spec.startup_timeout,
    })
}

/// Every tool the server lists, page by page.
async fn list_tools(
    service: &RunningService<RoleClient, Handler>,
) -> Result<Vec<ListedTool>, String> {
    let tools = service
        .peer()
        .list_all_tools()
        .await
        .map_err(|error| format!("cannot list its tools: {error}"))?;
    Ok(listed_tools(&tools))
}

/// Larik's view of the tools a server listed; a tool that cannot be read is left out.
pub(crate) fn listed_tools(tools: &[rmcp::model::Tool]) -> Vec<ListedTool> {
    tools
        .iter()
        .filter_map(|tool| serde_json::to_string(tool).ok())
        .filter_map(|text| serde_json::from_str(&text).ok())
        .collect()
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

/// Most server log messages written to its log in one session.
const MAX_LOG_MESSAGES: usize = 1000;

/// How long a stdio server whose handshake failed gets to exit, so its exit status can
/// say why.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The HTTP client for remote servers: it follows redirects only within the origin they
/// start from, so the configured headers never reach another host.
pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    let same_origin = reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .last()
            .is_some_and(|last| last.origin() == attempt.url().origin());
        if same && attempt.previous().len() < 10 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .redirect(same_origin)
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
