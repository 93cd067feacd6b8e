//! Targets for what model providers send back: each wire format's response body, fed to
//! that format's stream parser through the shared driver the way it arrives over the
//! network, and the error bodies providers send with a failing status.
//!
//! A stream target reads its input as a whole response body. The input's first byte picks
//! the size of the pieces the body arrives in (1 to 64 bytes), so events, lines and UTF-8
//! characters cross piece boundaries. Whatever the body, the stream must never wait (the
//! body is all there, so waiting would hang), must end with its response or an error and
//! with nothing after either, must give every tool call of the response an id and every
//! error a message that says something, and must yield the same items whether the body
//! arrives in those pieces, in one piece or byte by byte.

use std::collections::HashMap;
use std::task::{Context, Poll, Waker};

use larik_protocol::Block;
use larik_providers::fuzzing::{self, Format};
use larik_providers::{ProviderError, StreamEvent};

use crate::Target;

/// The provider targets.
pub const TARGETS: &[Target] = &[
    Target {
        name: "provider_anthropic",
        run: anthropic,
        tokens: &[
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"read\",\"input\":{}}}\n\n",
            "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}",
            "{\"type\":\"redacted_thinking\",\"data\":\"EmwK\"}",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"h\"}}\n\n",
            "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}",
            "{\"type\":\"signature_delta\",\"signature\":\"Eq==\"}",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":18446744073709551615}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "\"index\":",
            "\"index\":18446744073709551615",
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
            SSE_TOKENS[0],
            SSE_TOKENS[1],
            SSE_TOKENS[2],
            SSE_TOKENS[3],
            SSE_TOKENS[4],
            SSE_TOKENS[5],
            SSE_TOKENS[6],
            SSE_TOKENS[7],
            SSE_TOKENS[8],
        ],
    },
    Target {
        name: "provider_openai_chat",
        run: openai_chat,
        tokens: &[
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}\n\n",
            "{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"p\\\":\"}}]}",
            "{\"tool_calls\":[{\"function\":{\"name\":\"bash\"}}]}",
            "\"index\":18446744073709551615",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "\"finish_reason\":\"stop\"",
            "\"finish_reason\":\"length\"",
            "\"finish_reason\":\"error\"",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":18446744073709551615}}}\n\n",
            "data: {\"error\":{\"message\":\"model is loading\",\"code\":503}}\n\n",
            "data: {\"error\":\"bad\"}\n\n",
            ": OPENROUTER PROCESSING\n\n",
            SSE_TOKENS[0],
            SSE_TOKENS[1],
            SSE_TOKENS[2],
            SSE_TOKENS[3],
            SSE_TOKENS[4],
            SSE_TOKENS[5],
            SSE_TOKENS[6],
            SSE_TOKENS[7],
            SSE_TOKENS[8],
        ],
    },
    Target {
        name: "provider_openai_responses",
        run: openai_responses,
        tokens: &[
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"hi\"}\n\n",
            "event: response.reasoning_summary_text.delta\ndata: {\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"hm\"}\n\n",
            "{\"type\":\"response.reasoning_summary_part.added\",\"summary_index\":1}",
            "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"read\",\"arguments\":\"\"}}\n\n",
            "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"read\",\"arguments\":\"{}\"}}\n\n",
            "{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"a\"},{\"type\":\"refusal\",\"refusal\":\"no\"}]}",
            "{\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"s\"}],\"encrypted_content\":\"gA==\"}",
            "\"output_index\":18446744073709551615",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[],\"usage\":{\"input_tokens\":3,\"input_tokens_details\":{\"cached_tokens\":18446744073709551615},\"output_tokens\":1}}}\n\n",
            "{\"type\":\"response.incomplete\",\"response\":{\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}",
            "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n",
            "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\"}\n\n",
            SSE_TOKENS[0],
            SSE_TOKENS[1],
            SSE_TOKENS[2],
            SSE_TOKENS[3],
            SSE_TOKENS[4],
            SSE_TOKENS[5],
            SSE_TOKENS[6],
            SSE_TOKENS[7],
            SSE_TOKENS[8],
        ],
    },
    Target {
        name: "provider_gemini",
        run: gemini,
        tokens: &[
            "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"hi\"}]},\"index\":0}]}\r\n\r\n",
            "{\"text\":\"hm\",\"thought\":true}",
            "{\"text\":\"\",\"thoughtSignature\":\"X\"}",
            "{\"thoughtSignature\":\"Z\"}",
            "{\"functionCall\":{\"name\":\"read\",\"args\":{\"path\":\"a\"}},\"thoughtSignature\":\"C\"}",
            "{\"functionCall\":{\"id\":\"c1\",\"name\":\"read\"}}",
            "{\"executableCode\":{\"language\":\"PYTHON\",\"code\":\"print(1)\"}}",
            "\"finishReason\":\"STOP\"",
            "\"finishReason\":\"MALFORMED_FUNCTION_CALL\",\"finishMessage\":\"bad\"",
            "\"finishReason\":\"SAFETY\"",
            "\"usageMetadata\":{\"promptTokenCount\":10,\"cachedContentTokenCount\":4,\"candidatesTokenCount\":18446744073709551615,\"thoughtsTokenCount\":18446744073709551615}",
            "\"promptFeedback\":{\"blockReason\":\"SAFETY\"}",
            "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n",
            "\"status\":\"RESOURCE_EXHAUSTED\"",
            SSE_TOKENS[0],
            SSE_TOKENS[1],
            SSE_TOKENS[2],
            SSE_TOKENS[3],
            SSE_TOKENS[4],
            SSE_TOKENS[5],
            SSE_TOKENS[6],
            SSE_TOKENS[7],
            SSE_TOKENS[8],
        ],
    },
    Target {
        name: "provider_ollama",
        run: ollama,
        tokens: &[
            "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":false}\n",
            "{\"message\":{\"thinking\":\"hm\"},\"done\":false}\n",
            "{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}}]},\"done\":false}\n",
            "{\"id\":\"call_srv\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"q\\\":1}\"}}",
            "{\"done\":true,\"done_reason\":\"stop\",\"prompt_eval_count\":12,\"eval_count\":5}\n",
            "\"done_reason\":\"length\"",
            "\"prompt_eval_count\":18446744073709551615",
            "\"eval_count\":18446744073709551615",
            "{\"error\":\"llama runner process has terminated\"}\n",
            "{\"error\":{\"message\":\"input exceeds the context length\"}}\n",
            "\"done\":true",
            "\r\n",
            "\n\n",
            "18446744073709551615",
        ],
    },
    Target {
        name: "provider_error_body",
        run: error_body,
        tokens: &[
            "anthropic 400\n",
            "openai 401\n",
            "chat 429 7\n",
            "gemini 400\n",
            "ollama 404\n",
            " 0.25\n",
            " 1e300\n",
            " -3\n",
            " NaN\n",
            " inf\n",
            "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
            "{\"error\":{\"message\":\"m\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}",
            "{\"error\":{\"code\":400,\"message\":\"API key not valid.\",\"status\":\"INVALID_ARGUMENT\"}}",
            "{\"error\":\"model 'x' not found\"}",
            "\"message\":",
            "\"code\":",
            "\"type\":",
            "prompt is too long",
            "<html><body><h1>",
            "</h1></body></html>",
            "<",
            ">",
        ],
    },
];

