//! Benchmarks of the browser tools against Debian's Chromium, headless, as the tools run it:
//! from nothing to the first snapshot of a small page (Chromium started with a fresh
//! profile, the page opened, the outline taken; the browser shut down after each run), and
//! one `browser_snapshot` of a page of 2,000 elements (a table of 400 rows, each with a
//! link, a button, a text field, a checkbox and a cell of text) in a running browser. Pages
//! are served on loopback. Run with `cargo bench -p larik-browser --bench browser`.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use larik_browser::{Browser, BrowserOptions, browser_tools};
use larik_testkit::bench::{Samples, within};
use larik_tools::Tool;
use serde_json::json;

#[path = "../tests/support/setup.rs"]
mod setup;

use setup::{chromium, tool_context};

const STARTS: usize = 10;
const SNAPSHOTS: usize = 30;

fn big_page() -> String {
    let mut rows = String::new();
    for n in 0..400 {
        rows.push_str(&format!(
            "<tr><td><a href=\"/item/{n}\">Item {n}</a></td><td><button>Buy {n}</button></td>\
             <td><input placeholder=\"Note {n}\"></td><td><input type=\"checkbox\"></td>\
             <td>Row {n} text</td></tr>"
        ));
    }
    format!(
        "<!doctype html><html><head><title>Big</title></head><body><h1>Catalogue</h1><table>{rows}</table></body></html>"
    )
}

fn tool<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|tool| tool.name() == name)
        .expect("the tool")
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let executable = chromium();
    let big = big_page();
    let ctx = tool_context();
    let (mut starts, mut snapshots) = (Samples::new(), Samples::new());
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let app = Router::new()
            .route(
                "/small",
                get(|| async {
                    Html("<!doctype html><title>Small</title><h1>Hello</h1><a href=\"/x\">A link</a><button>Go</button>")
                }),
            )
            .route("/big", get(move || async move { Html(big) }));
        tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
        let allowed = vec!["127.0.0.1".to_string()];

        for _ in 0..STARTS {
            let profile = tempfile::tempdir().expect("profile");
            let browser = Arc::new(Browser::new(BrowserOptions {
                executable: executable.clone(),
                headless: true,
                profile_dir: profile.path().join("profile"),
                env: Vec::new(),
            }));
            let tools = browser_tools(&browser, allowed.clone());
            let started = Instant::now();
            let opened = tool(&tools, "browser_navigate")
                .run(json!({"url": format!("{base}/small")}), &ctx)
                .await;
            assert!(!opened.is_error, "{:?}", opened.content);
            let snapshot = tool(&tools, "browser_snapshot").run(json!({}), &ctx).await;
            starts.push(started.elapsed());
            assert!(larik_protocol::transcript::result_text(&snapshot.content).contains("# Hello"));
            browser.shut_down().await;
        }

        let profile = tempfile::tempdir().expect("profile");
        let browser = Arc::new(Browser::new(BrowserOptions {
            executable: executable.clone(),
            headless: true,
            profile_dir: profile.path().join("profile"),
            env: Vec::new(),
        }));
        let tools = browser_tools(&browser, allowed);
        let opened = tool(&tools, "browser_navigate")
            .run(json!({"url": format!("{base}/big")}), &ctx)
            .await;
        assert!(!opened.is_error);
        // The first snapshot gives every element its ref; later ones reuse them.
        for _ in 0..3 {
            tool(&tools, "browser_snapshot").run(json!({}), &ctx).await;
        }
        for _ in 0..SNAPSHOTS {
            let started = Instant::now();
            let snapshot = tool(&tools, "browser_snapshot").run(json!({}), &ctx).await;
            snapshots.push(started.elapsed());
            let text = larik_protocol::transcript::result_text(&snapshot.content);
            assert!(text.contains("Item 0") && text.contains("[The snapshot stops at"), "cut at 20k");
        }
        browser.shut_down().await;
    });
    println!("| Browser tools | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!("{}", starts.row("start → first snapshot (small page)"));
    println!("{}", snapshots.row("snapshot of a 2,000-element page"));
    within(
        "browser start → first snapshot (median)",
        starts.median(),
        1000.0,
    );
    within(
        "snapshot of a 2,000-element page (median)",
        snapshots.median(),
        150.0,
    );
}
