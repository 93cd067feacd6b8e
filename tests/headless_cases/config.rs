//! Configuration files through `larik -p`: rules and the model from personal files count,
//! a repository's shared file can deny but not allow (and says so on stderr), and language
//! servers follow the files: a shared file switches one off, a personal file adds a command.

use std::path::PathBuf;
use std::time::Duration;

use larik_testkit::turn;
use serde_json::json;

use super::{Harness, last_json_line, stderr};

impl Harness {
    /// Larik's personal configuration directory for this test (`$HOME/.config/larik`).
    pub(super) fn config_dir(&self) -> PathBuf {
        self.data.path().join(".config/larik")
    }

    pub(super) fn write_config(&self, path: PathBuf, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write config");
    }

    fn shared_settings(&self, text: &str) {
        self.write_config(self.cwd().join(".larik/settings.json"), text);
    }

    fn personal_project_settings(&self, text: &str) {
        let file = larik_config::personal_project_file(&self.config_dir(), &self.cwd());
        self.write_config(file, text);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shared_file_denies_but_cannot_allow_and_a_personal_file_can() {
    let harness = Harness::new().await;
    harness.shared_settings(
        r#"{"permissions": {"allow": ["Bash(touch:*)"], "deny": ["Bash(echo:*)"]}}"#,
    );
    let calls = || {
        turn()
            .tool_call("e1", "bash", json!({"command": "echo hi"}))
            .tool_call("t1", "bash", json!({"command": "touch made"}))
    };
    harness.server.enqueue(calls());
    harness.server.enqueue(turn().text("done"));
    let output = harness
        .run(&["-p", "make it", "--output-format", "json"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let warnings = stderr(&output);
    assert!(
        warnings.contains("larik: warning: configuration: ")
            && warnings.contains(".larik/settings.json: `permissions.allow` ignored: a file shared with the repository cannot let tools run without asking"),
        "{warnings}"
    );
    let result = last_json_line(&output);
    let denied: Vec<&str> = result["permission_denials"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|denial| denial["tool_use_id"].as_str().expect("an id"))
        .collect();
    assert_eq!(denied, ["e1", "t1"], "{result}");
    assert!(!harness.cwd().join("made").exists());

    // The same allow rule in the user's own file for the project counts; the shared deny
    // still holds.
    harness.personal_project_settings(r#"{"permissions": {"allow": ["Bash(touch:*)"]}}"#);
    harness.server.enqueue(calls());
    harness.server.enqueue(turn().text("done"));
    let output = harness
        .run(&["-p", "make it", "--output-format", "json"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let result = last_json_line(&output);
    assert_eq!(
        result["permission_denials"],
        json!([{"tool_name": "bash", "tool_use_id": "e1", "tool_input": {"command": "echo hi"}}])
    );
    assert!(harness.cwd().join("made").exists(), "touch ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_and_mode_come_from_the_users_config_unless_flags_say_otherwise() {
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"model": "openai/gpt-5.1", "permissions": {"defaultMode": "acceptEdits"}}"#,
    );
    harness.server.enqueue(turn().tool_call(
        "w1",
        "write",
        json!({"file_path": "notes.txt", "content": "hi\n"}),
    ));
    harness.server.enqueue(turn().text("written"));
    let mut larik = harness.larik();
    larik
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", harness.server.openai_base_url());
    let output = tokio::time::timeout(Duration::from_secs(60), larik.args(["-p", "note"]).output())
        .await
        .expect("larik finishes")
        .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    harness.server.assert_no_violations();
    let requests = harness.server.requests();
    assert!(
        requests
            .iter()
            .all(|request| request.path.ends_with("/responses")),
        "every request went to OpenAI: {:?}",
        requests
            .iter()
            .map(|request| &request.path)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        std::fs::read_to_string(harness.cwd().join("notes.txt")).expect("written"),
        "hi\n",
        "acceptEdits from the config let the write run"
    );

    // A flag still wins over the file.
    harness.server.enqueue(turn().text("plain"));
    let output = harness
        .run(&["-p", "hello", "--model", "anthropic/claude-sonnet-4-5"])
        .await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let last = harness.server.requests().pop().expect("a request");
    assert!(last.path.ends_with("/messages"), "{}", last.path);
}

#[tokio::test(flavor = "multi_thread")]
async fn language_servers_follow_the_configuration_files() {
    let harness = Harness::new().await;
    std::fs::write(harness.cwd().join("compile_flags.txt"), "-std=c11\n").expect("flags");
    let broken = "int main(void) {\n    return coutn;\n}\n";
    let write_broken = |harness: &Harness| {
        // A new file each run: an existing one would have to be read first.
        let _ = std::fs::remove_file(harness.cwd().join("main.c"));
        harness.server.enqueue(turn().tool_call(
            "w1",
            "write",
            json!({"file_path": "main.c", "content": broken}),
        ));
        harness.server.enqueue(turn().text("written"));
    };
    let run = |harness: &Harness| {
        let mut larik = harness.larik();
        larik.env_remove("LARIK_LSP");
        larik.args(["-p", "write main.c", "--permission-mode", "acceptEdits"]);
        async move {
            let output = tokio::time::timeout(Duration::from_secs(120), larik.output())
                .await
                .expect("larik finishes")
                .expect("larik runs");
            assert!(output.status.success(), "stderr: {}", stderr(&output));
            output
        }
    };
    let write_result = |harness: &Harness| {
        let requests = harness.server.requests();
        requests.last().expect("a request").body.to_string()
    };

    // A shared file may not choose the program that runs as a language server.
    harness.shared_settings(r#"{"lsp": {"cc": {"command": "clangd", "extensions": ["c"]}}}"#);
    write_broken(&harness);
    let output = run(&harness).await;
    assert!(
        stderr(&output).contains("`lsp.cc.command` ignored"),
        "{}",
        stderr(&output)
    );
    let result = write_result(&harness);
    assert!(result.contains("clangd reports:\\nERROR 2:12 "), "{result}");

    // The user's own file may; and a shared file may switch the built-in one off.
    harness.shared_settings(r#"{"lsp": {"clangd": {"disabled": true}}}"#);
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"lsp": {"cc": {"command": "clangd", "args": ["--log=error"], "extensions": ["c"], "root_markers": ["compile_flags.txt"]}}}"#,
    );
    write_broken(&harness);
    let output = run(&harness).await;
    assert_eq!(stderr(&output), "", "nothing was ignored");
    let result = write_result(&harness);
    assert!(result.contains("cc reports:\\nERROR 2:12 "), "{result}");

    // With every server off in the shared file, edits come back without diagnostics.
    harness.shared_settings(r#"{"lsp": false}"#);
    write_broken(&harness);
    run(&harness).await;
    let result = write_result(&harness);
    assert!(!result.contains("reports:"), "{result}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_personal_and_project_instruction_files_reach_the_system_prompt() {
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("AGENTS.md"),
        "Answer in British English.\n",
    );
    std::fs::write(
        harness.cwd().join("CLAUDE.md"),
        "Run `make check` before finishing.\n",
    )
    .expect("CLAUDE.md");
    harness.server.enqueue(turn().text("ok"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let request = harness.server.requests().remove(0);
    let system = request.body["system"][0]["text"]
        .as_str()
        .expect("a system prompt")
        .to_string();
    let personal = format!(
        "<instructions source=\"{}\">",
        harness.config_dir().join("AGENTS.md").display()
    );
    let project = format!(
        "<instructions source=\"{}\">",
        harness.cwd().join("CLAUDE.md").display()
    );
    let (at_personal, at_project) = (
        system.find(&personal).unwrap_or_else(|| panic!("{system}")),
        system.find(&project).unwrap_or_else(|| panic!("{system}")),
    );
    assert!(at_personal < at_project, "general first: {system}");
    assert!(system.contains("Answer in British English.") && system.contains("make check"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_shared_setting_counts_until_the_file_changes_it() {
    let harness = Harness::new().await;
    harness.shared_settings(r#"{"permissions": {"allow": ["Bash(touch:*)"]}}"#);
    let key = ".larik/settings.json#permissions.allow";

    let listed = harness.run(&["approve"]).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let text = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        text.contains(key) && text.contains("[\"Bash(touch:*)\"]"),
        "{text}"
    );
    let refused = harness.run(&["approve", "no-such-key"]).await;
    assert!(!refused.status.success());
    let approved = harness.run(&["approve", key]).await;
    assert!(approved.status.success(), "{}", stderr(&approved));

    let touch = || turn().tool_call("t1", "bash", json!({"command": "touch made"}));
    harness.server.enqueue(touch());
    harness.server.enqueue(turn().text("done"));
    let output = harness.run(&["-p", "make it"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert_eq!(stderr(&output), "", "an approved setting gives no notice");
    assert!(
        harness.cwd().join("made").exists(),
        "the approved rule allowed it"
    );

    // A commit that changes the rule loses the approval.
    std::fs::remove_file(harness.cwd().join("made")).expect("rm");
    harness.shared_settings(r#"{"permissions": {"allow": ["Bash(touch:*)", "Bash(curl:*)"]}}"#);
    harness.server.enqueue(touch());
    harness.server.enqueue(turn().text("done"));
    let output = harness.run(&["-p", "make it"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("approval no longer matches"),
        "{}",
        stderr(&output)
    );
    assert!(!harness.cwd().join("made").exists());
}
