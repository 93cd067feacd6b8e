//! Starting a stdio server: the configured program with its arguments and extra
//! environment, in the project directory, in a process group of its own (so stopping it
//! stops what it started), its stderr appended to the server's log. MCP servers run with
//! the user's own rights, as the user configured them; a shared file's server runs only
//! once the user approved its exact definition.

use std::process::Stdio;
use std::sync::Arc;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::audit::{Audit, Audited};
use crate::log::ServerLog;
use crate::spec::TransportSpec;

/// A started stdio server: the process, and the pipes MCP travels on.
pub(crate) struct StdioChild {
    pub(crate) child: ChildGroup,
    /// Its stdout, with the lines that are no MCP messages counted in `audit`.
    pub(crate) stdout: Audited<ChildStdout>,
    pub(crate) audit: Arc<Audit>,
    pub(crate) stdin: ChildStdin,
}

/// Starts the server `transport` describes (a [`TransportSpec::Stdio`]).
pub(crate) fn start(transport: &TransportSpec, log: &ServerLog) -> std::io::Result<StdioChild> {
    let TransportSpec::Stdio {
        command,
        args,
        env,
        cwd,
    } = transport
    else {
        return Err(std::io::Error::other("not a stdio server"));
    };
    let stderr = log
        .for_stderr()
        .map(Stdio::from)
        .unwrap_or_else(Stdio::null);
    let mut child = Command::new(command)
        .args(args)
        .envs(env)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let group = child.id();
    if let Some(pid) = group {
        // Killed with the other groups when Larik exits, whatever else happens.
        larik_sandbox::note_started_group(pid);
    }
    let (stdout, audit) = Audited::new(child.stdout.take().expect("stdout was piped"));
    let stdin = child.stdin.take().expect("stdin was piped");
    Ok(StdioChild {
        child: ChildGroup {
            child: Some(child),
            group,
        },
        stdout,
        audit,
        stdin,
    })
}

/// A server process and the process group it leads, stopped when dropped (a handshake
/// that fails or times out drops it), so nothing it started outlives it. The group's id is
/// kept apart from the process: once the server has been waited for, its process no longer
/// knows its id, but what it started may still run in the group.
pub(crate) struct ChildGroup {
    child: Option<Child>,
    group: Option<u32>,
}

impl ChildGroup {
    /// How the server ended, if it ends within `grace`: a server whose pipe closed is
    /// usually exiting, and its exit status says more than the pipe. `None` while it runs.
    pub(crate) async fn exit_status(
        &mut self,
        grace: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        tokio::time::timeout(grace, child.wait()).await.ok()?.ok()
    }

    /// Stops the group and waits for the server to end.
    pub(crate) async fn stop_and_wait(&mut self) {
        self.stop();
        if let Some(mut child) = self.child.take() {
            let _ = child.wait().await;
        }
    }

    /// Stops the process group (the server and what it started).
    fn stop(&mut self) {
        if let Some(group) = self.group.take() {
            larik_sandbox::kill_process_group(group);
        }
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        self.stop();
    }
}
