//! larik-lsp against real language servers: clangd and gopls from Debian, pyright and
//! typescript-language-server from npm (installed by `tests/lsp/setup`), rust-analyzer when
//! present; and how the client copes with servers that hang, write garbage or crash.

#[path = "servers/kit.rs"]
mod kit;

#[path = "servers/clangd.rs"]
mod clangd;
#[path = "servers/failures.rs"]
mod failures;
#[path = "servers/feedback.rs"]
mod feedback;
#[path = "servers/gopls.rs"]
mod gopls;
#[path = "servers/pyright.rs"]
mod pyright;
#[path = "servers/rust_analyzer.rs"]
mod rust_analyzer;
#[path = "servers/tools.rs"]
mod tools;
#[path = "servers/typescript.rs"]
mod typescript;
