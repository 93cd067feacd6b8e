//! Renders a scripted turn as an Anthropic Messages API event stream: `message_start`,
//! one content block per item with its deltas, a `ping`, then `message_delta` and
//! `message_stop`.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::sse::{Rendered, event, pieces};
use crate::{Item, Stop, Turn};

/// Renders `turn` as the answer to request number `number`, whose parsed body is `request`.
pub(crate) fn render(turn: &Turn, request: &Value, number: usize) -> Rendered {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model");
    let [input, output, cache_read, cache_write] = turn.usage;
    let mut items: Vec<Bytes> = Vec::new();
    items.push(event(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "id": format!("msg_fake_{number}"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": input,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 0,
                },
            },
        }),
    ));
    for (index, item) in turn.items.iter().enumerate() {
        block(&mut items, index, item);
        // The real API sends pings at arbitrary points; one after the first block will do.
        if index == 0 {
            items.push(event("ping", &json!({"type": "ping"})));
        }
    }
    if turn.items.is_empty() {
        items.push(event("ping", &json!({"type": "ping"})));
    }

    let has_tool_call = turn
        .items
        .iter()
        .any(|item| matches!(item, Item::ToolCall { .. }));
    let stop_reason = match turn.stop {
        Stop::Natural if has_tool_call => "tool_use",
        Stop::Natural => "end_turn",
        Stop::MaxTokens => "max_tokens",
        Stop::Refusal => "refusal",
    };
    let closing = vec![
        event(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output},
            }),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ];
    Rendered { items, closing }
}

/// Appends the start, deltas and stop of the content block for `item` at `index`.
fn block(out: &mut Vec<Bytes>, index: usize, item: &Item) {
    let delta = |delta: Value| {
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let (start, deltas): (Value, Vec<Bytes>) = match item {
        Item::Text { text } => (
            json!({"type": "text", "text": ""}),
            pieces(text, 3)
                .into_iter()
                .map(|piece| delta(json!({"type": "text_delta", "text": piece})))
                .collect(),
        ),
        Item::Thinking { text, signature } => {
            let mut deltas: Vec<Bytes> = pieces(text, 3)
                .into_iter()
                .map(|piece| delta(json!({"type": "thinking_delta", "thinking": piece})))
                .collect();
            deltas.push(delta(
                json!({"type": "signature_delta", "signature": signature}),
            ));
            (json!({"type": "thinking", "thinking": ""}), deltas)
        }
        Item::ToolCall {
            id,
            name,
            arguments,
        } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            pieces(arguments, 2)
                .into_iter()
                .map(|piece| delta(json!({"type": "input_json_delta", "partial_json": piece})))
                .collect(),
        ),
    };
    out.push(event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": start}),
    ));
    out.extend(deltas);
    out.push(event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    ));
}
