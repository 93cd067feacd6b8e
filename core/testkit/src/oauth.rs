//! An OAuth 2.1 authorization server on loopback, for tests of MCP servers that need a
//! login. It publishes its metadata (RFC 8414), registers clients dynamically (RFC 7591)
//! or knows one registered beforehand, runs the authorization code flow with PKCE (S256
//! only; the user's consent is given at once, so a client following the redirect gets the
//! code), issues access and refresh tokens (a refresh rotates the refresh token), and lets
//! a resource server check a token by introspection (RFC 7662). A test can revoke every
//! access token issued so far, as a server does when a session outlives its token, and
//! read what the server was asked, in order.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;
use tokio::task::JoinHandle;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct AuthServerOptions {
    /// Seconds an access token lives (`expires_in`).
    pub access_token_lifetime: u64,
    /// A client registered beforehand: its id and, for a confidential client, its secret.
    /// It may redirect to any loopback address.
    pub registered_client: Option<(String, Option<String>)>,
    /// Whether the metadata offers dynamic registration.
    pub dynamic_registration: bool,
}

impl Default for AuthServerOptions {
    fn default() -> Self {
        AuthServerOptions {
            access_token_lifetime: 3600,
            registered_client: None,
            dynamic_registration: true,
        }
    }
}

/// A client the server knows.
#[derive(Debug, Clone)]
struct Client {
    secret: Option<String>,
    /// Where it may be sent back to; empty for the client registered beforehand, which may
    /// use any loopback redirect.
    redirect_uris: Vec<String>,
}

/// What an authorization code or refresh token stands for.
#[derive(Debug, Clone)]
struct Grant {
    client_id: String,
    resource: Option<String>,
    scope: Option<String>,
}

/// A code waiting to be exchanged.
#[derive(Debug, Clone)]
struct PendingCode {
    grant: Grant,
    redirect_uri: String,
    challenge: String,
}

#[derive(Debug, Default)]
struct State {
    clients: HashMap<String, Client>,
    codes: HashMap<String, PendingCode>,
    /// Access tokens and whether each is still valid.
    access_tokens: HashMap<String, (Grant, bool)>,
    refresh_tokens: HashMap<String, Grant>,
    issued: u64,
    events: Vec<String>,
    /// The scope refreshed tokens get from now on, when set.
    scope_on_refresh: Option<String>,
}

impl State {
    fn fresh(&mut self, kind: &str) -> String {
        self.issued += 1;
        format!("{kind}-{}", self.issued)
    }
}

struct Shared {
    options: AuthServerOptions,
    base_url: String,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The running server. Dropping it stops it.
pub struct AuthServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl AuthServer {
    /// Binds `127.0.0.1:0` and serves in a tokio task.
    ///
    /// # Panics
    /// When no loopback port can be bound, which leaves a test nothing to run against.
    pub async fn start(options: AuthServerOptions) -> AuthServer {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("binding a loopback port for the authorization server");
        let addr = listener
            .local_addr()
            .expect("a bound listener has a local address");
        let mut state = State::default();
        if let Some((id, secret)) = &options.registered_client {
            state.clients.insert(
                id.clone(),
                Client {
                    secret: secret.clone(),
                    redirect_uris: Vec::new(),
                },
            );
        }
        let shared = Arc::new(Shared {
            options,
            base_url: format!("http://{addr}"),
            state: Mutex::new(state),
        });
        let handler_shared = Arc::clone(&shared);
        let app = Router::new().fallback(move |request: Request| {
            let shared = Arc::clone(&handler_shared);
            async move { handle(&shared, request).await }
        });
        // An accept error ends the server; the tests then see connection failures.
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        AuthServer { addr, shared, task }
    }

