//! The browser through `larik acp` and the TypeScript SDK: the editor answers the
//! navigation's permission question, and the screenshot's tool call carries the picture as
//! ACP image content the editor can show.

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use serde_json::json;

use crate::kit::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_screenshot_reaches_the_editor_as_an_image() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let app = Router::new().route(
        "/",
        get(|| async { Html("<!doctype html><title>Hello page</title><h1>Hello</h1>") }),
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

    let harness = Harness::new().await;
    let config = harness.data.path().join(".config/larik/config.json");
    std::fs::create_dir_all(config.parent().expect("folder")).expect("mkdir");
    std::fs::write(&config, r#"{"web": {"allowed_hosts": ["127.0.0.1"]}}"#).expect("config");
    harness.server.enqueue(one_call(
        "nav",
        "browser_navigate",
        json!({"url": format!("{base}/")}),
    ));
    harness
        .server
        .enqueue(one_call("shot", "browser_screenshot", json!({})));
    harness.server.enqueue(answer("seen"));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({
                "permissions": ["allow_once"],
                "steps": [initialize(false), new_session(), prompt("p", "look at the page")],
            }),
        )
        .await;
    assert_eq!(log.response("p")["stopReason"], "end_turn");
    let asked = log.requests("session/request_permission");
    assert_eq!(asked.len(), 1, "only the navigation asks: {asked:?}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "nav");
    let navigation = log.tool_call("nav");
    assert_eq!(navigation["status"], "completed", "{navigation}");
    assert_eq!(navigation["kind"], "fetch", "{navigation}");
    let shot = log.tool_call("shot");
    assert_eq!(shot["status"], "completed", "{shot}");
    let image = shot["content"]
        .as_array()
        .expect("content")
        .iter()
        .find(|part| part["content"]["type"] == "image")
        .unwrap_or_else(|| panic!("an image in {shot}"));
    assert_eq!(image["content"]["mimeType"], "image/jpeg");
    assert!(
        image["content"]["data"]
            .as_str()
            .is_some_and(|data| data.starts_with("/9j/")),
        "base64 JPEG data: {image}"
    );
    let _ = stop.send(());
}
