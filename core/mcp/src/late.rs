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
        let mut listings: Vec<Listing> = Vec::new();
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
                        "MCP server `{}` needs a login: {}",
                        server.name(),
                        crate::oauth::login_hint(server.name())
                    ),
                    status => format!("MCP server `{}`: {status}", server.name()),
                });
                continue;
            };
            listings.push((Arc::clone(server), listed));
        }
        let count = listings.iter().map(|(_, listed)| listed.len()).sum();
        let bytes = listings
            .iter()
            .flat_map(|(server, listed)| {
                listed.iter().map(|tool| tool.request_bytes(server.name()))
            })
            .sum();
        if self.search.defers(count, bytes, ask.context_window) {
            // Built at the first search or call: most contexts use few of them, if any.
            let asker = Arc::clone(&self.asker);
            let (search, call) = deferring(move || build_tools(&listings, &ask, &asker));
            set.tools.push(Arc::new(search));
            set.tools.push(Arc::new(call));
        } else {
            set.tools.extend(
                build_tools(&listings, &ask, &self.asker)
                    .into_iter()
                    .map(|tool| tool as Arc<dyn Tool>),
            );
        }
        set.tools.sort_by(|a, b| a.name().cmp(b.name()));
        set
    }
}

/// A ready (or idle) server and the tools it lists.
type Listing = (Arc<Server>, Arc<Vec<ListedTool>>);

/// The tools of `listings` as agent tools, each server's sorted by name, named uniquely,
/// without those `ask` hides.
fn build_tools(
    listings: &[Listing],
    ask: &LateToolsAsk,
    asker: &Arc<dyn Asker>,
) -> Vec<Arc<McpTool>> {
    let named = named_tools(
        listings
            .iter()
            .map(|(server, listed)| (server.name(), listed.as_slice())),
        |name| ask.hides(name),
    );
    named
        .into_iter()
        .map(|(index, tool, name)| {
            Arc::new(McpTool::new(
                Arc::clone(&listings[index].0),
                name,
                tool,
                Arc::clone(asker),
            ))
        })
        .collect()
}

/// The tools of each listing (a server's name and its list), each list sorted by name,
/// named `mcp__<server>__<tool>` and made unique in that order, without those `hides`
/// hides: the listing's index, the tool and its name.
pub(crate) fn named_tools<'a>(
    listings: impl IntoIterator<Item = (&'a str, &'a [ListedTool])>,
    hides: impl Fn(&str) -> bool,
) -> Vec<(usize, &'a ListedTool, String)> {
    let mut names = UniqueNames::default();
    let mut named = Vec::new();
    for (index, (server, listed)) in listings.into_iter().enumerate() {
        let mut order: Vec<&ListedTool> = listed.iter().collect();
        order.sort_by(|a, b| a.name.cmp(&b.name));
        for tool in order {
            let wanted = tool_name(server, &tool.name);
            if hides(&wanted) {
                continue;
            }
            named.push((index, tool, names.claim(wanted)));
        }
    }
    named
}
