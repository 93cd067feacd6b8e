//! Larik's language-server client: the only crate in core that knows LSP.
//!
//! It starts child language servers (rust-analyzer, pyright, typescript-language-server,
//! gopls, clangd, or configured ones) lazily, one per language and project root, and speaks
//! the protocol with them: `initialize` with honest capabilities, requests queued behind it,
//! per-request timeouts, the server's own requests answered, versioned document sync, pushed
//! and pulled diagnostics merged, navigation requests. A server that crashes fails its
//! pending requests at once and is replaced on the next file. The `lsp` and
//! `apply_code_action` tools put all this in the model's hands.
//!
//! Architecture invariant: `ls_types` values do not leave this crate through the
//! diagnostics and navigation APIs; callers get small Larik structs with 1-based line and
//! character columns. Every position conversion lives in [`encoding`]. The crate never reads
//! environment variables: the caller passes the PATH and the log directory.

mod capabilities;
mod client;
mod connection;
mod diagnostics;
pub mod encoding;
mod error;
mod feedback;
mod framing;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod log;
mod manager;
mod requests;
mod server_edits;
mod specs;
mod state;
mod tools;
mod tsserver;
mod workspace_edit;

pub use client::{LanguageServer, ServerOptions, Timeouts};
pub use diagnostics::{Diagnostic, DiagnosticsReport, DiagnosticsWait, Severity};
pub use error::LspError;
pub use feedback::{MAX_LISTED, ServerFeedback};
pub use manager::{LanguageServers, ManagerConfig, Notice};
pub use requests::{CodeActionItem, Location, Symbol};
pub use specs::{ServerSpec, find_command, find_root, language_id};
pub use state::ExitHook;
pub use tools::{ApplyCodeActionTool, LspTool, register_lsp_tools};
pub use workspace_edit::{EditedFile, WorkspaceEditError, plan_workspace_edit};
