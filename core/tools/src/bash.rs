//! The `bash` tool: runs a shell command through the sandbox.
//!
//! Standard output and standard error share one pipe, so the model sees them interleaved
//! in the order the command wrote them, as in a terminal. The command runs in its own
//! process group: a timeout or an interrupt kills the group, which takes down everything
//! the command started. Commands run inside the OS sandbox unless the call asks for
//! `"sandbox": false` (which the permission step then treats as any unconfined command);
//! in the sandbox, what the command started ends with it. Outside it, a background process
//! that keeps the pipe open after the shell exits cannot hang the call; reading stops after
//! a short grace period, and the process keeps running. Each call starts a fresh shell in
//! the working directory.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use larik_protocol::ToolKind;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::input::{self, str_field};
use crate::output::OutputBuffer;
use crate::{CallTarget, Tool, ToolContext, ToolOutput};

/// Runs a shell command.
#[derive(Debug, Clone, Copy, Default)]
pub struct BashTool;

/// The input; `description` only feeds the title, read from the raw input.
#[derive(Debug, Deserialize)]
struct BashInput {
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default = "sandbox_by_default")]
    sandbox: bool,
    #[serde(default)]
    checkpoint_paths: Vec<String>,
}

fn sandbox_by_default() -> bool {
    true
}

/// How long output is still read after the shell exits while something else holds the
/// pipe open.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How long reaping a killed shell may take before the call returns anyway.
const REAP_WAIT: Duration = Duration::from_millis(100);

