//! The legacy HTTP+SSE transport: an event stream opened with a GET names, in its first
//! `endpoint` event, the URL every client message is POSTed to; the server's messages
//! arrive as `message` events on the stream. The endpoint must be on the stream's own
//! origin (the configured headers go to it). An event that is not a JSON-RPC message is
//! logged and skipped; the transport ends when the stream does. With a login, the event
//! stream's GET and every POST carry the bearer token; a 401 or 403 with an authorization
//! challenge is answered by one refresh and one more try, after which (or without a
//! login) the server is noted as needing one.

use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::log::ServerLog;
use crate::oauth::authorized::{Bearer, LoginNeeded};

/// Messages from the server waiting to be read.
const BUFFERED: usize = 256;

/// A connected SSE transport.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    bearer: Option<Bearer>,
    login_needed: LoginNeeded,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: JoinHandle<()>,
}

/// Opens the event stream at `url` and waits for its endpoint.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
    log: Arc<ServerLog>,
    bearer: Option<Bearer>,
    login_needed: LoginNeeded,
) -> Result<SseTransport, String> {
    let url = reqwest::Url::parse(url).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
    let open = |token: Option<&str>| {
        let request = client
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream");
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    };
    let response = authorized(open, bearer.as_ref(), &login_needed)
        .await
        .map_err(|error| format!("cannot open the event stream: {error}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the event stream was refused: HTTP {status}"));
    }
    let mut events = response.bytes_stream().eventsource();
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event == "endpoint" => break event.data,
            Some(Ok(_)) => continue,
            Some(Err(error)) => return Err(format!("the event stream broke: {error}")),
            None => return Err("the event stream ended before naming its endpoint".into()),
        }
    };
    let endpoint = url
        .join(endpoint.trim())
        .map_err(|error| format!("the endpoint `{endpoint}` is not a URL: {error}"))?;
    if endpoint.origin() != url.origin() {
        return Err(format!(
            "the server named an endpoint on another origin ({endpoint}); refused"
        ));
    }
    log.line(&format!("SSE endpoint: {endpoint}"));
    let (sender, incoming) = mpsc::channel(BUFFERED);
    let reader = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    log.line(&format!("the event stream broke: {error}"));
                    break;
                }
            };
            if event.event != "message" && !event.event.is_empty() {
                continue;
            }
            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&event.data) {
                Ok(message) => {
                    if sender.send(message).await.is_err() {
                        break;
                    }
                }
                Err(error) => log.line(&format!("skipped a message that is not JSON-RPC: {error}")),
            }
        }
        log.line("the event stream ended");
    });
    Ok(SseTransport {
        client,
        endpoint,
        headers,
        bearer,
        login_needed,
        incoming,
        reader,
    })
}

impl Transport<RoleClient> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let endpoint = self.endpoint.clone();
        let headers = self.headers.clone();
        let bearer = self.bearer.clone();
        let login_needed = Arc::clone(&self.login_needed);
        let body = serde_json::to_vec(&item);
        async move {
            let body = body.map_err(std::io::Error::other)?;
            let post = |token: Option<&str>| {
                let request = client
                    .post(endpoint.clone())
                    .headers(headers.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
                match token {
                    Some(token) => request.bearer_auth(token),
                    None => request,
                }
            };
            let response = authorized(post, bearer.as_ref(), &login_needed)
                .await
                .map_err(std::io::Error::other)?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(std::io::Error::other(format!(
                    "the server refused a message: HTTP {status}"
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.incoming.close();
        Ok(())
    }
}

/// Whether `response` turns the client away with an authorization challenge (a 401 or 403
/// naming a scheme in `WWW-Authenticate`); other refusals are ordinary failures.
fn challenged(response: &reqwest::Response) -> bool {
    matches!(response.status().as_u16(), 401 | 403)
        && response
            .headers()
            .contains_key(reqwest::header::WWW_AUTHENTICATE)
}

/// Sends the request `build` makes with the bearer token (if any); when challenged, once
/// more with a refreshed token. A challenge that stands notes that a login is needed.
async fn authorized(
    build: impl Fn(Option<&str>) -> reqwest::RequestBuilder,
    bearer: Option<&Bearer>,
    login_needed: &LoginNeeded,
) -> Result<reqwest::Response, reqwest::Error> {
    let token = match bearer {
        Some(bearer) => bearer.token().await,
        None => None,
    };
    let response = build(token.as_deref()).send().await?;
    if !challenged(&response) {
        return Ok(response);
    }
    if let (Some(bearer), Some(sent)) = (bearer, &token)
        && let Some(fresh) = bearer.renewed(sent).await
    {
        let retried = build(Some(&fresh)).send().await?;
        if challenged(&retried) {
            login_needed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        return Ok(retried);
    }
    login_needed.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(response)
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
