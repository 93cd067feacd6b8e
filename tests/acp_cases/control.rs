//! Session control through `larik acp` and the TypeScript SDK: `/clear` starts a fresh
//! context whose system prompt holds an instruction file as edited before it; `/rewind`,
//! `/rewind 2`, `/fork` and `session/fork` branch into new session files (`fork_of`,
//! `fork_at`) and leave the source file as it was, byte for byte; `/resume ID` replays the
//! stored conversation and continues it.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::kit::{Harness, Log, Sdk, answer, initialize, new_session, prompt};
use super::sessions::{message_texts, meta, session_file};

fn file_of(harness: &Harness, id: &str) -> PathBuf {
    session_file(harness.data.path(), id)
}

fn load(id: &str) -> Value {
    json!({"request": "session/load", "name": "load", "params": {
        "sessionId": id, "cwd": "$cwd", "mcpServers": []}})
}

/// The `_meta.larik` of each `session_info_update`, in order.
fn switches(log: &Log) -> Vec<Value> {
    log.updates("session_info_update")
        .into_iter()
        .map(|update| update["_meta"]["larik"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_clear_rebuilds_the_context_with_the_edited_instructions() {
    let harness = Harness::new().await;
    let agents = harness.path("AGENTS.md");
    std::fs::write(&agents, "Old rule: be brief.\n").expect("AGENTS.md");
    harness.server.enqueue(answer("Answer one."));
    harness.server.enqueue(answer("Answer after."));
    let log = harness
        .drive(
            Sdk::TypeScript,
            json!({"steps": [
                initialize(false),
                new_session(),
                prompt("one", "first question"),
                {"write": {"path": agents, "text": "New rule: be thorough.\n"}},
                prompt("clear", "/clear"),
                prompt("after", "second question"),
            ]}),
        )
        .await;
    for name in ["one", "clear", "after"] {
        assert_eq!(log.response(name)["stopReason"], "end_turn", "{name}");
    }
    assert!(
        log.agent_text().contains("Context cleared"),
        "{}",
        log.agent_text()
    );
    let requests = harness.server.requests();
    assert_eq!(requests.len(), 2, "/clear asks no model");
    let before = requests[0].body.to_string();
    assert!(before.contains("Old rule: be brief."));
    let after = &requests[1].body;
    assert_eq!(message_texts(after), ["second question"]);
    let system = after["system"].to_string();
    assert!(system.contains("New rule: be thorough."), "{system}");
    assert!(!system.contains("Old rule"), "{system}");
    assert_eq!(harness.session_files().len(), 1, "the same session file");
    let advertised = log.updates("available_commands_update");
    let names: Vec<&str> = advertised[0]["availableCommands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(|command| command["name"].as_str())
        .collect();
    for name in [
        "clear", "fork", "rewind", "resume", "context", "config", "cost",
    ] {
        assert!(names.contains(&name), "{name} is advertised: {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_forks_rewinds_and_resumes_without_touching_the_source() {
    let harness = Harness::new().await;
    harness.server.enqueue(answer("Answer one."));
    harness.server.enqueue(answer("Answer two."));
    let first = harness
        .drive(
            Sdk::TypeScript,
            json!({"steps": [
                initialize(false),
                new_session(),
                prompt("one", "prompt one"),
                prompt("two", "prompt two"),
            ]}),
        )
        .await;
    let source = first.response("new")["sessionId"]
        .as_str()
        .expect("session id")
        .to_string();
    let source_file = file_of(&harness, &source);
    let before = std::fs::read(&source_file).expect("source");

    let branched = harness
        .drive(
            Sdk::TypeScript,
            json!({"steps": [
                initialize(false),
                load(&source),
                prompt("list", "/rewind"),
                prompt("rewind", "/rewind 2"),
                prompt("fork", "/fork"),
                {"request": "session/fork", "name": "forked", "params": {
                    "sessionId": source, "cwd": "$cwd", "mcpServers": []}},
            ]}),
        )
        .await;
    for name in ["list", "rewind", "fork"] {
        assert_eq!(branched.response(name)["stopReason"], "end_turn", "{name}");
    }
    let text = branched.agent_text();
    assert!(text.contains("1. prompt one\n2. prompt two\n"), "{text}");
    assert!(text.contains("Rewound to just before prompt 2"), "{text}");
    assert!(
        text.contains("```\nprompt two\n```"),
        "the prompt comes back: {text}"
    );
    assert!(text.contains("Files were not touched"), "{text}");

    let switched = switches(&branched);
    assert_eq!(switched.len(), 2, "{switched:?}");
    assert_eq!(switched[0]["switch"], "rewind");
    assert_eq!(switched[0]["prompt"], "prompt two");
    assert_eq!(switched[0]["forkAt"], 2);
    assert_eq!(switched[1]["switch"], "fork");
    let rewound = switched[0]["sessionId"].as_str().expect("rewound id");
    let forked = switched[1]["sessionId"].as_str().expect("forked id");

    let rewound_meta = meta(&file_of(&harness, rewound));
    assert_eq!(rewound_meta["fork_of"], source.as_str());
    assert_eq!(rewound_meta["fork_at"], 2);
    // /fork branches what the conversation continues: the rewound session.
    let forked_meta = meta(&file_of(&harness, forked));
    assert_eq!(forked_meta["fork_of"], rewound);
    assert_eq!(forked_meta["fork_at"], 2);
    // session/fork of the running session forks the file it writes now.
    let protocol_fork = branched.response("forked")["sessionId"]
        .as_str()
        .expect("session/fork answers a session id");
    let protocol_meta = meta(&file_of(&harness, protocol_fork));
    assert_eq!(protocol_meta["fork_of"], forked);
    assert_eq!(protocol_meta["fork_at"], 2);

    assert_eq!(
        std::fs::read(&source_file).expect("source"),
        before,
        "the source is untouched"
    );
    assert_eq!(
        harness.server.requests().len(),
        2,
        "no command asked the model"
    );

    // A new session resumes the source: its history is replayed, then it goes on.
    harness.server.enqueue(answer("Answer three."));
    let resumed = harness
        .drive(
            Sdk::TypeScript,
            json!({"steps": [
                initialize(false),
                new_session(),
                prompt("list", "/resume"),
                prompt("resume", &format!("/resume {source}")),
                prompt("three", "prompt three"),
            ]}),
        )
        .await;
    assert_eq!(resumed.response("resume")["stopReason"], "end_turn");
    let text = resumed.agent_text();
    assert!(text.contains(&format!("| `{source}` |")), "listed: {text}");
    assert!(
        text.contains(&format!("Resumed session `{source}`")),
        "{text}"
    );
    let replayed: Vec<&str> = resumed
        .updates("user_message_chunk")
        .iter()
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert_eq!(replayed, ["prompt one", "prompt two"]);
    let last = harness.server.requests().pop().expect("a request");
    assert_eq!(
        message_texts(&last.body),
        [
            "prompt one",
            "Answer one.",
            "prompt two",
            "Answer two.",
            "prompt three"
        ]
    );
    let after = std::fs::read(&source_file).expect("source");
    assert!(after.starts_with(&before), "a resume only appends");
}

/// A session file another thread of the editor continues (after its `/fork`) cannot be
/// loaded as a second thread: the load names the thread that has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_another_thread_continues_is_not_loaded_twice() {
    let harness = Harness::new().await;
    let mut raw = harness.raw();
    let opened = raw.open_session(&harness).await;
    let handle = opened["result"]["sessionId"]
        .as_str()
        .expect("session id")
        .to_string();
    let messages = raw
        .request_collecting(
            "session/prompt",
            json!({"sessionId": handle, "prompt": [{"type": "text", "text": "/fork"}]}),
        )
        .await;
    assert_eq!(
        messages.last().expect("the answer")["result"]["stopReason"],
        "end_turn"
    );
    let forked = messages
        .iter()
        .find_map(|message| {
            let update = &message["params"]["update"];
            (update["sessionUpdate"] == "session_info_update")
                .then(|| update["_meta"]["larik"]["sessionId"].as_str())
                .flatten()
        })
        .expect("the fork's id")
        .to_string();
    assert_ne!(forked, handle);

    let load = raw
        .request(
            "session/load",
            json!({"sessionId": forked, "cwd": harness.cwd(), "mcpServers": []}),
        )
        .await;
    assert_eq!(load["error"]["code"], -32600, "{load}");
    let message = load["error"]["message"].as_str().expect("message");
    assert!(message.contains(&handle), "{message}");
    // The editor's own thread still loads, showing the file it continues.
    let own = raw
        .request(
            "session/load",
            json!({"sessionId": handle, "cwd": harness.cwd(), "mcpServers": []}),
        )
        .await;
    assert!(own.get("error").is_none(), "{own}");
    raw.finish().await;
}
