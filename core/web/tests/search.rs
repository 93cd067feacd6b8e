//! `web_search` against servers on loopback answering in each service's own format: Brave's
//! Search API (`X-Subscription-Token`, `web.results[].description` with `<strong>` marks),
//! Tavily (`POST` with a bearer key, `results[].content`) and SearXNG (`/search?format=json`,
//! `results[].content`). Each server checks the request as the real service would and
//! refuses a wrong one, so a result proves the request was right. Also: domain filters, an
//! error status, a body that is not JSON, and the message when no service is configured.

use std::path::Path;
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use larik_tools::{Tool, ToolContext, ToolOutput};
use larik_web::{SearchBackend, WebSearchTool};
use serde_json::{Value, json};

struct Server {
    base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

type Params = Query<std::collections::HashMap<String, String>>;

/// Brave's answer: `web.results`, descriptions with HTML marks.
async fn brave(headers: HeaderMap, Query(params): Params) -> impl IntoResponse {
    if headers
        .get("x-subscription-token")
        .and_then(|v| v.to_str().ok())
        != Some("brave-key")
    {
        return (StatusCode::UNAUTHORIZED, Json(json!({"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401}}))).into_response();
    }
    let query = params.get("q").cloned().unwrap_or_default();
    let Some(count) = params.get("count").and_then(|c| c.parse::<usize>().ok()) else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"type": "ErrorResponse", "error": {"code": "VALIDATION", "detail": "count is required here"}})),
        )
            .into_response();
    };
    if query == "nothing at all" {
        return Json(json!({"type": "search", "query": {"original": query}, "mixed": {"type": "mixed", "main": []}})).into_response();
    }
    let results: Vec<Value> = [
        ("The Rust Programming Language", "https://doc.rust-lang.org/book/", "The <strong>Rust</strong> book &amp; more"),
        ("Rust docs.rs", "https://docs.rs/tokio", "Documentation for <strong>tokio</strong>"),
        ("Rust on a blog", "https://blog.example.com/rust", "A post about &quot;Rust&quot;"),
    ]
    .iter()
    .take(count)
    .map(|(title, url, description)| json!({"title": title, "url": url, "description": description, "is_source_local": false, "type": "search_result", "profile": {"name": "x"}, "language": "en", "family_friendly": true}))
    .collect();
    Json(json!({"type": "search", "query": {"original": query, "more_results_available": false}, "web": {"type": "search", "results": results, "family_friendly": true}})).into_response()
}

/// Tavily's answer: `results[].content` and `score`.
async fn tavily(headers: HeaderMap, Json(body): Json<Value>) -> impl IntoResponse {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer tvly-key") {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"detail": {"error": "Unauthorized: missing or invalid API key."}})),
        )
            .into_response();
    }
    let Some(query) = body.get("query").and_then(Value::as_str) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"detail": {"error": "query is required"}})),
        )
            .into_response();
    };
    let max = body.get("max_results").and_then(Value::as_u64).unwrap_or(5) as usize;
    let results: Vec<Value> = (1..=3)
        .take(max)
        .map(|n| json!({"title": format!("Tavily hit {n}"), "url": format!("https://t{n}.example.org/page"), "content": format!("About {query}, part {n}"), "score": 0.9, "raw_content": null}))
        .collect();
    Json(json!({"query": query, "follow_up_questions": null, "answer": null, "images": [], "results": results, "response_time": 0.8})).into_response()
}

/// SearXNG's answer: `results[].content`, only with `format=json`.
async fn searxng(Query(params): Params) -> impl IntoResponse {
    if params.get("format").map(String::as_str) != Some("json") {
        return (StatusCode::FORBIDDEN, "403 Forbidden").into_response();
    }
    let query = params.get("q").cloned().unwrap_or_default();
    if query == "broken" {
        return (StatusCode::OK, "<html>not json</html>").into_response();
    }
    Json(json!({"query": query, "number_of_results": 0, "results": [
        {"url": "https://searx.example.net/a", "title": "First", "content": format!("{query} explained"), "engine": "duckduckgo", "engines": ["duckduckgo"], "score": 1.0, "category": "general", "parsed_url": ["https", "searx.example.net", "/a", "", "", ""]},
        {"url": "https://other.example.net/b", "title": "Second", "engine": "bing", "engines": ["bing"], "score": 0.5, "category": "general"}
    ], "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}))
    .into_response()
}

async fn serve() -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let app = Router::new()
        .route("/res/v1/web/search", get(brave))
        .route("/search", post(tavily))
        .route("/searx/search", get(searxng));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("serve");
    });
    Server { base, _stop: stop }
}

fn context() -> ToolContext {
    let cwd = Path::new("/").to_path_buf();
    ToolContext {
        sandbox: Arc::new(larik_sandbox::Sandbox::unconfined(&cwd)),
        cwd,
        cancel: tokio_util::sync::CancellationToken::new(),
        limits: larik_tools::ToolLimits::default(),
        reads: Arc::default(),
        hidden: None,
        files: Arc::new(larik_tools::DiskFiles),
        feedback: None,
        checkpoint: None,
        call_id: String::new(),
        agent: None,
    }
}