    /// Its issuer URL, `http://127.0.0.1:<port>`.
    pub fn issuer(&self) -> String {
        self.shared.base_url.clone()
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Makes every access token issued so far invalid (refresh tokens stay good).
    pub fn revoke_access_tokens(&self) {
        let mut state = self.shared.state();
        for (_, valid) in state.access_tokens.values_mut() {
            *valid = false;
        }
        state.events.push("revoked access tokens".to_string());
    }

    /// From now on, tokens issued by a refresh carry `scope` (as when the user was granted
    /// more meanwhile).
    pub fn grant_on_refresh(&self, scope: &str) {
        self.shared.state().scope_on_refresh = Some(scope.to_string());
    }

    /// Makes every refresh token issued so far invalid.
    pub fn revoke_refresh_tokens(&self) {
        let mut state = self.shared.state();
        state.refresh_tokens.clear();
        state.events.push("revoked refresh tokens".to_string());
    }

    /// What it was asked, in order: `register <client>`, `authorize <client>`,
    /// `token authorization_code`, `token refresh_token`, `introspect active|inactive`,
    /// and refusals as `refused <why>`.
    pub fn events(&self) -> Vec<String> {
        self.shared.state().events.clone()
    }

    /// How many of its events start with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.events()
            .iter()
            .filter(|event| event.starts_with(prefix))
            .count()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The form or query pairs of `text`.
fn pairs(text: &str) -> HashMap<String, String> {
    form_urlencoded::parse(text.as_bytes())
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect()
}

fn json_response(status: StatusCode, body: Value) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

/// An OAuth error answer, noted in the events.
fn refuse(shared: &Shared, status: StatusCode, error: &str, why: &str) -> Response {
    shared.state().events.push(format!("refused {why}"));
    json_response(status, json!({ "error": error, "error_description": why }))
}

async fn handle(shared: &Shared, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1024 * 1024)
        .await
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&body).into_owned();
    let query = parts.uri.query().unwrap_or_default().to_string();
    match (&parts.method, parts.uri.path()) {
        (&Method::GET, "/.well-known/oauth-authorization-server") => metadata(shared),
        (&Method::POST, "/register") if shared.options.dynamic_registration => {
            register(shared, &body)
        }
        (&Method::GET, "/authorize") => authorize(shared, &pairs(&query)),
        (&Method::POST, "/token") => {
            let basic = parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.strip_prefix("Basic "))
                .and_then(|encoded| {
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .ok()
                })
                .and_then(|decoded| String::from_utf8(decoded).ok());
            token(shared, &pairs(&body), basic.as_deref())
        }
        (&Method::POST, "/introspect") => introspect(shared, &pairs(&body)),
        _ => Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .unwrap_or_default(),
    }
}

fn metadata(shared: &Shared) -> Response {
    let base = &shared.base_url;
    let mut metadata = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "introspection_endpoint": format!("{base}/introspect"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "scopes_supported": ["notes"],
    });
    if shared.options.dynamic_registration {
        metadata["registration_endpoint"] = json!(format!("{base}/register"));
    }
    json_response(StatusCode::OK, metadata)
}

