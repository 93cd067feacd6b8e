//! Entry points for the fuzz targets in `core/fuzz`, compiled only with the `fuzzing`
//! feature: one message an MCP server sends, decoded with the SDK's types as the client's
//! transport decodes it, and put through Larik's conversion of that kind of answer or
//! question: tool results, tool lists (names, descriptions, schemas), resource lists and
//! contents, prompt lists and prompts, elicitation requests.

pub use larik_tools::ToolOutput;
use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerRequest, ServerResult};
use serde_json::{Map, Value};

use crate::connect::{elicit_result, listed_tools, question_of};
use crate::content::{resource_output, tool_output};
use crate::elicit::{Answer, Question};
use crate::late::named_tools;
use crate::prompts::{PromptCommand, arguments, fill_arguments, prompt_command, prompt_text};
use crate::servers::resource_lines;
use crate::tool::{model_description, schema_value};

/// A tool as the model is offered it.
#[derive(Debug, Clone)]
pub struct OfferedTool {
    /// The name the model calls it by.
    pub name: String,
    /// The name the server knows it by.
    pub server_tool: String,
    /// Its description.
    pub description: String,
    /// Its input schema.
    pub schema: Value,
}

/// What Larik made of a server's message.
#[derive(Debug)]
pub enum Converted {
    /// Not a message the client reads (the transport drops it).
    NotAMessage,
    /// A `tools/call` result, as the model reads it.
    ToolOutput(ToolOutput),
    /// A `tools/list` result: the tools offered when two servers, `servers[0]` and
    /// `servers[1]`, list it, in that order.
    Tools(Vec<OfferedTool>),
    /// A `resources/list` or `resources/templates/list` result: the lines of
    /// `list_mcp_resources`.
    Resources(Vec<String>),
    /// A `resources/read` result, as the model reads it.
    Resource(ToolOutput),
    /// A `prompts/list` result: the slash commands, and for each prompt the arguments
    /// the text `argument_text` fills (or the required ones it leaves out).
    Prompts(Vec<PromptCommand>, Vec<Result<Map<String, Value>, String>>),
    /// A `prompts/get` result: the text sent to the model.
    PromptText(String),
    /// An elicitation request: the question put to the user (`None`: declined unasked),
    /// and for each answer tried, what the server is told.
    Question(Option<Question>, Vec<(Answer, Value)>),
    /// Another message (a notification, an error, another request or result).
    Other,
}

/// Decodes `message` as the client's transport does and converts it, for servers named
/// `servers` with `output_tokens` as their output cap; `argument_text` is what a user
/// typed after a prompt's slash command.
pub fn convert(
    message: &[u8],
    servers: [&str; 2],
    output_tokens: usize,
    argument_text: &str,
) -> Converted {
    let Ok(message) = serde_json::from_slice::<ServerJsonRpcMessage>(message) else {
        return Converted::NotAMessage;
    };
    match message {
        JsonRpcMessage::Response(response) => match response.result {
            ServerResult::CallToolResult(result) => match serde_json::to_value(&result) {
                Ok(result) => Converted::ToolOutput(tool_output(&result, output_tokens)),
                Err(_) => Converted::Other,
            },
            ServerResult::ListToolsResult(result) => {
                let listed = listed_tools(&result.tools);
                let listings = servers.map(|server| (server, listed.as_slice()));
                Converted::Tools(
                    named_tools(listings, |_| false)
                        .into_iter()
                        .map(|(_, tool, name)| OfferedTool {
                            name,
                            server_tool: tool.name.clone(),
                            description: model_description(tool),
                            schema: schema_value(tool.object_schema()),
                        })
                        .collect(),
                )
            }
            ServerResult::ListResourcesResult(result) => {
                Converted::Resources(resource_lines(&result.resources, &[]))
            }
            ServerResult::ListResourceTemplatesResult(result) => {
                Converted::Resources(resource_lines(&[], &result.resource_templates))
            }
            ServerResult::ReadResourceResult(result) => match serde_json::to_value(&result) {
                Ok(result) => Converted::Resource(resource_output(&result, output_tokens)),
                Err(_) => Converted::Other,
            },
            ServerResult::ListPromptsResult(result) => {
                let prompts: Vec<Value> = result
                    .prompts
                    .iter()
                    .filter_map(|prompt| serde_json::to_value(prompt).ok())
                    .collect();
                Converted::Prompts(
                    prompts
                        .iter()
                        .filter_map(|prompt| prompt_command(servers[0], prompt))
                        .collect(),
                    prompts
                        .iter()
                        .map(|prompt| fill_arguments(&arguments(prompt), argument_text))
                        .collect(),
                )
            }
            ServerResult::GetPromptResult(result) => match serde_json::to_value(&result) {
                Ok(result) => Converted::PromptText(prompt_text(&result)),
                Err(_) => Converted::Other,
            },
            _ => Converted::Other,
        },
        JsonRpcMessage::Request(request) => match request.request {
            ServerRequest::ElicitRequest(request) => {
                let question = question_of(servers[0], &request.params);
                let answers = match &question {
                    Some(question) => [
                        Answer::Accept(sample_values(&question.schema)),
                        Answer::Decline,
                        Answer::Cancel,
                    ]
                    .into_iter()
                    .map(|answer| {
                        let result = elicit_result(answer.clone(), &question.schema);
                        (answer, serde_json::to_value(result).unwrap_or_default())
                    })
                    .collect(),
                    None => Vec::new(),
                };
                Converted::Question(question, answers)
            }
            _ => Converted::Other,
        },
        _ => Converted::Other,
    }
}

/// An answer a user might give to a question of shape `schema`: a value for every
/// property but the last, and one the schema does not name.
fn sample_values(schema: &Value) -> Map<String, Value> {
    let mut values = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let count = properties.len();
        for name in properties.keys().take(count.saturating_sub(1)) {
            values.insert(name.clone(), Value::String("yes".into()));
        }
    }
    values.insert("larik-fuzz-extra".into(), Value::Bool(true));
    values
}
