//! Commands inside bubblewrap: the whole file system read-only, the writable directories
//! bound read-write over it, the protected paths bound read-only again, a fresh `/dev`,
//! `/proc` and PID namespace (so nothing started by the command outlives it), and no network
//! unless the policy allows it (then `/run`, where the host's service sockets live, stays
//! visible too; without network it is hidden behind an empty tmpfs).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::process::Command;

use crate::policy::{Network, Policy};

/// The `bwrap` command that runs `shell -c script` in `cwd` under `policy`.
pub(crate) fn command(
    bwrap: &Path,
    policy: &Policy,
    shell: &str,
    script: &str,
    cwd: &Path,
) -> Command {
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
    for path in policy.protected_now() {
        command.arg("--ro-bind").arg(&path).arg(&path);
    }
    command
        .arg("--chdir")
        .arg(cwd)
        .arg("--")
        .arg(shell)
        .arg("-c")
        .arg(script);
    command
}

/// Whether `bwrap` can build a sandbox here (user namespaces may be disabled): runs
/// `true` inside the same kind of sandbox a command gets, once per process and program.
pub(crate) fn works(bwrap: &Path) -> bool {
    static CHECKED: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());
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
