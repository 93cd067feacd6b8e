//! Renders a scripted turn as an OpenAI-compatible Chat Completions chunk stream: a role
//! chunk, reasoning as `reasoning_content` deltas, text in a few `content` deltas, each
//! tool call announced with its id and name and then its arguments in pieces; then the
//! closing chunks a cut or hanging stream leaves out: the `finish_reason`, a usage-only
//! chunk and `[DONE]`.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::sse::{Rendered, pieces};
use crate::{Item, Stop, Turn};

/// The answer to `GET /v1/models`, which gateways in front of an OpenAI-compatible server ask
/// at start: an empty list, so a scripted reply is never spent on it. `None` for any other
/// request.
pub(crate) fn answer_models(
    path: &str,
    method: &axum::http::Method,
) -> Option<(u16, String, Option<String>)> {
    (path == "/v1/models" && method == axum::http::Method::GET)
        .then(|| (200, json!({"object": "list", "data": []}).to_string(), None))
}

/// Frames one chunk; this dialect sends unnamed `data:` events.
fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// Renders `turn` as the answer to request number `number`, whose parsed body is `request`.
pub(crate) fn render(turn: &Turn, request: &Value, number: usize) -> Rendered {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();
    let id = format!("chatcmpl-fake-{number}");
    let chunk = |delta: Value, finish: Value| {
        data(&json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000u64 + number as u64,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }))
    };

    let mut items = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut call_index = 0;
    for item in &turn.items {
        match item {
            Item::Text { text } => {
                for piece in pieces(text, 3) {
                    items.push(chunk(json!({"content": piece}), Value::Null));
                }
            }
            Item::Thinking { text, .. } => {
                for piece in pieces(text, 3) {
                    items.push(chunk(json!({"reasoning_content": piece}), Value::Null));
                }
            }
            Item::ToolCall {
                id: call_id,
                name,
                arguments,
            } => {
                items.push(chunk(
                    json!({"tool_calls": [{"index": call_index, "id": call_id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                ));
                for piece in pieces(arguments, 3) {
                    items.push(chunk(
                        json!({"tool_calls": [{"index": call_index, "function": {"arguments": piece}}]}),
                        Value::Null,
                    ));
                }
                call_index += 1;
            }
        }
    }

    let finish = match turn.stop {
        Stop::MaxTokens => "length",
        Stop::Refusal => "content_filter",
        Stop::Natural if call_index > 0 => "tool_calls",
        Stop::Natural => "stop",
    };
    let [input, output, cache_read, _cache_write] = turn.usage;
    let prompt_tokens = input + cache_read;
    let usage = json!({
        "id": id,
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": output,
            "total_tokens": prompt_tokens + output,
            "prompt_tokens_details": {"cached_tokens": cache_read},
        },
    });
    Rendered {
        items,
        closing: vec![
            chunk(json!({}), json!(finish)),
            data(&usage),
            Bytes::from_static(b"data: [DONE]\n\n"),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn;

    fn chunks(frames: &[Bytes]) -> Vec<Value> {
        frames
            .iter()
            .map(|frame| {
                let text = std::str::from_utf8(frame).expect("UTF-8");
                let data = text
                    .strip_prefix("data: ")
                    .and_then(|rest| rest.strip_suffix("\n\n"))
                    .expect("one data frame");
                serde_json::from_str(data).unwrap_or(Value::String(data.to_string()))
            })
            .collect()
    }

    #[test]
    fn calls_are_split_and_the_closing_carries_finish_usage_and_done() {
        let scripted = turn()
            .thinking("hmm", "sig")
            .text("Hello there")
            .tool_call("c1", "read", json!({"path": "a.txt"}))
            .tool_call("c2", "read", json!({}))
            .usage(10, 4)
            .cache_usage(6, 0);
        let rendered = render(&scripted, &json!({"model": "m"}), 1);
        let items = chunks(&rendered.items);
        let deltas: Vec<&Value> = items
            .iter()
            .map(|chunk| &chunk["choices"][0]["delta"])
            .collect();
        let joined = |field: &str| -> String {
            deltas
                .iter()
                .filter_map(|delta| delta[field].as_str())
                .collect()
        };
        assert_eq!(joined("reasoning_content"), "hmm");
        assert_eq!(joined("content"), "Hello there");
        let arguments = |index: u64| -> String {
            deltas
                .iter()
                .flat_map(|delta| delta["tool_calls"].as_array().into_iter().flatten())
                .filter(|call| call["index"] == index)
                .filter_map(|call| call["function"]["arguments"].as_str())
                .collect()
        };
        assert_eq!(arguments(0), r#"{"path":"a.txt"}"#);
        assert_eq!(arguments(1), "{}");
        let argument_chunks = deltas
            .iter()
            .filter(|delta| delta["tool_calls"][0]["index"] == 0)
            .count();
        assert!(argument_chunks > 2, "the arguments come in pieces");
        let closing = chunks(&rendered.closing);
        assert_eq!(closing[0]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(closing[1]["usage"]["prompt_tokens"], 16);
        assert_eq!(
            closing[1]["usage"]["prompt_tokens_details"]["cached_tokens"],
            6
        );
        assert_eq!(closing[2], "[DONE]");
        let stop = |turn: Turn| {
            chunks(&render(&turn, &json!({}), 2).closing)[0]["choices"][0]["finish_reason"].clone()
        };
        assert_eq!(stop(crate::turn().text("x")), "stop");
        assert_eq!(stop(crate::turn().text("x").max_tokens()), "length");
        assert_eq!(stop(crate::turn().text("x").refusal()), "content_filter");
    }
}
