//! The built-in tools run against real files in temp dirs and real processes.

mod bash;
mod edit;
mod feedback;
mod files;
mod glob;
mod grep;
mod multi_edit;
mod parallel;
mod read;
mod registry;
mod todo;
mod write;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use larik_protocol::transcript::result_text;
use larik_sandbox::Sandbox;
use larik_tools::{
    DiskFiles, PathFilter, ReadTool, ReadTracker, Tool, ToolContext, ToolLimits, ToolOutput,
};
use serde_json::{Value, json};
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
        reads: Arc::new(ReadTracker::default()),
        hidden: None,
        files: Arc::new(DiskFiles),
        feedback: None,
        checkpoint: None,
        call_id: String::new(),
        agent: None,
    }
}

/// A permission filter hiding `dir` and everything beneath it, as a `Read(secrets/**)`
/// deny rule would; it records every path it is asked about.
#[derive(Debug)]
pub struct HideUnder {
    dir: PathBuf,
    asked: Mutex<Vec<PathBuf>>,
}

impl HideUnder {
    /// A filter hiding `dir` (absolute).
    pub fn new(dir: PathBuf) -> Arc<Self> {
        Arc::new(HideUnder {
            dir,
            asked: Mutex::new(Vec::new()),
        })
    }

    /// Every path asked about so far, in order.
    pub fn asked(&self) -> Vec<PathBuf> {
        self.asked.lock().expect("filter lock").clone()
    }
}

impl PathFilter for HideUnder {
    fn hides(&self, path: &Path) -> bool {
        self.asked
            .lock()
            .expect("filter lock")
            .push(path.to_path_buf());
        path.starts_with(&self.dir)
    }
}

/// A context rooted at `dir` whose searches skip what `filter` hides.
pub fn context_hiding(dir: &Path, filter: Arc<HideUnder>) -> ToolContext {
    ToolContext {
        hidden: Some(filter),
        ..context(dir)
    }
}

/// The note a search ends with when it skipped hidden paths.
pub const HIDDEN_NOTE: &str = "(Some paths were left out by the user's permission rules.)\n";

/// Reads `path` with the read tool, as the model must before changing an existing file.
pub async fn read_first(ctx: &ToolContext, path: &str) {
    ok(&ReadTool, ctx, json!({"file_path": path})).await;
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

/// Sets the modification time of `dir/relative` to `seconds` after the epoch.
pub fn touch(dir: &Path, relative: &str, seconds: u64) {
    let file = File::options()
        .write(true)
        .open(dir.join(relative))
        .expect("open");
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
        .expect("set mtime");
}

/// Creates a named pipe at `path` with the real `mkfifo`.
pub fn make_fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Creates `count` small files named `f0.txt`, `f1.txt`, … in `dir`, each containing
/// "needle".
pub fn many_files(dir: &Path, count: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for n in 0..count {
        std::fs::write(dir.join(format!("f{n}.txt")), "needle\n").expect("write");
    }
}

/// Cancels `cancel` while a walk of `dir` is under way. `dir/sub/.ignore` becomes a named
/// pipe: the walker, reading ignore files as it enters `sub`, blocks opening it until this
/// thread opens the other end; the token is cancelled before that end closes and lets the
/// walk go on. The walk thus sees the token flip between two entries, every time.
pub fn cancel_during_walk(dir: &Path, cancel: CancellationToken) {
    std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
    let fifo = dir.join("sub/.ignore");
    make_fifo(&fifo);
    std::thread::spawn(move || {
        let writer = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .expect("open the fifo");
        cancel.cancel();
        drop(writer);
    });
}
