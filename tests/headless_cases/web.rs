//! The web tools through the binary, against servers on loopback: `web_fetch` reaching the
//! test's own server only when the personal `web.allowed_hosts` names it, running only where
//! a `WebFetch(domain:…)` rule allows it (nobody can approve in `-p`), and giving the model
//! the page as Markdown with absolute links; `web_search` asking the SearXNG instance the
//! personal settings name; a shared file switching the tools off and unable to name hosts.

use axum::Json;
use axum::Router;
use axum::extract::Query;
use axum::response::Html;
use axum::routing::get;
use larik_testkit::turn;
use serde_json::json;

use super::{Harness, stderr};

/// A site on loopback: `/docs` (HTML) and `/search` (SearXNG's JSON).
struct Site {
    base: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn site() -> Site {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let app = Router::new()
        .route(
            "/docs",
            get(|| async {
                Html(
                    "<html><head><script>alert(1)</script></head><body><nav>Home</nav>\
                     <h1>Install</h1><p>Run the <a href=\"/setup.sh\">setup script</a>.</p></body></html>",
                )
            }),
        )
        .route(
            "/search",
            get(
                |Query(params): Query<std::collections::HashMap<String, String>>| async move {
                    let query = params.get("q").cloned().unwrap_or_default();
                    let format = params.get("format").cloned().unwrap_or_default();
                    Json(json!({"query": query, "number_of_results": 0, "results": [
                        {"url": "https://example.org/answer", "title": format!("Answer ({format})"), "content": format!("All about {query}"), "engine": "duckduckgo", "engines": ["duckduckgo"], "score": 1.0, "category": "general"}
                    ], "answers": [], "suggestions": [], "unresponsive_engines": []}))
                },
            ),
        );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("serve");
    });
    Site { base, _stop: stop }
}

fn offered(harness: &Harness) -> Vec<String> {
    harness.server.requests()[0].body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_string))
        .collect()
}

/// Runs one `web_fetch` of `url` in `-p` with `args` and returns the call's result text.
async fn fetch_result(harness: &Harness, url: &str, args: &[&str]) -> String {
    harness
        .server
        .enqueue(turn().tool_call("f1", "web_fetch", json!({"url": url})));
    harness.server.enqueue(turn().text("done"));
    let mut all = vec!["-p", "read the docs"];
    all.extend_from_slice(args);
    let output = harness.run(&all).await;
    assert!(output.status.success(), "{}", stderr(&output));
    harness.server.requests()[1]
        .tool_result_text("f1")
        .expect("the call's result")
}

#[tokio::test(flavor = "multi_thread")]
async fn web_fetch_reaches_an_allowed_local_host_where_a_domain_rule_lets_it_run() {
    let site = site().await;
    let url = format!("{}/docs", site.base);
    let allow = ["--allowedTools", "WebFetch(domain:127.0.0.1)"];

    // Allowed by the rule, but this machine is refused until the user names it.
    let harness = Harness::new().await;
    let result = fetch_result(&harness, &url, &allow).await;
    assert!(result.starts_with("Refused: "), "{result}");
    assert!(result.contains("web.allowed_hosts"), "{result}");

    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"web": {"allowed_hosts": ["127.0.0.1"]}}"#,
    );
    let result = fetch_result(&harness, &url, &allow).await;
    assert!(
        result.starts_with(&format!("{url} (HTTP 200, ")),
        "{result}"
    );
    assert!(result.contains("# Install"), "{result}");
    assert!(
        result.contains(&format!("[setup script]({}/setup.sh)", site.base)),
        "{result}"
    );
    assert!(
        !result.contains("alert") && !result.contains("Home"),
        "{result}"
    );

    // Without a rule the call needs approval, which nobody can give in `-p`.
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"web": {"allowed_hosts": ["127.0.0.1"]}}"#,
    );
    let result = fetch_result(&harness, &url, &[]).await;
    assert!(result.contains("needs the user's approval"), "{result}");
    assert!(
        result.contains("--allowedTools \"WebFetch(domain:127.0.0.1)\""),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn web_search_asks_the_configured_service() {
    let site = site().await;
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        &json!({"web": {"search": {"backend": "searxng", "url": site.base}}}).to_string(),
    );
    harness
        .server
        .enqueue(turn().tool_call("s1", "web_search", json!({"query": "larik agents"})));
    harness.server.enqueue(turn().text("done"));
    let output = harness
        .run(&["-p", "search", "--allowedTools", "WebSearch"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = harness.server.requests()[1]
        .tool_result_text("s1")
        .expect("the call's result");
    assert_eq!(
        result,
        "SearXNG results for \"larik agents\":\n\n1. Answer (json)\n   https://example.org/answer\n   All about larik agents\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shared_file_switches_the_web_tools_off_and_cannot_name_hosts() {
    let harness = Harness::new().await;
    harness.write_config(
        harness.cwd().join(".claude/settings.json"),
        r#"{"web": {"allowed_hosts": ["127.0.0.1"]}}"#,
    );
    let site = site().await;
    let url = format!("{}/docs", site.base);
    let result = fetch_result(&harness, &url, &["--allowedTools", "WebFetch"]).await;
    assert!(result.starts_with("Refused: "), "{result}");
    let names = offered(&harness);
    assert!(
        names.contains(&"web_fetch".to_string()) && names.contains(&"web_search".to_string()),
        "{names:?}"
    );

    let harness = Harness::new().await;
    harness.write_config(
        harness.cwd().join(".larik/settings.json"),
        r#"{"web": {"enabled": false}}"#,
    );
    harness.server.enqueue(turn().text("done"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let names = offered(&harness);
    assert!(
        !names.iter().any(|name| name.starts_with("web_")),
        "{names:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_browser_opens_an_allowed_page_and_its_screenshot_reaches_the_model() {
    let site = site().await;
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"web": {"allowed_hosts": ["127.0.0.1"]}}"#,
    );
    harness.server.enqueue(turn().tool_call(
        "n1",
        "browser_navigate",
        json!({"url": format!("{}/docs", site.base)}),
    ));
    harness
        .server
        .enqueue(turn().tool_call("s1", "browser_snapshot", json!({})));
    harness
        .server
        .enqueue(turn().tool_call("p1", "browser_screenshot", json!({})));
    harness.server.enqueue(turn().text("done"));
    let output = harness
        .run(&[
            "-p",
            "look at the docs",
            "--allowedTools",
            "browser_navigate(domain:127.0.0.1)",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = harness.server.requests();
    let opened = requests[1].tool_result_text("n1").expect("navigate result");
    assert!(opened.starts_with("Opened. The tab shows"), "{opened}");
    let snapshot = requests[2].tool_result_text("s1").expect("snapshot result");
    assert!(snapshot.contains("# Install"), "{snapshot}");
    assert!(
        snapshot.contains("link \"setup script\" → /setup.sh [ref="),
        "{snapshot}"
    );
    // The screenshot is an image block in the result the model reads.
    let messages = requests[3].body["messages"].to_string();
    assert!(messages.contains("\"type\":\"image\""), "{messages}");
    assert!(
        messages.contains("\"media_type\":\"image/jpeg\""),
        "{messages}"
    );
}
