//! larik-mcp against real MCP servers: `@modelcontextprotocol/server-everything` over stdio
//! (from npm), a server on the Python MCP SDK over streamable HTTP (both installed by
//! `tests/mcp/setup`) and over SSE, that server protected by the testkit's OAuth
//! authorization server, and servers that misbehave on purpose.

#[path = "servers/kit.rs"]
mod kit;

#[path = "servers/everything.rs"]
mod everything;
#[path = "servers/faults.rs"]
mod faults;
#[path = "servers/http.rs"]
mod http;
#[path = "servers/oauth.rs"]
mod oauth;
#[path = "servers/search.rs"]
mod search;
