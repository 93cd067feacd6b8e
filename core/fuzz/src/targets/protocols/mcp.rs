//! `mcp_results`: one message an MCP server sends (a JSON-RPC answer or request), decoded
//! with the SDK's types as the client's transport decodes it and put through Larik's
//! conversion of that kind of message (see `larik_mcp::fuzzing`).
//!
//! Whatever the message: a tool result or resource reads as some content, never more than
//! four images and only of the types and size providers take, its text within the
//! server's output cap (plus the note saying it was cut), its error flag as the server
//! set it; tool names are valid provider tool names (`^[a-zA-Z0-9_-]{1,64}$`), start with
//! their server's prefix and are all distinct, descriptions are cut and schemas are
//! objects; prompt commands are one word under the server's prefix and fill only the
//! prompt's arguments; an elicitation answer gives the server only the schema's
//! properties, accepts only with every required one, and never turns a no into a yes.

use larik_mcp::Answer;
use larik_mcp::fuzzing::{Converted, OfferedTool, ToolOutput, convert};
use larik_mcp::naming::{check_server_name, server_prefix};
use larik_protocol::ResultPart;
use serde_json::Value;

use super::super::text;

/// The two servers a tool list is listed by: a short name and one of the longest allowed.
const SERVERS: [&str; 2] = ["docs", "github-enterprise-tools-for-our-team-001"];

/// The output caps results are cut to, in tokens: a small one, and the default.
const CAPS: [usize; 2] = [64, larik_mcp::DEFAULT_OUTPUT_TOKENS];

/// What a user types after a prompt's slash command.
const ARGUMENT_TEXT: &str = "Portland  Oregon Coast";

/// Image types every provider takes.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The longest description the model is given, in characters (with the ellipsis).
const MAX_DESCRIPTION: usize = 2049;

/// Fragments of MCP messages.
pub(super) const TOKENS: &[&str] = &[
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"isError\":false}}",
    "{\"type\":\"text\",\"text\":\"hello\"}",
    "{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"iVBORw0KGgo=\"}",
    "{\"type\":\"audio\",\"mimeType\":\"audio/wav\",\"data\":\"UklGRg==\"}",
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///a\",\"text\":\"t\"}}",
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///b\",\"mimeType\":\"image/png\",\"blob\":\"iVBORw0KGgo=\"}}",
    "{\"type\":\"resource_link\",\"uri\":\"file:///c\",\"name\":\"c\",\"description\":\"d\"}",
    "\"structuredContent\":{\"n\":3}",
    "\"isError\":true",
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[]}}",
    "{\"name\":\"get.thing\",\"description\":\"Gets.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}",
    "\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}",
    "\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
    "\"name\":\"\u{e9}t\u{e9} \u{1F600}\"",
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"resources\":[{\"uri\":\"file:///r\",\"name\":\"r\"}]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"resourceTemplates\":[{\"uriTemplate\":\"file:///{p}\",\"name\":\"t\"}]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"contents\":[{\"uri\":\"file:///r\",\"text\":\"x\"}]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{\"prompts\":[{\"name\":\"p\",\"arguments\":[{\"name\":\"a\",\"required\":true}]}]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"t\"}}]}}",
    "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"elicitation/create\",\"params\":{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}",
    "\"required\":[\"name\"]",
    "\"mode\":\"url\",\"url\":\"https://example.com\",\"elicitationId\":\"e\"",
    "\"_meta\":{}",
];

/// Feeds the input as a server's message and checks what Larik made of it.
pub(super) fn run(input: &[u8]) {
    let raw: Value = text(input)
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    for cap in CAPS {
        match convert(input, SERVERS, cap, ARGUMENT_TEXT) {
            Converted::ToolOutput(output) => {
                check_output(&output, cap, "tool result");
                assert_eq!(
                    output.is_error,
                    raw["result"]["isError"] == Value::Bool(true),
                    "the error flag changed"
                );
            }
            Converted::Resource(output) => check_output(&output, cap, "resource"),
            Converted::Tools(tools) => check_tools(&tools, &raw),
            Converted::Prompts(commands, filled) => {
                let prefix = server_prefix(SERVERS[0]);
                for command in &commands {
                    let name = command.name.strip_prefix(&prefix).unwrap_or_else(|| {
                        panic!(
                            "a prompt command {:?} outside its server's prefix",
                            command.name
                        )
                    });
                    assert!(
                        name.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                        "a prompt command that is not one word: {:?}",
                        command.name
                    );
                }
                for given in filled.iter().flatten() {
                    assert!(
                        given.len() <= 3,
                        "more arguments filled than words: {given:?}"
                    );
                }
            }
            Converted::Question(Some(question), answers) => {
                for (answer, result) in &answers {
                    check_answer(&question.schema, answer, result);
                }
            }
            Converted::NotAMessage
            | Converted::Resources(_)
            | Converted::PromptText(_)
            | Converted::Question(None, _)
            | Converted::Other => {}
        }
    }
}

