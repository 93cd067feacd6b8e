//! Commands inside bubblewrap: the whole file system read-only, the writable directories
//! bound read-write over it, the protected paths bound read-only again (missing ones held by
//! placeholders, see `placeholder`; `.git` pinned by a mount of its own so it cannot be
//! renamed away), a fresh `/dev`, `/proc` and PID namespace (so nothing started by the
//! command outlives it), and no network unless the policy allows it (then `/run`, where the
//! host's service sockets live, stays visible too; without network it is hidden behind an
//! empty tmpfs). A protected path that is a symbolic link cannot be pinned by a mount (the
//! mount would land on its target), so it is put back after the command instead, as under
//! Landlock.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::process::Command;

use crate::SandboxError;
use crate::command::CommandGuard;
use crate::guard::Snapshot;
use crate::placeholder;
use crate::policy::{Network, Policy};
use crate::protected::{Standing, protected_set};

/// The `bwrap` command that runs `shell -c script` in `cwd` under `policy`, and its guard.
/// With `trial` (the sandbox whose bubblewrap is not yet known to work here), the command
/// first writes a byte to a pipe from inside the sandbox, so its guard can tell whether
/// bubblewrap built the sandbox before anything of the script ran.
pub(crate) fn command(
    bwrap: &Path,
    policy: &Policy,
    shell: &str,
    script: &str,
    cwd: &Path,
    trial: Option<crate::Sandbox>,
) -> Result<(Command, CommandGuard), SandboxError> {
    let mut command = Command::new(bwrap);
    command.args([
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
    ]);
    if policy.network == Network::Off {
        command.arg("--unshare-net");
    }
    command.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    if policy.network == Network::Off && Path::new("/run").is_dir() {
        command.args(["--tmpfs", "/run"]);
    }
    for dir in &policy.writable {
        command.arg("--bind").arg(dir).arg(dir);
    }
    let set = protected_set(&policy.project_root);
    if let Some(git) = &set.git_dir {
        command.arg("--bind").arg(git).arg(git);
    }
    let mut placeholders = Vec::new();
    let mut unpinned: Vec<PathBuf> = Vec::new();
    for protected in &set.paths {
        let pinned = match protected.standing {
            Standing::Present => true,
            Standing::Link => false,
            // Nothing there yet: a placeholder to bind, or (someone created it meanwhile)
            // the real entry; where none can be made, the path is put back afterwards.
            Standing::Absent => match placeholder::hold(&protected.path, protected.kind) {
                Ok(Some(held)) => {
                    placeholders.push(held);
                    true
                }
                Ok(None) => protected
                    .path
                    .symlink_metadata()
                    .is_ok_and(|meta| !meta.file_type().is_symlink()),
                Err(_) => false,
            },
        };
        if pinned {
            command
                .arg("--ro-bind")
                .arg(&protected.path)
                .arg(&protected.path);
        } else {
            unpinned.push(protected.relative.clone());
        }
    }
    let snapshot = (!unpinned.is_empty())
        .then(|| Snapshot::of(&policy.project_root, unpinned.iter().map(PathBuf::as_path)));
    command.arg("--chdir").arg(cwd).arg("--");
    let mut guard = CommandGuard::mounted(placeholders, snapshot);
    match trial {
        None => {
            command.arg(shell).arg("-c").arg(script);
        }
        Some(sandbox) => {
            let (marker, signal) = std::io::pipe().map_err(|source| SandboxError::Spawn {
                program: bwrap.display().to_string(),
                source,
            })?;
            pass_as_fd_3(&mut command, signal);
            command.args([
                "/bin/sh",
                "-c",
                "printf . >&3 && exec 3>&- && exec \"$0\" -c \"$1\"",
                shell,
                script,
            ]);
            guard.on_trial(sandbox, bwrap.to_path_buf(), marker);
        }
    }
    Ok((command, guard))
}

/// Makes the child's file descriptor 3 the write end of the trial pipe (and nothing else
/// of it: the write end itself closes on exec, and in this process when `command` drops).
fn pass_as_fd_3(command: &mut Command, signal: std::io::PipeWriter) {
    let signal = std::os::fd::OwnedFd::from(signal);
    let raw = std::os::fd::AsRawFd::as_raw_fd(&signal);
    let pass = move || -> std::io::Result<()> {
        // Owned by the closure, so it lives until the command is dropped.
        let _ = &signal;
        // SAFETY: dup2 and fcntl only change the child's descriptor table, between fork and
        // exec.
        #[allow(unsafe_code)]
        let result = unsafe {
            if raw == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(raw, 3)
            }
        };
        if result < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY: the closure runs in the child between fork and exec and only makes the system
    // calls above.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(pass);
    }
}

/// Which `bwrap` programs were tried in this process, and whether each built a sandbox.
static TRIED: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());

/// Whether `bwrap` is known to build a sandbox here (`None`: not tried yet).
pub(crate) fn known(bwrap: &Path) -> Option<bool> {
    TRIED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(path, _)| path == bwrap)
        .map(|(_, works)| *works)
}

/// Records what a trial command found out about `bwrap` (user namespaces may be disabled
/// here, or bubblewrap refused otherwise).
pub(crate) fn record(bwrap: &Path, works: bool) {
    let mut tried = TRIED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !tried.iter().any(|(path, _)| path == bwrap) {
        tried.push((bwrap.to_path_buf(), works));
    }
}
