//! One session that switches models between turns through all five wire formats: Claude,
//! GPT (Responses), Gemini, Ollama, and Claude again. Each model reasons, reads files and
//! answers. The recorded requests show that reasoning goes back only to the exact model that
//! wrote it (with its signature, encrypted item or thought signature), that every other
//! model gets only the text, tool calls and tool results, that every earlier tool result
//! travels in every later request, and that each provider's requests extend their prompt
//! cache byte for byte.

use larik_protocol::{Event, Op, PermissionMode, ReasoningEffort, ToolCallStatus};
use larik_providers::gemini::FOREIGN_CALL_SIGNATURE;
use larik_testkit::{PrefixStats, RecordedRequest, turn};
use serde_json::{Value, json};

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/harness.rs"]
mod harness;

use harness::{CLAUDE, Harness};

const GPT: &str = "openai/gpt-5";
const GEMINI: &str = "gemini/gemini-3-pro-preview";

/// One file the model reads: the call id, the file and the unique text it holds.
struct Read {
    id: &'static str,
    file: &'static str,
    marker: &'static str,
}

/// One model's turn: a prompt, reasoning with a tool call (or two in parallel), an answer.
struct Leg {
    model: &'static str,
    prompt: &'static str,
    thinking: &'static str,
    signature: &'static str,
    reads: &'static [Read],
    answer: &'static str,
}

impl Leg {
    fn provider(&self) -> &'static str {
        self.model.split_once('/').expect("provider/model").0
    }

    /// The endpoint path this leg's requests go to.
    fn path(&self) -> String {
        match self.provider() {
            "anthropic" => "/v1/messages".into(),
            "openai" => "/v1/responses".into(),
            "gemini" => {
                let id = self.model.split_once('/').expect("provider/model").1;
                format!("/v1beta/models/{id}:streamGenerateContent")
            }
            "ollama" => "/api/chat".into(),
            other => panic!("no endpoint for {other}"),
        }
    }

    /// What the server sends back of this leg's reasoning, besides its text: Ollama's
    /// reasoning is unsigned, so its scripted signature never leaves the server.
    fn secrets(&self) -> Vec<&'static str> {
        if self.provider() == "ollama" {
            vec![self.thinking]
        } else {
            vec![self.thinking, self.signature]
        }
    }
}

const LEGS: [Leg; 5] = [
    Leg {
        model: CLAUDE,
        prompt: "what does the README say?",
        thinking: "claude ponders the project layout",
        signature: "claude-signature-4f2a",
        reads: &[Read {
            id: "toolu_readme",
            file: "README.md",
            marker: "readme-marker-7731",
        }],
        answer: "The README names the project.",
    },
    Leg {
        model: GPT,
        prompt: "and the notes and the todo list?",
        thinking: "gpt weighs notes against todos",
        signature: "gpt-encrypted-reasoning-9c1e",
        reads: &[
            Read {
                id: "call_notes",
                file: "notes.txt",
                marker: "notes-marker-2208",
            },
            Read {
                id: "call_todo",
                file: "todo.txt",
                marker: "todo-marker-5170",
            },
        ],
        answer: "The notes and the todo list agree.",
    },
    Leg {
        model: GEMINI,
        prompt: "what is configured?",
        thinking: "gemini traces the configuration",
        signature: "gemini-thought-signature-5b7d",
        reads: &[Read {
            id: "fc_config",
            file: "config.toml",
            marker: "config-marker-3391",
        }],
        answer: "The configuration sets one option.",
    },
    Leg {
        model: fake_model::OLLAMA,
        prompt: "which license applies?",
        thinking: "ollama mulls over the license text",
        signature: "ollama-never-sent-1e44",
        reads: &[Read {
            // Ollama sends no call ids; the provider makes them up.
            id: "",
            file: "LICENSE",
            marker: "license-marker-6052",
        }],
        answer: "The license is permissive.",
    },
    Leg {
        model: CLAUDE,
        prompt: "summarise the changelog and the authors",
        thinking: "claude recalls the earlier reading",
        signature: "claude-signature-8e3b",
        reads: &[
            Read {
                id: "toolu_changelog",
                file: "CHANGELOG.md",
                marker: "changelog-marker-4419",
            },
            Read {
                id: "toolu_authors",
                file: "AUTHORS",
                marker: "authors-marker-0987",
            },
        ],
        answer: "Two releases, by two authors.",
    },
];

