//! The tools of late sources ([`LateTools`]), asked for once per context just before its
//! first request (or its `/context` report). The sources are asked together, so the wait
//! is the longest source's own bound, not their sum; an interrupt ends the wait, and the
//! next request asks again. Once asked, the context's tool set is fixed.

use std::sync::Arc;

use larik_protocol::Event;
use larik_providers::ToolSpec;
use larik_tools::{LateTools, LateToolsAsk, ToolRegistry};
use tokio_util::sync::CancellationToken;

use crate::runner::Runner;

/// The request's tool list for `tools`, sorted by name.
pub(crate) fn tool_specs(tools: &ToolRegistry) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|tool| ToolSpec {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            input_schema: tool.input_schema(),
        })
        .collect()
}

impl Runner {
    /// Adds the late sources' tools to the context, unless that happened already or
    /// `cancel` fires first.
    pub(crate) async fn load_late_tools(&mut self, cancel: &CancellationToken) {
        if self.late_tools.is_empty() {
            return;
        }
        let sources: Vec<Arc<dyn LateTools>> = self.late_tools.clone();
        let ask = LateToolsAsk {
            context_window: self.context_window,
            hidden: None,
        };
        let asked =
            futures::future::join_all(sources.iter().map(|source| source.tools(ask.clone())));
        let sets = tokio::select! {
            sets = asked => sets,
            () = cancel.cancelled() => return,
        };
        self.late_tools.clear();
        for (source, set) in sources.iter().zip(sets) {
            for tool in set.tools {
                if self.config.tools.get(tool.name()).is_some() {
                    self.events.emit(Event::Notice {
                        message: format!(
                            "{}: the tool `{}` is left out: a tool of that name exists already",
                            source.source(),
                            tool.name()
                        ),
                    });
                    continue;
                }
                self.config.tools.register_from(tool, source.source());
            }
            for message in set.notices {
                self.events.emit(Event::Notice { message });
            }
        }
        self.tool_specs = Arc::new(tool_specs(&self.config.tools));
    }
}
