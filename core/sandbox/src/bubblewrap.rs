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

use crate::command::CommandGuard;
use crate::guard::Snapshot;
use crate::placeholder;
use crate::policy::{Network, Policy};
use crate::protected::{Standing, protected_set};

/// The `bwrap` command that runs `shell -c script` in `cwd` under `policy`, and its guard.
pub(crate) fn command(
    bwrap: &Path,
    policy: &Policy,
    shell: &str,
    script: &str,
    cwd: &Path,
) -> (Command, CommandGuard) {
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
    command
        .arg("--chdir")
        .arg(cwd)
        .arg("--")
        .arg(shell)
        .arg("-c")
        .arg(script);
    (command, CommandGuard::mounted(placeholders, snapshot))
}

/// Which `bwrap` programs were checked, and whether each can build a sandbox here.
static CHECKED: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());

/// Whether `bwrap` is known to work, without checking (`None`: not checked yet).
pub(crate) fn checked(bwrap: &Path) -> Option<bool> {
    CHECKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(path, _)| path == bwrap)
        .map(|(_, works)| *works)
}

/// Whether `bwrap` can build a sandbox here (user namespaces may be disabled): runs
/// `true` inside the same kind of sandbox a command gets, once per process and program; a
/// caller arriving while the check runs waits for it.
pub(crate) fn works(bwrap: &Path) -> bool {
    let mut checked = CHECKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, works)) = checked.iter().find(|(path, _)| path == bwrap) {
        return *works;
    }
    let works = probe(bwrap);
    checked.push((bwrap.to_path_buf(), works));
    works
}

fn probe(bwrap: &Path) -> bool {
    std::process::Command::new(bwrap)
        .args([
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--",
            "true",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
