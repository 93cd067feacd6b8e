//! The command sandbox through `larik -p`: with bubblewrap installed, a command runs
//! without asking and can write in the project but nowhere else; a call asking to run
//! outside the sandbox goes through the permission step (refused in `-p`); switching the
//! sandbox off in the configuration brings the question back for every command. No
//! protected path (git hooks and config, the agents' settings) can be created or changed,
//! missing or present, under bubblewrap or under Landlock (the `landlock_…` tests need a
//! kernel with Landlock; `tests/run` leaves them out by name, saying so, on one without).

use serde_json::json;

use larik_testkit::tree::{Tree, tree};
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
    let output = try_in_json(&harness, larik).await;
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

/// Runs `larik -p try --output-format json` (with the sandbox settings `larik` was given)
/// and checks that it succeeded and the fake server saw no protocol violation.
async fn try_in_json(
    harness: &Harness,
    mut larik: tokio::process::Command,
) -> std::process::Output {
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        larik
            .args(["-p", "try", "--output-format", "json"])
            .output(),
    )
    .await
    .expect("larik finishes")
    .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    harness.server.assert_no_violations();
    output
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

/// Every protected path of the project (and `.git` itself), as it stands; and the names a
/// placeholder or a restore uses while it works, none of which may be left.
fn protected_state(root: &std::path::Path) -> Vec<(String, Option<Tree>)> {
    let mut state: Vec<(String, Option<Tree>)> = [".git"]
        .into_iter()
        .chain(larik_sandbox::PROTECTED_PATHS)
        .map(|path| {
            let found = tree(&root.join(path));
            let found = if path == ".git" {
                found.map(|tree| match tree {
                    Tree::Dir(_) => Tree::Dir(Default::default()),
                    other => other,
                })
            } else {
                found
            };
            (path.to_string(), found)
        })
        .collect();
    for dir in [root.to_path_buf(), root.join(".git")] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.contains(".larik-placeholder-") || name.contains(".larik-restore-") {
                state.push((name, None));
            }
        }
    }
    state
}

/// The command that attacks one protected path: a file created in a directory, or a file
/// created or changed.
fn attack(path: &str) -> String {
    match path {
        ".git" => "git init -q . && echo evil > .git/hooks/pre-commit".to_string(),
        ".git/config" | ".git/config.worktree" | ".git/commondir" | ".mcp.json" => {
            format!("echo evil >> {path}")
        }
        _ => format!("mkdir -p {path} && echo evil > {path}/planted.json"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Which {
    Bubblewrap,
    Landlock,
}

/// Runs one `larik -p` in a project where the protected paths are all missing or all
/// present, under bubblewrap (found on the PATH) or Landlock (where the `bwrap` on the PATH
/// cannot build a sandbox), with one sandboxed command per protected path. Every path must
/// be as it was afterwards, nothing left on disk, and each result must say what happened.
async fn protected_paths_through_larik(which: Which, present: bool) {
    let harness = Harness::new().await;
    let root = harness.cwd();
    let targets: Vec<&str> = if present {
        std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
        for path in larik_sandbox::PROTECTED_PATHS {
            match path {
                ".git/config" | ".git/config.worktree" | ".git/commondir" | ".mcp.json" => {
                    std::fs::write(root.join(path), "original\n").expect("write")
                }
                _ => {
                    std::fs::create_dir_all(root.join(path)).expect("mkdir");
                    std::fs::write(root.join(path).join("kept"), "original\n").expect("write");
                }
            }
        }
        larik_sandbox::PROTECTED_PATHS.to_vec()
    } else {
        vec![".git", ".larik", ".claude", ".mcp.json"]
    };
    let before = protected_state(&root);
    let mut script = turn();
    for (index, path) in targets.iter().enumerate() {
        script = script.tool_call(
            format!("c{index}"),
            "bash",
            json!({"command": attack(path)}),
        );
    }
    harness.server.enqueue(script);
    harness.server.enqueue(turn().text("done"));

    let broken_bwrap = tempfile::tempdir().expect("temp dir");
    let mut larik = harness.larik();
    larik.env_remove("LARIK_SANDBOX");
    if which == Which::Landlock {
        let fake = broken_bwrap.path().join("bwrap");
        std::fs::write(&fake, "#!/bin/sh\nexit 1\n").expect("write");
        let mut permissions = std::fs::metadata(&fake).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&fake, permissions).expect("chmod");
        let path = format!(
            "{}:{}",
            broken_bwrap.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        larik.env("PATH", path);
    }
    let output = try_in_json(&harness, larik).await;
    assert_eq!(
        protected_state(&root),
        before,
        "{which:?}: a protected path changed or something was left on disk"
    );
    let results = &harness.server.requests()[1];
    for (index, path) in targets.iter().enumerate() {
        let text = results
            .tool_result_text(&format!("c{index}"))
            .expect("every call has a result");
        match which {
            Which::Bubblewrap => assert!(
                text.contains("Read-only file system")
                    && text.contains("whether they exist or not"),
                "{which:?} {path}: the model is told the path is read-only: {text}"
            ),
            Which::Landlock => assert!(
                text.contains("Larik put them back") && text.contains(path),
                "{which:?} {path}: the model is told what was put back: {text}"
            ),
        }
    }
    if which == Which::Landlock {
        assert!(
            stderr(&output).contains("sandbox: bubblewrap (`bwrap`) is not usable here"),
            "the weaker sandbox is announced: {}",
            stderr(&output)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_protected_paths_stay_missing_under_bubblewrap() {
    protected_paths_through_larik(Which::Bubblewrap, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn present_protected_paths_stay_as_they_were_under_bubblewrap() {
    protected_paths_through_larik(Which::Bubblewrap, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn landlock_removes_created_protected_paths_again() {
    protected_paths_through_larik(Which::Landlock, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn landlock_puts_changed_protected_paths_back() {
    protected_paths_through_larik(Which::Landlock, true).await;
}
