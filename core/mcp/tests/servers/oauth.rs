//! OAuth against the Python SDK's server protected by the testkit's authorization server:
//! a background connection never starts a login and shows that one is needed; the login
//! discovers the authorization server, registers dynamically (only without a configured
//! client id), runs PKCE through a redirect to 127.0.0.1, and keeps the tokens in a 0600
//! file; a token the server stops accepting mid-session is refreshed and the call sent
//! once more; a token about to expire is refreshed before use; SSE carries the bearer on
//! its event stream and its messages.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use larik_mcp::{
    OAuthSpec, PendingLogin, SearchPolicy, ServerPool, ServerSpec, ServerStatus, SessionTools,
    TransportSpec,
};
use larik_testkit::oauth::{AuthServer, AuthServerOptions};
use larik_tools::{LateTools, LateToolsAsk};
use serde_json::{Value, json};

use crate::kit::*;

const LOGIN_WAIT: Duration = Duration::from_secs(120);

fn remote(name: &str, sse: bool, server: &PythonServer) -> ServerSpec {
    let transport = if sse {
        TransportSpec::Sse {
            url: server.url("/sse"),
            headers: Default::default(),
        }
    } else {
        TransportSpec::Http {
            url: server.url("/mcp"),
            headers: Default::default(),
        }
    };
    with_wait(ServerSpec::new(name, transport), Duration::from_secs(60))
}

/// What a browser does with the authorization URL: follows the redirects (the
/// authorization server consents at once) back to Larik's listener.
fn browse(login: &PendingLogin) -> tokio::task::JoinHandle<String> {
    let url = login.url().to_string();
    tokio::spawn(async move {
        let page = reqwest::get(&url)
            .await
            .expect("the browser reaches the pages");
        page.text().await.unwrap_or_default()
    })
}

