//! The debug trace's view of the wire: with a trace on, every request a provider client
//! sends is handed to an [`HttpTrace`] before it goes out (method, URL, headers, body), and
//! its answer to the [`HttpExchange`] that returns (status, headers, each chunk of the body
//! as it arrives, or the failure). The exchange ends when it is dropped. What is recorded,
//! where, and with which secrets removed is the trace's business, not this crate's.

use std::sync::Arc;

use bytes::Bytes;
use futures::Stream;
use futures::StreamExt;
use reqwest::header::HeaderMap;

use crate::http::Timeouts;

/// Headers as names and values (values that are not text are read lossily).
type Headers = Vec<(String, String)>;

fn headers_of(map: &HeaderMap) -> Headers {
    map.iter()
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// A request about to be sent.
#[derive(Debug, Clone, Copy)]
pub struct TracedRequest<'a> {
    /// The method, e.g. `POST`.
    pub method: &'a str,
    /// The URL, query included.
    pub url: &'a str,
    /// The headers, as sent (secrets included: the trace removes them).
    pub headers: &'a [(String, String)],
    /// The body; empty for none.
    pub body: &'a [u8],
}

/// Records what providers send and receive.
pub trait HttpTrace: Send + Sync {
    /// A request is about to go out; the returned exchange records its answer.
    fn exchange(&self, request: TracedRequest<'_>) -> Box<dyn HttpExchange>;
}

/// One request's answer as it arrives; dropping it ends the exchange.
pub trait HttpExchange: Send {
    /// The status line and headers arrived.
    fn response(&mut self, status: u16, headers: &[(String, String)]);
    /// A piece of the body arrived.
    fn body(&mut self, chunk: &[u8]);
    /// The request or its body failed.
    fn failed(&mut self, error: &str);
}

/// The HTTP client of one provider client, and the trace its requests go to when one is on.
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    timeouts: Timeouts,
    trace: Option<Arc<dyn HttpTrace>>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("traced", &self.trace.is_some())
            .finish()
    }
}

impl std::ops::Deref for Http {
    type Target = reqwest::Client;

    fn deref(&self) -> &reqwest::Client {
        &self.client
    }
}

/// A response, and the exchange that records its body.
pub(crate) struct Sent {
    response: reqwest::Response,
    exchange: Option<Box<dyn HttpExchange>>,
}

impl Http {
    /// Requests through `client`, built with `timeouts`, untraced until [`Http::traced`].
    pub(crate) fn new(client: reqwest::Client, timeouts: Timeouts) -> Self {
        Http {
            client,
            timeouts,
            trace: None,
        }
    }

    /// How long the client waits, for messages that name a timeout.
    pub(crate) fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// The same client, its requests recorded in `trace` (or not, for `None`).
    pub(crate) fn traced(mut self, trace: Option<Arc<dyn HttpTrace>>) -> Self {
        self.trace = trace;
        self
    }

    /// Sends `request`, recording it and its answer when a trace is on.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Sent, reqwest::Error> {
        let Some(trace) = &self.trace else {
            return Ok(Sent {
                response: request.send().await?,
                exchange: None,
            });
        };
        let (client, built) = request.build_split();
        let built = built?;
        let url = built.url().to_string();
        let body = built
            .body()
            .and_then(reqwest::Body::as_bytes)
            .unwrap_or_default();
        let headers = headers_of(built.headers());
        let mut exchange = trace.exchange(TracedRequest {
            method: built.method().as_str(),
            url: &url,
            headers: &headers,
            body,
        });
        match client.execute(built).await {
            Ok(response) => {
                exchange.response(response.status().as_u16(), &headers_of(response.headers()));
                Ok(Sent {
                    response,
                    exchange: Some(exchange),
                })
            }
            Err(error) => {
                exchange.failed(&crate::http::error_chain(&error));
                Err(error)
            }
        }
    }
}

impl Sent {
    /// The status code.
    pub(crate) fn status(&self) -> u16 {
        self.response.status().as_u16()
    }

    /// The response headers.
    pub(crate) fn headers(&self) -> &HeaderMap {
        self.response.headers()
    }

    /// The whole body as text.
    pub(crate) async fn text(self) -> Result<String, reqwest::Error> {
        let Sent {
            response,
            mut exchange,
        } = self;
        let text = response.text().await;
        if let Some(exchange) = exchange.as_mut() {
            match &text {
                Ok(text) => exchange.body(text.as_bytes()),
                Err(error) => exchange.failed(&crate::http::error_chain(error)),
            }
        }
        text
    }

    /// The body as it arrives.
    pub(crate) fn bytes_stream(self) -> impl Stream<Item = Result<Bytes, reqwest::Error>> {
        let Sent {
            response,
            mut exchange,
        } = self;
        response.bytes_stream().map(move |chunk| {
            if let Some(exchange) = exchange.as_mut() {
                match &chunk {
                    Ok(bytes) => exchange.body(bytes),
                    Err(error) => exchange.failed(&crate::http::error_chain(error)),
                }
            }
            chunk
        })
    }
}
