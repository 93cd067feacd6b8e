//! End-to-end tests of `larik lsp`: the built binary driven by pytest-lsp's language client
//! (on pygls, installed by `tests/lsp_front/setup`) posing as VS Code or Neovim with the
//! capability sets pytest-lsp recorded from them, against the fake model server.
//!
//! The driver (`tests/lsp_front/driver.py`) runs a scenario, answers the server's requests
//! as the scenario says and prints every message it receives as a JSON line; the
//! assertions live here.

#[path = "lsp_front_cases/claude.rs"]
mod claude;
#[path = "lsp_front_cases/control.rs"]
mod control;
#[path = "lsp_front_cases/editing.rs"]
mod editing;
#[path = "lsp_front_cases/event_stream.rs"]
mod event_stream;
#[path = "lsp_front_cases/extension.rs"]
mod extension;
#[path = "lsp_front_cases/kit.rs"]
mod kit;
#[path = "lsp_front_cases/mcp.rs"]
mod mcp;
#[path = "support/notes_server.rs"]
mod notes_server;
#[path = "support/read_then_edit.rs"]
mod read_then_edit;
#[path = "support/recording.rs"]
mod recording;
#[path = "lsp_front_cases/requests.rs"]
mod requests;
#[path = "support/sessions.rs"]
mod sessions;
#[path = "lsp_front_cases/subagents.rs"]
mod subagents;
