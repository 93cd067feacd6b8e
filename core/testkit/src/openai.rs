//! Renders a scripted turn as an OpenAI Responses API event stream: `response.created`,
//! one output item per scripted item (added, deltas, done), then `response.completed`, or
//! `response.incomplete` when the output limit was hit.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::sse::{Rendered, event, pieces};
use crate::{Item, Stop, Turn};

/// Collects events, numbering them with `sequence_number` as the real API does.
struct Emitter {
    events: Vec<Bytes>,
    sequence: u64,
}

impl Emitter {
    fn emit(&mut self, mut data: Value) {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        if let Some(object) = data.as_object_mut() {
            object.insert("sequence_number".into(), json!(self.sequence));
        }
        self.sequence += 1;
        self.events.push(event(&name, &data));
    }
}

/// Renders `turn` as the answer to request number `number`, whose parsed body is `request`.
pub(crate) fn render(turn: &Turn, request: &Value, number: usize) -> Rendered {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model");
    let response_id = format!("resp_fake_{number}");
    let response = |status: &str, output: Value, usage: Value, incomplete: Value| {
        json!({
            "id": response_id,
            "object": "response",
            "created_at": 1_700_000_000u64 + number as u64,
            "status": status,
            "model": model,
            "output": output,
            "usage": usage,
            "incomplete_details": incomplete,
            "error": null,
        })
    };

    let mut out = Emitter {
        events: Vec::new(),
        sequence: 0,
    };
    let pending = response("in_progress", json!([]), Value::Null, Value::Null);
    out.emit(json!({"type": "response.created", "response": pending}));
    out.emit(json!({"type": "response.in_progress", "response": pending}));

    let mut done_items = Vec::new();
    for (output_index, item) in turn.items.iter().enumerate() {
        let item_id = format!("{}_fake_{number}_{output_index}", prefix(item));
        let done = match item {
            Item::Text { text } if turn.stop == Stop::Refusal => {
                refusal(&mut out, &item_id, output_index, text)
            }
            Item::Text { text } => message(&mut out, &item_id, output_index, text),
            Item::Thinking { text, signature } => {
                reasoning(&mut out, &item_id, output_index, text, signature)
            }
            Item::ToolCall {
                id,
                name,
                arguments,
            } => function_call(&mut out, &item_id, output_index, id, name, arguments),
        };
        out.emit(json!({
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": done,
        }));
        done_items.push(done);
    }

    let items = std::mem::take(&mut out.events);
    let [input, output, cache_read, _cache_write] = turn.usage;
    let input_tokens = input + cache_read;
    let usage = json!({
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cache_read},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output,
    });
    let output = Value::Array(done_items);
    if turn.stop == Stop::MaxTokens {
        let incomplete = json!({"reason": "max_output_tokens"});
        out.emit(json!({
            "type": "response.incomplete",
            "response": response("incomplete", output, usage, incomplete),
        }));
    } else {
        out.emit(json!({
            "type": "response.completed",
            "response": response("completed", output, usage, Value::Null),
        }));
    }
    Rendered {
        items,
        closing: out.events,
    }
}

/// The id prefix the real API uses for each kind of output item.
fn prefix(item: &Item) -> &'static str {
    match item {
        Item::Text { .. } => "msg",
        Item::Thinking { .. } => "rs",
        Item::ToolCall { .. } => "fc",
    }
}

/// Streams an assistant message with one `output_text` part; returns the done item.
fn message(out: &mut Emitter, item_id: &str, output_index: usize, text: &str) -> Value {
    message_with(
        out,
        item_id,
        output_index,
        text,
        ("output_text", "response.output_text"),
    )
}

/// Streams an assistant message with one `refusal` part; returns the done item.
fn refusal(out: &mut Emitter, item_id: &str, output_index: usize, text: &str) -> Value {
    message_with(
        out,
        item_id,
        output_index,
        text,
        ("refusal", "response.refusal"),
    )
}

/// Streams a message whose single part is of `kind`, with `{events}.delta` / `.done`.
fn message_with(
    out: &mut Emitter,
    item_id: &str,
    output_index: usize,
    text: &str,
    (kind, events): (&str, &str),
) -> Value {
    let part = |text: &str| {
        if kind == "refusal" {
            json!({"type": "refusal", "refusal": text})
        } else {
            json!({"type": "output_text", "text": text, "annotations": []})
        }
    };
    out.emit(json!({
        "type": "response.output_item.added",
        "output_index": output_index,
        "item": {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        },
    }));
    out.emit(json!({
        "type": "response.content_part.added",
        "item_id": item_id,
        "output_index": output_index,
        "content_index": 0,
        "part": part(""),
    }));
    for piece in pieces(text, 3) {
        out.emit(json!({
            "type": format!("{events}.delta"),
            "item_id": item_id,
            "output_index": output_index,
            "content_index": 0,
            "delta": piece,
        }));
    }
    let mut done = json!({
        "type": format!("{events}.done"),
        "item_id": item_id,
        "output_index": output_index,
        "content_index": 0,
    });
    done[if kind == "refusal" { "refusal" } else { "text" }] = json!(text);
    out.emit(done);
    out.emit(json!({
        "type": "response.content_part.done",
        "item_id": item_id,
        "output_index": output_index,
        "content_index": 0,
        "part": part(text),
    }));
    json!({
        "id": item_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part(text)],
    })
}

/// Streams a reasoning item with one summary part; returns the done item.
fn reasoning(
    out: &mut Emitter,
    item_id: &str,
    output_index: usize,
    text: &str,
    signature: &str,
) -> Value {
    out.emit(json!({
        "type": "response.output_item.added",
        "output_index": output_index,
        "item": {"id": item_id, "type": "reasoning", "summary": []},
    }));
    out.emit(json!({
        "type": "response.reasoning_summary_part.added",
        "item_id": item_id,
        "output_index": output_index,
        "summary_index": 0,
        "part": {"type": "summary_text", "text": ""},
    }));
    for piece in pieces(text, 3) {
        out.emit(json!({
            "type": "response.reasoning_summary_text.delta",
            "item_id": item_id,
            "output_index": output_index,
            "summary_index": 0,
            "delta": piece,
        }));
    }
    out.emit(json!({
        "type": "response.reasoning_summary_text.done",
        "item_id": item_id,
        "output_index": output_index,
        "summary_index": 0,
        "text": text,
    }));
    out.emit(json!({
        "type": "response.reasoning_summary_part.done",
        "item_id": item_id,
        "output_index": output_index,
        "summary_index": 0,
        "part": {"type": "summary_text", "text": text},
    }));
    json!({
        "id": item_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": text}],
        "encrypted_content": signature,
    })
}

/// Streams a function call with its argument text in pieces; returns the done item.
fn function_call(
    out: &mut Emitter,
    item_id: &str,
    output_index: usize,
    call_id: &str,
    name: &str,
    arguments: &str,
) -> Value {
    out.emit(json!({
        "type": "response.output_item.added",
        "output_index": output_index,
        "item": {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        },
    }));
    for piece in pieces(arguments, 2) {
        out.emit(json!({
            "type": "response.function_call_arguments.delta",
            "item_id": item_id,
            "output_index": output_index,
            "delta": piece,
        }));
    }
    out.emit(json!({
        "type": "response.function_call_arguments.done",
        "item_id": item_id,
        "output_index": output_index,
        "arguments": arguments,
    }));
    json!({
        "id": item_id,
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    })
}
