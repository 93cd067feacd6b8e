//! A command ready to start, and the guard that keeps the protected paths safe until it has
//! ended: it holds the placeholders bubblewrap binds over missing protected paths, or the
//! snapshot the Landlock sandbox puts back, and when the command is done it kills what is
//! left of a sandboxed command's process group first, so nothing can write after the check.

use std::path::Path;
use std::time::{Duration, Instant};

use tokio::process::Command;

use crate::groups::{self, forget_group_if_gone, kill_process_group, note_started_group};
use crate::guard::{ProtectedChange, Snapshot};
use crate::placeholder::Placeholder;
use crate::protected::protected_set;

/// How long the processes of a killed group may take to die before the protected paths are
/// checked anyway.
const GROUP_END_WAIT: Duration = Duration::from_secs(2);

/// A shell command and its guard. Spawn `command`, tell the guard the process id
/// ([`CommandGuard::started`]), and once the command has ended call
/// [`CommandGuard::finish`], which says what the command changed among the protected paths
/// and was put back. Dropping the guard does the same without the report.
#[derive(Debug)]
pub struct ShellCommand {
    /// The process to spawn.
    pub command: Command,
    /// What keeps the protected paths safe while it runs.
    pub guard: CommandGuard,
}

/// See [`ShellCommand`].
#[derive(Debug)]
pub struct CommandGuard {
    /// Whether the command runs sandboxed: then nothing it started may outlive it.
    confined: bool,
    /// Whether processes left in its group can still write (no PID namespace ends them).
    wait_for_group: bool,
    placeholders: Vec<Placeholder>,
    snapshot: Option<Snapshot>,
    /// The first bubblewrap command of a sandbox whose bubblewrap is not yet known to work.
    trial: Option<Trial>,
    pid: Option<u32>,
    done: bool,
}

/// What tells whether bubblewrap built a command's sandbox: the read end of a pipe the
/// command writes one byte to from inside it, before the script runs.
#[derive(Debug)]
struct Trial {
    sandbox: crate::Sandbox,
    bwrap: std::path::PathBuf,
    marker: std::io::PipeReader,
}

impl CommandGuard {
    /// The guard of an unconfined command: it only remembers the process group.
    pub(crate) fn unconfined() -> Self {
        CommandGuard {
            confined: false,
            wait_for_group: false,
            placeholders: Vec::new(),
            snapshot: None,
            trial: None,
            pid: None,
            done: false,
        }
    }

    /// The guard of a bubblewrap command: the placeholders it binds, and a snapshot of the
    /// protected paths no mount can pin (links, and missing paths no placeholder could be
    /// put at).
    pub(crate) fn mounted(placeholders: Vec<Placeholder>, snapshot: Option<Snapshot>) -> Self {
        CommandGuard {
            confined: true,
            wait_for_group: false,
            placeholders,
            snapshot: snapshot.filter(|snapshot| !snapshot.is_empty()),
            trial: None,
            pid: None,
            done: false,
        }
    }

    /// The guard of a Landlock command: a snapshot of every protected path of the project
    /// at `root`, put back once the command's whole process group has ended.
    pub(crate) fn snapshot(root: &Path) -> Self {
        let mut set = protected_set(root);
        // Placeholders a bubblewrap command left (one killed with Larik) go first, unless
        // another command still uses them.
        let mut left = false;
        for protected in &set.paths {
            if protected.standing == crate::protected::Standing::Absent
                && protected.path.symlink_metadata().is_ok()
            {
                drop(crate::placeholder::hold(&protected.path, protected.kind));
                left = true;
            }
        }
        if left {
            set = protected_set(root);
        }
        CommandGuard {
            confined: true,
            wait_for_group: true,
            placeholders: Vec::new(),
            snapshot: Some(Snapshot::of_all(root, &set)),
            trial: None,
            pid: None,
            done: false,
        }
    }

    /// Makes this the trial of `sandbox`'s bubblewrap (`bwrap`): `marker` gets a byte once
    /// the command runs inside the sandbox.
    pub(crate) fn on_trial(
        &mut self,
        sandbox: crate::Sandbox,
        bwrap: std::path::PathBuf,
        marker: std::io::PipeReader,
    ) {
        self.trial = Some(Trial {
            sandbox,
            bwrap,
            marker,
        });
    }

    /// Records the started command's process id (its process group), so what it leaves
    /// behind can be stopped, or killed when Larik exits. Call it once the command is
    /// spawned and the `Command` dropped (it holds the write end of the trial pipe).
    ///
    /// Returns false when the command was its sandbox's first under a bubblewrap not yet
    /// known to work, and bubblewrap could not build the sandbox: nothing of the script ran,
    /// the sandbox has switched to the next best kind, and the caller should wait for the
    /// process, drop this guard and build the command again with
    /// [`crate::Sandbox::shell_command`] (or, when the sandbox is no longer enforcing, not
    /// run it sandboxed at all).
    pub async fn started(&mut self, pid: u32) -> bool {
        note_started_group(pid);
        self.pid = Some(pid);
        let Some(trial) = self.trial.take() else {
            return true;
        };
        let works = match tokio::net::unix::pipe::Receiver::from_owned_fd(
            std::os::fd::OwnedFd::from(trial.marker),
        ) {
            Ok(mut marker) => {
                let mut byte = [0_u8; 1];
                matches!(
                    tokio::io::AsyncReadExt::read(&mut marker, &mut byte).await,
                    Ok(1)
                )
            }
            Err(_) => false,
        };
        crate::bubblewrap::record(&trial.bwrap, works);
        trial.sandbox.settle(works);
        works
    }

    /// Ends the command's guard: for a sandboxed command, kills what is left of its process
    /// group and waits (briefly) until it is gone; then releases the placeholders and puts
    /// back every protected path the command changed. Returns those changes (empty when the
    /// command changed none, which inside bubblewrap it cannot).
    pub async fn finish(mut self) -> Vec<ProtectedChange> {
        if self.confined
            && let Some(pid) = self.pid
        {
            kill_process_group(pid);
            if self.wait_for_group {
                let deadline = Instant::now() + GROUP_END_WAIT;
                while groups::has_live_members(pid) && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        }
        self.end()
    }

    fn end(&mut self) -> Vec<ProtectedChange> {
        if std::mem::replace(&mut self.done, true) {
            return Vec::new();
        }
        if let Some(pid) = self.pid {
            if self.confined {
                kill_process_group(pid);
            }
            forget_group_if_gone(pid);
        }
        self.placeholders.clear();
        self.snapshot
            .take()
            .map(|snapshot| snapshot.restore())
            .unwrap_or_default()
    }
}

impl Drop for CommandGuard {
    fn drop(&mut self) {
        self.end();
    }
}
