//! End-to-end tests of the Neovim plugin (`editors/neovim`): real Neovims, headless, run the
//! plugin against the built `larik lsp` and the fake model server. Two Neovims: Debian's 0.7
//! (`/usr/bin/nvim`) and a current one installed by `tests/nvim/setup`.
//!
//! The Lua scenarios (`tests/nvim/e2e.lua`, and `tests/nvim/control.lua` for session
//! control) drive the plugin's commands and writes what
//! Neovim saw as JSON; the assertions live here, next to the disk and the model's requests.

#[path = "nvim_cases/control.rs"]
mod control;
#[path = "nvim_cases/kit.rs"]
mod kit;
#[path = "nvim_cases/session.rs"]
mod session;
