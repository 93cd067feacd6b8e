//! Logged-in connections, which never ask the user anything. A server with a kept login
//! gets the bearer token on every request (streamable HTTP through the SDK's `AuthClient`,
//! the SSE transport through [`Bearer`]); a token about to expire is refreshed first and
//! the refreshed tokens rewrite the login file; a request the server refuses with 401 is
//! refreshed and sent once more. When that is not enough (no login, a refused refresh
//! token, a 403), the connection notes that the server needs a login, which `/mcp` shows;
//! a browser opens only on the user's `login`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::transport::auth::{AuthError, AuthorizationManager, OAuthClientConfig};
use tokio::sync::Mutex;

use super::store::TokenFile;
use crate::spec::OAuthSpec;

/// Set once a server turned a request away for want of a (valid) login.
pub(crate) type LoginNeeded = Arc<AtomicBool>;

/// The authorization of a server Larik logged in to, from its login file; `None` when
/// there is no usable login (none kept, or kept for another configured client).
pub(crate) async fn kept_login(
    name: &str,
    url: &str,
    oauth: &OAuthSpec,
    auth_dir: &Path,
) -> Result<Option<AuthorizationManager>, String> {
    let file = TokenFile::new(auth_dir, name, url);
    if !file.exists() {
        return Ok(None);
    }
    let record = file.read()?;
    let (Some(client), Some(metadata), Some(_)) =
        (record.client, record.metadata, record.credentials)
    else {
        return Ok(None);
    };
    if oauth
        .client_id
        .as_ref()
        .is_some_and(|configured| *configured != client.client_id)
    {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|error| format!("cannot use the login of `{name}`: {error}"))?;
    manager.set_metadata(metadata);
    manager.set_credential_store(file);
    let mut config = OAuthClientConfig::new(client.client_id, client.redirect_uri);
    if let Some(secret) = client.client_secret {
        config = config.with_client_secret(secret);
    }
    manager
        .configure_client(config)
        .map_err(|error| format!("cannot use the login of `{name}`: {error}"))?;
    Ok(Some(manager))
}

/// Bearer tokens for the SSE transport.
#[derive(Clone)]
pub(crate) struct Bearer {
    manager: Arc<Mutex<AuthorizationManager>>,
    login_needed: LoginNeeded,
}

impl Bearer {
    pub(crate) fn new(manager: AuthorizationManager, login_needed: LoginNeeded) -> Self {
        Bearer {
            manager: Arc::new(Mutex::new(manager)),
            login_needed,
        }
    }

    /// The token to send now, refreshed first when it is about to expire; `None` when
    /// there is none to send.
    pub(crate) async fn token(&self) -> Option<String> {
        match self.manager.lock().await.get_access_token().await {
            Ok(token) => Some(token),
            Err(AuthError::AuthorizationRequired) => {
                self.login_needed.store(true, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        }
    }

    /// A new token after the server refused `rejected`; `None` (and the login noted as
    /// needed) when refreshing gives none.
    pub(crate) async fn renewed(&self, rejected: &str) -> Option<String> {
        let refreshed = self.manager.lock().await.refresh_token().await;
        let fresh = refreshed
            .ok()
            .and_then(|tokens| serde_json::to_value(tokens).ok())
            .and_then(|tokens| tokens.get("access_token")?.as_str().map(str::to_string))
            .filter(|fresh| fresh != rejected);
        if fresh.is_none() {
            self.login_needed.store(true, Ordering::Relaxed);
        }
        fresh
    }
}
