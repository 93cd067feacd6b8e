//! The MCP tools of one context: the session's servers, each waited for at most its
//! connect wait when the context's first request asks, and the tools of those ready then,
//! named uniquely in a fixed order (or, past the [`SearchPolicy`]'s limits, `mcp_search`
//! and `mcp_call` standing for them). A server not ready is named in a notice; its tools
//! join at the next fresh context.

use std::sync::Arc;

use larik_tools::{LateToolSet, LateTools, LateToolsAsk, Tool};

use crate::elicit::{Asker, NoOneToAsk};
use crate::listing::ListedTool;
use crate::naming::{UniqueNames, tool_name};
use crate::resources::{ListResources, ReadResource};
use crate::search::{SearchPolicy, deferring};
use crate::servers::{Server, ServerStatus};
use crate::tool::McpTool;

/// The extension's name, as `/context` shows the source of MCP tools.
pub const SOURCE: &str = "MCP";

/// The servers of one session, as a late tool source.
pub struct SessionTools {
    servers: Vec<Arc<Server>>,
    search: SearchPolicy,
    asker: Arc<dyn Asker>,
}

impl SessionTools {
    /// The tools of `servers`, deferred behind `mcp_search` as `search` says.
    pub fn new(mut servers: Vec<Arc<Server>>, search: SearchPolicy) -> Self {
        servers.sort_by(|a, b| a.name().cmp(b.name()));
        SessionTools {
            servers,
            search,
            asker: Arc::new(NoOneToAsk),
        }
    }

    /// The same, with the servers' questions during the session's calls going to `asker`.
    pub fn with_asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.asker = asker;
        self
    }
}

#[async_trait::async_trait]
impl LateTools for SessionTools {
    fn source(&self) -> &str {
        SOURCE
    }

    async fn tools(&self, ask: LateToolsAsk) -> LateToolSet {
        let ready = futures::future::join_all(
            self.servers
                .iter()
                .map(|server| server.ready_within(server.spec().connect_wait)),
        )
        .await;
        let mut set = LateToolSet::default();
        let with_resources: Vec<Arc<Server>> = self
            .servers
            .iter()
            .filter(|server| server.has_resources())
            .cloned()
            .collect();
        if !with_resources.is_empty() {
            set.tools
                .push(Arc::new(ListResources::new(with_resources.clone())));
            set.tools.push(Arc::new(ReadResource::new(with_resources)));
        }
        let mut names = UniqueNames::default();
        let mut mcp_tools: Vec<Arc<McpTool>> = Vec::new();
        for (server, connection) in self.servers.iter().zip(ready) {
            if let Some(connection) = connection {
                match connection.refresh_tools().await {
                    Ok(true) if server.spec().lazy => {
                        let tools = Arc::clone(&*connection.tools.lock().await);
                        server.keep_tools(&tools);
                    }
                    Ok(_) => {}
                    Err(why) => set
                        .notices
                        .push(format!("MCP server `{}`: {why}", server.name())),
                }
            }
            let Some(listed) = server.offered_tools().await else {
                set.notices.push(match server.status() {
                    ServerStatus::Connecting => format!(
                        "MCP server `{}` is still starting; its tools join at the next fresh \
                         context (/clear)",
                        server.name()
                    ),
                    ServerStatus::NeedsLogin => format!(
                        "MCP server `{0}` needs a login: `/mcp login {0}` (or `larik mcp login \
                         {0}`)",
                        server.name()
                    ),
                    status => format!("MCP server `{}`: {status}", server.name()),
                });
                continue;
            };
            let mut order: Vec<&ListedTool> = listed.iter().collect();
            order.sort_by(|a, b| a.name.cmp(&b.name));
            for tool in order {
                let wanted = tool_name(server.name(), &tool.name);
                if ask.hides(&wanted) {
                    continue;
                }
                let name = names.claim(wanted);
                mcp_tools.push(Arc::new(McpTool::new(
                    Arc::clone(server),
                    name,
                    tool,
                    Arc::clone(&self.asker),
                )));
            }
        }
        if self.search.defers(&mcp_tools, ask.context_window) {
            let (search, call) = deferring(mcp_tools);
            set.tools.push(Arc::new(search));
            set.tools.push(Arc::new(call));
        } else {
            set.tools
                .extend(mcp_tools.into_iter().map(|tool| tool as Arc<dyn Tool>));
        }
        set.tools.sort_by(|a, b| a.name().cmp(b.name()));
        set
    }
}
