//! End-to-end tests of `larik acp`: the built binary driven by real ACP clients (the
//! TypeScript SDK, the Python SDK and the `acpx` command line, installed by
//! `tests/acp/setup`) and by raw JSON-RPC lines, against the fake model server.
//!
//! The SDK drivers (`tests/acp/ts/driver.mjs`, `tests/acp/py/driver.py`) run a scenario
//! and print every message they receive as a JSON line; the assertions live here.

#[path = "support/browser.rs"]
mod browser;
#[path = "acp_cases/claude.rs"]
mod claude;
#[path = "acp_cases/clients.rs"]
mod clients;
#[path = "acp_cases/control.rs"]
mod control;
#[path = "acp_cases/extension.rs"]
mod extension;
#[path = "acp_cases/kit.rs"]
mod kit;
#[path = "acp_cases/load.rs"]
mod load;
#[path = "acp_cases/mcp.rs"]
mod mcp;
#[path = "support/notes_server.rs"]
mod notes_server;
#[path = "acp_cases/raw.rs"]
mod raw;
#[path = "support/read_then_edit.rs"]
mod read_then_edit;
#[path = "support/recording.rs"]
mod recording;
#[path = "support/sessions.rs"]
mod sessions;
#[path = "support/soak.rs"]
mod soak;
#[path = "acp_cases/update_stream.rs"]
mod update_stream;
#[path = "acp_cases/web.rs"]
mod web;
