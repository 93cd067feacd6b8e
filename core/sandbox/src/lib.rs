//! The one place Larik starts processes.
//!
//! Every command a tool runs is built here, in its own process group so a timeout or an
//! interrupt can kill everything it started. Today commands run directly on the host; the
//! OS sandbox (bubblewrap or Landlock) plugs in behind [`Sandbox::command`] without callers
//! changing. [`Sandbox::is_enforcing`] tells the permission step whether a command may run
//! without asking.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// Process groups started by this Larik process. A command may leave background jobs in
/// its group after it returns; they are killed when Larik exits.
static STARTED_GROUPS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// Remembers the group led by `pid` (a command just started through this crate), so
/// [`kill_started_groups`] can stop what is left of it when Larik exits.
pub fn note_started_group(pid: u32) {
    STARTED_GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(pid);
}

/// Forgets the group led by `pid` once no process of it is left, so its id (which the
/// system may give to another process later) is never signalled at exit.
pub fn forget_group_if_gone(pid: u32) {
    if !group_exists(pid) {
        STARTED_GROUPS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&pid);
    }
}

/// Kills what is left of every group noted by [`note_started_group`], so no background
/// job outlives the Larik process that started it. Called on the way out.
///
/// A group id is a process id and can be reused once the whole group has exited, so a
/// group is only signalled while a live member shares this process's session: commands
/// started here stay in Larik's session, unrelated processes almost never do.
pub fn kill_started_groups() {
    let groups = std::mem::take(
        &mut *STARTED_GROUPS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    // Most commands leave nothing behind; a signal-0 probe skips the /proc scan for them.
    let groups: BTreeSet<u32> = groups
        .into_iter()
        .filter(|pid| group_exists(*pid))
        .collect();
    if groups.is_empty() {
        return;
    }
    let Some(own_session) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| parse_stat(&stat))
        .map(|fields| fields.session)
    else {
        return;
    };
    let live = live_groups(&groups, own_session);
    for group in &live {
        kill_process_group(*group);
    }
    // SIGKILL is delivered asynchronously; wait (briefly) until the processes are gone, so
    // whoever runs after Larik never meets a half-dead job.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !live_groups(&live, own_session).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Whether any process (zombies included) is still in the group led by `pid`.
fn group_exists(pid: u32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 sends nothing; it only checks that the group exists.
    #[allow(unsafe_code)]
    let result = unsafe { libc::killpg(pgid, 0) };
    result == 0
}

/// Which of `groups` still have a live (non-zombie) member in `session`.
fn live_groups(groups: &BTreeSet<u32>, session: u32) -> BTreeSet<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter_map(|stat| parse_stat(&stat))
        .filter(|fields| {
            fields.state != 'Z' && fields.session == session && groups.contains(&fields.group)
        })
        .map(|fields| fields.group)
        .collect()
}

/// The fields of `/proc/<pid>/stat` this crate needs.
struct StatFields {
    state: char,
    group: u32,
    session: u32,
}

fn parse_stat(stat: &str) -> Option<StatFields> {
    // The command name is in parentheses and may contain spaces; the fields follow it.
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _parent = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(StatFields {
        state,
        group,
        session,
    })
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
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
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
            .filter_map(|stat| parse_stat(&stat))
            .filter(|fields| fields.state != 'Z' && fields.group == pgid)
            .count()
    }

    #[tokio::test]
    async fn started_groups_are_killed_on_the_way_out() {
        let dir = std::env::temp_dir();
        let sandbox = Sandbox::unconfined(&dir);
        let mut child = sandbox
            .shell_command("sleep 30 >/dev/null 2>&1 &", &dir)
            .spawn()
            .expect("spawn bash");
        let pid = child.id().expect("running child has a pid");
        note_started_group(pid);
        let status = child.wait().await.expect("wait");
        assert!(status.success(), "the shell returned at once");
        assert_eq!(
            live_members_of_group(pid),
            1,
            "the background sleep lives on"
        );
        kill_started_groups();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while live_members_of_group(pid) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the background job survived"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}
