//! Commands under Landlock, where bubblewrap is missing: the process sets `no_new_privs`
//! and restricts itself just before it runs the shell. Reading is allowed everywhere;
//! writing only beneath the writable directories (and `/dev`); TCP connections only to the
//! allowed ports (from Landlock ABI 4; below it, a seccomp filter takes IP sockets away when
//! no network is allowed); signals and abstract Unix sockets only within the sandbox (from
//! ABI 6); and no process may leave the command's process group (a seccomp filter), so
//! killing the group when the command ends stops everything it started. Landlock only
//! grants access beneath a directory and cannot take it back for a path below, so the
//! protected paths inside the project stay writable here: the guard (`guard`) puts them
//! back once the command has ended.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
    path_beneath_rules,
};
use tokio::process::Command;

use crate::policy::{Network, Policy};
use crate::{SandboxError, seccomp};

/// The newest Landlock ABI this code asks for; older kernels get what they support.
const WANTED_ABI: ABI = ABI::V6;

/// The Landlock ABI version the running kernel supports (0: none).
pub fn kernel_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns the
    // ABI version (or fails); it touches no memory.
    #[allow(unsafe_code)]
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(version).unwrap_or(0).max(0)
}

/// Makes `command` restrict itself under `policy` between fork and exec. The ruleset and
/// the seccomp filters (the group filter always; the network filter with `network_filter`,
/// for kernels whose Landlock cannot confine TCP) are built here, before the fork, so the
/// child only makes system calls.
pub(crate) fn confine(
    command: &mut Command,
    policy: &Policy,
    network_filter: bool,
) -> Result<(), SandboxError> {
    let error = |source: landlock::RulesetError| SandboxError::Landlock(source.to_string());
    let all = AccessFs::from_all(WANTED_ABI);
    let mut ruleset = Ruleset::default().handle_access(all).map_err(error)?;
    if policy.network != Network::All {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(error)?;
    }
    let ruleset = ruleset
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(error)?;
    let mut created = ruleset
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(WANTED_ABI)))
        .map_err(error)?
        .add_rules(path_beneath_rules(
            policy
                .writable
                .iter()
                .map(|dir| dir.as_path())
                .chain([Path::new("/dev")]),
            all,
        ))
        .map_err(error)?;
    if let Network::TcpPorts(ports) = &policy.network {
        for port in ports {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(error)?;
        }
    }
    let mut ruleset = Some(created);
    let seccomp_error = |error: seccomp::SeccompError| SandboxError::Seccomp(error.to_string());
    let mut filters = vec![seccomp::group_filter().map_err(seccomp_error)?];
    if network_filter && policy.network == Network::Off {
        filters.extend(seccomp::network_filters().map_err(seccomp_error)?);
    }
    let restrict = move || -> std::io::Result<()> {
        if let Some(ruleset) = ruleset.take() {
            ruleset
                .restrict_self()
                .map_err(|error| std::io::Error::other(error.to_string()))?;
        }
        for filter in &filters {
            seccomp::install(filter)?;
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec; it only calls prctl,
    // seccomp and landlock_restrict_self on a ruleset and filters built before the fork (an
    // error allocates its message, which only happens when exec would be refused anyway).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(restrict);
    }
    Ok(())
}
