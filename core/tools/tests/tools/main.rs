//! The built-in tools run against real files in temp dirs and real processes.

mod bash;
mod edit;
mod glob;
mod grep;
mod multi_edit;
mod read;
mod registry;
mod write;

use std::path::Path;
use std::sync::Arc;

use larik_protocol::transcript::result_text;
use larik_sandbox::Sandbox;
use larik_tools::{Tool, ToolContext, ToolLimits, ToolOutput};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A context rooted at `dir` with default limits.
pub fn context(dir: &Path) -> ToolContext {
    context_with(dir, ToolLimits::default())
}

/// A context rooted at `dir` with `limits`.
pub fn context_with(dir: &Path, limits: ToolLimits) -> ToolContext {
    ToolContext {
        cwd: dir.to_path_buf(),
        cancel: CancellationToken::new(),
        sandbox: Arc::new(Sandbox::unconfined(dir)),
        limits,
    }
}

/// Runs `tool` with `input` and returns the output and its text.
pub async fn call(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> (ToolOutput, String) {
    let output = tool.run(input, ctx).await;
    let text = result_text(&output.content);
    (output, text)
}

/// Runs a call that must succeed and returns its text.
pub async fn ok(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> String {
    let (output, text) = call(tool, ctx, input).await;
    assert!(!output.is_error, "expected success, got error: {text}");
    text
}

/// Runs a call that must fail and returns its message.
pub async fn fails(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> String {
    let (output, text) = call(tool, ctx, input).await;
    assert!(output.is_error, "expected an error, got: {text}");
    assert!(output.changes.is_empty(), "a failed call reports no change");
    text
}

/// Writes `text` to `dir/relative`, creating directories.
pub fn put(dir: &Path, relative: &str, text: &str) {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, text).expect("write fixture");
}

/// The text of `dir/relative`.
pub fn contents(dir: &Path, relative: &str) -> String {
    std::fs::read_to_string(dir.join(relative)).expect("read back")
}

/// The permission bits of `path`.
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}

/// Sets the permission bits of `path`.
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Names of the entries in `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}
