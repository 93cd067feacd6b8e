//! The one place Larik starts processes, and the OS sandbox commands run in.
//!
//! Every command a tool runs is built here, in its own process group so a timeout or an
//! interrupt can kill everything it started. A [`Sandbox`] is one of three kinds: bubblewrap
//! (preferred: mount and PID namespaces, see [`bubblewrap`]), Landlock (where bubblewrap is
//! missing, see [`landlock`]), or unconfined (where neither works, or the user switched the
//! sandbox off). [`Sandbox::configure`] picks one and says once what the user should know.
//! What a sandboxed command may touch is its [`Policy`]. [`Sandbox::is_enforcing`] tells the
//! permission step that sandboxed commands may run without asking.

mod bubblewrap;
mod groups;
pub mod landlock;
mod policy;
mod seccomp;

use std::path::{Path, PathBuf};

use tokio::process::Command;

pub use groups::{
    forget_group_if_gone, kill_process_group, kill_started_groups, note_started_group,
};
pub use policy::{Network, PROTECTED_PATHS, Policy};

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
    /// The Landlock ruleset could not be built.
    #[error("the Landlock sandbox could not be set up: {0}")]
    Landlock(String),
}

/// How commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxKind {
    /// Commands run directly, unconfined; every command goes through the permission step.
    Unconfined,
    /// Commands run inside bubblewrap.
    Bubblewrap,
    /// Commands restrict themselves with Landlock.
    Landlock,
}

/// What the sandbox is configured from (the binary fills it from the trusted settings and
/// the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxOptions {
    /// Whether commands should run sandboxed at all.
    pub enabled: bool,
    /// More directories sandboxed commands may write.
    pub writable_paths: Vec<PathBuf>,
    /// Hosts sandboxed commands may reach (`host` or `host:port`); empty: none.
    pub network_allow: Vec<String>,
    /// The temp directories (`/tmp`, `/var/tmp`, `$TMPDIR`), writable inside.
    pub temp_dirs: Vec<PathBuf>,
    /// The PATH directories, to find `bwrap`.
    pub path_dirs: Vec<PathBuf>,
}

/// The process launcher for one project.
#[derive(Debug, Clone)]
pub struct Sandbox {
    kind: SandboxKind,
    project_root: PathBuf,
    policy: Option<Policy>,
    bwrap: Option<PathBuf>,
    /// Under Landlock: also filter IP sockets with seccomp.
    seccomp_network: bool,
}

impl Sandbox {
    /// A launcher that runs commands unconfined.
    pub fn unconfined(project_root: impl Into<PathBuf>) -> Self {
        Sandbox {
            kind: SandboxKind::Unconfined,
            project_root: project_root.into(),
            policy: None,
            bwrap: None,
            seccomp_network: false,
        }
    }

    /// A launcher that runs commands inside bubblewrap (`bwrap`) under `policy`.
    pub fn bubblewrap(bwrap: PathBuf, policy: Policy) -> Self {
        Sandbox {
            kind: SandboxKind::Bubblewrap,
            project_root: policy.project_root.clone(),
            policy: Some(policy),
            bwrap: Some(bwrap),
            seccomp_network: false,
        }
    }

    /// A launcher whose commands restrict themselves with Landlock under `policy`; `None`
    /// when the kernel has no Landlock. Where Landlock cannot confine TCP (ABI below 4) and
    /// no network is allowed, a seccomp filter takes IP sockets away instead.
    pub fn landlock(policy: Policy) -> Option<Self> {
        let abi = landlock::kernel_abi();
        (abi > 0).then(|| Sandbox {
            kind: SandboxKind::Landlock,
            project_root: policy.project_root.clone(),
            policy: Some(policy),
            bwrap: None,
            seccomp_network: abi < 4,
        })
    }

    /// The same, with the seccomp network filter whatever the kernel's Landlock can do
    /// (the filter older kernels get; this lets it be used and tested on any kernel).
    pub fn landlock_with_network_filter(policy: Policy) -> Option<Self> {
        Self::landlock(policy).map(|sandbox| Sandbox {
            seccomp_network: true,
            ..sandbox
        })
    }

