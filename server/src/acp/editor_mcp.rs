//! The MCP servers an editor gives in `session/new`, `session/load` and `session/resume`,
//! turned into the assembly's neutral form.

use agent_client_protocol::v1::schema::McpServer;

use crate::assembly::EditorMcpServer;

/// The neutral form of one server; `None` for a transport Larik does not take (one newer
/// than this build knows).
pub fn editor_mcp_server(server: &McpServer) -> Option<EditorMcpServer> {
    match server {
        McpServer::Stdio(stdio) => Some(EditorMcpServer::Stdio {
            name: stdio.name.clone(),
            command: stdio.command.display().to_string(),
            args: stdio.args.clone(),
            env: stdio
                .env
                .iter()
                .map(|variable| (variable.name.clone(), variable.value.clone()))
                .collect(),
        }),
        McpServer::Http(http) => Some(EditorMcpServer::Http {
            name: http.name.clone(),
            url: http.url.clone(),
            headers: http
                .headers
                .iter()
                .map(|header| (header.name.clone(), header.value.clone()))
                .collect(),
        }),
        McpServer::Sse(sse) => Some(EditorMcpServer::Sse {
            name: sse.name.clone(),
            url: sse.url.clone(),
            headers: sse
                .headers
                .iter()
                .map(|header| (header.name.clone(), header.value.clone()))
                .collect(),
        }),
        _ => None,
    }
}
