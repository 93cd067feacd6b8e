//! `@server:uri` in a prompt: the resource `uri` of the session's MCP server `server` is
//! read and added for the model after the prompt (through the loop seam's prompt point), as
//! Claude Code does. A mention of a name that is no server of the session stays prose; a
//! resource that cannot be read is named in the added text and told to the user.

use std::sync::Arc;

use larik_agent::hooks::{LoopContext, LoopHook, PromptOutcome, PromptPoint};
use larik_mcp::Server;
use larik_protocol::ResultPart;

/// Characters a mention's URI does not end with (the prose around it).
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '"', '\''];

/// Attaches the resources a prompt mentions.
pub struct ResourceMentions {
    servers: Vec<Arc<Server>>,
}

impl ResourceMentions {
    /// Over the session's `servers`.
    pub fn new(servers: Vec<Arc<Server>>) -> Self {
        ResourceMentions { servers }
    }

    /// The `(server, uri)` pairs `text` mentions, in order, each once.
    fn mentions<'a>(&'a self, text: &'a str) -> Vec<(&'a Arc<Server>, &'a str)> {
        let mut found: Vec<(&Arc<Server>, &str)> = Vec::new();
        for word in text.split_whitespace() {
            let Some(mention) = word.strip_prefix('@') else {
                continue;
            };
            let Some((name, uri)) = mention.split_once(':') else {
                continue;
            };
            let uri = uri.trim_end_matches(TRAILING);
            let Some(server) = self.servers.iter().find(|server| server.name() == name) else {
                continue;
            };
            if !uri.is_empty() && !found.iter().any(|(s, u)| s.name() == name && *u == uri) {
                found.push((server, uri));
            }
        }
        found
    }
}

#[async_trait::async_trait]
impl LoopHook for ResourceMentions {
    fn name(&self) -> &str {
        "MCP resources"
    }

    async fn before_prompt(&self, _at: &LoopContext, prompt: &PromptPoint) -> PromptOutcome {
        let mentions = self.mentions(&prompt.text);
        if mentions.is_empty() {
            return PromptOutcome::default();
        }
        let read = futures::future::join_all(
            mentions
                .iter()
                .map(|(server, uri)| server.read_resource(uri)),
        )
        .await;
        let mut context = String::new();
        let mut failed = Vec::new();
        for ((server, uri), output) in mentions.iter().zip(read) {
            let text: Vec<&str> = output
                .content
                .iter()
                .filter_map(|part| match part {
                    ResultPart::Text { text } => Some(text.as_str()),
                    ResultPart::Image { .. } => None,
                })
                .collect();
            if output.is_error {
                failed.push(format!("@{}:{uri}", server.name()));
            }
            context.push_str(&format!(
                "<mcp_resource server=\"{}\" uri=\"{uri}\">\n{}\n</mcp_resource>\n",
                server.name(),
                text.join("\n")
            ));
        }
        PromptOutcome {
            context: Some(context),
            message: (!failed.is_empty()).then(|| format!("could not read {}", failed.join(", "))),
            ..PromptOutcome::default()
        }
    }
}
