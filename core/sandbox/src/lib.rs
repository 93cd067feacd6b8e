//! The one place Larik starts processes, and the OS sandbox commands run in.
//!
//! Every command a tool runs is built here, in its own process group so a timeout or an
//! interrupt can kill everything it started. A [`Sandbox`] is one of three kinds: bubblewrap
//! (preferred: mount and PID namespaces, see [`bubblewrap`]), Landlock (where bubblewrap is
//! missing, see [`landlock`]), or unconfined (where neither works, or the user switched the
//! sandbox off). [`Sandbox::configure`] picks one without starting anything: whether
//! bubblewrap can build a sandbox here is learnt from its first command (which, when it
//! cannot, runs nothing and is started again in the next best sandbox).
//! What a sandboxed command may touch is its [`Policy`]; the paths inside the project no
//! command may change are in [`protected`]. A command comes as a [`ShellCommand`]: the
//! process to spawn and the [`CommandGuard`] that keeps the protected paths safe until it has
//! ended (placeholders for missing ones under bubblewrap, see [`placeholder`]; the
//! before-and-after [`guard`] under Landlock). [`Sandbox::is_enforcing`] tells the permission
//! step that sandboxed commands may run without asking.

mod bubblewrap;
mod command;
mod groups;
mod guard;
pub mod landlock;
mod placeholder;
mod policy;
pub mod protected;
mod seccomp;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use tokio::process::Command;

pub use command::{CommandGuard, ShellCommand};
pub use groups::{
    forget_group_if_gone, kill_process_group, kill_started_groups, note_started_group,
};
pub use guard::{ChangeKind, ProtectedChange, RestoreError};
pub use policy::{Network, Policy};
pub use protected::PROTECTED_PATHS;

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
    /// A seccomp filter could not be built.
    #[error("the seccomp filter could not be built: {0}")]
    Seccomp(String),
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

/// The sandbox a project's commands get, once chosen.
#[derive(Debug)]
struct Choice {
    kind: SandboxKind,
    policy: Option<Policy>,
    bwrap: Option<PathBuf>,
    /// Under Landlock: also filter IP sockets with seccomp.
    seccomp_network: bool,
    /// What the user should be told once about it.
    notices: Vec<String>,
    /// Bubblewrap taken on trust: whether it can build a sandbox here is learnt from the
    /// first command, which falls back to the next best sandbox when it cannot.
    on_trust: bool,
}

#[derive(Debug)]
struct Shared {
    project_root: PathBuf,
    choice: RwLock<Arc<Choice>>,
    notices_told: AtomicBool,
}

/// The process launcher for one project. Cloning it is cheap; clones share the choice.
#[derive(Debug, Clone)]
pub struct Sandbox {
    shared: Arc<Shared>,
}

impl Sandbox {
    fn chosen(project_root: PathBuf, choice: Choice) -> Self {
        Sandbox {
            shared: Arc::new(Shared {
                project_root,
                choice: RwLock::new(Arc::new(choice)),
                notices_told: AtomicBool::new(false),
            }),
        }
    }

    /// A launcher that runs commands unconfined.
    pub fn unconfined(project_root: impl Into<PathBuf>) -> Self {
        Self::chosen(project_root.into(), unconfined_choice(Vec::new()))
    }

    /// A launcher that runs commands inside bubblewrap (`bwrap`) under `policy`.
    pub fn bubblewrap(bwrap: PathBuf, policy: Policy) -> Self {
        Self::chosen(
            policy.project_root.clone(),
            bubblewrap_choice(bwrap, policy),
        )
    }

    /// A launcher whose commands restrict themselves with Landlock under `policy`; `None`
    /// when the kernel has no Landlock. Where Landlock cannot confine TCP (ABI below 4) and
    /// no network is allowed, a seccomp filter takes IP sockets away instead.
    pub fn landlock(policy: Policy) -> Option<Self> {
        let root = policy.project_root.clone();
        landlock_choice(policy, false).map(|choice| Self::chosen(root, choice))
    }

    /// The same, with the seccomp network filter whatever the kernel's Landlock can do
    /// (the filter older kernels get; this lets it be used and tested on any kernel).
    pub fn landlock_with_network_filter(policy: Policy) -> Option<Self> {
        let root = policy.project_root.clone();
        landlock_choice(policy, true).map(|choice| Self::chosen(root, choice))
    }

