//! Deferred MCP tools: when the MCP tools' schemas would take too much of the context (a
//! share of the model's window, or a count), they are not sent with every request. The
//! model gets two small tools instead, fixed for the context like every other: the
//! read-only `mcp_search`, which finds tools by name and description and returns their
//! input schemas in its result, and `mcp_call`, which calls any of them by name. The agent
//! judges, shows and runs an `mcp_call` as the tool it names (see
//! [`Tool::forwards_to`]), so permission rules, modes, hooks and read-only flags apply to
//! `mcp__server__tool` exactly as if it had been sent. Nothing about the deferred tools is
//! in the system prompt, and the tool list never changes within the context, so the prompt
//! prefix (and the provider's cache of it) holds.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use larik_protocol::ToolKind;
use larik_tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::tool::McpTool;

/// Most tools one search returns.
const MAX_RESULTS: usize = 20;
/// Tools a search returns unless asked for another number.
const DEFAULT_RESULTS: usize = 5;
/// Bytes per token of a tool's JSON, as the agent estimates the context.
const BYTES_PER_TOKEN: usize = 4;

/// When MCP tools are deferred behind `mcp_search`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchPolicy {
    /// Defer when the MCP tools' schemas would take more than this share of the model's
    /// context window (0 defers always, 1 or more never by size).
    pub share: f64,
    /// Defer when there are more MCP tools than this.
    pub count: usize,
}

impl Default for SearchPolicy {
    fn default() -> Self {
        SearchPolicy {
            share: 0.10,
            count: 100,
        }
    }
}

impl SearchPolicy {
    /// Whether `count` tools taking about `bytes` in a request are deferred for a model
    /// whose window is `context_window` tokens.
    pub fn defers(&self, count: usize, bytes: usize, context_window: Option<u64>) -> bool {
        if count == 0 {
            return false;
        }
        if count > self.count || self.share <= 0.0 {
            return true;
        }
        let Some(window) = context_window else {
            return false;
        };
        let tokens = bytes / BYTES_PER_TOKEN;
        tokens as f64 > self.share * window as f64
    }
}

/// `mcp_search`.
pub struct McpSearch {
    tools: Arc<Deferred>,
}

/// `mcp_call`.
pub struct McpCall {
    tools: Arc<Deferred>,
}

/// What builds the deferred tools.
type Build = Box<dyn FnOnce() -> Vec<Arc<McpTool>> + Send>;

/// The deferred tools, built when first needed.
type Deferred = LazyLock<Vec<Arc<McpTool>>, Build>;

/// The two tools that stand for the tools `build` makes (at the first search or call).
pub(crate) fn deferring(
    build: impl FnOnce() -> Vec<Arc<McpTool>> + Send + 'static,
) -> (McpSearch, McpCall) {
    let tools: Arc<Deferred> = Arc::new(LazyLock::new(Box::new(build)));
    (
        McpSearch {
            tools: Arc::clone(&tools),
        },
        McpCall { tools },
    )
}

/// The words of `text`, lowercased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl McpSearch {
    /// The tools `query` finds, best first: `select:A,B` names them; otherwise each word
    /// found in a tool's name counts three, in its description one.
    fn find(&self, query: &str, limit: usize) -> Vec<&Arc<McpTool>> {
        if let Some(names) = query.trim().strip_prefix("select:") {
            let names: Vec<&str> = names.split(',').map(str::trim).collect();
            return self
                .tools
                .iter()
                .filter(|tool| names.contains(&tool.name()))
                .take(limit)
                .collect();
        }
        let wanted = words(query);
        let mut scored: Vec<(usize, &Arc<McpTool>)> = self
            .tools
            .iter()
            .map(|tool| {
                let name = words(tool.name()).join(" ");
                let description = tool.description().to_lowercase();
                let score = wanted
                    .iter()
                    .map(|word| {
                        3 * usize::from(name.contains(word.as_str()))
                            + usize::from(description.contains(word.as_str()))
                    })
                    .sum();
                (score, tool)
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name().cmp(b.1.name())));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, tool)| tool)
            .collect()
    }

    /// The servers and how many tools each has, for an empty query.
    fn servers(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for tool in self.tools.iter() {
            *counts.entry(tool.server_name()).or_default() += 1;
        }
        let mut text = String::from("MCP servers with tools to search:\n");
        for (server, count) in counts {
            text.push_str(&format!("- {server}: {count} tools\n"));
        }
        text
    }
}

#[async_trait::async_trait]
impl Tool for McpSearch {
    fn name(&self) -> &str {
        "mcp_search"
    }

    fn description(&self) -> &str {
        "Finds tools of the connected MCP servers by what they do. Give words from the task \
         (or `select:NAME,NAME` for tools you know by name; an empty query lists the \
         servers). Returns each match's name, description and input schema; call one with \
         mcp_call."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS}
            },
            "required": ["query"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        format!(
            "Search MCP tools: {}",
            input
                .get("query")
                .and_then(Value::as_str)
                .unwrap_or_default()
        )
    }

    async fn run(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let query = input
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if query.trim().is_empty() {
            return ToolOutput::text(self.servers());
        }
        let limit = input
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_RESULTS, |limit| limit as usize)
            .clamp(1, MAX_RESULTS);
        let found = self.find(query, limit);
        if found.is_empty() {
            return ToolOutput::text(format!(
                "No MCP tool matches `{query}`. Try other words, or an empty query for the \
                 servers.\n\n{}",
                self.servers()
            ));
        }
        let mut text = String::new();
        for tool in found {
            text.push_str(&format!(
                "{}: {}\n  input schema: {}\n",
                tool.name(),
                tool.description(),
                tool.input_schema()
            ));
        }
        text.push_str("\nCall one with mcp_call: {\"name\": \"<tool name>\", \"arguments\": {…}}.");
        ToolOutput::text(text)
    }
}

#[async_trait::async_trait]
impl Tool for McpCall {
    fn name(&self) -> &str {
        "mcp_call"
    }

    fn description(&self) -> &str {
        "Calls an MCP tool that mcp_search found: `name` is its full name, `arguments` the \
         input its schema asks for."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "arguments": {"type": "object"}
            },
            "required": ["name"]
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn read_only(&self) -> bool {
        false
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        format!(
            "Call {}",
            input
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("an MCP tool")
        )
    }

    fn forwards_to(&self, input: &Value) -> Option<(Arc<dyn Tool>, Value)> {
        let name = input.get("name")?.as_str()?;
        let tool = self.tools.iter().find(|tool| tool.name() == name)?;
        let arguments = input
            .get("arguments")
            .cloned()
            .filter(|arguments| !arguments.is_null())
            .unwrap_or_else(|| json!({}));
        Some((Arc::clone(tool) as Arc<dyn Tool>, arguments))
    }

    async fn run(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let name = input
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        ToolOutput::error(format!(
            "There is no MCP tool named `{name}`. Find tools, and their exact names, with \
             mcp_search."
        ))
    }
}
