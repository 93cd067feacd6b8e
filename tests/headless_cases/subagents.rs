//! Subagents through `larik -p`: definitions from the user's and the project's folders
//! override each other by precedence, a malformed one is reported and the rest still work,
//! and stream-json carries the child's events labelled.

use larik_testkit::git::git;
use larik_testkit::turn;
use serde_json::{Value, json};

use super::{Harness, stderr, stdout};

#[tokio::test(flavor = "multi_thread")]
async fn project_definitions_win_a_broken_one_is_reported_and_events_are_labelled() {
    let harness = Harness::new().await;
    let definition = |body: &str| {
        format!("---\nname: helper\ndescription: Helps out.\ntools: Read\n---\n{body}\n")
    };
    harness.write_config(
        harness.data.path().join(".claude/agents/helper.md"),
        &definition("PERSONAL BODY"),
    );
    harness.write_config(
        harness.config_dir().join("agents/helper.md"),
        &definition("LARIK PERSONAL BODY"),
    );
    harness.write_config(
        harness.cwd().join(".claude/agents/helper.md"),
        &definition("PROJECT BODY"),
    );
    harness.write_config(
        harness.cwd().join(".larik/agents/broken.md"),
        "no frontmatter here\n",
    );
    harness.server.enqueue(turn().tool_call(
        "t1",
        "task",
        json!({"description": "check", "prompt": "Read README.md.", "subagent_type": "helper"}),
    ));
    harness
        .server
        .enqueue(turn().tool_call("c1", "read", json!({"file_path": "README.md"})));
    harness.server.enqueue(turn().text("It is a demo."));
    harness
        .server
        .enqueue(turn().text("The helper says it is a demo."));

    let output = harness
        .run(&["-p", "ask the helper", "--output-format", "stream-json"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let all = format!("{}{}", stdout(&output), stderr(&output));
    assert!(all.contains("broken.md"), "the broken file is named: {all}");

    let requests = harness.server.requests();
    let child = requests
        .iter()
        .find(|request| request.body["system"].to_string().contains("BODY"))
        .expect("the child's request");
    let system = child.body["system"].to_string();
    assert!(system.contains("PROJECT BODY"), "{system}");
    assert!(!system.contains("PERSONAL BODY"), "{system}");

    let lines: Vec<Value> = stdout(&output)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let forwarded: Vec<&Value> = lines
        .iter()
        .filter(|line| line["type"] == "subagent")
        .collect();
    assert!(
        forwarded
            .iter()
            .all(|line| line["agent"]["label"] == "helper: check"
                && line["agent"]["call_id"] == "t1"),
        "{forwarded:?}"
    );
    assert!(
        forwarded.iter().any(
            |line| line["event"]["type"] == "tool_call_end" && line["event"]["call_id"] == "c1"
        ),
        "the child's read is shown: {forwarded:?}"
    );
    let result = lines
        .iter()
        .find(|line| line["type"] == "tool_call_end" && line["call_id"] == "t1")
        .expect("the task's end");
    assert_eq!(result["output"], "It is a demo.");
}

fn from_child(request: &larik_testkit::RecordedRequest) -> bool {
    request.body["system"]
        .to_string()
        .contains("You are a subagent")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_headless_run_waits_for_its_background_task_and_answers_with_it() {
    let harness = Harness::new().await;
    harness.server.enqueue_matching(
        |request| !from_child(request),
        turn().tool_call(
            "t1",
            "task",
            json!({
                "description": "read later",
                "prompt": "Read README.md and say what it is.",
                "subagent_type": "explore",
                "run_in_background": true,
            }),
        ),
    );
    harness.server.enqueue_matching(
        |request| !from_child(request),
        turn().text("Started; waiting for it."),
    );
    // The child answers only once the parent's second request is on its way, so the
    // report cannot ride along with it: the run must wait for the task and deliver it in
    // a turn of its own.
    let child_reply = harness
        .server
        .enqueue_held(from_child, turn().text("A demo project."));
    harness.server.on_request(move |request| {
        if !from_child(request) && request.tool_result_text("t1").is_some() {
            child_reply.open();
        }
    });
    harness.server.enqueue_matching(
        |request| !from_child(request),
        turn().text("The background task says: a demo project."),
    );

    let output = harness
        .run(&["-p", "look in the background", "--output-format", "json"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON result");
    assert_eq!(
        result["result"], "The background task says: a demo project.",
        "the run ends with the turn that took the report: {result}"
    );
    let last = harness.server.requests().pop().expect("requests");
    assert!(
        last.body["messages"]
            .to_string()
            .contains("A demo project."),
        "{}",
        last.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kept_worktrees_are_listed_and_discarded_from_the_command_line_and_p() {
    let harness = Harness::new().await;
    let cwd = harness.cwd();
    git(&cwd, &["init", "-q", "-b", "main"]);
    git(&cwd, &["add", "-A"]);
    git(&cwd, &["commit", "-qm", "start"]);
    let worktrees =
        larik_subagents::Worktrees::new(harness.data.path().join("share/larik/worktrees"));
    let created = worktrees
        .create(&cwd, "explore: try something")
        .expect("create")
        .expect("a repository");
    std::fs::write(created.path.join("idea.txt"), "an idea\n").expect("write");
    let name = created.name.clone();
    worktrees
        .finish(created, "explore: try something")
        .expect("finish");

    let listed = harness.run(&["worktrees"]).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let text = stdout(&listed);
    assert!(
        text.contains(&name)
            && text.contains("A idea.txt")
            && text.contains("explore: try something"),
        "{text}"
    );
    let through_p = harness.run(&["-p", "/worktrees"]).await;
    assert!(through_p.status.success(), "{}", stderr(&through_p));
    assert!(stdout(&through_p).contains(&name));

    let discarded = harness.run(&["worktrees", "discard", &name]).await;
    assert!(discarded.status.success(), "{}", stderr(&discarded));
    assert!(stdout(&discarded).contains("Discarded"));
    let unknown = harness.run(&["worktrees", "discard", &name]).await;
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("no kept worktree"),
        "{}",
        stderr(&unknown)
    );
}
