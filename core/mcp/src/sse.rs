//! The legacy HTTP+SSE transport: an event stream opened with a GET names, in its first
//! `endpoint` event, the URL every client message is POSTed to; the server's messages
//! arrive as `message` events on the stream. The endpoint must be on the stream's own
//! origin (the configured headers go to it). An event that is not a JSON-RPC message is
//! logged and skipped; the transport ends when the stream does.

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

/// Messages from the server waiting to be read.
const BUFFERED: usize = 256;

/// A connected SSE transport.
pub(crate) struct SseTransport {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: JoinHandle<()>,
}

/// Opens the event stream at `url` and waits for its endpoint.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
    log: Arc<ServerLog>,
) -> Result<SseTransport, String> {
    let url = reqwest::Url::parse(url).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
    let response = client
        .get(url.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
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
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .json(&item);
        async move {
            let response = request.send().await.map_err(std::io::Error::other)?;
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

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