async fn run(backend: Option<SearchBackend>, input: Value) -> ToolOutput {
    WebSearchTool::new(backend).run(input, &context()).await
}

fn text(output: &ToolOutput) -> String {
    larik_protocol::transcript::result_text(&output.content)
}

#[tokio::test]
async fn brave_results_come_in_one_shape_with_marks_removed() {
    let server = serve().await;
    let backend = SearchBackend::Brave {
        url: format!("{}/res/v1/web/search", server.base),
        key: "brave-key".into(),
    };
    let output = run(Some(backend.clone()), json!({"query": "rust"})).await;
    assert!(!output.is_error, "{}", text(&output));
    assert_eq!(
        text(&output),
        "Brave Search results for \"rust\":\n\
         \n1. The Rust Programming Language\n   https://doc.rust-lang.org/book/\n   The Rust book & more\n\
         \n2. Rust docs.rs\n   https://docs.rs/tokio\n   Documentation for tokio\n\
         \n3. Rust on a blog\n   https://blog.example.com/rust\n   A post about \"Rust\"\n"
    );

    let filtered = run(
        Some(backend.clone()),
        json!({"query": "rust", "allowed_domains": ["docs.rs", "example.com"], "blocked_domains": ["blog.example.com"]}),
    )
    .await;
    let filtered = text(&filtered);
    assert!(filtered.contains("1. Rust docs.rs"), "{filtered}");
    assert!(!filtered.contains("blog.example.com"), "{filtered}");
    assert!(!filtered.contains("doc.rust-lang.org"), "{filtered}");

    let few = text(
        &run(
            Some(backend.clone()),
            json!({"query": "rust", "max_results": 1}),
        )
        .await,
    );
    assert!(few.contains("1. The Rust") && !few.contains("2. "), "{few}");

    let none = run(Some(backend), json!({"query": "nothing at all"})).await;
    assert!(!none.is_error);
    assert_eq!(
        text(&none),
        "Brave Search found nothing for \"nothing at all\"."
    );

    let wrong_key = SearchBackend::Brave {
        url: format!("{}/res/v1/web/search", server.base),
        key: "other".into(),
    };
    let refused = run(Some(wrong_key), json!({"query": "rust"})).await;
    assert!(refused.is_error);
    assert!(
        text(&refused).starts_with("Brave Search answered 401 Unauthorized: ")
            && text(&refused).contains("SUBSCRIPTION_TOKEN_INVALID"),
        "{}",
        text(&refused)
    );
}

#[tokio::test]
async fn tavily_and_searxng_results_come_in_the_same_shape() {
    let server = serve().await;
    let tavily = SearchBackend::Tavily {
        url: format!("{}/search", server.base),
        key: "tvly-key".into(),
    };
    let output = run(Some(tavily), json!({"query": "axum", "max_results": 2})).await;
    assert_eq!(
        text(&output),
        "Tavily results for \"axum\":\n\
         \n1. Tavily hit 1\n   https://t1.example.org/page\n   About axum, part 1\n\
         \n2. Tavily hit 2\n   https://t2.example.org/page\n   About axum, part 2\n"
    );

    let searxng = SearchBackend::Searxng {
        url: format!("{}/searx/", server.base),
    };
    let output = run(Some(searxng.clone()), json!({"query": "tokio"})).await;
    assert_eq!(
        text(&output),
        "SearXNG results for \"tokio\":\n\
         \n1. First\n   https://searx.example.net/a\n   tokio explained\n\
         \n2. Second\n   https://other.example.net/b\n"
    );
    let broken = run(Some(searxng), json!({"query": "broken"})).await;
    assert!(broken.is_error);
    assert!(
        text(&broken).starts_with("SearXNG's answer is not JSON"),
        "{}",
        text(&broken)
    );
}

#[tokio::test]
async fn without_a_service_or_a_query_the_call_says_what_is_missing() {
    let output = run(None, json!({"query": "rust"})).await;
    assert!(output.is_error);
    assert!(text(&output).contains("No web search service is configured"));
    assert!(text(&output).contains("BRAVE_API_KEY, TAVILY_API_KEY or SEARXNG_URL"));

    let backend = SearchBackend::Searxng {
        url: "http://127.0.0.1:9".into(),
    };
    let output = run(Some(backend.clone()), json!({"query": "  "})).await;
    assert!(output.is_error);
    assert_eq!(text(&output), "`query` is required: what to search for.");
    let output = run(Some(backend), json!({"query": "x", "max_results": "five"})).await;
    assert!(output.is_error);
    assert_eq!(
        text(&output),
        "`max_results` must be a whole number, not \"five\""
    );
}