    /// The best sandbox available for `project_root`: bubblewrap when `bwrap` is on the
    /// PATH and works, else Landlock, else none. Returns what the user should be told once
    /// (no sandbox can be set up, or it is weaker than usual); switching it off is the
    /// user's own choice and needs no word.
    pub fn configure(project_root: &Path, options: &SandboxOptions) -> (Self, Vec<String>) {
        if !options.enabled {
            return (Self::unconfined(project_root), Vec::new());
        }
        let network = Network::from_allowed(&options.network_allow);
        let policy = Policy::new(
            project_root,
            &options.temp_dirs,
            &options.writable_paths,
            network,
        );
        if let Some(bwrap) = options
            .path_dirs
            .iter()
            .map(|dir| dir.join("bwrap"))
            .find(|path| path.is_file())
            && bubblewrap::works(&bwrap)
        {
            return (Self::bubblewrap(bwrap, policy), Vec::new());
        }
        let abi = landlock::kernel_abi();
        match Self::landlock(policy) {
            Some(sandbox) => {
                let mut notices = vec![format!(
                    "bubblewrap (`bwrap`) is not usable here, so commands run under Landlock \
                     (ABI {abi}): git hooks and settings inside the project are not read-only, \
                     and a process that leaves its group outlives its command"
                )];
                if abi < 4
                    && matches!(
                        sandbox.policy().map(|p| &p.network),
                        Some(Network::TcpPorts(_))
                    )
                {
                    notices.push(
                        "this kernel's Landlock cannot limit connections to the allowed ports: \
                         sandboxed commands can reach any"
                            .into(),
                    );
                }
                (sandbox, notices)
            }
            None => (
                Self::unconfined(project_root),
                vec![
                    "no command sandbox can be set up here (install bubblewrap): every command \
                     asks for permission"
                        .into(),
                ],
            ),
        }
    }

    /// How commands are confined.
    pub fn kind(&self) -> SandboxKind {
        self.kind
    }

    /// Whether commands are confined, so they may run without asking.
    pub fn is_enforcing(&self) -> bool {
        self.kind != SandboxKind::Unconfined
    }

    /// The project root the sandbox is built around.
    pub fn project_root(&self) -> &Path {
        &self.project_root
    }

    /// What sandboxed commands may touch (`None` when unconfined).
    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }

    /// A shell command (`bash -c SCRIPT`, or `sh` where bash is missing) in `cwd`, inside
    /// the sandbox, in a new process group, with stdin closed and the process killed when
    /// its handle drops.
    pub fn shell_command(&self, script: &str, cwd: &Path) -> Result<Command, SandboxError> {
        let shell = shell();
        let mut command = match (&self.kind, &self.policy, &self.bwrap) {
            (SandboxKind::Bubblewrap, Some(policy), Some(bwrap)) => {
                bubblewrap::command(bwrap, policy, shell, script, cwd)
            }
            (SandboxKind::Landlock, Some(policy), _) => {
                let mut command = plain(shell, script);
                landlock::confine(&mut command, policy, self.seccomp_network)?;
                command
            }
            _ => plain(shell, script),
        };
        prepare(&mut command, cwd);
        Ok(command)
    }

    /// The same shell command outside the sandbox, for a call the user approved to run
    /// unconfined.
    pub fn unconfined_shell_command(&self, script: &str, cwd: &Path) -> Command {
        let mut command = plain(shell(), script);
        prepare(&mut command, cwd);
        command
    }
}

/// bash where it exists, else sh.
fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

fn plain(shell: &str, script: &str) -> Command {
    let mut command = Command::new(shell);
    command.arg("-c").arg(script);
    command
}

/// What every command gets: its working directory, no stdin, its own process group, and a
/// kill when its handle drops.
fn prepare(command: &mut Command, cwd: &Path) {
    command
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
}
