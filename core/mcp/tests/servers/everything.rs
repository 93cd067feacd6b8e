//! server-everything over stdio: its tools listed and called, text and images returned,
//! the log written.

use std::time::Duration;

use larik_protocol::ResultPart;
use serde_json::json;

use crate::kit::*;

#[tokio::test]
async fn everything_over_stdio_lists_and_runs_its_tools() {
    let scratch = Scratch::new();
    let spec = with_wait(everything(&scratch.root), Duration::from_secs(60));
    let (set, pool) = session_tools(&scratch, &[spec]).await;
    assert!(set.notices.is_empty(), "{:?}", set.notices);
    let names: Vec<&str> = set.tools.iter().map(|tool| tool.name()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "the tools come sorted by name");
    assert!(names.contains(&"mcp__everything__get-sum"), "{names:?}");

    let ctx = context(&scratch.root);
    let echo = tool(&set, "mcp__everything__echo");
    let output = echo.run(json!({"message": "hello from larik"}), &ctx).await;
    assert!(!output.is_error, "{output:?}");
    assert!(text_of(&output).contains("hello from larik"), "{output:?}");

    let sum = tool(&set, "mcp__everything__get-sum");
    let output = sum.run(json!({"a": 2, "b": 40}), &ctx).await;
    assert!(text_of(&output).contains("42"), "{output:?}");

    let image = tool(&set, "mcp__everything__get-tiny-image");
    let output = image.run(json!({}), &ctx).await;
    assert!(
        output.content.iter().any(
            |part| matches!(part, ResultPart::Image { media_type, .. } if media_type == "image/png")
        ),
        "{output:?}"
    );

    // A call with input the server rejects is a result the model reads.
    let output = sum.run(json!({"a": "two"}), &ctx).await;
    assert!(output.is_error, "{output:?}");

    pool.shutdown().await;
    let log = scratch.log_of("everything");
    assert!(log.contains("connecting (stdio: node"), "{log}");
    assert!(log.contains("ready with"), "{log}");
}

#[tokio::test]
async fn everything_s_resources_are_listed_and_read() {
    let scratch = Scratch::new();
    let spec = with_wait(everything(&scratch.root), Duration::from_secs(60));
    let (set, pool) = session_tools(&scratch, &[spec]).await;
    let ctx = context(&scratch.root);
    let list = tool(&set, "list_mcp_resources");
    assert!(list.read_only());
    let output = list.run(json!({}), &ctx).await;
    assert!(!output.is_error, "{output:?}");
    let listed = text_of(&output);
    assert!(listed.starts_with("everything:\n- "), "{listed}");
    // The first listed URI, read back.
    let uri = listed
        .lines()
        .nth(1)
        .and_then(|line| line.strip_prefix("- "))
        .and_then(|line| line.split(' ').next())
        .expect("a resource line");
    let read = tool(&set, "read_mcp_resource");
    let output = read
        .run(json!({"server": "everything", "uri": uri}), &ctx)
        .await;
    assert!(!output.is_error, "{output:?}");
    assert!(text_of(&output).contains(uri), "{output:?}");
    let output = read.run(json!({"server": "nope", "uri": uri}), &ctx).await;
    assert!(output.is_error);
    assert!(text_of(&output).contains("`everything`"), "{output:?}");
    pool.shutdown().await;
}

#[tokio::test]
async fn everything_s_prompts_are_commands_that_expand_with_their_arguments() {
    let scratch = Scratch::new();
    let spec = with_wait(everything(&scratch.root), Duration::from_secs(60));
    let pool = larik_mcp::ServerPool::new(&scratch.root);
    let servers = pool.servers_for(&[spec]);
    servers[0].settled().await;
    let commands = larik_mcp::prompt_commands(&servers);
    let args = commands
        .iter()
        .find(|command| command.name == "mcp__everything__args-prompt")
        .unwrap_or_else(|| panic!("{commands:?}"));
    assert_eq!(args.arguments, ["city", "state"]);

    let text = larik_mcp::expand_prompt(
        &servers,
        "mcp__everything__args-prompt",
        Some("Portland Oregon Coast"),
    )
    .await;
    assert_eq!(
        text.as_deref(),
        Ok("What's weather in Portland, Oregon Coast?")
    );
    let missing = larik_mcp::expand_prompt(&servers, "mcp__everything__args-prompt", None).await;
    assert_eq!(
        missing,
        Err("`/mcp__everything__args-prompt` needs city".to_string())
    );
    let unknown = larik_mcp::expand_prompt(&servers, "mcp__everything__nope", None).await;
    assert!(unknown.is_err_and(|why| why.contains("has no prompt `nope`")));
    let elsewhere = larik_mcp::expand_prompt(&servers, "mcp__other__x", None).await;
    assert!(elsewhere.is_err_and(|why| why.contains("no MCP server")));
    pool.shutdown().await;
}
