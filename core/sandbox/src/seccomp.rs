//! seccomp filters for commands under Landlock, compiled by `seccompiler`.
//!
//! - The group filter keeps every process of the command in its process group: `setsid`
//!   and `setpgid` fail with `EPERM`. Larik kills the group when the command ends and only
//!   then puts protected paths back, so nothing the command started may slip out of it.
//! - The network filter, for kernels whose Landlock cannot confine TCP (ABI below 4):
//!   `socket(AF_INET | AF_INET6, …)` fails with `EACCES` and `io_uring_setup` with `EPERM`
//!   (io_uring could open sockets past the filter). Unix sockets stay usable.
//!
//! Each filter first checks the architecture and kills a process that makes system calls of
//! another one (a 32-bit call on a 64-bit machine could go around the filter); on x86-64 the
//! x32 numbers of the refused calls are refused too.

use std::collections::BTreeMap;

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

/// x86-64's x32 ABI reaches the same calls with this bit set in the number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// The numbers a call can be made with on this machine.
fn numbers(call: libc::c_long) -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    {
        vec![call, call | X32_SYSCALL_BIT]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        vec![call]
    }
}

/// Why a seccomp filter could not be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SeccompError {
    /// seccompiler does not know this machine's architecture.
    #[error("seccomp: {0}")]
    Architecture(BackendError),
    /// A negative number (named) where the filter needs an unsigned one.
    #[error("a negative {0}")]
    Negative(&'static str),
    /// seccompiler refused a condition, a rule or the filter.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

fn target() -> Result<TargetArch, SeccompError> {
    std::env::consts::ARCH
        .try_into()
        .map_err(SeccompError::Architecture)
}

/// A filter that lets everything through except `refused` (each with its rules; no rules:
/// always), which fail with `errno`.
fn refusing(
    refused: Vec<(libc::c_long, Vec<SeccompRule>)>,
    errno: i32,
) -> Result<BpfProgram, SeccompError> {
    let mut rules = BTreeMap::new();
    for (call, call_rules) in refused {
        for number in numbers(call) {
            rules.insert(number, call_rules.clone());
        }
    }
    let errno = u32::try_from(errno).map_err(|_| SeccompError::Negative("errno"))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno),
        target()?,
    )?;
    Ok(filter.try_into()?)
}

/// The group filter; see the module documentation.
pub(crate) fn group_filter() -> Result<BpfProgram, SeccompError> {
    refusing(
        vec![
            (libc::SYS_setsid, Vec::new()),
            (libc::SYS_setpgid, Vec::new()),
        ],
        libc::EPERM,
    )
}

/// The network filters; see the module documentation.
pub(crate) fn network_filters() -> Result<Vec<BpfProgram>, SeccompError> {
    let family = |family: libc::c_int| -> Result<SeccompRule, SeccompError> {
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::try_from(family).map_err(|_| SeccompError::Negative("address family"))?,
        )?;
        Ok(SeccompRule::new(vec![condition])?)
    };
    let sockets = refusing(
        vec![(
            libc::SYS_socket,
            vec![family(libc::AF_INET)?, family(libc::AF_INET6)?],
        )],
        libc::EACCES,
    )?;
    let io_uring = refusing(vec![(libc::SYS_io_uring_setup, Vec::new())], libc::EPERM)?;
    Ok(vec![sockets, io_uring])
}

/// Installs `filter` on the calling thread (setting `no_new_privs` first). Meant for the
/// child between fork and exec: it makes two system calls and allocates nothing.
pub(crate) fn install(filter: &BpfProgram) -> std::io::Result<()> {
    seccompiler::apply_filter(filter).map_err(|error| match error {
        seccompiler::Error::Prctl(error) | seccompiler::Error::Seccomp(error) => error,
        other => std::io::Error::other(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile_for_this_machine() {
        assert!(!group_filter().expect("compiles").is_empty());
        let network = network_filters().expect("compiles");
        assert_eq!(network.len(), 2);
        assert!(network.iter().all(|program| !program.is_empty()));
    }
}