/// The session after all five legs, with what the tests inspect.
struct Switched {
    /// The agent, its server and project.
    harness: Harness,
    /// The conversation requests (no model descriptions), two per leg.
    requests: Vec<RecordedRequest>,
    /// The call ids of each leg's tool calls, as the agent announced them.
    call_ids: Vec<Vec<String>>,
}

/// Runs one leg's turn and returns the ids of the calls that completed.
async fn run_leg(h: &mut Harness, leg: &Leg) -> Vec<String> {
    let mut first = turn().thinking(leg.thinking, leg.signature);
    for read in leg.reads {
        first = first.tool_call(read.id, "read", json!({ "file_path": read.file }));
    }
    h.server.enqueue(first.usage(1_000, 50));
    h.server.enqueue(turn().text(leg.answer).usage(1_200, 20));
    let (events, _) = h.prompt(leg.prompt).await;
    let mut completed = Vec::new();
    for event in events {
        match event {
            Event::ToolCallEnd {
                call_id,
                status,
                output,
                ..
            } => {
                assert_eq!(status, ToolCallStatus::Completed, "{output}");
                completed.push(call_id);
            }
            Event::Error { message, .. } => panic!("{}: {message}", leg.model),
            Event::TurnComplete { last_message, .. } => {
                assert_eq!(last_message, leg.answer, "{}", leg.model);
            }
            _ => {}
        }
    }
    completed
}

/// Switches the agent to `model` and waits until it says so.
async fn switch_to(h: &mut Harness, model: &str) {
    h.send(Op::SetModel {
        model: model.into(),
    });
    let events = h
        .until(|event| matches!(event, Event::ModelChanged { .. }))
        .await;
    for event in events {
        match event {
            Event::ModelChanged { model: now } => assert_eq!(now, model),
            Event::Error { message, .. } => panic!("switching to {model}: {message}"),
            _ => {}
        }
    }
}

async fn run_switching_session() -> Switched {
    let mut h = Harness::start(CLAUDE, &[], |config| {
        config.mode = PermissionMode::BypassPermissions;
        config.reasoning = Some(ReasoningEffort::Medium);
    })
    .await;
    for read in LEGS.iter().flat_map(|leg| leg.reads) {
        std::fs::write(h.path(read.file), format!("{}\n", read.marker)).expect("write");
    }

    let mut call_ids = Vec::new();
    for (index, leg) in LEGS.iter().enumerate() {
        if index > 0 {
            switch_to(&mut h, leg.model).await;
        }
        let ids = run_leg(&mut h, leg).await;
        assert_eq!(ids.len(), leg.reads.len(), "{}", leg.model);
        call_ids.push(ids);
    }
    let requests = h.chat_requests();
    assert_eq!(requests.len(), 2 * LEGS.len());
    for (index, request) in requests.iter().enumerate() {
        assert_eq!(request.path, LEGS[index / 2].path(), "request {index}");
    }
    Switched {
        harness: h,
        requests,
        call_ids,
    }
}

/// Whether any object anywhere in `value` satisfies `wanted`.
fn any_object(value: &Value, wanted: &dyn Fn(&serde_json::Map<String, Value>) -> bool) -> bool {
    match value {
        Value::Object(map) => wanted(map) || map.values().any(|inner| any_object(inner, wanted)),
        Value::Array(items) => items.iter().any(|inner| any_object(inner, wanted)),
        _ => false,
    }
}

