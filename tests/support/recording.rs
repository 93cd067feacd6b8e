//! The recording extension (`server/examples/recording_extension.rs`) as the front-end
//! tests use it: where the built program is, the turns that exercise it, and what its hook
//! wrote. Cargo builds the examples with the tests.

use std::path::{Path, PathBuf};

use larik_testkit::{FakeModelServer, Turn, turn};
use serde_json::{Value, json};

/// The tool whose calls the test hook denies.
pub const DENIED_TOOL: &str = "bash";

/// The text the extension adds to every system prompt.
pub const PROMPT_SECTION: &str = "The recording extension is present.";

/// What `/greet Ada` sends the model.
pub const GREETING_PROMPT: &str = "Please greet Ada.";

/// The built `larik` with the recording extension, next to the test programs.
pub fn program() -> PathBuf {
    let test_program = std::env::current_exe().expect("the test program's path");
    let profile_dir = test_program
        .parent()
        .and_then(Path::parent)
        .expect("the test program lives in <target>/<profile>/deps");
    let program = profile_dir.join("examples/recording_extension");
    assert!(
        program.exists(),
        "{} is missing: cargo builds it with the tests (cargo build --examples)",
        program.display()
    );
    program
}

/// The environment that points the extension at `log` and has it deny [`DENIED_TOOL`].
pub fn env(log: &Path) -> Vec<(String, String)> {
    vec![
        ("LARIK_RECORDING_LOG".into(), log.display().to_string()),
        ("LARIK_RECORDING_DENY".into(), DENIED_TOOL.into()),
    ]
}

/// A model turn calling `read` on `readme` (allowed) and `bash` (denied by the hook).
pub fn read_and_bash(readme: &str) -> Turn {
    turn()
        .tool_call("r1", "read", json!({"file_path": readme}))
        .tool_call("b1", DENIED_TOOL, json!({"command": "touch hooked.txt"}))
        .usage(10, 1)
}

/// Scripts the model for a run of the extension cases: [`read_and_bash`] on `readme`, an
/// answer, then the summary `/compact` asks for.
pub fn enqueue_turns(server: &FakeModelServer, readme: &str) {
    server.enqueue(read_and_bash(readme));
    server.enqueue(turn().text("Hello, Ada.").usage(10, 1));
    server.enqueue(turn().text("A summary of the greeting.").usage(10, 1));
}

/// The bodies of the requests the model received, checked to be the two turn requests and
/// the summary.
pub fn request_bodies(server: &FakeModelServer) -> Vec<Value> {
    let bodies: Vec<Value> = server
        .requests()
        .into_iter()
        .map(|request| request.body)
        .collect();
    assert_eq!(bodies.len(), 3, "two turn requests and the summary");
    bodies
}

/// The points the hook wrote, as `point` or `point:tool`, in order.
pub fn points(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).expect("the log holds JSON lines");
            let point = entry["point"].as_str().expect("a point").to_string();
            match entry["tool"].as_str() {
                Some(tool) => format!("{point}:{tool}"),
                None => point,
            }
        })
        .collect()
}

/// Checks a turn that ran [`read_and_bash`] then answered, and a compaction after it:
/// every loop point was reached, the denied call never ran, and the model was told why.
pub fn assert_saw_every_point(log: &Path, project: &Path, requests: &[Value]) {
    let points = points(log);
    assert_eq!(
        points,
        [
            "before_prompt",
            "before_tool:read",
            "after_tool:read",
            "before_tool:bash",
            "before_stop",
            "before_compact",
            "after_compact",
        ],
        "the hook's points"
    );
    assert!(
        !project.join("hooked.txt").exists(),
        "the denied command never ran"
    );
    let first = requests.first().expect("a first request").to_string();
    assert!(
        first.contains(PROMPT_SECTION),
        "the prompt section: {first}"
    );
    assert!(
        first.contains(GREETING_PROMPT),
        "the expanded command: {first}"
    );
    let second = requests.get(1).expect("a second request").to_string();
    assert!(
        second.contains("blocked by hook recording: the recording extension denies this tool"),
        "the model hears why the call did not run: {second}"
    );
}
