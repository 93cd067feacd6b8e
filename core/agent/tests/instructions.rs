//! Instruction files through the agent and the fake model server: the system prompt the
//! provider actually receives holds the personal file, then the project's files from the git
//! root down to the working directory, each in its `<instructions>` tags, between the base
//! prompt and the appended text; the files are read once, so the prompt stays the same for
//! every request of the context.

use std::path::Path;

use larik_protocol::StopReason;
use larik_testkit::{RecordedRequest, turn};

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness};

const GPT: &str = "openai/gpt-5.1";

/// The agent's working directory: three levels down a git repository `repo/`.
const CWD: &str = "repo/crates/app";

/// The personal config directory, beside the repository.
const PERSONAL: &str = "config/larik";

/// Instruction files at three depths of the repository, a personal one, and two that must
/// not be loaded.
const FILES: &[(&str, &str)] = &[
    // Above the git root: must not be loaded.
    ("AGENTS.md", "OUTSIDE THE REPO"),
    ("config/larik/AGENTS.md", "Personal: answer in English."),
    ("repo/.git/HEAD", "ref: refs/heads/main\n"),
    ("repo/AGENTS.md", "Root: run the tests."),
    ("repo/crates/CLAUDE.md", "Crates: keep crates small."),
    ("repo/crates/app/AGENTS.md", "App: the app is a CLI."),
    // Shadowed by the AGENTS.md beside it.
    ("repo/crates/app/CLAUDE.md", "SHADOWED CLAUDE FILE"),
];

/// The project directory (canonical, as the working directory is) around `cwd`.
fn project_of(cwd: &Path) -> &Path {
    cwd.ancestors()
        .nth(CWD.split('/').count())
        .expect("the working directory is inside the project")
}

/// The tagged files, in the order they must appear, for the agent working in `cwd`.
fn expected_tags(cwd: &Path) -> Vec<String> {
    let project = project_of(cwd);
    [
        ("config/larik/AGENTS.md", "Personal: answer in English."),
        ("repo/AGENTS.md", "Root: run the tests."),
        ("repo/crates/CLAUDE.md", "Crates: keep crates small."),
        ("repo/crates/app/AGENTS.md", "App: the app is a CLI."),
    ]
    .into_iter()
    .map(|(path, text)| {
        format!(
            "<instructions source=\"{}\">\n{text}\n</instructions>\n",
            project.join(path).display()
        )
    })
    .collect()
}

/// Starts an agent in the repository's working directory with its personal config
/// directory, the system prompt replaced by `replacement` if given, and appended text.
async fn start(model: &str, replacement: Option<&str>) -> Harness {
    Harness::setup(model)
        .files(FILES)
        .cwd(CWD)
        .start(|config| {
            config.user_config_dir = Some(project_of(&config.cwd).join(PERSONAL));
            config.system_prompt = replacement.map(str::to_string);
            config.append_system_prompt = Some("APPENDED BY THE USER".into());
        })
        .await
}

/// Sends `text` and waits for the turn to end normally.
async fn run_turn(h: &mut Harness, text: &str) {
    let (_, stop) = h.prompt(text).await;
    assert_eq!(stop, StopReason::EndTurn);
}

/// The system prompt a request carried, in either wire format.
fn system_prompt(request: &RecordedRequest) -> String {
    if request.path == "/v1/responses" {
        return request.body["instructions"]
            .as_str()
            .expect("instructions is a string")
            .to_string();
    }
    let blocks = request.body["system"]
        .as_array()
        .expect("system is a list of blocks");
    blocks
        .iter()
        .map(|block| block["text"].as_str().expect("a text block"))
        .collect()
}

/// Checks that `prompt` holds `parts` in this order, without overlap.
fn assert_in_order(prompt: &str, parts: &[String]) {
    let mut from = 0;
    for part in parts {
        let at = prompt[from..]
            .find(part.as_str())
            .unwrap_or_else(|| panic!("`{part}` missing or out of order in:\n{prompt}"));
        from += at + part.len();
    }
}

async fn files_reach_the_model(model: &str, replacement: Option<&str>) {
    let mut h = start(model, replacement).await;

    h.server.enqueue(turn().text("first answer"));
    run_turn(&mut h, "first question").await;
    // Read once per context: an edit now shows in the next context, not this one.
    std::fs::write(h.cwd.join("AGENTS.md"), "CHANGED MID-CONTEXT").expect("edit");
    h.server.enqueue(turn().text("second answer"));
    run_turn(&mut h, "second question").await;

    let requests = h.server.requests();
    assert_eq!(requests.len(), 2);
    let prompt = system_prompt(&requests[0]);
    let base = replacement.unwrap_or("You are Larik").to_string();
    let mut parts = vec![base];
    parts.extend(expected_tags(&h.cwd));
    parts.push("APPENDED BY THE USER".into());
    assert_in_order(&prompt, &parts);
    assert!(
        prompt.starts_with(&parts[0]),
        "the base prompt comes first:\n{prompt}"
    );
    assert!(prompt.ends_with("\nAPPENDED BY THE USER"), "{prompt}");
    assert!(!prompt.contains("OUTSIDE THE REPO"), "{prompt}");
    assert!(!prompt.contains("SHADOWED CLAUDE FILE"), "{prompt}");
    assert_eq!(prompt.matches("<instructions ").count(), 4, "{prompt}");
    assert_eq!(
        system_prompt(&requests[1]),
        prompt,
        "the files are not read again within the context"
    );
    h.server.assert_no_violations();
}

#[tokio::test]
async fn instruction_files_follow_larik_prompt_on_anthropic() {
    files_reach_the_model(CLAUDE, None).await;
}

#[tokio::test]
async fn instruction_files_follow_a_replaced_prompt_on_openai() {
    files_reach_the_model(GPT, Some("A REPLACED SYSTEM PROMPT.")).await;
}
