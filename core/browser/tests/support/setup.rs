//! What the browser tests and the benchmark both need: the Chromium to drive and a tool
//! context outside any project.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use larik_browser::find_browser;
use larik_tools::ToolContext;

/// The browser program, which the test setup installs.
pub fn chromium() -> PathBuf {
    find_browser(None, std::env::var("PATH").ok().as_deref())
        .expect("Chromium is installed (tests/run installs Debian's chromium)")
}

/// A context for tool calls, in `/`, without a sandbox (the browser tools start nothing
/// through it).
pub fn tool_context() -> ToolContext {
    let cwd = Path::new("/").to_path_buf();
    ToolContext {
        sandbox: Arc::new(larik_sandbox::Sandbox::unconfined(&cwd)),
        cwd,
        cancel: tokio_util::sync::CancellationToken::new(),
        limits: larik_tools::ToolLimits::default(),
        reads: Arc::default(),
        hidden: None,
        files: Arc::new(larik_tools::DiskFiles),
        feedback: None,
        checkpoint: None,
        call_id: String::new(),
        agent: None,
    }
}
