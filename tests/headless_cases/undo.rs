//! `/undo` through `larik -p`: a turn's edits and creations come back exactly (bytes and
//! modes), a turn that changed no file is skipped, checkpoints survive the process (each
//! run resumes the session), the model hears which files were put back, and a second undo
//! with nothing left says so.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use larik_testkit::turn;

use super::{Harness, stderr, stdout};

#[tokio::test(flavor = "multi_thread")]
async fn undo_puts_back_the_last_turn_that_changed_files() {
    let harness = Harness::new().await;
    let script = harness.cwd().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\necho old\n").expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).expect("chmod");

    // Turn 1: read and rewrite run.sh, create notes/new.txt.
    harness
        .server
        .enqueue(turn().tool_call("r", "read", json!({"file_path": "run.sh"})));
    harness.server.enqueue(
        turn()
            .tool_call(
                "w",
                "write",
                json!({"file_path": "run.sh", "content": "#!/bin/sh\necho new\n"}),
            )
            .tool_call(
                "n",
                "write",
                json!({"file_path": "notes/new.txt", "content": "created\n"}),
            ),
    );
    harness.server.enqueue(turn().text("changed"));
    let output = harness
        .run(&["-p", "change things", "--permission-mode", "acceptEdits"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(&script).expect("script"),
        "#!/bin/sh\necho new\n"
    );
    // The write kept the file's mode; make the turn change it too, as a tool might.
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).expect("chmod");

    // Turn 2 (a resumed session) changes no file.
    harness.server.enqueue(turn().text("just talking"));
    let output = harness.run(&["-c", "-p", "what did you do?"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));

    let output = harness.run(&["-c", "-p", "/undo"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let said = stdout(&output);
    assert!(
        said.contains("Undid the last turn's file changes: restored run.sh; deleted notes/new.txt"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(&script).expect("script"),
        "#!/bin/sh\necho old\n"
    );
    assert_eq!(
        std::fs::metadata(&script)
            .expect("stat")
            .permissions()
            .mode()
            & 0o7777,
        0o750,
        "the mode comes back too"
    );
    assert!(!harness.cwd().join("notes/new.txt").exists());

    // The model hears about it with the next prompt.
    harness.server.enqueue(turn().text("noted"));
    let output = harness.run(&["-c", "-p", "carry on"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let last = harness.server.requests().pop().expect("a request");
    let body = last.body.to_string();
    assert!(
        body.contains("<note from=\\\"larik\\\">The user undid your last changes to files.")
            && body.contains("run.sh"),
        "{body}"
    );

    let output = harness.run(&["-c", "-p", "/undo"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        stdout(&output).contains("Nothing to undo"),
        "{}",
        stdout(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_that_lists_its_files_can_be_undone() {
    let harness = Harness::new().await;
    let data = harness.cwd().join("data.txt");
    std::fs::write(&data, "original\n").expect("data");
    harness.server.enqueue(turn().tool_call(
        "b",
        "bash",
        json!({"command": "echo generated > data.txt", "checkpoint_paths": ["data.txt"]}),
    ));
    harness.server.enqueue(turn().text("regenerated"));
    let output = harness
        .run(&["-p", "regenerate", "--permission-mode", "bypassPermissions"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&data).expect("data"), "generated\n");

    let output = harness.run(&["-c", "-p", "/undo"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        stdout(&output).contains("restored data.txt"),
        "{}",
        stdout(&output)
    );
    assert_eq!(std::fs::read_to_string(&data).expect("data"), "original\n");
}

/// Pruning covers every project's checkpoints, so a repository's own settings cannot decide
/// it: `checkpoint_retention_days: 0` in another project's `.larik/settings.json` is ignored
/// with a notice naming the key, and this project's `/undo` still works afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn a_shared_retention_setting_cannot_delete_another_projects_checkpoints() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().tool_call(
        "w",
        "write",
        json!({"file_path": "notes.txt", "content": "written\n"}),
    ));
    harness.server.enqueue(turn().text("wrote it"));
    let output = harness
        .run(&["-p", "write notes", "--permission-mode", "acceptEdits"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(harness.cwd().join("notes.txt").exists());

    let hostile = tempfile::tempdir().expect("another project");
    std::fs::create_dir(hostile.path().join(".larik")).expect("mkdir");
    std::fs::write(
        hostile.path().join(".larik/settings.json"),
        r#"{"checkpoint_retention_days": 0}"#,
    )
    .expect("settings");
    harness.server.enqueue(turn().text("hello"));
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        harness
            .larik()
            .current_dir(hostile.path())
            .args(["-p", "hi"])
            .output(),
    )
    .await
    .expect("larik finishes")
    .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("`checkpoint_retention_days` ignored"),
        "the ignored key is named: {}",
        stderr(&output)
    );

    let output = harness.run(&["-c", "-p", "/undo"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        stdout(&output).contains("deleted notes.txt"),
        "{}",
        stdout(&output)
    );
    assert!(!harness.cwd().join("notes.txt").exists());
}