/// Framing fragments every server-sent events format shares.
const SSE_TOKENS: [&str; 9] = [
    "data: ",
    "event: ",
    "\n\n",
    "\r\n\r\n",
    ": keep-alive\n\n",
    "data: [DONE]\n\n",
    "id: 7\nretry: 1000\n",
    "data:",
    "18446744073709551615",
];

/// The stream targets and the wire format each reads.
const STREAM_FORMATS: [(&str, Format); 5] = [
    ("provider_anthropic", Format::Anthropic),
    ("provider_openai_chat", Format::OpenAiChat),
    ("provider_openai_responses", Format::OpenAiResponses),
    ("provider_gemini", Format::Gemini),
    ("provider_ollama", Format::Ollama),
];

fn anthropic(data: &[u8]) {
    stream_target(Format::Anthropic, data);
}

fn openai_chat(data: &[u8]) {
    stream_target(Format::OpenAiChat, data);
}

fn openai_responses(data: &[u8]) {
    stream_target(Format::OpenAiResponses, data);
}

fn gemini(data: &[u8]) {
    stream_target(Format::Gemini, data);
}

fn ollama(data: &[u8]) {
    stream_target(Format::Ollama, data);
}

/// Reads each corpus body of the stream target `name` in pieces of every size from 1 to 64
/// bytes and checks that each gives the items it gives in one piece. A mutated body is
/// only read in the pieces its first byte picks (and byte by byte when small), which would
/// make a case too slow; the real bodies of the corpus are read in all of them.
///
/// # Panics
/// When `name` is not a stream target, its corpus cannot be read, or a body gives other
/// items in some pieces.
pub fn check_corpus_in_any_pieces(name: &str) {
    let Some((_, format)) = STREAM_FORMATS.iter().find(|(target, _)| *target == name) else {
        panic!("{name} is not a provider stream target");
    };
    let folder = crate::engine::corpus_dir(&crate::crate_dir(), name);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(error) => panic!("cannot read {}: {error}", folder.display()),
    };
    for entry in entries {
        let path = match entry {
            Ok(entry) => entry.path(),
            Err(error) => panic!("cannot read {}: {error}", folder.display()),
        };
        let body = match std::fs::read(&path) {
            Ok(body) => body,
            Err(error) => panic!("cannot read {}: {error}", path.display()),
        };
        let whole = collect(*format, &body, body.len());
        check_items(&whole);
        for size in 1..=64 {
            let items = collect(*format, &body, size);
            if let Err(difference) = same_items(&body, &items, &whole) {
                panic!(
                    "{}: in pieces of {size} bytes and in one piece: {difference}",
                    path.display()
                );
            }
        }
    }
}

