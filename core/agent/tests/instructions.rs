//! Instruction files through the agent and the fake model server: the system prompt the
//! provider actually receives holds the personal file, then the project's files from the git
//! root down to the working directory, each in its `<instructions>` tags, between the base
//! prompt and the appended text; the files are read once, so the prompt stays the same for
//! every request of the context.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use larik_agent::AgentHandle;
use larik_protocol::{Event, Op, StopReason};
use larik_testkit::{FakeModelServer, RecordedRequest, turn};
use tempfile::TempDir;

#[path = "support/fake_model.rs"]
mod fake_model;

const WAIT: Duration = Duration::from_secs(30);
const CLAUDE: &str = "anthropic/claude-sonnet-4-5";
const GPT: &str = "openai/gpt-5.1";

/// A git repository `repo/` with instruction files at three depths, and a personal config
/// directory beside it.
struct Project {
    _dir: TempDir,
    config: PathBuf,
    repo: PathBuf,
    cwd: PathBuf,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().expect("temp dir");
        let base = dir.path().canonicalize().expect("canonical temp dir");
        let config = base.join("config/larik");
        let repo = base.join("repo");
        let cwd = repo.join("crates/app");
        fs::create_dir_all(&config).expect("config dir");
        fs::create_dir_all(&cwd).expect("project dirs");
        fs::create_dir(repo.join(".git")).expect(".git");
        // Above the git root: must not be loaded.
        write(&base.join("AGENTS.md"), "OUTSIDE THE REPO");
        write(&config.join("AGENTS.md"), "Personal: answer in English.");
        write(&repo.join("AGENTS.md"), "Root: run the tests.");
        write(&repo.join("crates/CLAUDE.md"), "Crates: keep crates small.");
        write(&cwd.join("AGENTS.md"), "App: the app is a CLI.");
        // Shadowed by the AGENTS.md beside it.
        write(&cwd.join("CLAUDE.md"), "SHADOWED CLAUDE FILE");
        Project {
            _dir: dir,
            config,
            repo,
            cwd,
        }
    }

    /// The tagged files, in the order they must appear.
    fn expected_tags(&self) -> Vec<String> {
        [
            (
                self.config.join("AGENTS.md"),
                "Personal: answer in English.",
            ),
            (self.repo.join("AGENTS.md"), "Root: run the tests."),
            (
                self.repo.join("crates/CLAUDE.md"),
                "Crates: keep crates small.",
            ),
            (self.cwd.join("AGENTS.md"), "App: the app is a CLI."),
        ]
        .into_iter()
        .map(|(path, text)| {
            format!(
                "<instructions source=\"{}\">\n{text}\n</instructions>\n",
                path.display()
            )
        })
        .collect()
    }
}

fn write(path: &Path, text: &str) {
    fs::write(path, text).expect("write instruction file");
}

/// Starts an agent in the project's working directory with its personal config directory.
fn spawn_agent(
    server: &FakeModelServer,
    project: &Project,
    data: &TempDir,
    model: &str,
    replacement: Option<&str>,
) -> AgentHandle {
    let mut config = fake_model::config_for(server, project.cwd.clone(), model);
    config.user_config_dir = Some(project.config.clone());
    config.system_prompt = replacement.map(str::to_string);
    config.append_system_prompt = Some("APPENDED BY THE USER".into());
    let writer = fake_model::new_session(data.path(), project.cwd.clone(), model);
    fake_model::spawn(config, writer, Vec::new())
}

/// Sends `text` and waits for the turn to end normally.
async fn run_turn(agent: &mut AgentHandle, text: &str) {
    agent
        .ops
        .send(Op::user_text(text))
        .expect("agent is running");
    loop {
        let event = tokio::time::timeout(WAIT, agent.events.recv())
            .await
            .expect("an event arrives")
            .expect("the agent is running");
        if let Event::TurnComplete { stop_reason, .. } = event {
            assert_eq!(stop_reason, StopReason::EndTurn);
            return;
        }
    }
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
    let server = FakeModelServer::start().await;
    let project = Project::new();
    let data = tempfile::tempdir().expect("data");
    let mut agent = spawn_agent(&server, &project, &data, model, replacement);

    server.enqueue(turn().text("first answer"));
    run_turn(&mut agent, "first question").await;
    // Read once per context: an edit now shows in the next context, not this one.
    write(&project.cwd.join("AGENTS.md"), "CHANGED MID-CONTEXT");
    server.enqueue(turn().text("second answer"));
    run_turn(&mut agent, "second question").await;

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let prompt = system_prompt(&requests[0]);
    let base = replacement.unwrap_or("You are Larik").to_string();
    let mut parts = vec![base];
    parts.extend(project.expected_tags());
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
    server.assert_no_violations();
}

#[tokio::test]
async fn instruction_files_follow_larik_prompt_on_anthropic() {
    files_reach_the_model(CLAUDE, None).await;
}

#[tokio::test]
async fn instruction_files_follow_a_replaced_prompt_on_openai() {
    files_reach_the_model(GPT, Some("A REPLACED SYSTEM PROMPT.")).await;
}
