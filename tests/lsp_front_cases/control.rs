//! Session control through `larik lsp` and pytest-lsp posing as VS Code: `/rewind`,
//! `/rewind 2` and `/fork` branch into new session files (`fork_of`, `fork_at`), tell the
//! editor the new id in a `session_switched` event and the prompt's answer, and leave the
//! source file as it was byte for byte; `/context` adds up to the request the model then
//! receives; `/resume ID` replays the stored conversation; `/clear` starts a fresh context
//! whose system prompt holds an instruction file as edited before it.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::kit::{Harness, Log, answer, initialize, new_session, prompt};
use super::sessions::{message_texts, meta, session_file};

fn file_of(harness: &Harness, id: &str) -> PathBuf {
    session_file(harness.data.path(), id)
}

fn prompt_to(name: &str, session: &str, text: &str) -> Value {
    json!({"request": "larik/prompt", "name": name,
           "params": {"sessionId": session, "prompt": text}})
}

/// What Larik said itself (`message_complete` events), joined.
fn said(log: &Log) -> String {
    log.events_of("message_complete")
        .iter()
        .filter_map(|event| event["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vs_code_rewinds_forks_and_sizes_the_context_without_touching_the_source() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("Answer one."));
    harness.server.enqueue(answer("Answer two."));
    let first = harness
        .drive(json!({"client": "visual-studio-code", "steps": [
            initialize(),
            new_session(),
            prompt("one", "prompt one"),
            prompt("two", "prompt two"),
        ]}))
        .await;
    let source = first.response("new")["sessionId"]
        .as_str()
        .expect("id")
        .to_string();
    let source_file = file_of(&harness, &source);
    let before = std::fs::read(&source_file).expect("source");

    harness.server.enqueue(answer("Answer after the fork."));
    let log = harness
        .drive(json!({"client": "visual-studio-code", "steps": [
            initialize(),
            prompt_to("list", &source, "/rewind"),
            prompt_to("rewind", &source, "/rewind 2"),
            prompt("fork", "/fork"),
            prompt("context", "/context"),
            prompt("after", "after the fork"),
        ]}))
        .await;
    let text = said(&log);
    assert!(text.contains("1. prompt one\n2. prompt two\n"), "{text}");
    assert!(text.contains("Files were not touched"), "{text}");

    let switched = log.events_of("session_switched");
    assert_eq!(switched.len(), 2, "{switched:?}");
    assert_eq!(switched[0]["reason"], "rewind");
    assert_eq!(switched[0]["from"], source.as_str());
    assert_eq!(switched[0]["prompt"], "prompt two");
    assert_eq!(switched[0]["fork_at"], 2);
    let rewound = switched[0]["session_id"].as_str().expect("rewound id");
    assert_eq!(log.response("rewind")["sessionId"], rewound);
    assert_eq!(switched[1]["reason"], "fork");
    assert_eq!(switched[1]["from"], rewound);
    let forked = switched[1]["session_id"].as_str().expect("forked id");
    assert_eq!(log.response("fork")["sessionId"], forked);
    // The switch is told under the id the editor used; later events carry the new one.
    let carriers: Vec<&Value> = log
        .notifications("larik/event")
        .into_iter()
        .filter(|params| params["event"]["type"] == "session_switched")
        .map(|params| &params["sessionId"])
        .collect();
    assert_eq!(carriers, [&json!(source), &json!(rewound)]);

    let rewound_meta = meta(&file_of(&harness, rewound));
    assert_eq!(rewound_meta["fork_of"], source.as_str());
    assert_eq!(rewound_meta["fork_at"], 2);
    let forked_meta = meta(&file_of(&harness, forked));
    assert_eq!(forked_meta["fork_of"], rewound);
    assert_eq!(forked_meta["fork_at"], 2);
    assert_eq!(
        std::fs::read(&source_file).expect("source"),
        before,
        "the source is untouched"
    );

    // `/context` described the request that came next.
    let report = &log.events_of("context")[0]["report"];
    let total = report["total_tokens"].as_u64().expect("total");
    let parts: u64 = report["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .map(|part| part["tokens"].as_u64().expect("tokens"))
        .sum();
    assert_eq!(parts, total);
    assert!(text.contains("The next request holds about"), "{text}");
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 3, "only the last prompt asked the model");
    let next = &requests[2];
    assert_eq!(
        message_texts(&next.body),
        ["prompt one", "Answer one.", "after the fork"],
        "the branch holds the conversation before prompt 2"
    );
    let carried = next.raw_body.len().div_ceil(4) as u64;
    assert!(
        total.abs_diff(carried) as f64 <= carried as f64 * 0.05,
        "/context said {total} tokens, the request carried about {carried}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vs_code_resumes_with_history_and_clears_with_the_edited_instructions() {
    let harness = Harness::new().await;
    let agents = harness.path("AGENTS.md");
    std::fs::write(&agents, "Old rule: be brief.\n").expect("AGENTS.md");
    harness.server.enqueue(answer("Answer one."));
    let first = harness
        .drive(json!({"client": "visual-studio-code", "steps": [
            initialize(),
            new_session(),
            prompt("one", "prompt one"),
        ]}))
        .await;
    let source = first.response("new")["sessionId"]
        .as_str()
        .expect("id")
        .to_string();

    harness.server.enqueue(answer("Answer two."));
    harness.server.enqueue(answer("Answer fresh."));
    let log = harness
        .drive(json!({"client": "visual-studio-code", "steps": [
            initialize(),
            new_session(),
            prompt("list", "/resume"),
            prompt("resume", &format!("/resume {source}")),
            prompt("two", "prompt two"),
            {"write": {"path": agents, "text": "New rule: be thorough.\n"}},
            prompt("clear", "/clear"),
            prompt("fresh", "prompt fresh"),
        ]}))
        .await;
    let text = said(&log);
    assert!(text.contains(&format!("| `{source}` |")), "listed: {text}");
    let switched = log.events_of("session_switched");
    assert_eq!(switched[0]["reason"], "resume");
    assert_eq!(switched[0]["session_id"], source.as_str());
    let history = switched[0]["history"].as_array().expect("history");
    assert_eq!(
        history,
        &[
            json!({"role": "user", "text": "prompt one"}),
            json!({"role": "assistant", "text": "Answer one."}),
        ]
    );
    assert_eq!(log.response("resume")["sessionId"], source.as_str());
    assert_eq!(switched[1]["reason"], "clear");
    assert_eq!(switched[1]["session_id"], source.as_str());

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        message_texts(&requests[1].body),
        ["prompt one", "Answer one.", "prompt two"],
        "the resumed conversation goes on"
    );
    let fresh = &requests[2].body;
    assert_eq!(message_texts(fresh), ["prompt fresh"]);
    let system = fresh["system"].to_string();
    assert!(system.contains("New rule: be thorough."), "{system}");
    assert!(!system.contains("Old rule"), "{system}");
    assert!(requests[1].body["system"].to_string().contains("Old rule"));
}