    /// The best sandbox available for `project_root`: bubblewrap when `bwrap` is on the
    /// PATH and works, else Landlock, else none. Whether bubblewrap works here is not
    /// checked up front (that takes a process start on the way to the first model request):
    /// the first command to run in it tells, and when bubblewrap cannot build a sandbox, that
    /// command runs in the next best one instead (its caller starts it again, see
    /// [`CommandGuard::started`]); the answer holds for the rest of the process. What the
    /// user should be told once (no sandbox can be set up, or it is weaker than usual) comes
    /// from [`Sandbox::take_notices`]; switching it off is the user's own choice and needs no
    /// word. Placeholders a killed Larik process left in the project are removed here.
    pub fn configure(project_root: &Path, options: &SandboxOptions) -> Self {
        if !options.enabled {
            return Self::unconfined(project_root);
        }
        placeholder::sweep(project_root);
        let network = Network::from_allowed(&options.network_allow);
        let policy = Policy::new(
            project_root,
            &options.temp_dirs,
            &options.writable_paths,
            network,
        );
        let Some(bwrap) = options
            .path_dirs
            .iter()
            .map(|dir| dir.join("bwrap"))
            .find(|path| path.is_file())
        else {
            return Self::chosen(project_root.to_path_buf(), fallback_choice(policy));
        };
        let choice = match bubblewrap::known(&bwrap) {
            Some(true) => bubblewrap_choice(bwrap, policy),
            Some(false) => fallback_choice(policy),
            None => Choice {
                on_trust: true,
                ..bubblewrap_choice(bwrap, policy)
            },
        };
        Self::chosen(project_root.to_path_buf(), choice)
    }

    /// A launcher for another project root (a subagent's git worktree) that confines the
    /// same way: the same kind of sandbox, network and extra writable directories, with
    /// `project_root` writable in place of this launcher's root (which is not) and
    /// `more_writable` besides. Its protected paths are `project_root`'s own.
    pub fn for_root(&self, project_root: &Path, more_writable: &[PathBuf]) -> Sandbox {
        let choice = self.choice();
        let Some(policy) = &choice.policy else {
            return Sandbox::unconfined(project_root);
        };
        let others: Vec<PathBuf> = policy
            .writable
            .iter()
            .filter(|dir| **dir != policy.project_root)
            .chain(more_writable)
            .cloned()
            .collect();
        let policy = Policy::new(project_root, &[], &others, policy.network.clone());
        let root = policy.project_root.clone();
        let derived = Choice {
            kind: choice.kind,
            policy: Some(policy),
            bwrap: choice.bwrap.clone(),
            seccomp_network: choice.seccomp_network,
            notices: Vec::new(),
            on_trust: choice.on_trust,
        };
        Self::chosen(root, derived)
    }

