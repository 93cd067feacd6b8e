//! `larik acp` under load: a long session (the soak's fast version: 150 turns in one
//! process, then the session reloaded and resumed headless) and 20 sessions prompted at
//! once in one process, each answered by the fake model with its own marker, checked for
//! cross-talk in the updates, the responses and the session files.

use std::collections::HashMap;

use larik_testkit::{RecordedRequest, turn};
use serde_json::{Value, json};

use super::sessions::session_file;
use super::soak::{self, Acp, Arrivals};
use crate::kit::*;

/// Turns of the soak's fast version (the benchmark runs 1,000).
const SOAK_TURNS: usize = 150;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_session_keeps_every_turn_and_resumes_whole() {
    let harness = Harness::new().await;
    std::fs::write(harness.cwd().join(soak::NOTES), soak::NOTES_TEXT).expect("notes");
    let arrivals = Arrivals::watch(&harness.server);
    let mut acp = Acp::spawn(&harness.program, &harness.cwd(), &harness.agent_env());
    let session_id = acp.open_session(&harness.cwd()).await;
    let run = soak::run_turns(
        &mut acp,
        &harness.server,
        &arrivals,
        &session_id,
        1..=SOAK_TURNS,
        &[],
        None,
    )
    .await;
    assert_eq!(run.turn_times.len(), SOAK_TURNS, "every turn completed");
    acp.finish().await;
    harness.server.assert_no_violations();
    let requests = harness.server.requests();
    assert_eq!(
        requests.len(),
        soak::requests_in(SOAK_TURNS),
        "one request per turn, two for the reading ones"
    );
    let last = requests.last().expect("requests");
    assert!(
        last.tool_result_text(&format!("read-{SOAK_TURNS}"))
            .is_some_and(|text| text.contains("the build is green")),
        "the last read's result went to the model"
    );

    // The session file holds every message, in order.
    let file = session_file(harness.data.path(), &session_id);
    let messages: Vec<Value> = std::fs::read_to_string(&file)
        .expect("session file")
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("JSON line"))
        .filter(|entry| entry["type"] == "message")
        .collect();
    assert_eq!(messages.len(), soak::messages_after(SOAK_TURNS));
    let texts: Vec<String> = messages.iter().map(Value::to_string).collect();
    for n in [1, 10, 75, SOAK_TURNS] {
        assert!(
            texts
                .iter()
                .any(|text| text.contains(&soak::prompt_text(n))),
            "prompt {n} is in the file"
        );
        assert!(
            texts
                .iter()
                .any(|text| text.contains(&soak::answer_text(n))),
            "answer {n} is in the file"
        );
    }

    // Reloaded in another process, the whole conversation goes to the model again.
    harness.server.enqueue(answer("Still here."));
    let output = tokio::time::timeout(
        WAIT,
        harness
            .clean_command(&harness.program)
            .envs(harness.agent_env())
            .args(["--resume", &session_id, "-p", "one more"])
            .output(),
    )
    .await
    .expect("the resumed run finishes")
    .expect("larik starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Still here.\n");
    let resumed = harness
        .server
        .requests()
        .pop()
        .expect("the resumed request");
    let sent = resumed.body["messages"].as_array().expect("messages");
    assert_eq!(sent.len(), soak::messages_after(SOAK_TURNS) + 1);
    assert!(resumed.raw_body.contains(&soak::prompt_text(1)));
    assert!(resumed.raw_body.contains(&soak::answer_text(SOAK_TURNS)));
    harness.server.assert_no_violations();
}

/// Sessions prompted at once.
const SESSIONS: usize = 20;

fn marker(index: usize) -> String {
    format!("MARK-{index:02}")
}

/// Whether session `index` reads its marker file before answering.
fn reads(index: usize) -> bool {
    index.is_multiple_of(3)
}

fn prompt_of(index: usize) -> String {
    format!("Prompt for {}: say your marker.", marker(index))
}

fn answer_of(index: usize) -> String {
    format!("Session {} answers.", marker(index))
}

/// Every marker `text` names.
fn markers_in(text: &str) -> Vec<String> {
    text.match_indices("MARK-")
        .map(|(at, _)| text[at..].chars().take(7).collect())
        .collect()
}