/// Whether `request` carries `leg`'s reasoning in the shape its wire format gives it.
fn carries_reasoning(request: &RecordedRequest, leg: &Leg) -> bool {
    let is = |map: &serde_json::Map<String, Value>, key: &str, text: &str| {
        map.get(key).and_then(Value::as_str) == Some(text)
    };
    let body = &request.body;
    match leg.provider() {
        "anthropic" => any_object(&body["messages"], &|block| {
            is(block, "type", "thinking")
                && is(block, "thinking", leg.thinking)
                && is(block, "signature", leg.signature)
        }),
        "openai" => any_object(&body["input"], &|item| {
            is(item, "type", "reasoning") && is(item, "encrypted_content", leg.signature)
        }),
        "gemini" => any_object(&body["contents"], &|part| {
            part.get("thought") == Some(&json!(true))
                && is(part, "text", leg.thinking)
                && is(part, "thoughtSignature", leg.signature)
        }),
        "ollama" => any_object(&body["messages"], &|message| {
            is(message, "role", "assistant") && is(message, "thinking", leg.thinking)
        }),
        other => panic!("no reasoning shape for {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_model_gets_back_only_its_own_reasoning_and_everyone_gets_all_tool_traffic() {
    let run = run_switching_session().await;
    for (index, request) in run.requests.iter().enumerate() {
        let now = index / 2;
        let model = LEGS[now].model;
        let raw = &request.raw_body;
        let context = format!("request {index} to {model}");
        for (earlier, leg) in LEGS.iter().enumerate() {
            // A leg's reasoning exists from its first answer on, i.e. its second request.
            let written = earlier < now || (earlier == now && index % 2 == 1);
            if leg.model == model {
                assert_eq!(
                    carries_reasoning(request, leg),
                    written,
                    "{context}: reasoning of leg {earlier}"
                );
                continue;
            }
            for secret in leg.secrets() {
                assert!(!raw.contains(secret), "{context}: carries `{secret}`");
            }
        }

        // Vendor-specific replay never leaks across formats.
        let provider = LEGS[now].provider();
        if provider != "gemini" {
            for gemini_only in ["thoughtSignature", "fakesig", FOREIGN_CALL_SIGNATURE] {
                assert!(!raw.contains(gemini_only), "{context}: `{gemini_only}`");
            }
        }
        if provider != "openai" {
            assert!(!raw.contains("encrypted_content"), "{context}");
            assert!(!raw.contains("rs_fake_"), "{context}: a reasoning item id");
        }
        if provider != "anthropic" {
            assert!(!raw.contains("\"signature\""), "{context}");
        }

        // Every tool call, result and answer of the legs before is in the request.
        for (earlier, leg) in LEGS.iter().enumerate() {
            let results_exist = earlier < now || (earlier == now && index % 2 == 1);
            if results_exist {
                for read in leg.reads {
                    assert!(raw.contains(read.marker), "{context}: {}", read.file);
                }
                // Ollama's messages carry no call ids; its results are paired by order.
                if provider != "ollama" {
                    for id in &run.call_ids[earlier] {
                        assert!(raw.contains(id.as_str()), "{context}: call {id}");
                    }
                }
            }
            if earlier < now {
                assert!(
                    raw.contains(leg.answer),
                    "{context}: answer of leg {earlier}"
                );
                assert!(
                    raw.contains(leg.prompt),
                    "{context}: prompt of leg {earlier}"
                );
            }
        }
        assert!(raw.contains(LEGS[now].prompt), "{context}");
    }

    // Gemini 3 validates the first call of each step: calls it did not write carry the
    // documented placeholder, its own calls the signature it issued.
    let gemini = &run.requests[5];
    let signed_calls: Vec<String> = gemini.body["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .flat_map(|content| content["parts"].as_array().cloned().unwrap_or_default())
        .filter(|part| part.get("functionCall").is_some())
        .filter_map(|part| part["thoughtSignature"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(signed_calls.len(), 3, "{signed_calls:?}");
    assert_eq!(signed_calls[..2], [FOREIGN_CALL_SIGNATURE; 2]);
    assert!(signed_calls[2].starts_with("fakesig"), "{signed_calls:?}");

    // Back on Claude, its first turn's signed thinking is still there, and nobody else's.
    let last = run.requests.last().expect("requests");
    assert!(carries_reasoning(last, &LEGS[0]));
    assert!(carries_reasoning(last, &LEGS[4]));
    run.harness.server.assert_no_violations();
}

#[tokio::test(flavor = "multi_thread")]
async fn every_request_extends_the_previous_request_of_its_provider() {
    let run = run_switching_session().await;
    run.harness.server.assert_no_violations();
    // One context per model; every request after a context's first extends the one
    // before it, the second Claude turn included, after three other models' turns.
    assert_eq!(
        run.harness.server.prefix_stats(),
        PrefixStats {
            compared: 6,
            extended: 6,
            branches: 0,
            contexts: 4,
        }
    );
}
