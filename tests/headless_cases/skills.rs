//! Skills and custom commands through the binary: a project command run with arguments,
//! its `` !`cmd` `` run where a rule allows it and left out where it would need approval,
//! its `@path` attached; a nested command; a skill run by the user with its folder put in;
//! the model's index holding only what it may load, and the `skill` tool loading a body;
//! `larik skills` and `/skills` listing what was found, what overrides what and what was
//! skipped.

use larik_testkit::turn;
use serde_json::json;

use super::{Harness, stderr, stdout};

impl Harness {
    fn project_file(&self, path: &str, text: &str) {
        self.write_config(self.cwd().join(path), text);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_command_runs_with_arguments_inline_commands_and_attached_files() {
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"permissions": {"allow": ["Bash(echo:*)"]}}"#,
    );
    harness.project_file(
        ".claude/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: [file] [focus]\nallowed-tools: Bash(touch:*)\n---\n\
         Review $1 for $2 (asked: $ARGUMENTS).\nBranch: !`echo on-main`\nNot run: !`touch planted`\nSee @README.md.\n",
    );
    harness.server.enqueue(turn().text("Looks fine."));

    let output = harness
        .run(&["-p", "/review src/lib.rs \"error handling\""])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Looks fine."));
    let body = &harness.server.requests()[0].raw_body;
    assert!(
        body.contains(
            r#"Review src/lib.rs for error handling (asked: src/lib.rs \"error handling\")."#
        ),
        "{body}"
    );
    assert!(
        body.contains("Branch: on-main"),
        "the allowed command ran: {body}"
    );
    assert!(
        body.contains(r#"Not run: \nSee @README.md."#),
        "left out of the text: {body}"
    );
    assert!(
        body.contains("`touch planted` was not run: it needs approval"),
        "the model hears what was left out: {body}"
    );
    assert!(
        !harness.cwd().join("planted").exists(),
        "allowed-tools grants nothing"
    );
    assert!(
        body.contains(r#"<file path=\"README.md\">"#) && body.contains("A project used in tests."),
        "{body}"
    );
    assert!(
        stderr(&output).contains("`touch planted` was not run"),
        "the user is told: {}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn skills_are_indexed_loaded_by_the_model_and_run_by_the_user() {
    let harness = Harness::new().await;
    harness.project_file(
        ".claude/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release of this project\n---\nTag $ARGUMENTS, then run ${CLAUDE_SKILL_DIR}/notes.sh.\n",
    );
    harness.project_file(".claude/skills/release/notes.sh", "echo notes\n");
    harness.project_file(
        ".larik/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploy to production\ndisable-model-invocation: true\n---\nDeploy carefully.\n",
    );
    harness.project_file(
        ".claude/commands/frontend/component.md",
        "Make a component called $1.\n",
    );

    // The model loads a skill by itself.
    harness.server.enqueue(turn().tool_call(
        "s1",
        "skill",
        json!({"name": "release", "arguments": "v2"}),
    ));
    harness.server.enqueue(turn().text("Released."));
    let output = harness.run(&["-p", "ship it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = harness.server.requests();
    let system = requests[0].body["system"].to_string();
    assert!(
        system.contains("- release: Cut a release of this project"),
        "{system}"
    );
    assert!(!system.contains("deploy"), "not for the model: {system}");
    let dir = harness.cwd().join(".claude/skills/release");
    assert!(
        requests[1]
            .raw_body
            .contains(&format!("Tag v2, then run {}/notes.sh.", dir.display())),
        "{}",
        requests[1].raw_body
    );

    // The user runs one the model may not, and a nested command.
    harness.server.enqueue(turn().text("Deployed."));
    let output = harness.run(&["-p", "/deploy"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        harness.server.requests()[2]
            .raw_body
            .contains("Deploy carefully.")
    );
    harness.server.enqueue(turn().text("Made."));
    let output = harness.run(&["-p", "/frontend:component Button"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        harness.server.requests()[3]
            .raw_body
            .contains("Make a component called Button.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn larik_skills_lists_what_was_found_overridden_and_skipped() {
    let harness = Harness::new().await;
    harness.write_config(
        harness.data.path().join(".claude/commands/review.md"),
        "---\ndescription: Personal review\n---\nReview.\n",
    );
    harness.project_file(
        ".claude/skills/review/SKILL.md",
        "---\ndescription: Project review skill\n---\nReview well.\n",
    );
    harness.project_file(
        ".larik/skills/broken/SKILL.md",
        "---\nname: broken\n---\nNo description.\n",
    );

    let listed = harness.run(&["skills"]).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let text = stdout(&listed);
    assert!(
        text.contains("- `review` (skill): Project review skill"),
        "{text}"
    );
    assert!(text.contains("used by /review, the model"), "{text}");
    assert!(text.contains("Overridden:\n- `review` (command)"), "{text}");
    assert!(
        text.contains("Skipped:") && text.contains("broken/SKILL.md: has no `description`"),
        "{text}"
    );

    // The same list as a slash command in -p, without a model request.
    let output = harness.run(&["-p", "/skills"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("- `review` (skill): Project review skill"));
    assert!(harness.server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_hooks_see_a_command_before_its_inline_commands_run() {
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        &json!({
            "permissions": {"allow": ["Bash(touch:*)", "Bash(echo:*)"]},
            "hooks": {
                "UserPromptSubmit": [{"hooks": [{"type": "command", "command":
                    "if grep -q forbidden; then echo 'not today' >&2; exit 2; fi"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
                    r#"if grep -q '"echo original"'; then echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "echo rewritten"}}}'; fi"#}]}]
            }
        })
        .to_string(),
    );
    harness.project_file(
        ".claude/commands/danger.md",
        "A forbidden job: !`touch marker`\n",
    );
    harness.project_file(".claude/commands/say.md", "Said: !`echo original`\n");
    harness.project_file(
        ".claude/commands/cost.md",
        "---\ndescription: Not the real cost\n---\nx\n",
    );

    let output = harness.run(&["-p", "/danger"]).await;
    assert!(stderr(&output).contains("not today"), "{}", stderr(&output));
    assert!(
        !harness.cwd().join("marker").exists(),
        "a blocked command's inline commands never ran"
    );
    assert!(harness.server.requests().is_empty());

    harness.server.enqueue(turn().text("ok"));
    let output = harness.run(&["-p", "/say"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let body = &harness.server.requests()[0].raw_body;
    assert!(
        body.contains("Said: rewritten"),
        "the hook's input was used: {body}"
    );

    let listed = harness.run(&["skills"]).await;
    assert!(
        stdout(&listed).contains("not /cost (Larik's own command has that name)"),
        "{}",
        stdout(&listed)
    );
}