/// Whether `request` carries session `index`'s prompt, with `messages` messages.
fn is_request_of(request: &RecordedRequest, index: usize, messages: usize) -> bool {
    request.raw_body.contains(&prompt_of(index))
        && request.body["messages"]
            .as_array()
            .is_some_and(|sent| sent.len() == messages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_sessions_prompted_at_once_keep_to_themselves() {
    let harness = Harness::new().await;
    let projects = tempfile::tempdir().expect("projects");
    let mut raw = harness.raw();
    let init = raw
        .request("initialize", json!({"protocolVersion": 1}))
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");

    // One project per session, each with its marker file.
    let mut session_of = HashMap::new();
    let mut sessions = Vec::new();
    for index in 0..SESSIONS {
        let dir = projects.path().join(format!("project-{}", marker(index)));
        std::fs::create_dir(&dir).expect("project dir");
        std::fs::write(
            dir.join("marker.txt"),
            format!("The marker file of {}.\n", marker(index)),
        )
        .expect("marker file");
        let dir = dir.canonicalize().expect("canonical dir");
        let created = raw
            .request("session/new", json!({"cwd": dir, "mcpServers": []}))
            .await;
        let id = created["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {created}"))
            .to_string();
        session_of.insert(id.clone(), index);
        sessions.push(id);
    }

    // Each session's replies go to its own requests, whatever order they arrive in.
    for index in 0..SESSIONS {
        let mark = marker(index);
        if reads(index) {
            harness.server.enqueue_matching(
                move |request| is_request_of(request, index, 1),
                turn()
                    .text(format!("Reading the file of {mark}. "))
                    .tool_call(
                        format!("read-{index:02}"),
                        "read",
                        json!({"file_path": "marker.txt"}),
                    )
                    .usage(10, 1),
            );
            harness.server.enqueue_matching(
                move |request| is_request_of(request, index, 3),
                answer(&answer_of(index)),
            );
        } else {
            harness.server.enqueue_matching(
                move |request| is_request_of(request, index, 1),
                answer(&answer_of(index)),
            );
        }
    }

    // Every prompt is written before any answer is read.
    for (index, id) in sessions.iter().enumerate() {
        raw.send_request(
            json!(1000 + index),
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": prompt_of(index)}]}),
        )
        .await;
    }
    let mut texts = vec![String::new(); SESSIONS];
    let mut reads_completed = [0; SESSIONS];
    let mut ended = [false; SESSIONS];
    while ended.iter().any(|done| !done) {
        let message = raw.next_message().await;
        match message["method"].as_str() {
            Some("session/update") => {
                let params = &message["params"];
                let session = params["sessionId"].as_str().expect("session id");
                let index = *session_of
                    .get(session)
                    .unwrap_or_else(|| panic!("an update for an unknown session: {message}"));
                let update = &params["update"];
                for found in markers_in(&update.to_string()) {
                    assert_eq!(found, marker(index), "cross-talk in {session}: {message}");
                }
                match update["sessionUpdate"].as_str() {
                    Some("agent_message_chunk") => {
                        texts[index].push_str(update["content"]["text"].as_str().unwrap_or(""));
                    }
                    Some("tool_call_update") if update["status"] == "completed" => {
                        reads_completed[index] += 1;
                    }
                    _ => {}
                }
            }
            Some("session/request_permission") => panic!("a read asked for permission: {message}"),
            Some(other) => panic!("unexpected request {other}: {message}"),
            None => {
                let index = message["id"]
                    .as_u64()
                    .and_then(|id| id.checked_sub(1000))
                    .and_then(|index| usize::try_from(index).ok())
                    .filter(|index| *index < SESSIONS)
                    .unwrap_or_else(|| panic!("an unexpected response: {message}"));
                assert_eq!(
                    message["result"]["stopReason"], "end_turn",
                    "session {index}: {message}"
                );
                assert!(!ended[index], "session {index} answered twice");
                ended[index] = true;
            }
        }
    }
    raw.finish().await;
    harness.server.assert_no_violations();

    for index in 0..SESSIONS {
        let expected = if reads(index) {
            format!(
                "Reading the file of {}. {}",
                marker(index),
                answer_of(index)
            )
        } else {
            answer_of(index)
        };
        assert_eq!(texts[index], expected, "session {index}'s text");
        assert_eq!(
            reads_completed[index],
            usize::from(reads(index)),
            "session {index}'s read"
        );
    }
    let requests = harness.server.requests();
    let reading = (0..SESSIONS).filter(|index| reads(*index)).count();
    assert_eq!(requests.len(), SESSIONS + reading);
    for index in (0..SESSIONS).filter(|index| reads(*index)) {
        let follow_up = requests
            .iter()
            .find(|request| is_request_of(request, index, 3))
            .unwrap_or_else(|| panic!("session {index}'s second request"));
        let result = follow_up
            .tool_result_text(&format!("read-{index:02}"))
            .expect("the read's result");
        assert!(
            result.contains(&format!("The marker file of {}.", marker(index))),
            "session {index} read its own file: {result}"
        );
    }

    // Each session file holds exactly its own conversation.
    for (index, id) in sessions.iter().enumerate() {
        let messages: Vec<Value> = std::fs::read_to_string(session_file(harness.data.path(), id))
            .expect("session file")
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("JSON line"))
            .filter(|entry| entry["type"] == "message")
            .collect();
        assert_eq!(
            messages.len(),
            if reads(index) { 4 } else { 2 },
            "session {index}'s messages: {messages:#?}"
        );
        let text = Value::from(messages).to_string();
        assert!(text.contains(&prompt_of(index)), "session {index}'s prompt");
        assert!(text.contains(&answer_of(index)), "session {index}'s answer");
        for found in markers_in(&text) {
            assert_eq!(found, marker(index), "session {index}'s file: {text}");
        }
    }
}
