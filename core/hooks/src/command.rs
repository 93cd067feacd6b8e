//! Running one command hook: `bash -c COMMAND` (through the sandbox crate's launcher, outside
//! the sandbox, since a hook is a program the user configured or approved), in the session's
//! working directory, in a process group of its own, with the payload on stdin and
//! `LARIK_PROJECT_DIR` and `CLAUDE_PROJECT_DIR` set. Its output is read up to a cap; at its
//! time-out the whole group is killed.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// The most bytes of stdout, and of stderr, kept from one hook.
pub const OUTPUT_CAP: usize = 256 * 1024;

/// Where hooks run.
#[derive(Debug, Clone)]
pub struct RunPlace {
    /// The project root, given as `LARIK_PROJECT_DIR` and `CLAUDE_PROJECT_DIR`.
    pub project_dir: PathBuf,
    /// The working directory commands start in.
    pub cwd: PathBuf,
}

/// How a command hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandEnd {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Killed,
    /// It ran past its time-out and was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// What a command hook did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    /// How it ended.
    pub end: CommandEnd,
    /// Its stdout (cut at [`OUTPUT_CAP`], invalid UTF-8 replaced).
    pub stdout: String,
    /// Its stderr (the same).
    pub stderr: String,
}

/// Runs `command` with `payload` on stdin, for at most `timeout`.
pub async fn run_command(
    command: &str,
    payload: &[u8],
    place: &RunPlace,
    timeout: Duration,
) -> CommandRun {
    let launcher = larik_sandbox::Sandbox::unconfined(place.project_dir.clone());
    let shell = launcher.unconfined_shell_command(command, &place.cwd);
    let (mut process, mut guard) = (shell.command, shell.guard);
    process
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LARIK_PROJECT_DIR", &place.project_dir)
        .env("CLAUDE_PROJECT_DIR", &place.project_dir);
    let mut child = match process.spawn() {
        Ok(child) => child,
        Err(error) => {
            return CommandRun {
                end: CommandEnd::NotStarted(error.to_string()),
                stdout: String::new(),
                stderr: String::new(),
            };
        }
    };
    drop(process);
    let pid = child.id();
    if let Some(pid) = pid {
        guard.started(pid).await;
    }
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let payload = payload.to_vec();
    let work = async {
        let feed = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input closes the pipe: not an error.
                let _ = stdin.write_all(&payload).await;
                let _ = stdin.shutdown().await;
            }
        };
        let (_, out, err, status) =
            tokio::join!(feed, read_capped(stdout), read_capped(stderr), child.wait());
        (out, err, status)
    };
    let (end, stdout, stderr) = match tokio::time::timeout(timeout, work).await {
        Ok((stdout, stderr, status)) => {
            let end = match status.map(|status| status.code()) {
                Ok(Some(code)) => CommandEnd::Exited(code),
                Ok(None) => CommandEnd::Killed,
                Err(error) => CommandEnd::NotStarted(error.to_string()),
            };
            (end, stdout, stderr)
        }
        Err(_) => {
            if let Some(pid) = pid {
                larik_sandbox::kill_process_group(pid);
            }
            let _ = child.kill().await;
            (CommandEnd::TimedOut, String::new(), String::new())
        }
    };
    // The guard forgets the group once it is gone.
    drop(guard);
    CommandRun {
        end,
        stdout,
        stderr,
    }
}

/// Reads a stream to its end, keeping the first [`OUTPUT_CAP`] bytes (and saying so when
/// more came).
async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut stream) = stream else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buffer = [0_u8; 8192];
    let mut cut = false;
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let room = OUTPUT_CAP.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
                cut |= read > room;
            }
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if cut {
        text.push_str("\n[output cut]");
    }
    text
}