    /// The current choice.
    fn choice(&self) -> Arc<Choice> {
        Arc::clone(
            &self
                .shared
                .choice
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Settles a choice taken on trust once bubblewrap is known to work or not (by this
    /// sandbox's first command, or another one's in this process).
    pub(crate) fn settle(&self, works: bool) {
        let mut choice = self
            .shared
            .choice
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if !choice.on_trust {
            return;
        }
        let policy = choice.policy.clone().expect("bubblewrap has a policy");
        *choice = Arc::new(if works {
            Choice {
                on_trust: false,
                ..bubblewrap_choice(choice.bwrap.clone().expect("bubblewrap's path"), policy)
            }
        } else {
            fallback_choice(policy)
        });
    }

    /// How commands are confined.
    pub fn kind(&self) -> SandboxKind {
        self.choice().kind
    }

    /// Whether commands are confined, so they may run without asking.
    pub fn is_enforcing(&self) -> bool {
        self.kind() != SandboxKind::Unconfined
    }

    /// The project root the sandbox is built around.
    pub fn project_root(&self) -> &Path {
        &self.shared.project_root
    }

    /// What sandboxed commands may touch (`None` when unconfined).
    pub fn policy(&self) -> Option<Policy> {
        self.choice().policy.clone()
    }

    /// What the user should be told about the sandbox (none can be set up, or it is weaker
    /// than usual), once: the first call after the choice was settled returns it, every
    /// other call nothing.
    pub fn take_notices(&self) -> Vec<String> {
        let choice = self.choice();
        if choice.notices.is_empty() || self.shared.notices_told.swap(true, Ordering::SeqCst) {
            return Vec::new();
        }
        choice.notices.clone()
    }

    /// A shell command (`bash -c SCRIPT`, or `sh` where bash is missing) in `cwd`, inside
    /// the sandbox, in a new process group, with stdin closed and the process killed when
    /// its handle drops, with the guard that keeps the protected paths safe until
    /// [`CommandGuard::finish`].
    pub fn shell_command(&self, script: &str, cwd: &Path) -> Result<ShellCommand, SandboxError> {
        let shell = shell();
        let mut choice = self.choice();
        if choice.on_trust
            && let Some(works) = choice.bwrap.as_deref().and_then(bubblewrap::known)
        {
            self.settle(works);
            choice = self.choice();
        }
        let root = &self.shared.project_root;
        let (mut command, guard) = match (&choice.kind, &choice.policy, &choice.bwrap) {
            (SandboxKind::Bubblewrap, Some(policy), Some(bwrap)) => {
                let trial = choice.on_trust.then(|| self.clone());
                bubblewrap::command(bwrap, policy, shell, script, cwd, trial)?
            }
            (SandboxKind::Landlock, Some(policy), _) => {
                let guard = CommandGuard::snapshot(root);
                let mut command = plain(shell, script);
                landlock::confine(&mut command, policy, choice.seccomp_network)?;
                (command, guard)
            }
            _ => (plain(shell, script), CommandGuard::unconfined()),
        };
        prepare(&mut command, cwd);
        Ok(ShellCommand { command, guard })
    }

    /// The same shell command outside the sandbox, for a call the user approved to run
    /// unconfined.
    pub fn unconfined_shell_command(&self, script: &str, cwd: &Path) -> ShellCommand {
        let mut command = plain(shell(), script);
        prepare(&mut command, cwd);
        ShellCommand {
            command,
            guard: CommandGuard::unconfined(),
        }
    }
}

fn unconfined_choice(notices: Vec<String>) -> Choice {
    Choice {
        kind: SandboxKind::Unconfined,
        policy: None,
        bwrap: None,
        seccomp_network: false,
        notices,
        on_trust: false,
    }
}

fn bubblewrap_choice(bwrap: PathBuf, policy: Policy) -> Choice {
    Choice {
        kind: SandboxKind::Bubblewrap,
        policy: Some(policy),
        bwrap: Some(bwrap),
        seccomp_network: false,
        notices: Vec::new(),
        on_trust: false,
    }
}

fn landlock_choice(policy: Policy, force_network_filter: bool) -> Option<Choice> {
    let abi = landlock::kernel_abi();
    (abi > 0).then(|| Choice {
        kind: SandboxKind::Landlock,
        policy: Some(policy),
        bwrap: None,
        seccomp_network: force_network_filter || abi < 4,
        notices: Vec::new(),
        on_trust: false,
    })
}

/// Landlock with a notice saying what is weaker, or nothing with a notice saying so.
fn fallback_choice(policy: Policy) -> Choice {
    let abi = landlock::kernel_abi();
    let ports = matches!(policy.network, Network::TcpPorts(_));
    let Some(mut choice) = landlock_choice(policy, false) else {
        return unconfined_choice(vec![
            "no command sandbox can be set up here (install bubblewrap): every command \
             asks for permission"
                .into(),
        ]);
    };
    choice.notices.push(format!(
        "bubblewrap (`bwrap`) is not usable here, so commands run under Landlock (ABI {abi}): \
         protected paths (git hooks and config, the agents' settings) are put back after \
         each command rather than kept read-only while it runs, and commands cannot start \
         new sessions or process groups"
    ));
    if abi < 4 && ports {
        choice.notices.push(
            "this kernel's Landlock cannot limit connections to the allowed ports: sandboxed \
             commands can reach any"
                .into(),
        );
    }
    choice
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
