//! `bash`: real commands through the sandbox, exit codes, merged output, truncation,
//! timeouts, cancellation and background processes.
//!
//! Tests that need to know when the command's processes are gone have them hold a named
//! pipe open on fd 3: its reader sees end of file exactly when the last holder exits.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use larik_tools::{BashTool, CallTarget, Tool, ToolLimits};
use serde_json::json;
use tokio::sync::mpsc;

use crate::{call, context, context_with, fails, make_fifo, ok};

/// How long any awaited event may take before the test fails; generous for a loaded box.
const PATIENCE: Duration = Duration::from_secs(20);

/// The lines written to a named pipe, and its end: the moment every process holding its
/// write end has exited.
struct PipeWatch {
    lines: mpsc::UnboundedReceiver<String>,
}

impl PipeWatch {
    /// Creates the pipe at `path` and reads it on a thread of its own, since opening a
    /// named pipe blocks until a writer comes.
    fn new(path: &Path) -> Self {
        make_fifo(path);
        let (sender, lines) = mpsc::unbounded_channel();
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            let reader = BufReader::new(File::open(&path).expect("open the fifo"));
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
            // Dropping the sender closes the channel: the pipe reached its end.
        });
        PipeWatch { lines }
    }

    /// The next line, `None` once every writer has exited.
    async fn next_line(&mut self) -> Option<String> {
        tokio::time::timeout(PATIENCE, self.lines.recv())
            .await
            .expect("the pipe produced a line or its end in time")
    }

    /// Waits until every process holding the pipe has exited.
    async fn all_writers_exit(&mut self) {
        while self.next_line().await.is_some() {}
    }
}

/// Writes `text` into the named pipe at `path` on a thread of its own (the open blocks
/// until a reader comes).
fn send_into_fifo(path: &Path, text: &'static str) {
    let path = path.to_path_buf();
    std::thread::spawn(move || std::fs::write(path, text).expect("write the fifo"));
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
    let mut holders = PipeWatch::new(&dir.path().join("alive"));
    let ctx = context(dir.path());
    let command = "exec 3>alive; echo started; sleep 30 & sleep 30";
    let (output, text) = call(
        &BashTool,
        &ctx,
        json!({"command": command, "timeout": 1000}),
    )
    .await;
    assert!(output.is_error, "{text}");
    assert!(text.starts_with("started\n"), "{text}");
    assert!(text.contains("timed out after 1000 ms"), "{text}");
    holders.all_writers_exit().await;
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
    let mut holders = PipeWatch::new(&dir.path().join("alive"));
    let ctx = context(dir.path());
    let cancel = ctx.cancel.clone();
    let task = tokio::spawn(async move {
        call(
            &BashTool,
            &ctx,
            json!({"command": "exec 3>alive; echo ready >&3; sleep 30 & sleep 30"}),
        )
        .await
    });
    assert_eq!(holders.next_line().await.as_deref(), Some("ready"));
    cancel.cancel();
    let (output, text) = tokio::time::timeout(PATIENCE, task)
        .await
        .expect("the call returns after cancellation")
        .expect("the task did not panic");
    assert!(output.is_error, "{text}");
    assert!(text.contains("cancelled"), "{text}");
    holders.all_writers_exit().await;
}

#[tokio::test]
async fn a_background_process_holding_the_pipe_does_not_hang_the_call_and_keeps_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut holders = PipeWatch::new(&dir.path().join("alive"));
    let go = dir.path().join("go");
    make_fifo(&go);
    // The background job answers on the pipe only when the test writes to `go`, which it
    // does after the call has returned.
    let command = "exec 3>alive; echo $$ >&3; \
                   (read -r word < go; echo \"after:$word\" >&3; sleep 30) & echo done";
    let (output, text) = tokio::time::timeout(
        PATIENCE,
        call(&BashTool, &context(dir.path()), json!({"command": command})),
    )
    .await
    .expect("the call returns while the background job runs");
    assert!(!output.is_error, "{text}");
    assert!(text.starts_with("done\n"), "{text}");
    assert!(text.contains("background process"), "{text}");
    let pgid: u32 = holders
        .next_line()
        .await
        .expect("the shell wrote its pid")
        .parse()
        .expect("a pid");
    send_into_fifo(&go, "ping\n");
    assert_eq!(holders.next_line().await.as_deref(), Some("after:ping"));
    // Stop the background job so the test leaves nothing behind.
    larik_sandbox::kill_process_group(pgid);
    holders.all_writers_exit().await;
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
