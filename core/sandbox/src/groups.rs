//! Process groups: every command leads its own, so a timeout, an interrupt or Larik's exit
//! can kill everything it started.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Sends SIGKILL to every process in the group led by `pid`.
///
/// Commands started through [`crate::Sandbox::shell_command`] lead their own group, so this stops
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

/// Whether the group led by `pid` still has a process that is not a zombie.
pub(crate) fn has_live_members(pid: u32) -> bool {
    if !group_exists(pid) {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter_map(|stat| parse_stat(&stat))
        .any(|fields| fields.state != 'Z' && fields.group == pid)
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
        let sandbox = crate::Sandbox::unconfined(&dir);
        let mut child = sandbox
            .shell_command("sleep 30 & sleep 30; echo never", &dir)
            .expect("an unconfined command")
            .command
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
        let sandbox = crate::Sandbox::unconfined(&dir);
        let mut child = sandbox
            .shell_command("sleep 30 >/dev/null 2>&1 &", &dir)
            .expect("an unconfined command")
            .command
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
