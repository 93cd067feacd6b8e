//! The interactive login of an HTTP or SSE server: discover its authorization server
//! (protected resource metadata, then the server's own metadata), pick the client (the
//! configured `oauth.client_id`; else the one Larik registered there before, when its
//! redirect port is free again; else a new dynamic registration), listen for the redirect
//! on 127.0.0.1, and build the authorization URL with PKCE. [`PendingLogin::finish`] then
//! waits for the browser, exchanges the code for tokens and keeps everything in the
//! server's login file. Nothing here opens a browser: callers decide (see
//! [`super::open_browser`]).

use std::path::Path;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
};

use super::callback::CallbackListener;
use super::store::{ClientRecord, TokenFile};
use crate::spec::{ServerSpec, TransportSpec};

/// The client name Larik registers with.
const CLIENT_NAME: &str = "Larik";

/// A login waiting for the user to authorize in a browser.
pub struct PendingLogin {
    server: String,
    server_url: String,
    session: AuthorizationSession,
    listener: CallbackListener,
    file: TokenFile,
    client: ClientRecord,
    metadata: AuthorizationMetadata,
}

impl std::fmt::Debug for PendingLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLogin")
            .field("server", &self.server)
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

/// The URL a remote server is reached at, or why `spec` cannot log in.
pub(crate) fn remote_url(spec: &ServerSpec) -> Result<&str, String> {
    match &spec.transport {
        TransportSpec::Http { url, .. } | TransportSpec::Sse { url, .. } => Ok(url),
        TransportSpec::Stdio { .. } => Err(format!(
            "`{}` is a stdio server; only HTTP and SSE servers log in",
            spec.name
        )),
    }
}

/// Starts logging in to `spec`'s server, keeping the login under `auth_dir`.
pub(crate) async fn begin(spec: &ServerSpec, auth_dir: &Path) -> Result<PendingLogin, String> {
    let name = &spec.name;
    let url = remote_url(spec)?;
    let file = TokenFile::new(auth_dir, name, url);
    // A damaged file is replaced by this login.
    let kept = file.read().unwrap_or_default();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|error| format!("cannot log in to `{name}`: {error}"))?;
    let metadata = manager
        .resolve_metadata()
        .await
        .map_err(|error| format!("cannot find how to log in to `{name}`: {error}"))?
        .metadata;
    manager.set_metadata(metadata.clone());
    manager.set_credential_store(file.clone());
    let oauth = &spec.oauth;
    let scopes: Vec<String> = if oauth.scopes.is_empty() {
        manager.select_scopes(None, &[])
    } else {
        oauth.scopes.clone()
    };
    let (listener, client) = if let Some(client_id) = &oauth.client_id {
        let listener = CallbackListener::bind(oauth.callback_port).await?;
        let client = ClientRecord {
            client_id: client_id.clone(),
            client_secret: oauth.client_secret.clone(),
            redirect_uri: listener.redirect_uri(),
            registered: false,
        };
        (listener, client)
    } else {
        let same_server = kept.metadata.as_ref().map(|kept| &kept.issuer) == Some(&metadata.issuer);
        let earlier = match kept
            .client
            .filter(|client| client.registered && same_server)
        {
            Some(client) => reuse(client).await,
            None => None,
        };
        match earlier {
            Some(reused) => reused,
            None => {
                let listener = CallbackListener::bind(oauth.callback_port).await?;
                let redirect_uri = listener.redirect_uri();
                let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
                let registered = manager
                    .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
                    .await
                    .map_err(|error| {
                        format!(
                            "`{name}` needs a client id: its authorization server did not register Larik ({error}); set `oauth.client_id`"
                        )
                    })?;
                let client = ClientRecord {
                    client_id: registered.client_id,
                    client_secret: registered.client_secret,
                    redirect_uri,
                    registered: true,
                };
                (listener, client)
            }
        }
    };
    let mut request = AuthorizationRequest::new(client.redirect_uri.clone())
        .with_client_name(CLIENT_NAME)
        .with_preregistered_client(client.client_id.clone())
        .with_scopes(scopes.iter().cloned());
    if let Some(secret) = &client.client_secret {
        request = request.with_client_secret(secret.clone());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, error)| format!("cannot start logging in to `{name}`: {error}"))?;
    Ok(PendingLogin {
        server: name.clone(),
        server_url: url.to_string(),
        session,
        listener,
        file,
        client,
        metadata,
    })
}

/// The client registered before, with a listener on its redirect port; `None` when the
/// port is taken now.
async fn reuse(client: ClientRecord) -> Option<(CallbackListener, ClientRecord)> {
    let port = reqwest::Url::parse(&client.redirect_uri).ok()?.port()?;
    let listener = CallbackListener::bind(Some(port)).await.ok()?;
    (listener.redirect_uri() == client.redirect_uri).then_some((listener, client))
}

impl PendingLogin {
    /// The URL the user opens to authorize Larik.
    pub fn url(&self) -> &str {
        &self.session.auth_url
    }

    /// Waits at most `within` for the browser to come back, then exchanges the code for
    /// tokens and keeps them.
    pub async fn finish(self, within: Duration) -> Result<(), String> {
        let name = &self.server;
        let callback = self.listener.wait(name, within).await?;
        self.session
            .handle_callback_with_issuer(
                &callback.code,
                &callback.state,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|error| format!("logging in to `{name}` failed: {error}"))?;
        self.file.update(|record| {
            record.url = Some(self.server_url.clone());
            record.client = Some(self.client.clone());
            record.metadata = Some(self.metadata.clone());
        })
    }
}
