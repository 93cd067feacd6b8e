//! The one place Larik starts processes.
//!
//! Every command a tool runs is built here, in its own process group so a timeout or an
//! interrupt can kill everything it started. Today commands run directly on the host; the
//! OS sandbox (bubblewrap or Landlock) plugs in behind [`Sandbox::command`] without callers
//! changing. [`Sandbox::is_enforcing`] tells the permission step whether a command may run
//! without asking.

use std::path::{Path, PathBuf};

use tokio::process::Command;

/// Errors from starting or stopping processes.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The process could not be started.
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// How commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxKind {
    /// Commands run directly, unconfined; every command goes through the permission step.
    Unconfined,
}

/// The process launcher for one project.
#[derive(Debug, Clone)]
pub struct Sandbox {
    kind: SandboxKind,
    project_root: PathBuf,
}

impl Sandbox {
    /// A launcher that runs commands unconfined.
    pub fn unconfined(project_root: impl Into<PathBuf>) -> Self {
        Sandbox {
            kind: SandboxKind::Unconfined,
            project_root: project_root.into(),
        }
    }

    /// How commands are confined.
    pub fn kind(&self) -> SandboxKind {
        self.kind
    }

    /// Whether commands are confined, so they may run without asking.
    pub fn is_enforcing(&self) -> bool {
        match self.kind {
            SandboxKind::Unconfined => false,
        }
    }

    /// The project root the sandbox is built around.
    pub fn project_root(&self) -> &Path {
        &self.project_root
    }

    /// A shell command (`bash -c SCRIPT`, or `sh` where bash is missing) in `cwd`, in a
    /// new process group, with stdin closed and the process killed when its handle drops.
    pub fn shell_command(&self, script: &str, cwd: &Path) -> Command {
        let shell = if Path::new("/bin/bash").exists() {
            "/bin/bash"
        } else {
            "/bin/sh"
        };
        let mut command = Command::new(shell);
        command
            .arg("-c")
            .arg(script)
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .process_group(0)
            .kill_on_drop(true);
        command
    }
}

/// Sends SIGKILL to every process in the group led by `pid`.
///
/// Commands started through [`Sandbox::shell_command`] lead their own group, so this stops
/// the command and everything it started that stayed in the group.
pub fn kill_process_group(pid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg only sends a signal; an invalid or finished group yields ESRCH, which
    // is harmless and ignored.
    #[allow(unsafe_code)]
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn killing_the_group_stops_children_of_the_shell() {
        let dir = std::env::temp_dir();
        let sandbox = Sandbox::unconfined(&dir);
        let mut child = sandbox
            .shell_command("sleep 30 & sleep 30; echo never", &dir)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn bash");
        let pid = child.id().expect("running child has a pid");
        kill_process_group(pid);
        let status = child.wait().await.expect("wait");
        assert!(!status.success(), "the shell was killed, not finished");
        // The background sleep was in the same group; it dies as soon as the signal lands.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while live_members_of_group(pid) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "a process of the group survived"
            );
            tokio::task::yield_now().await;
        }
    }

    /// Processes in group `pgid` that are not zombies, read from /proc.
    fn live_members_of_group(pgid: u32) -> usize {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return 0;
        };
        entries
            .flatten()
            .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
            .filter(|stat| {
                // Fields after the parenthesised command: state ppid pgrp ...
                let Some((_, rest)) = stat.rsplit_once(") ") else {
                    return false;
                };
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
            })
            .count()
    }
}