/// How a run ended.
enum Ending {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

#[async_trait::async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Runs a command with bash and returns its output (standard output and standard error \
         interleaved) and exit code. Every call starts in the project directory: a `cd` does \
         not carry over to the next call, so chain commands (`cd sub && make`) or use paths. \
         Outside the sandbox, background processes (`cmd &`) keep running after the command \
         returns, until Larik exits; redirect their output and note their PID to stop them \
         earlier (`cmd > log 2>&1 & echo $!`). Output past the limit keeps its start and end. \
         `timeout` is in milliseconds (default 2 minutes, at most 10). Give a short \
         `description` of what the command does. Prefer read, grep, glob and edit over cat, \
         grep, find and sed. Commands run in a sandbox where one is available: they may \
         write only inside the project and the temp directories (git hooks, git config and \
         the agents' settings stay read-only), have no network, and whatever they start \
         ends with them; such commands run without asking. Set `sandbox` to false only when \
         a command cannot work inside (it needs the network, or writes elsewhere); the user \
         is then asked. List in `checkpoint_paths` the project files a command will change \
         (a formatter, a code generator) so that `/undo` can restore them."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run"},
                "timeout": {"type": "integer", "minimum": 1, "description": "Timeout in milliseconds"},
                "description": {"type": "string", "description": "What the command does, in a few words"},
                "sandbox": {"type": "boolean", "default": true, "description": "Run inside the sandbox (the default); false runs it outside, after the user approves"},
                "checkpoint_paths": {"type": "array", "items": {"type": "string"}, "description": "Project files the command will change, saved first so /undo can restore them"}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn read_only(&self) -> bool {
        false
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        let command = str_field(input, "command").unwrap_or_default();
        match str_field(input, "description").map(str::trim) {
            Some(description) if !description.is_empty() => format!("{description} (`{command}`)"),
            _ => command.to_string(),
        }
    }

    fn target(&self, input: &Value, _ctx: &ToolContext) -> CallTarget {
        match str_field(input, "command") {
            Some(command) => CallTarget::Command(command.to_string()),
            None => CallTarget::None,
        }
    }

    fn sandboxed(&self, input: &Value, ctx: &ToolContext) -> bool {
        ctx.sandbox.is_enforcing() && input.get("sandbox") != Some(&Value::Bool(false))
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: BashInput = match input::parse(self.name(), input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        if input.command.trim().is_empty() {
            return ToolOutput::error("command is empty; give a command to run.");
        }
        if !ctx.cwd.is_dir() {
            return ToolOutput::error(format!(
                "The working directory {} does not exist.",
                ctx.cwd.display()
            ));
        }
        let timeout_ms = input
            .timeout
            .filter(|&ms| ms > 0)
            .unwrap_or(ctx.limits.bash_timeout_ms)
            .min(ctx.limits.bash_max_timeout_ms);
        for path in &input.checkpoint_paths {
            if let Err(not_saved) = ctx.before_change(&crate::paths::resolve(&ctx.cwd, path)) {
                return ToolOutput::error(
                    not_saved
                        .to_string()
                        .replace("Nothing was written", "The command did not run"),
                );
            }
        }
        let sandboxed = ctx.sandbox.is_enforcing() && input.sandbox;
        run_command(&input.command, timeout_ms, sandboxed, ctx).await
    }
}

async fn run_command(
    command_line: &str,
    timeout_ms: u64,
    sandboxed: bool,
    ctx: &ToolContext,
) -> ToolOutput {
    // A sandbox's first command finds out whether bubblewrap works here; when it does not,
    // nothing ran and the command starts again in the sandbox chosen instead.
    for _ in 0..2 {
        if sandboxed && !ctx.sandbox.is_enforcing() {
            return ToolOutput::error(
                "The command did not run: no command sandbox can be set up here, so commands \
                 now need the user's approval. Run it again to ask.",
            );
        }
        let shell = if sandboxed {
            match ctx.sandbox.shell_command(command_line, &ctx.cwd) {
                Ok(shell) => shell,
                Err(error) => {
                    return ToolOutput::error(format!("Could not start the command: {error}"));
                }
            }
        } else {
            ctx.sandbox.unconfined_shell_command(command_line, &ctx.cwd)
        };
        let (command, mut guard) = (shell.command, shell.guard);
        let Some(mut output) = run_started(command, timeout_ms, ctx, &mut guard).await else {
            continue;
        };
        // Nothing a sandboxed command started outlives it; what it changed among the
        // protected paths is put back, and the model is told.
        let put_back = guard.finish().await;
        if sandboxed {
            tell_what_was_protected(&mut output, &put_back);
        }
        return output;
    }
    ToolOutput::error("The command did not run: its sandbox could not be set up.")
}

/// Adds to a sandboxed command's result what the sandbox kept it from changing: the
/// protected paths it changed and Larik put back, or, where the command ran into a
/// read-only path, which paths stay read-only and how to get past that.
fn tell_what_was_protected(output: &mut ToolOutput, put_back: &[larik_sandbox::ProtectedChange]) {
    let protected = larik_sandbox::PROTECTED_PATHS.join(", ");
    let how = "a command that must change them needs `\"sandbox\": false`, which asks the user";
    if !put_back.is_empty() {
        let changes: Vec<String> = put_back.iter().map(ToString::to_string).collect();
        output.append_line(&format!(
            "The sandbox does not let commands change protected paths ({protected}); this \
             command changed some and Larik put them back: {}. Nothing else was undone; {how}.",
            changes.join(", ")
        ));
        output.is_error = true;
    } else if output.text_contains("Read-only file system") {
        output.append_line(&format!(
            "(In the sandbox, everything outside the project and the temp directories is \
             read-only, and so are these paths inside it, whether they exist or not: \
             {protected}; {how}.)"
        ));
    }
}

/// Runs the prepared command; the guard learns its process id once it runs. `None` when
/// the sandbox could not be built, so nothing ran.
async fn run_started(
    mut command: tokio::process::Command,
    timeout_ms: u64,
    ctx: &ToolContext,
    guard: &mut larik_sandbox::CommandGuard,
) -> Option<ToolOutput> {
    if ctx.cancel.is_cancelled() {
        return Some(ToolOutput::error("Command cancelled before it started."));
    }
    let (reader, writer) = match std::io::pipe() {
        Ok(pipe) => pipe,
        Err(error) => {
            return Some(ToolOutput::error(format!(
                "Could not create a pipe: {error}"
            )));
        }
    };
    let writer_for_stderr = match writer.try_clone() {
        Ok(clone) => clone,
        Err(error) => {
            return Some(ToolOutput::error(format!(
                "Could not create a pipe: {error}"
            )));
        }
    };
    let mut output_pipe = match pipe::Receiver::from_owned_fd(OwnedFd::from(reader)) {
        Ok(receiver) => receiver,
        Err(error) => {
            return Some(ToolOutput::error(format!(
                "Could not read the command's output: {error}"
            )));
        }
    };
    command.stdout(writer).stderr(writer_for_stderr);
    let spawned = command.spawn();
    // The command object holds our copies of the pipe's write end; EOF only arrives once
    // they are closed.
    drop(command);
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            return Some(ToolOutput::error(format!(
                "Could not start the command: {error}"
            )));
        }
    };
    let pid = child.id();
    if let Some(pid) = pid
        && !guard.started(pid).await
    {
        // The sandbox could not be built: nothing ran.
        let _ = child.wait().await;
        return None;
    }
    let kill_group = || {
        if let Some(pid) = pid {
            larik_sandbox::kill_process_group(pid);
        }
    };

    let mut buffer = OutputBuffer::new(ctx.limits.output_chars);
    let mut chunk = vec![0_u8; 16 * 1024];
    let mut pipe_open = true;
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let ending = loop {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => break Ending::Cancelled,
            () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            status = child.wait() => break Ending::Exited(status),
            read = output_pipe.read(&mut chunk), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => buffer.push(&chunk[..n]),
            },
        }
    };

    Some(match ending {
        Ending::Cancelled => {
            kill_group();
            // SIGKILL lands at once; reaping is quick, and the caller needs us back now.
            let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            let mut text = buffer.finish();
            push_line(
                &mut text,
                "Command cancelled; it and the processes it started were killed.",
            );
            ToolOutput::error(text)
        }
        Ending::TimedOut => {
            kill_group();
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            if pipe_open {
                drain(&mut output_pipe, &mut buffer, &mut chunk, &ctx.cancel).await;
            }
            let mut text = buffer.finish();
            push_line(
                &mut text,
                &format!(
                    "Command timed out after {timeout_ms} ms; it and the processes it started were killed."
                ),
            );
            ToolOutput::error(text)
        }
        Ending::Exited(Err(error)) => {
            kill_group();
            ToolOutput::error(format!("Could not wait for the command: {error}"))
        }
        Ending::Exited(Ok(status)) => {
            let reached_end =
                !pipe_open || drain(&mut output_pipe, &mut buffer, &mut chunk, &ctx.cancel).await;
            let mut text = buffer.finish();
            if !reached_end {
                push_line(
                    &mut text,
                    "(The shell exited, but a background process it started still holds its output open; \
                     stopped reading. Redirect background output to a file, e.g. `cmd > log 2>&1 &`.)",
                );
            }
            exit_result(text, status)
        }
    })
}

/// Reads what is left in the pipe until its end, the grace period, or cancellation;
/// returns whether the end was reached.
async fn drain(
    output_pipe: &mut pipe::Receiver,
    buffer: &mut OutputBuffer,
    chunk: &mut [u8],
    cancel: &CancellationToken,
) -> bool {
    let until = Instant::now() + EXIT_GRACE;
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => return false,
            () = tokio::time::sleep_until(until) => return false,
            read = output_pipe.read(chunk) => match read {
                Ok(0) | Err(_) => return true,
                Ok(n) => buffer.push(&chunk[..n]),
            },
        }
    }
}

fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
}

fn exit_result(mut text: String, status: ExitStatus) -> ToolOutput {
    if status.success() {
        if text.is_empty() {
            text.push_str("(no output)");
        }
        return ToolOutput::text(text);
    }
    match (status.code(), status.signal()) {
        (Some(code), _) => push_line(&mut text, &format!("Exit code {code}")),
        (None, Some(signal)) => push_line(&mut text, &format!("Killed by signal {signal}")),
        (None, None) => push_line(&mut text, "The command failed"),
    }
    ToolOutput::error(text)
}