/// The one login file under `root/mcp-auth`, parsed, with its mode.
fn login_file(root: &std::path::Path) -> (std::path::PathBuf, Value, u32) {
    let files: Vec<_> = std::fs::read_dir(root.join("mcp-auth"))
        .expect("the login folder")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let path = files[0].clone();
    let text = std::fs::read_to_string(&path).expect("readable");
    let mode = std::fs::metadata(&path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777;
    (path, serde_json::from_str(&text).expect("JSON"), mode)
}

fn refresh_token_of(file: &Value) -> String {
    file["credentials"]["token_response"]["refresh_token"]
        .as_str()
        .expect("a refresh token is kept")
        .to_string()
}

/// Logs in to `spec`'s server, the browser following the authorization URL; the server's
/// state once connected again.
async fn log_in(pool: &ServerPool, spec: &ServerSpec) -> ServerStatus {
    let login = pool.begin_login(spec).await.expect("the login starts");
    let browser = browse(&login);
    let status = pool
        .complete_login(spec, login, LOGIN_WAIT)
        .await
        .expect("the login completes");
    browser.await.expect("the browser");
    status
}

async fn tools_of(pool: &ServerPool, spec: &ServerSpec) -> larik_tools::LateToolSet {
    SessionTools::new(
        pool.servers_for(std::slice::from_ref(spec)),
        SearchPolicy::default(),
    )
    .tools(LateToolsAsk::default())
    .await
}

#[tokio::test]
async fn login_with_dynamic_registration_then_a_token_refused_mid_session_is_refreshed() {
    let auth = AuthServer::start(AuthServerOptions::default()).await;
    let server = PythonServer::start(&["streamable-http", "--oauth", &auth.issuer()]);
    let scratch = Scratch::new();
    let spec = remote("notes", false, &server);
    let pool = ServerPool::new(&scratch.root);

    // In the background, the server turns Larik away: it needs a login, and nothing
    // started one.
    let servers = pool.servers_for(std::slice::from_ref(&spec));
    assert_eq!(servers[0].settled().await, ServerStatus::NeedsLogin);
    assert_eq!(auth.count("register"), 0, "{:?}", auth.events());
    assert_eq!(auth.count("authorize"), 0, "{:?}", auth.events());
    let set = tools_of(&pool, &spec).await;
    assert!(set.tools.is_empty());

    let login = pool.begin_login(&spec).await.expect("the login starts");
    let url = reqwest::Url::parse(login.url()).expect("a URL");
    let query: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(query["code_challenge_method"], "S256");
    assert!(
        query["redirect_uri"].starts_with("http://127.0.0.1:"),
        "{query:?}"
    );
    assert!(
        url.as_str()
            .starts_with(&format!("{}/authorize", auth.issuer()))
    );
    let browser = browse(&login);
    let status = pool
        .complete_login(&spec, login, LOGIN_WAIT)
        .await
        .expect("the login completes");
    assert_eq!(status, ServerStatus::Ready { tools: 4 });
    assert!(
        browser
            .await
            .expect("the browser")
            .contains("You can close this tab")
    );
    assert_eq!(
        auth.events(),
        [
            "register client-1",
            "authorize client-1",
            "token authorization_code"
        ]
        .iter()
        .map(|event| event.to_string())
        .chain(auth.events().into_iter().skip(3))
        .collect::<Vec<_>>()
    );

    let (_, file, mode) = login_file(&scratch.root);
    assert_eq!(mode, 0o600);
    assert_eq!(file["client"]["client_id"], "client-1");
    let first_refresh = refresh_token_of(&file);

    let set = tools_of(&pool, &spec).await;
    assert!(set.notices.is_empty(), "{:?}", set.notices);
    let ctx = context(&scratch.root);
    let output = tool(&set, "mcp__notes__add_note")
        .run(json!({"text": "signed in"}), &ctx)
        .await;
    assert!(text_of(&output).contains("1 notes"), "{output:?}");

    // The server stops accepting the token mid-session: one refresh, one more try.
    auth.revoke_access_tokens();
    let output = tool(&set, "mcp__notes__count_notes")
        .run(json!({}), &ctx)
        .await;
    assert!(!output.is_error, "{output:?}");
    assert!(
        text_of(&output).contains("1 notes: signed in"),
        "{output:?}"
    );
    assert_eq!(auth.count("token refresh_token"), 1, "{:?}", auth.events());
    let (_, file, mode) = login_file(&scratch.root);
    assert_eq!(mode, 0o600);
    assert_ne!(
        refresh_token_of(&file),
        first_refresh,
        "the file is rewritten on refresh"
    );

    // When the refresh token is refused too, the server needs a login again.
    auth.revoke_access_tokens();
    auth.revoke_refresh_tokens();
    let output = tool(&set, "mcp__notes__count_notes")
        .run(json!({}), &ctx)
        .await;
    assert!(output.is_error, "{output:?}");
    assert_eq!(servers_status(&pool, &spec), Some(ServerStatus::NeedsLogin));
    assert_eq!(auth.count("authorize"), 1, "no login started by itself");
    pool.shutdown().await;
}

fn servers_status(pool: &ServerPool, spec: &ServerSpec) -> Option<ServerStatus> {
    pool.status_of(spec)
}

#[tokio::test]
async fn a_configured_client_is_not_registered_and_an_expiring_token_is_refreshed_before_use() {
    let auth = AuthServer::start(AuthServerOptions {
        registered_client: Some(("larik-test".into(), Some("s3cret".into()))),
        dynamic_registration: false,
        ..AuthServerOptions::default()
    })
    .await;
    let server = PythonServer::start(&["streamable-http", "--oauth", &auth.issuer()]);
    let scratch = Scratch::new();
    let mut spec = remote("notes", false, &server);
    spec.oauth = OAuthSpec {
        client_id: Some("larik-test".into()),
        client_secret: Some("s3cret".into()),
        ..OAuthSpec::default()
    };
    let pool = ServerPool::new(&scratch.root);
    assert_eq!(log_in(&pool, &spec).await, ServerStatus::Ready { tools: 4 });
    assert_eq!(auth.count("register"), 0, "{:?}", auth.events());
    assert_eq!(auth.count("authorize larik-test"), 1, "{:?}", auth.events());
    pool.shutdown().await;

    // A later process finds the token about to expire: it refreshes before its first
    // request to the server.
    let (path, mut file, _) = login_file(&scratch.root);
    file["credentials"]["token_received_at"] = json!(1);
    std::fs::write(&path, serde_json::to_string(&file).expect("JSON")).expect("written");
    let before = auth.events().len();
    let pool = ServerPool::new(&scratch.root);
    let set = tools_of(&pool, &spec).await;
    assert!(set.notices.is_empty(), "{:?}", set.notices);
    let events = auth.events();
    assert_eq!(
        events.get(before).map(String::as_str),
        Some("token refresh_token"),
        "{events:?}"
    );
    assert!(
        !events[before..]
            .iter()
            .any(|event| event == "introspect inactive"),
        "{events:?}"
    );
    let output = tool(&set, "mcp__notes__add_note")
        .run(json!({"text": "refreshed"}), &context(&scratch.root))
        .await;
    assert!(text_of(&output).contains("1 notes"), "{output:?}");
    let (_, file, mode) = login_file(&scratch.root);
    assert_eq!(mode, 0o600);
    assert_ne!(file["credentials"]["token_received_at"], json!(1));
    pool.shutdown().await;
}

#[tokio::test]
async fn sse_sends_the_bearer_on_its_event_stream_and_messages_and_refreshes_once() {
    let auth = AuthServer::start(AuthServerOptions::default()).await;
    let server = PythonServer::start(&["sse", "--oauth", &auth.issuer()]);
    let scratch = Scratch::new();
    let spec = remote("notes", true, &server);
    let pool = ServerPool::new(&scratch.root);
    let servers = pool.servers_for(std::slice::from_ref(&spec));
    assert_eq!(servers[0].settled().await, ServerStatus::NeedsLogin);

    assert_eq!(log_in(&pool, &spec).await, ServerStatus::Ready { tools: 4 });

    let set = tools_of(&pool, &spec).await;
    let ctx = context(&scratch.root);
    let output = tool(&set, "mcp__notes__add_note")
        .run(json!({"text": "over sse"}), &ctx)
        .await;
    assert!(text_of(&output).contains("1 notes"), "{output:?}");
    auth.revoke_access_tokens();
    let output = tool(&set, "mcp__notes__add_note")
        .run(json!({"text": "after refresh"}), &ctx)
        .await;
    assert!(text_of(&output).contains("2 notes"), "{output:?}");
    assert_eq!(auth.count("token refresh_token"), 1, "{:?}", auth.events());
    pool.shutdown().await;
}

#[tokio::test]
async fn a_403_for_want_of_a_scope_is_refreshed_once_and_sent_again() {
    let auth = AuthServer::start(AuthServerOptions::default()).await;
    let server = PythonServer::start(&["streamable-http", "--oauth", &auth.issuer(), "notes"]);
    let scratch = Scratch::new();
    let mut spec = remote("notes", false, &server);
    spec.oauth.scopes = vec!["other".into()];
    let pool = ServerPool::new(&scratch.root);

    // The login grants only `other`: the server answers 403, a refresh gives the same
    // scope, and the server needs a login.
    assert_eq!(log_in(&pool, &spec).await, ServerStatus::NeedsLogin);
    assert_eq!(auth.count("token refresh_token"), 1, "{:?}", auth.events());

    // Once refreshed tokens carry the scope, the 403 is cured by the one refresh.
    auth.grant_on_refresh("notes");
    let again = pool.reconnect(&spec).await;
    assert_eq!(again.settled().await, ServerStatus::Ready { tools: 4 });
    assert_eq!(auth.count("token refresh_token"), 2, "{:?}", auth.events());
    pool.shutdown().await;
}
