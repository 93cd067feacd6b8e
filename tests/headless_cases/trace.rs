//! The debug trace through `larik -p`: with `--debug` (or `LARIK_DEBUG=1`) a session writes
//! `<id>.trace/` beside its file, whose request bodies are byte for byte what the fake
//! model server received and whose response bodies are what it sent; no API key appears in
//! any of its files; `larik trace ID` sums it up with its requests, tokens and retries; a
//! personal `"debug": true` turns it on, a shared one cannot.

use std::path::{Path, PathBuf};

use larik_testkit::{Reply, turn};
use serde_json::{Value, json};

use super::{Harness, enqueue_three_steps, json_run, stderr, stdout};

/// Every file under `dir`, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).expect("readable dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn json_file(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("trace file")).expect("JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_debug_run_traces_every_request_and_event_without_keys() {
    let harness = Harness::new().await;
    enqueue_three_steps(&harness.server);
    let result = json_run(
        &harness,
        &["--debug", "--allowedTools", "Bash(echo:*)"],
        "look around",
    )
    .await;
    let id = result["session_id"].as_str().expect("id").to_string();
    let session = harness.session_files()[0].clone();
    let dir = session.with_extension("trace");
    assert!(dir.is_dir(), "{} is written", dir.display());

    // The request bodies are what the server received; the answers what it sent.
    let received = harness.server.requests();
    assert_eq!(received.len(), 3);
    let http = dir.join("http");
    for (index, request) in received.iter().enumerate() {
        let number = format!("{:04}", index + 1);
        let body = std::fs::read_to_string(http.join(format!("{number}-request.body")))
            .expect("request body");
        assert_eq!(body, request.raw_body, "request {number}");
        let meta = json_file(&http.join(format!("{number}-request.json")));
        assert_eq!(meta["method"], "POST");
        assert!(meta["url"].as_str().expect("url").ends_with("/v1/messages"));
        assert_eq!(meta["headers"]["x-api-key"], "[redacted]");
        let answer = json_file(&http.join(format!("{number}-response.json")));
        assert_eq!(answer["status"], 200);
        let streamed = std::fs::read_to_string(http.join(format!("{number}-response.body")))
            .expect("response body");
        assert!(streamed.contains("event: message_stop"), "{streamed}");
        assert_eq!(answer["bytes"], streamed.len());
    }
    let last = std::fs::read_to_string(http.join("0003-response.body")).expect("last answer");
    assert!(last.contains(r#""text_delta","text":"do"}"#), "{last}");

    // Every event, in order, timestamped.
    let events: Vec<Value> = std::fs::read_to_string(dir.join("events.jsonl"))
        .expect("events")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect();
    assert_eq!(events[0]["event"]["type"], "session_configured");
    assert_eq!(
        events.last().expect("events")["event"]["type"],
        "turn_complete"
    );
    assert!(events.iter().all(|line| line["time"].is_string()));
    let begins = events
        .iter()
        .filter(|line| line["event"]["type"] == "tool_call_begin")
        .count();
    assert_eq!(begins, 2);

    for file in files_under(&dir) {
        let bytes = std::fs::read(&file).expect("trace file");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("test-key"), "a key in {}", file.display());
    }

    let output = harness.run(&["trace", &id]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let summary = stdout(&output);
    assert!(
        summary.contains("3 provider request(s), 0 without a successful answer."),
        "{summary}"
    );
    assert!(
        summary.contains("Tokens of `anthropic/claude-sonnet-4-5`: 450 input"),
        "{summary}"
    );
    assert!(summary.contains("Retries: 0."), "{summary}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_environment_turns_the_trace_on_and_retries_are_summed_up() {
    let mut harness = Harness::new().await;
    harness
        .extra_env
        .push(("LARIK_DEBUG".to_string(), "1".to_string()));
    harness.server.enqueue(Reply::Status {
        status: 529,
        headers: vec![("retry-after".into(), "0".into())],
        body:
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                .to_string(),
    });
    harness.server.enqueue(turn().text("fine now"));
    let result = json_run(&harness, &[], "hello").await;
    let id = result["session_id"].as_str().expect("id").to_string();
    let http = harness.session_files()[0]
        .with_extension("trace")
        .join("http");
    assert_eq!(json_file(&http.join("0001-response.json"))["status"], 529);
    assert!(
        std::fs::read_to_string(http.join("0001-response.body"))
            .expect("error body")
            .contains("Overloaded")
    );
    assert_eq!(json_file(&http.join("0002-response.json"))["status"], 200);

    let output = harness.run(&["trace", &id]).await;
    let summary = stdout(&output);
    assert!(
        summary.contains("2 provider request(s), 1 without a successful answer."),
        "{summary}"
    );
    assert!(summary.contains("Retries: 1."), "{summary}");

    // Without a trace, `larik trace` says how to get one.
    let output = harness.run(&["trace", "20990101-000000-abcdef"]).await;
    assert_eq!(output.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_file_turns_the_trace_on_and_a_shared_one_cannot() {
    let harness = Harness::new().await;
    std::fs::create_dir_all(harness.cwd().join(".larik")).expect(".larik");
    std::fs::write(
        harness.cwd().join(".larik/settings.json"),
        r#"{"debug": true}"#,
    )
    .expect("shared settings");
    harness.server.enqueue(turn().text("untraced"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("`debug` ignored"),
        "{}",
        stderr(&output)
    );
    let first = harness.session_files()[0].clone();
    assert!(
        !first.with_extension("trace").exists(),
        "a shared file turns nothing on"
    );

    let config = harness.data.path().join(".config/larik");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(config.join("config.json"), r#"{"debug": true}"#).expect("config");
    harness.server.enqueue(turn().text("traced"));
    let result = json_run(&harness, &[], "hello again").await;
    let id = result["session_id"].as_str().expect("id");
    let file = harness
        .session_files()
        .into_iter()
        .find(|path| path.file_stem().is_some_and(|stem| stem == id))
        .expect("the second session");
    assert!(file.with_extension("trace").join("events.jsonl").is_file());
}
