//! A streamable HTTP client that passes every request on and notes when the server turns
//! one away with an authorization challenge (a 401 that a refresh did not cure, or a 403),
//! so the server's state can say it needs a login. With a login, a 403 is answered like a
//! 401 (the SDK's client handles those): one refresh, and the request once more.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use rmcp::transport::auth::AuthorizationManager;
use tokio::sync::Mutex;

use super::authorized::LoginNeeded;

/// `inner`, watched for refusals.
#[derive(Clone)]
pub(crate) struct Watched<C> {
    pub(crate) inner: C,
    pub(crate) login_needed: LoginNeeded,
    /// The login to refresh after a 403, if there is one.
    pub(crate) login: Option<Arc<Mutex<AuthorizationManager>>>,
}

impl<C: StreamableHttpClient> Watched<C> {
    /// `call`'s outcome; after a 403, with a login, once more after a refresh.
    async fn retried<T, Fut>(
        &self,
        call: impl Fn() -> Fut,
    ) -> Result<T, StreamableHttpError<C::Error>>
    where
        Fut: Future<Output = Result<T, StreamableHttpError<C::Error>>>,
    {
        let first = call().await;
        if let (Err(StreamableHttpError::InsufficientScope(_)), Some(login)) = (&first, &self.login)
            && login.lock().await.refresh_token().await.is_ok()
        {
            return self.note(call().await);
        }
        self.note(first)
    }

    fn note<T>(
        &self,
        result: Result<T, StreamableHttpError<C::Error>>,
    ) -> Result<T, StreamableHttpError<C::Error>> {
        if let Err(
            StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_),
        ) = &result
        {
            self.login_needed.store(true, Ordering::Relaxed);
        }
        result
    }
}

type Headers = HashMap<HeaderName, HeaderValue>;
type EventStream = BoxStream<'static, Result<Sse, SseError>>;

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Watched<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.retried(|| {
            let uri = uri.clone();
            let message = message.clone();
            let session_id = session_id.clone();
            let auth_header = auth_header.clone();
            let custom_headers = custom_headers.clone();
            async move {
                self.inner
                    .post_message(uri, message, session_id, auth_header, custom_headers)
                    .await
            }
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.retried(|| {
            let uri = uri.clone();
            let message = message.clone();
            let session_id = session_id.clone();
            let auth_header = auth_header.clone();
            let custom_headers = custom_headers.clone();
            async move {
                self.inner
                    .post_message_with_max_sse_event_size(
                        uri,
                        message,
                        session_id,
                        auth_header,
                        custom_headers,
                        max_sse_event_size,
                    )
                    .await
            }
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.retried(|| {
            let uri = uri.clone();
            let message = message.clone();
            let session_id = session_id.clone();
            let auth_header = auth_header.clone();
            let custom_headers = custom_headers.clone();
            async move {
                self.inner
                    .post_message_with_response_limits(
                        uri,
                        message,
                        session_id,
                        auth_header,
                        custom_headers,
                        limits,
                    )
                    .await
            }
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.retried(|| {
            let uri = uri.clone();
            let session_id = session_id.clone();
            let auth_header = auth_header.clone();
            let custom_headers = custom_headers.clone();
            async move {
                self.inner
                    .delete_session(uri, session_id, auth_header, custom_headers)
                    .await
            }
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<EventStream, StreamableHttpError<Self::Error>> {
        self.retried(|| {
            let uri = uri.clone();
            let session_id = session_id.clone();
            let last_event_id = last_event_id.clone();
            let auth_header = auth_header.clone();
            let custom_headers = custom_headers.clone();
            async move {
                self.inner
                    .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
                    .await
            }
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<EventStream, StreamableHttpError<Self::Error>> {
        self.retried(|| {
            let uri = uri.clone();
            let session_id = session_id.clone();
            let last_event_id = last_event_id.clone();
            let auth_header = auth_header.clone();
            let custom_headers = custom_headers.clone();
            async move {
                self.inner
                    .get_stream_with_max_sse_event_size(
                        uri,
                        session_id,
                        last_event_id,
                        auth_header,
                        custom_headers,
                        max_sse_event_size,
                    )
                    .await
            }
        })
        .await
    }
}