fn register(shared: &Shared, body: &str) -> Response {
    let Ok(request) = serde_json::from_str::<Value>(body) else {
        return refuse(
            shared,
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "registration body is not JSON",
        );
    };
    let redirect_uris: Vec<String> = request["redirect_uris"]
        .as_array()
        .map(|uris| {
            uris.iter()
                .filter_map(|uri| uri.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return refuse(
            shared,
            StatusCode::BAD_REQUEST,
            "invalid_redirect_uri",
            "no redirect_uris",
        );
    }
    let mut state = shared.state();
    let client_id = state.fresh("client");
    state.clients.insert(
        client_id.clone(),
        Client {
            secret: None,
            redirect_uris: redirect_uris.clone(),
        },
    );
    state.events.push(format!("register {client_id}"));
    drop(state);
    json_response(
        StatusCode::CREATED,
        json!({
            "client_id": client_id,
            "client_name": request["client_name"],
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }),
    )
}

/// Whether `uri` is a loopback HTTP redirect (what a registered-beforehand client may use).
fn is_loopback_redirect(uri: &str) -> bool {
    uri.strip_prefix("http://127.0.0.1:")
        .or_else(|| uri.strip_prefix("http://localhost:"))
        .is_some()
}

fn authorize(shared: &Shared, query: &HashMap<String, String>) -> Response {
    let get = |name: &str| query.get(name).cloned().unwrap_or_default();
    let client_id = get("client_id");
    let redirect_uri = get("redirect_uri");
    let Some(client) = shared.state().clients.get(&client_id).cloned() else {
        return refuse(
            shared,
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            "unknown client",
        );
    };
    let allowed = if client.redirect_uris.is_empty() {
        is_loopback_redirect(&redirect_uri)
    } else {
        client.redirect_uris.contains(&redirect_uri)
    };
    if !allowed {
        return refuse(
            shared,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "redirect_uri not registered",
        );
    }
    if get("response_type") != "code" {
        return refuse(
            shared,
            StatusCode::BAD_REQUEST,
            "unsupported_response_type",
            "response_type is not code",
        );
    }
    if get("code_challenge_method") != "S256" || get("code_challenge").is_empty() {
        return refuse(
            shared,
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "no S256 code challenge",
        );
    }
    let mut state = shared.state();
    let code = state.fresh("code");
    state.codes.insert(
        code.clone(),
        PendingCode {
            grant: Grant {
                client_id: client_id.clone(),
                resource: query.get("resource").cloned(),
                scope: query.get("scope").cloned(),
            },
            redirect_uri: redirect_uri.clone(),
            challenge: get("code_challenge"),
        },
    );
    state.events.push(format!("authorize {client_id}"));
    drop(state);
    let mut location = format!("{redirect_uri}?code={code}");
    if let Some(csrf) = query.get("state") {
        location.push_str("&state=");
        location.extend(form_urlencoded::byte_serialize(csrf.as_bytes()));
    }
    Response::builder()
        .status(StatusCode::FOUND)
        .header(header::LOCATION, location)
        .body(Body::empty())
        .unwrap_or_default()
}

/// Checks the client's authentication at the token endpoint: a public client names
/// itself, a confidential one also proves its secret (in the form or with Basic).
fn authenticated_client(
    shared: &Shared,
    form: &HashMap<String, String>,
    basic: Option<&str>,
) -> Result<String, &'static str> {
    let (client_id, secret) = match basic.and_then(|pair| pair.split_once(':')) {
        Some((id, secret)) => (id.to_string(), Some(secret.to_string())),
        None => (
            form.get("client_id").cloned().unwrap_or_default(),
            form.get("client_secret").cloned(),
        ),
    };
    let state = shared.state();
    let client = state.clients.get(&client_id).ok_or("unknown client")?;
    match &client.secret {
        Some(expected) if secret.as_deref() != Some(expected) => Err("wrong client secret"),
        _ => Ok(client_id),
    }
}

fn token(shared: &Shared, form: &HashMap<String, String>, basic: Option<&str>) -> Response {
    let client_id = match authenticated_client(shared, form, basic) {
        Ok(id) => id,
        Err(why) => return refuse(shared, StatusCode::UNAUTHORIZED, "invalid_client", why),
    };
    let grant_type = form.get("grant_type").cloned().unwrap_or_default();
    let grant = match grant_type.as_str() {
        "authorization_code" => {
            let code = form.get("code").cloned().unwrap_or_default();
            let Some(pending) = shared.state().codes.remove(&code) else {
                return refuse(
                    shared,
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown code",
                );
            };
            if pending.grant.client_id != client_id
                || form.get("redirect_uri") != Some(&pending.redirect_uri)
            {
                return refuse(
                    shared,
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "code issued to another client or redirect",
                );
            }
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let digest = sha2::Sha256::digest(verifier.as_bytes());
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            if challenge != pending.challenge {
                return refuse(
                    shared,
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "PKCE verifier does not match",
                );
            }
            pending.grant
        }
        "refresh_token" => {
            let presented = form.get("refresh_token").cloned().unwrap_or_default();
            let Some(mut grant) = shared.state().refresh_tokens.remove(&presented) else {
                return refuse(
                    shared,
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "unknown refresh token",
                );
            };
            if grant.client_id != client_id {
                return refuse(
                    shared,
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "refresh token of another client",
                );
            }
            if let Some(scope) = shared.state().scope_on_refresh.clone() {
                grant.scope = Some(scope);
            }
            grant
        }
        _ => {
            return refuse(
                shared,
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "unknown grant type",
            );
        }
    };
    let mut state = shared.state();
    let access_token = state.fresh("access");
    let refresh_token = state.fresh("refresh");
    state
        .access_tokens
        .insert(access_token.clone(), (grant.clone(), true));
    state
        .refresh_tokens
        .insert(refresh_token.clone(), grant.clone());
    state.events.push(format!("token {grant_type}"));
    drop(state);
    let mut body = json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": shared.options.access_token_lifetime,
        "refresh_token": refresh_token,
    });
    if let Some(scope) = grant.scope {
        body["scope"] = json!(scope);
    }
    json_response(StatusCode::OK, body)
}

fn introspect(shared: &Shared, form: &HashMap<String, String>) -> Response {
    let presented = form.get("token").cloned().unwrap_or_default();
    let mut state = shared.state();
    let found = state.access_tokens.get(&presented).cloned();
    let body = match found {
        Some((grant, true)) => {
            state.events.push("introspect active".to_string());
            json!({
                "active": true,
                "client_id": grant.client_id,
                "scope": grant.scope.unwrap_or_default(),
                "aud": grant.resource,
                "token_type": "Bearer",
            })
        }
        _ => {
            state.events.push("introspect inactive".to_string());
            json!({ "active": false })
        }
    };
    drop(state);
    json_response(StatusCode::OK, body)
}
