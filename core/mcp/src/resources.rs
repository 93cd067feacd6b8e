//! `list_mcp_resources` and `read_mcp_resource`: the resources of the session's servers
//! that offer them, for the model to list and read. Both are read-only; both are offered
//! only when a server ready at the context's start has the resources capability.

use std::sync::Arc;

use larik_protocol::ToolKind;
use larik_tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::servers::Server;

/// Lists resources (and resource templates) of one server or all.
pub struct ListResources {
    servers: Vec<Arc<Server>>,
}

/// Reads one resource of one server.
pub struct ReadResource {
    servers: Vec<Arc<Server>>,
}

impl ListResources {
    /// Over `servers` (those with resources).
    pub(crate) fn new(servers: Vec<Arc<Server>>) -> Self {
        ListResources { servers }
    }
}

impl ReadResource {
    /// Over `servers` (those with resources).
    pub(crate) fn new(servers: Vec<Arc<Server>>) -> Self {
        ReadResource { servers }
    }
}

/// The server names, for descriptions and errors.
fn names(servers: &[Arc<Server>]) -> String {
    servers
        .iter()
        .map(|server| format!("`{}`", server.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[async_trait::async_trait]
impl Tool for ListResources {
    fn name(&self) -> &str {
        "list_mcp_resources"
    }

    fn description(&self) -> &str {
        "Lists the resources (and resource templates) MCP servers offer: each one's URI, \
         name, type and description. Give `server` to list one server's only. Read one \
         with read_mcp_resource."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server's name (optional)."}
            },
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        match input.get("server").and_then(Value::as_str) {
            Some(server) => format!("List resources of {server}"),
            None => "List MCP resources".to_string(),
        }
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let wanted = input.get("server").and_then(Value::as_str);
        let servers: Vec<&Arc<Server>> = self
            .servers
            .iter()
            .filter(|server| wanted.is_none_or(|name| server.name() == name))
            .collect();
        if servers.is_empty() {
            return ToolOutput::error(format!(
                "No MCP server `{}` offers resources; these do: {}.",
                wanted.unwrap_or_default(),
                names(&self.servers)
            ));
        }
        let mut text = String::new();
        for server in servers {
            let listed = tokio::select! {
                listed = server.list_resources() => listed,
                () = ctx.cancel.cancelled() => return ToolOutput::error("Interrupted."),
            };
            match listed {
                Ok(lines) if lines.is_empty() => {
                    text.push_str(&format!("{}: no resources\n", server.name()));
                }
                Ok(lines) => {
                    text.push_str(&format!("{}:\n", server.name()));
                    for line in lines {
                        text.push_str(&format!("- {line}\n"));
                    }
                }
                Err(why) => text.push_str(&format!("{}: {why}\n", server.name())),
            }
        }
        ToolOutput::text(text.trim_end())
    }
}

#[async_trait::async_trait]
impl Tool for ReadResource {
    fn name(&self) -> &str {
        "read_mcp_resource"
    }

    fn description(&self) -> &str {
        "Reads one resource of an MCP server by its URI (as list_mcp_resources shows them)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server's name."},
                "uri": {"type": "string", "description": "The resource's URI."}
            },
            "required": ["server", "uri"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        format!(
            "Read {}",
            input
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or("a resource")
        )
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let (Some(name), Some(uri)) = (
            input.get("server").and_then(Value::as_str),
            input.get("uri").and_then(Value::as_str),
        ) else {
            return ToolOutput::error("Give `server` and `uri`.");
        };
        let Some(server) = self.servers.iter().find(|server| server.name() == name) else {
            return ToolOutput::error(format!(
                "No MCP server `{name}` offers resources; these do: {}.",
                names(&self.servers)
            ));
        };
        tokio::select! {
            output = server.read_resource(uri) => output,
            () = ctx.cancel.cancelled() => ToolOutput::error("Interrupted."),
        }
    }
}
