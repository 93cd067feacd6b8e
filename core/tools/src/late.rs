//! Tools that become known only after a session starts: an extension whose tools come from
//! elsewhere (an MCP server still connecting) hands the agent a [`LateTools`] source, and
//! the agent asks it once, just before the first request of a context. What the source has
//! by then joins the context's tool set, which stays fixed until the next fresh context.

use std::sync::Arc;

use crate::Tool;

/// What a late source has when the agent asks.
#[derive(Default)]
pub struct LateToolSet {
    /// Tools to offer for the rest of the context.
    pub tools: Vec<Arc<dyn Tool>>,
    /// What the user should hear (a server still starting, one that failed).
    pub notices: Vec<String>,
}

/// Which tool names may not be offered (the names `--disallowedTools` takes away).
pub type ToolFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What a late source may size its answer by.
#[derive(Clone, Default)]
pub struct LateToolsAsk {
    /// The model's context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Tools by these names are left out, also from what a source reaches indirectly
    /// (the tools MCP's `mcp_search` finds); `None` hides nothing.
    pub hidden: Option<ToolFilter>,
}

impl LateToolsAsk {
    /// Whether the tool `name` is left out.
    pub fn hides(&self, name: &str) -> bool {
        self.hidden.as_ref().is_some_and(|hidden| hidden(name))
    }
}

/// A source of tools the agent asks once per context, before its first request.
#[async_trait::async_trait]
pub trait LateTools: Send + Sync {
    /// The extension it belongs to, as `/context` names the source of its tools.
    fn source(&self) -> &str;

    /// The tools ready now, after waiting as long as the source allows (bounded: the
    /// agent does not send its first request before this returns).
    async fn tools(&self, ask: LateToolsAsk) -> LateToolSet;
}