type Item = Result<StreamEvent, ProviderError>;

/// Bodies up to this size are also read byte by byte; larger ones would make a case slow.
const BYTE_BY_BYTE_UP_TO: usize = 1024;

/// A response body of `format`, arriving in pieces of the size the first byte picks.
fn stream_target(format: Format, body: &[u8]) {
    let chunk = body.first().map_or(1, |byte| usize::from(byte % 64) + 1);
    let items = collect(format, body, chunk);
    check_items(&items);
    let whole = collect(format, body, body.len());
    if let Err(difference) = same_items(body, &items, &whole) {
        panic!(
            "the body gave other items in pieces of {chunk} bytes than in one piece: {difference}"
        );
    }
    if chunk > 1 && body.len() <= BYTE_BY_BYTE_UP_TO {
        let bytes = collect(format, body, 1);
        if let Err(difference) = same_items(body, &items, &bytes) {
            panic!(
                "the body gave other items in pieces of {chunk} bytes than byte by byte: {difference}"
            );
        }
    }
}

/// Every item of the stream, polled with a waker that does nothing: the body is all there,
/// so a stream that waits would wait forever.
fn collect(format: Format, body: &[u8], chunk: usize) -> Vec<Item> {
    let mut stream = fuzzing::stream(format, body, chunk);
    let mut context = Context::from_waker(Waker::noop());
    // Every item comes from at least one byte of the body, besides a response or an error
    // at the end and a notice or two.
    let limit = body.len() + 8;
    let mut items = Vec::new();
    loop {
        match stream.as_mut().poll_next(&mut context) {
            Poll::Ready(Some(item)) => {
                items.push(item);
                assert!(
                    items.len() <= limit,
                    "the stream yielded more than {limit} items for a body of {} bytes",
                    body.len()
                );
            }
            Poll::Ready(None) => return items,
            Poll::Pending => panic!(
                "the stream waited after {} items though the whole body had arrived (in pieces of {chunk} bytes): it would hang",
                items.len()
            ),
        }
    }
}

/// The stream's own invariants: it ends with its response or an error, nothing follows
/// either, and every tool call of the response has an id.
fn check_items(items: &[Item]) {
    let Some((last, before)) = items.split_last() else {
        panic!("the stream ended without a response or an error");
    };
    for (position, item) in before.iter().enumerate() {
        match item {
            Ok(StreamEvent::Completed(_)) => {
                panic!(
                    "item {position} follows the completed response: {:?}",
                    &items[position + 1..]
                )
            }
            Err(error) => panic!(
                "item {position} follows the error {error:?}: {:?}",
                &items[position + 1..]
            ),
            Ok(_) => {}
        }
    }
    match last {
        Ok(StreamEvent::Completed(response)) => {
            for block in &response.content {
                if let Block::ToolCall { id, name, .. } = block {
                    assert!(
                        !id.is_empty(),
                        "the tool call {name:?} has no id: {response:?}"
                    );
                }
            }
        }
        Err(error) => said_something(error),
        Ok(other) => panic!("the stream ended without a response or an error, on {other:?}"),
    }
}