/// Content present, images within the providers' limits, text within the cap.
fn check_output(output: &ToolOutput, cap: usize, what: &str) {
    assert!(!output.content.is_empty(), "a {what} without content");
    let mut images = 0;
    let mut texts = Vec::new();
    for part in &output.content {
        match part {
            ResultPart::Image { media_type, data } => {
                images += 1;
                assert!(
                    IMAGE_TYPES.contains(&media_type.as_str()),
                    "a {what} passed an image of type {media_type:?}"
                );
                assert!(
                    !data.is_empty()
                        && data.len().is_multiple_of(4)
                        && data.len() / 4 * 3 <= 5 * 1024 * 1024 + 2
                        && data
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')),
                    "a {what} passed an image that is not base64 within 5 MB"
                );
            }
            ResultPart::Text { text } => texts.push(text.as_str()),
        }
    }
    assert!(images <= 4, "a {what} passed {images} images");
    let cut = texts
        .last()
        .is_some_and(|last| last.starts_with("\n[output cut: "));
    let shown: usize = texts
        .iter()
        .take(texts.len() - usize::from(cut))
        .map(|text| text.chars().count())
        .sum();
    let limit = cap
        .saturating_mul(4)
        .max("(the tool returned no content)".len());
    assert!(
        shown <= limit,
        "a {what} shows {shown} characters, over the cap of {limit}"
    );
}

/// Valid, distinct, prefixed names; cut descriptions; object schemas; every tool offered
/// by each server.
fn check_tools(tools: &[OfferedTool], raw: &Value) {
    for server in SERVERS {
        assert!(
            check_server_name(server).is_ok(),
            "{server} is no server name"
        );
    }
    let prefixes = SERVERS.map(server_prefix);
    let mut seen = std::collections::HashSet::new();
    for tool in tools {
        let name = &tool.name;
        assert!(
            !name.is_empty()
                && name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "the tool {:?} is offered as {name:?}, not a valid tool name",
            tool.server_tool
        );
        assert!(
            prefixes
                .iter()
                .any(|prefix| name.starts_with(prefix.as_str())),
            "the tool name {name:?} does not show its server"
        );
        assert!(seen.insert(name.clone()), "two tools are named {name:?}");
        assert!(
            tool.description.chars().count() <= MAX_DESCRIPTION,
            "a description of {} characters",
            tool.description.chars().count()
        );
        assert!(
            tool.schema.is_object(),
            "the schema {} is no object",
            tool.schema
        );
    }
    let listed = raw["result"]["tools"].as_array().map_or(0, Vec::len);
    assert!(
        tools.len() <= 2 * listed,
        "{} tools offered from {listed} listed twice",
        tools.len()
    );
}

/// What the server is told: only the schema's properties, an accept only with every
/// required one, a decline or a cancel as given.
fn check_answer(schema: &Value, answer: &Answer, result: &Value) {
    let action = result["action"].as_str().unwrap_or_default();
    match answer {
        Answer::Decline => assert_eq!(action, "decline", "a decline became {result}"),
        Answer::Cancel => assert_eq!(action, "cancel", "a cancel became {result}"),
        Answer::Accept(_) => {
            assert!(
                action == "accept" || action == "decline",
                "an accept became {result}"
            );
        }
    }
    if action != "accept" {
        assert!(
            result.get("content").is_none_or(Value::is_null),
            "content sent with a {action}: {result}"
        );
        return;
    }
    let content = result["content"].as_object().cloned().unwrap_or_default();
    let properties = schema["properties"].as_object();
    for key in content.keys() {
        assert!(
            properties.is_some_and(|properties| properties.contains_key(key)),
            "the answer sent {key:?}, which the schema does not ask for"
        );
    }
    for required in schema["required"].as_array().into_iter().flatten() {
        if let Some(required) = required.as_str() {
            assert!(
                content.contains_key(required),
                "an accept without the required {required:?}"
            );
        }
    }
}
