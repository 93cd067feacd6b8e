//! The command sandbox through `larik -p`: with bubblewrap installed, a command runs
//! without asking and can write in the project but nowhere else; a call asking to run
//! outside the sandbox goes through the permission step (refused in `-p`); switching the
//! sandbox off in the configuration brings the question back for every command.

use serde_json::json;

use larik_testkit::turn;

use super::{Harness, last_json_line, stderr};

#[tokio::test(flavor = "multi_thread")]
async fn commands_run_sandboxed_without_asking_and_unsandboxed_ones_ask() {
    let harness = Harness::new().await;
    let outside = outside_the_temp_dirs();
    let outside_file = outside.path().join("escaped.txt");
    harness.server.enqueue(
        turn()
            .tool_call(
                "in",
                "bash",
                json!({"command": "echo inside > made.txt && cat made.txt"}),
            )
            .tool_call(
                "out",
                "bash",
                json!({"command": format!("echo x > {}", outside_file.display())}),
            )
            .tool_call(
                "free",
                "bash",
                json!({"command": "echo free > free.txt", "sandbox": false}),
            ),
    );
    harness.server.enqueue(turn().text("done"));
    let mut larik = harness.larik();
    larik.env_remove("LARIK_SANDBOX");
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        larik
            .args(["-p", "try", "--output-format", "json"])
            .output(),
    )
    .await
    .expect("larik finishes")
    .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    harness.server.assert_no_violations();
    assert_eq!(
        std::fs::read_to_string(harness.cwd().join("made.txt")).expect("made"),
        "inside\n",
        "the sandboxed command ran without asking"
    );
    assert!(
        !outside_file.exists(),
        "nothing was written outside the project"
    );
    assert!(!harness.cwd().join("free.txt").exists());
    let result = last_json_line(&output);
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "bash", "tool_use_id": "free",
                "tool_input": {"command": "echo free > free.txt", "sandbox": false}}]),
        "only the call outside the sandbox needed approval"
    );
    let results = harness.server.requests()[1].body.to_string();
    assert!(
        results.contains("Read-only file system"),
        "the model sees why the write outside failed: {results}"
    );

    // Switched off in the user's configuration: every command asks again.
    std::fs::create_dir_all(harness.data.path().join(".config/larik")).expect("mkdir");
    std::fs::write(
        harness.data.path().join(".config/larik/config.json"),
        r#"{"sandbox": {"enabled": false}}"#,
    )
    .expect("config");
    harness.server.enqueue(turn().tool_call(
        "again",
        "bash",
        json!({"command": "echo again > again.txt"}),
    ));
    harness.server.enqueue(turn().text("done"));
    let mut larik = harness.larik();
    larik.env_remove("LARIK_SANDBOX");
    let output = larik
        .args(["-p", "again", "--output-format", "json"])
        .output()
        .await
        .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let result = last_json_line(&output);
    assert_eq!(result["permission_denials"][0]["tool_use_id"], "again");
    assert!(!harness.cwd().join("again.txt").exists());
}

/// A directory of its own outside the temp directories (which sandboxed commands may
/// write): under cargo's per-target scratch directory, or the home directory when that is
/// itself under a temp directory.
fn outside_the_temp_dirs() -> tempfile::TempDir {
    let candidates = [
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
    ];
    let base = candidates
        .into_iter()
        .flatten()
        .find(|dir| !dir.starts_with("/tmp") && !dir.starts_with("/var/tmp") && dir.is_dir())
        .expect("a writable directory outside /tmp");
    tempfile::tempdir_in(base).expect("outside dir")
}
