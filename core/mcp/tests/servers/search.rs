//! Deferred tools: past the search policy's limits a context gets `mcp_search` and
//! `mcp_call` instead of every MCP tool; a search finds tools by name and description
//! with their schemas, and `mcp_call` forwards to the tool it names.

use std::time::Duration;

use larik_mcp::{SearchPolicy, ServerPool, SessionTools};
use larik_tools::{LateTools, LateToolsAsk};
use serde_json::json;

use crate::kit::*;

#[tokio::test]
async fn past_the_limit_tools_are_found_by_search_and_called_through_mcp_call() {
    let scratch = Scratch::new();
    let specs: Vec<_> = (0..3)
        .map(|index| {
            with_wait(
                generated(&format!("s{index}"), index, &scratch.root),
                Duration::from_secs(60),
            )
        })
        .collect();
    let pool = ServerPool::new(&scratch.root);
    // Nine tools are more than a count of eight.
    let policy = SearchPolicy {
        share: 1.0,
        count: 8,
    };
    let set = SessionTools::new(pool.servers_for(&specs), policy)
        .tools(LateToolsAsk::default())
        .await;
    let names: Vec<&str> = set.tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(names, ["mcp_call", "mcp_search"], "{:?}", set.notices);
    let ctx = context(&scratch.root);

    let search = tool(&set, "mcp_search");
    assert!(search.read_only());
    let found = text_of(&search.run(json!({"query": "invoice"}), &ctx).await);
    let first = found.lines().next().unwrap_or_default();
    assert!(first.starts_with("mcp__s1__invoice_"), "{found}");
    assert!(found.contains("input schema: {"), "{found}");
    assert!(!found.contains("weather"), "{found}");
    let servers = text_of(&search.run(json!({"query": ""}), &ctx).await);
    assert!(servers.contains("- s2: 3 tools"), "{servers}");
    let selected = text_of(
        &search
            .run(json!({"query": "select:mcp__s0__weather_list"}), &ctx)
            .await,
    );
    assert!(
        selected.starts_with("mcp__s0__weather_list: Lists weather"),
        "{selected}"
    );

    let call = tool(&set, "mcp_call");
    let input = json!({"name": "mcp__s1__invoice_lookup", "arguments": {"id": "7"}});
    let (inner, arguments) = call.forwards_to(&input).expect("it forwards");
    assert_eq!(inner.name(), "mcp__s1__invoice_lookup");
    assert!(inner.read_only());
    let output = inner.run(arguments, &ctx).await;
    assert_eq!(
        text_of(&output),
        "invoice_lookup on server 1: {\"id\": \"7\"}"
    );
    let unknown = json!({"name": "mcp__s1__nope"});
    assert!(call.forwards_to(&unknown).is_none());
    let output = call.run(unknown, &ctx).await;
    assert!(output.is_error);
    assert!(text_of(&output).contains("mcp_search"), "{output:?}");

    // Hidden tools are neither found nor called (six are left, more than four).
    let policy = SearchPolicy {
        share: 1.0,
        count: 4,
    };
    let hidden = SessionTools::new(pool.servers_for(&specs), policy)
        .tools(LateToolsAsk {
            context_window: None,
            hidden: Some(std::sync::Arc::new(|name: &str| {
                name.starts_with("mcp__s1__")
            })),
        })
        .await;
    let search = tool(&hidden, "mcp_search");
    let found = text_of(&search.run(json!({"query": "invoice"}), &ctx).await);
    assert!(found.starts_with("No MCP tool matches"), "{found}");
    assert!(tool(&hidden, "mcp_call").forwards_to(&input).is_none());

    // Under the limits, and small against the window, every tool is offered.
    let set = SessionTools::new(pool.servers_for(&specs), SearchPolicy::default())
        .tools(LateToolsAsk {
            context_window: Some(200_000),
            hidden: None,
        })
        .await;
    assert_eq!(set.tools.len(), 9);
    // The same tools against a small window are deferred by their share.
    let set = SessionTools::new(pool.servers_for(&specs), SearchPolicy::default())
        .tools(LateToolsAsk {
            context_window: Some(2_000),
            hidden: None,
        })
        .await;
    assert_eq!(set.tools.len(), 2);
    pool.shutdown().await;
}
