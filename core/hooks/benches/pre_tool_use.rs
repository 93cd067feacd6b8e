//! Benchmark of a `PreToolUse` hook's overhead per call: [`Hooks::run`] with one command
//! hook (`cat > /dev/null`, which reads its payload and exits 0) against the same command
//! started directly with `tokio::process` (`bash -c`, the payload written to its stdin,
//! waited for) — the script's own run time. The difference is what Larik adds: matching,
//! the payload's JSON, the process group, the capped reads and reading the reply. Run with
//! `cargo bench -p larik-hooks --bench pre_tool_use`.

use std::process::Stdio;
use std::time::Instant;

use larik_hooks::{HookEvent, Hooks, PromptModel, RunPlace, read_hooks};
use larik_testkit::bench::{Samples, within};
use serde_json::json;
use tokio::io::AsyncWriteExt;

const RUNS: usize = 200;
const SCRIPT: &str = "cat > /dev/null";

struct NoModel;

#[async_trait::async_trait]
impl PromptModel for NoModel {
    async fn ask(&self, _model: Option<&str>, _prompt: &str) -> Result<String, String> {
        Err("no model here".into())
    }
}

async fn direct(payload: &[u8], cwd: &std::path::Path) {
    let mut child = tokio::process::Command::new("/bin/bash")
        .arg("-c")
        .arg(SCRIPT)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(payload).await.expect("payload");
    drop(stdin);
    let output = child.wait_with_output().await.expect("bash ends");
    assert!(output.status.success());
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    let place = RunPlace {
        project_dir: dir.path().to_path_buf(),
        cwd: dir.path().to_path_buf(),
    };
    let (hooks, _) = read_hooks(
        &dir.path().join("settings.json"),
        &json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": SCRIPT}]}]}),
    );
    let hooks = Hooks::new(hooks);
    let payload = json!({
        "session_id": "20261203-120000-abcdef",
        "transcript_path": dir.path().join("session.jsonl"),
        "cwd": dir.path(),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "larik_tool_name": "bash",
        "tool_input": {"command": "cargo test --workspace", "description": "Run the tests"},
        "tool_use_id": "toolu_01",
    });
    let bytes = payload.to_string().into_bytes();

    let (mut hooked, mut plain) = (Samples::new(), Samples::new());
    runtime.block_on(async {
        // Warm the page cache and the runtime's threads.
        for _ in 0..10 {
            direct(&bytes, dir.path()).await;
            hooks
                .run(
                    HookEvent::PreToolUse,
                    &["bash", "Bash"],
                    &payload,
                    &place,
                    &NoModel,
                )
                .await;
        }
        // Alternate, so drift on the machine touches both alike.
        for _ in 0..RUNS {
            let started = Instant::now();
            let replies = hooks
                .run(
                    HookEvent::PreToolUse,
                    &["bash", "Bash"],
                    &payload,
                    &place,
                    &NoModel,
                )
                .await;
            hooked.push(started.elapsed());
            assert!(replies[0].error.is_none() && replies[0].block.is_none());
            let started = Instant::now();
            direct(&bytes, dir.path()).await;
            plain.push(started.elapsed());
        }
    });
    println!("| PreToolUse hook `{SCRIPT}` | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!("{}", hooked.row("through the hooks crate"));
    println!("{}", plain.row("the same script started directly"));
    let overhead = hooked.median().saturating_sub(plain.median());
    within(
        "PreToolUse hook overhead per call (median difference)",
        overhead,
        3.0,
    );
}
