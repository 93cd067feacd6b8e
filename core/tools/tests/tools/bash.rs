//! `bash`: real commands through the sandbox, exit codes, merged output, truncation,
//! timeouts, cancellation and background processes.

use std::path::Path;
use std::time::{Duration, Instant};

use larik_tools::{BashTool, CallTarget, Tool, ToolLimits};
use serde_json::json;

use crate::{call, context, context_with, fails, ok};

/// Processes in group `pgid` that are not zombies, read from /proc.
fn live_members_of_group(pgid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            // After the parenthesised command come: state ppid pgrp ...
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
        })
        .count()
}

/// Waits until group `pgid` has no live members; fails after a generous deadline.
async fn assert_group_dies(pgid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while live_members_of_group(pgid) > 0 {
        assert!(
            Instant::now() < deadline,
            "process group {pgid} still has live members"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until `path` exists; fails after a generous deadline.
async fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid")
}

#[tokio::test]
async fn output_and_success() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let text = ok(&BashTool, &ctx, json!({"command": "echo hello; pwd"})).await;
    assert_eq!(text, format!("hello\n{}\n", dir.path().display()));
    let text = ok(&BashTool, &ctx, json!({"command": "true"})).await;
    assert_eq!(text, "(no output)");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_with_its_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let message = fails(
        &BashTool,
        &context(dir.path()),
        json!({"command": "echo oops >&2; exit 3"}),
    )
    .await;
    assert_eq!(message, "oops\nExit code 3");
}

#[tokio::test]
async fn stdout_and_stderr_merge_in_the_order_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let command = "for i in 1 2 3; do echo out$i; echo err$i >&2; done";
    let text = ok(&BashTool, &context(dir.path()), json!({"command": command})).await;
    assert_eq!(text, "out1\nerr1\nout2\nerr2\nout3\nerr3\n");
}

#[tokio::test]
async fn long_output_keeps_head_and_tail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = ToolLimits {
        output_chars: 40,
        ..ToolLimits::default()
    };
    // `seq 1 20000` prints 108894 characters.
    let text = ok(
        &BashTool,
        &context_with(dir.path(), limits),
        json!({"command": "seq 1 20000"}),
    )
    .await;
    assert!(text.starts_with("1\n2\n3\n"), "{text}");
    assert!(text.ends_with("19999\n20000\n"), "{text}");
    assert!(text.contains("[… 108854 characters omitted …]"), "{text}");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let command = "echo $$ > group.pid; echo started; sleep 30 & sleep 30";
    let (output, text) = call(&BashTool, &ctx, json!({"command": command, "timeout": 300})).await;
    assert!(output.is_error, "{text}");
    assert!(text.starts_with("started\n"), "{text}");
    assert!(text.contains("timed out after 300 ms"), "{text}");
    assert_group_dies(read_pid(&dir.path().join("group.pid"))).await;
}

#[tokio::test]
async fn the_timeout_is_capped_by_the_limits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = ToolLimits {
        bash_max_timeout_ms: 200,
        ..ToolLimits::default()
    };
    let message = fails(
        &BashTool,
        &context_with(dir.path(), limits),
        json!({"command": "sleep 30", "timeout": 600000}),
    )
    .await;
    assert!(message.contains("timed out after 200 ms"), "{message}");
}

#[tokio::test]
async fn cancellation_kills_the_command_and_returns_promptly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let cancel = ctx.cancel.clone();
    let task = tokio::spawn(async move {
        call(
            &BashTool,
            &ctx,
            json!({"command": "echo $$ > group.pid; sleep 30"}),
        )
        .await
    });
    let pid_file = dir.path().join("group.pid");
    wait_for_file(&pid_file).await;
    cancel.cancel();
    let (output, text) = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the call returns after cancellation")
        .expect("the task did not panic");
    assert!(output.is_error, "{text}");
    assert!(text.contains("cancelled"), "{text}");
    assert_group_dies(read_pid(&pid_file)).await;
}

#[tokio::test]
async fn a_background_process_holding_the_pipe_does_not_hang_the_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let command = "echo $$ > group.pid; sleep 30 & echo done";
    let (output, text) = tokio::time::timeout(
        Duration::from_secs(10),
        call(&BashTool, &context(dir.path()), json!({"command": command})),
    )
    .await
    .expect("the call returns while the background sleep runs");
    assert!(!output.is_error, "{text}");
    assert!(text.starts_with("done\n"), "{text}");
    assert!(text.contains("background process"), "{text}");
    // The background sleep outlived the call; stop it so the test leaves nothing behind.
    let pgid = read_pid(&dir.path().join("group.pid"));
    larik_sandbox::kill_process_group(pgid);
    assert_group_dies(pgid).await;
}

#[tokio::test]
async fn title_and_target_show_the_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path());
    let plain = json!({"command": "cargo test"});
    assert_eq!(BashTool.title(&plain, &ctx), "cargo test");
    let described = json!({"command": "cargo test", "description": "Run the tests"});
    assert_eq!(
        BashTool.title(&described, &ctx),
        "Run the tests (`cargo test`)"
    );
    assert_eq!(
        BashTool.target(&plain, &ctx),
        CallTarget::Command("cargo test".to_string())
    );
    assert!(!BashTool.read_only());
    let message = fails(&BashTool, &ctx, json!({"command": "  "})).await;
    assert!(message.contains("empty"), "{message}");
    let message = fails(&BashTool, &ctx, json!({"cmd": "ls"})).await;
    assert!(message.contains("command"), "{message}");
}