/// Checks that an error tells the user something: its message is not blank.
fn said_something(error: &ProviderError) {
    let message = match error {
        ProviderError::Unauthorized { message, .. }
        | ProviderError::ContextTooLong { message }
        | ProviderError::BadRequest { message, .. }
        | ProviderError::Unavailable { message, .. }
        | ProviderError::Connection { message, .. }
        | ProviderError::Protocol { message, .. } => message,
        _ => return,
    };
    assert!(
        !message.trim().is_empty(),
        "the error says nothing: {error:?}"
    );
}

/// Whether a body read in two ways gave the same items (`a` and `b`); what differs if not.
/// Call ids the parser made up (they appear nowhere in the body) differ from stream to
/// stream by design, so they are compared by order of appearance.
fn same_items(body: &[u8], a: &[Item], b: &[Item]) -> Result<(), String> {
    let body = String::from_utf8_lossy(body);
    let (a, b) = (made_up_ids_renamed(&body, a), made_up_ids_renamed(&body, b));
    if a == b {
        return Ok(());
    }
    let at = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    Err(format!(
        "different items from item {at}:\n{:?}\n{:?}",
        &a[at..],
        &b[at..]
    ))
}

fn made_up_ids_renamed(body: &str, items: &[Item]) -> Vec<Item> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut rename = |id: &mut String| {
        if !id.is_empty() && !body.contains(id.as_str()) {
            let next = format!("made-up-{}", names.len());
            *id = names.entry(id.clone()).or_insert(next).clone();
        }
    };
    let mut items = items.to_vec();
    for item in &mut items {
        match item {
            Ok(StreamEvent::ToolCallStarted { id, .. }) => rename(id),
            Ok(StreamEvent::Completed(response)) => {
                for block in &mut response.content {
                    if let Block::ToolCall { id, .. } = block {
                        rename(id);
                    }
                }
            }
            _ => {}
        }
    }
    items
}

/// An error response: a first line `<provider> <status>[ <retry-after>]` (provider one of
/// `anthropic`, `openai`, `chat`, `gemini`, `ollama`), then the body. The error keeps the
/// status, is classified by it (401 and 403 unauthorized; 408, 429 and 5xx retryable; the
/// rest a rejected request, a prompt too long, or for Gemini an invalid key), and carries
/// the wait the provider asked for, capped, and a message that says something.
fn error_body(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (head, body) = text.split_once('\n').unwrap_or((&text, ""));
    let mut words = head.splitn(3, ' ');
    let format = match words.next() {
        Some("anthropic") => Format::Anthropic,
        Some("openai") => Format::OpenAiResponses,
        Some("chat") => Format::OpenAiChat,
        Some("gemini") => Format::Gemini,
        Some("ollama") => Format::Ollama,
        _ => return,
    };
    // Any status an HTTP response can carry other than success reaches the mapping.
    let Some(status) = words
        .next()
        .and_then(|word| word.parse::<u16>().ok())
        .filter(|status| (100..=999).contains(status) && !(200..300).contains(status))
    else {
        return;
    };
    let retry_after = words.next();
    let error = fuzzing::error_response(format, status, retry_after, body);
    let kept = match &error {
        ProviderError::Unauthorized { status: kept, .. }
        | ProviderError::BadRequest { status: kept, .. }
        | ProviderError::Unavailable { status: kept, .. } => Some(*kept),
        ProviderError::ContextTooLong { .. } => None,
        other => panic!("HTTP {status} became {other:?}"),
    };
    if let Some(kept) = kept {
        assert_eq!(kept, status, "the status changed: {error:?}");
    }
    let expected = match status {
        401 | 403 => matches!(error, ProviderError::Unauthorized { .. }),
        408 | 429 | 500..=599 => matches!(error, ProviderError::Unavailable { .. }),
        400 if format == Format::Gemini => !matches!(error, ProviderError::Unavailable { .. }),
        400 | 413 => matches!(
            error,
            ProviderError::BadRequest { .. } | ProviderError::ContextTooLong { .. }
        ),
        _ => matches!(error, ProviderError::BadRequest { .. }),
    };
    assert!(expected, "HTTP {status} became {error:?}");
    assert_eq!(
        error.is_retryable(),
        matches!(status, 408 | 429 | 500..=599),
        "HTTP {status} became {error:?}"
    );
    said_something(&error);
    if let Some(wait) = error.retry_after() {
        assert!(
            wait <= std::time::Duration::from_secs(120),
            "a retry-after of {retry_after:?} waits {wait:?}"
        );
    }
}
