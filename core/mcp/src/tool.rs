//! One server tool as an agent tool: named `mcp__<server>__<tool>`, described and shaped
//! as the server lists it, read-only only when the server says both `readOnlyHint: true`
//! and `openWorldHint: false` (an open-world tool could carry data out through its
//! input). A call goes to the server's live connection, bounded by the server's tool
//! timeout and ended by an interrupt; whatever goes wrong is a result the model reads.
//! While it waits, the server's questions go to the session's asker.

use std::sync::{Arc, OnceLock};

use larik_protocol::ToolKind;
use larik_tools::{Tool, ToolContext, ToolOutput};
use rmcp::model::CallToolRequestParams;
use serde_json::Value;

use serde_json::value::RawValue;

use crate::content;
use crate::elicit::Asker;
use crate::listing::ListedTool;
use crate::servers::Server;

/// The longest tool description passed to the model; servers' own can be pages long.
const MAX_DESCRIPTION: usize = 2048;

/// A tool of an MCP server.
pub struct McpTool {
    server: Arc<Server>,
    name: String,
    tool: String,
    description: String,
    /// The input schema as the server sent it (a JSON object; `None`: any object).
    schema: Option<Box<RawValue>>,
    /// The schema as a value, read at the first request that sends it.
    parsed_schema: OnceLock<Value>,
    read_only: bool,
    /// Who answers the server's questions while a call waits.
    asker: Arc<dyn Asker>,
}

impl McpTool {
    /// The tool `listed` of `server`, offered as `name`.
    pub(crate) fn new(
        server: Arc<Server>,
        name: String,
        listed: &ListedTool,
        asker: Arc<dyn Asker>,
    ) -> McpTool {
        let description = model_description(listed);
        let schema = listed.object_schema().map(RawValue::to_owned);
        let annotations = &listed.annotations;
        let read_only =
            annotations.read_only == Some(true) && annotations.open_world == Some(false);
        McpTool {
            server,
            name,
            tool: listed.name.clone(),
            description,
            schema,
            parsed_schema: OnceLock::new(),
            read_only,
            asker,
        }
    }

    /// The name the server knows it by.
    pub fn server_tool_name(&self) -> &str {
        &self.tool
    }

    /// The server it belongs to.
    pub fn server_name(&self) -> &str {
        self.server.name()
    }
}

/// A listed tool's description as the model reads it: cut to [`MAX_DESCRIPTION`]
/// characters.
pub(crate) fn model_description(listed: &ListedTool) -> String {
    let mut description = listed.description_text().to_string();
    if let Some((cut, _)) = description.char_indices().nth(MAX_DESCRIPTION) {
        description.truncate(cut);
        description.push('…');
    }
    description
}

/// The input schema the model is given for a tool whose object schema is `schema` (any
/// object when there is none, or it does not read).
pub(crate) fn schema_value(schema: Option<&RawValue>) -> Value {
    schema
        .and_then(|schema| serde_json::from_str(schema.get()).ok())
        .unwrap_or_else(|| serde_json::json!({"type": "object"}))
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.parsed_schema
            .get_or_init(|| schema_value(self.schema.as_deref()))
            .clone()
    }

    fn kind(&self) -> ToolKind {
        if self.read_only {
            ToolKind::Read
        } else {
            ToolKind::Other
        }
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn title(&self, _input: &Value, _ctx: &ToolContext) -> String {
        format!("{} ({} MCP server)", self.tool, self.server.name())
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let server = self.server.name();
        let Some(connection) = self.server.started().await else {
            return ToolOutput::error(format!(
                "The MCP server `{server}` is not connected ({}). Its tools work again after \
                 it reconnects, at the next fresh context (/clear).",
                self.server.status()
            ));
        };
        let mut params = CallToolRequestParams::new(self.tool.clone());
        match input {
            Value::Object(arguments) => params = params.with_arguments(arguments),
            Value::Null => {}
            _ => return ToolOutput::error("The input must be a JSON object."),
        }
        let timeout = self.server.spec().tool_timeout;
        // The server's questions during the call go to this session's asker.
        let _waiting = self.server.askers().waiting(Arc::clone(&self.asker));
        let call = tokio::time::timeout(timeout, connection.service.call_tool(params));
        let result = tokio::select! {
            result = call => result,
            () = ctx.cancel.cancelled() => {
                return ToolOutput::error("Interrupted before the MCP server answered.");
            }
        };
        match result {
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(result) => content::tool_output(&result, self.server.spec().output_tokens),
                Err(error) => ToolOutput::error(format!(
                    "The MCP server `{server}` answered with a result Larik cannot read: {error}"
                )),
            },
            Ok(Err(error)) => {
                if connection.is_closed() {
                    self.server
                        .note(&format!("stopped during a call of `{}`", self.tool));
                    ToolOutput::error(format!(
                        "The MCP server `{server}` stopped during the call ({error}); it may or \
                         may not have acted. It is started again at the next fresh context \
                         (/clear)."
                    ))
                } else {
                    ToolOutput::error(format!(
                        "The MCP server `{server}` failed the call: {error}"
                    ))
                }
            }
            Err(_) => {
                let mut text = format!(
                    "The MCP server `{server}` did not answer within {} s (its tool_timeout); \
                     the call may still be running there.",
                    timeout.as_secs_f64()
                );
                if let Some(wrote) = connection.audit.as_ref().and_then(|audit| audit.describe()) {
                    text = format!("{text} Meanwhile {wrote}.");
                }
                ToolOutput::error(text)
            }
        }
    }
}
