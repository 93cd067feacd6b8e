//! The sandbox, run for real: every escape a command might try is blocked and counted
//! (writing outside the project, into git hooks and config, into the agents' settings,
//! through symlinks, `..` and `/proc/self/root`, connecting to a loopback port, leaving a
//! process behind), each next to a control run outside the sandbox that shows the attempt
//! would have worked; and real projects build and test inside it. bubblewrap must be
//! installed (`tests/run` installs it); Landlock is tested where the kernel has it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use larik_sandbox::{Network, Policy, Sandbox, SandboxKind};

/// A project with a git directory and the agents' settings, an outside directory next to
/// it, and a scratch temp directory; none of them under a directory the sandbox makes
/// writable except the project and the scratch.
struct World {
    _dir: tempfile::TempDir,
    project: PathBuf,
    outside: PathBuf,
    scratch: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let project = root.join("project");
        let outside = root.join("outside");
        let scratch = root.join("scratch");
        for path in [
            project.join(".git/hooks"),
            project.join(".larik"),
            project.join(".claude"),
            outside.clone(),
            scratch.clone(),
        ] {
            std::fs::create_dir_all(path).expect("mkdir");
        }
        std::fs::write(project.join(".git/config"), "[core]\n").expect("write");
        std::fs::write(project.join(".larik/settings.json"), "{}").expect("write");
        std::fs::write(project.join(".mcp.json"), "{}").expect("write");
        std::fs::write(outside.join("secret.txt"), "outside\n").expect("write");
        std::os::unix::fs::symlink(&outside, project.join("link")).expect("symlink");
        Self {
            _dir: dir,
            project,
            outside,
            scratch,
        }
    }

    fn policy(&self, network: Network) -> Policy {
        Policy::new(
            &self.project,
            std::slice::from_ref(&self.scratch),
            &[],
            network,
        )
    }

    fn bubblewrap(&self) -> Sandbox {
        Sandbox::bubblewrap(bwrap(), self.policy(Network::Off))
    }
}

#[path = "support/bwrap.rs"]
mod support;

use support::bwrap;

async fn run(sandbox: &Sandbox, script: &str, cwd: &Path, sandboxed: bool) -> Output {
    let mut command = if sandboxed {
        sandbox.shell_command(script, cwd).expect("a command")
    } else {
        sandbox.unconfined_shell_command(script, cwd)
    };
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the command ends")
        .expect("the command runs")
}

/// One escape attempt: a script and the file it tries to create or change, or the check
/// that tells whether it got through.
struct Attempt {
    name: &'static str,
    script: String,
    /// Whether the attempt got through, checked on the real file system afterwards.
    got_through: Box<dyn Fn() -> bool>,
}

fn file_attempt(name: &'static str, script: String, target: PathBuf, before: &str) -> Attempt {
    let before = before.to_string();
    Attempt {
        name,
        script,
        got_through: Box::new(move || {
            std::fs::read_to_string(&target).is_ok_and(|text| text != before)
        }),
    }
}

fn write_attempts(world: &World) -> Vec<Attempt> {
    let project = world.project.display().to_string();
    let outside = world.outside.display().to_string();
    vec![
        file_attempt(
            "write outside the project",
            format!("echo pwned > {outside}/new.txt"),
            world.outside.join("new.txt"),
            "",
        ),
        file_attempt(
            "overwrite a file outside the project",
            format!("echo pwned > {outside}/secret.txt"),
            world.outside.join("secret.txt"),
            "outside\n",
        ),
        file_attempt(
            "through a symlink in the project",
            "echo pwned > link/secret.txt".into(),
            world.outside.join("secret.txt"),
            "outside\n",
        ),
        file_attempt(
            "through ..",
            "echo pwned > ../outside/dots.txt".into(),
            world.outside.join("dots.txt"),
            "",
        ),
        file_attempt(
            "through /proc/self/root",
            format!("echo pwned > /proc/self/root{outside}/proc.txt"),
            world.outside.join("proc.txt"),
            "",
        ),
        file_attempt(
            "a git hook",
            "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit".into(),
            world.project.join(".git/hooks/pre-commit"),
            "",
        ),
        file_attempt(
            "the git config",
            "git config --file .git/config core.fsmonitor 'echo pwned' || echo '[core] fsmonitor = x' >> .git/config".into(),
            world.project.join(".git/config"),
            "[core]\n",
        ),
        file_attempt(
            "Larik's project settings",
            "echo '{\"permissions\":{}}' > .larik/settings.json".into(),
            world.project.join(".larik/settings.json"),
            "{}",
        ),
        file_attempt(
            "a new file in .larik",
            "echo x > .larik/other.json".into(),
            world.project.join(".larik/other.json"),
            "",
        ),
        file_attempt(
            "Claude Code's project settings",
            "echo '{}' > .claude/settings.json".into(),
            world.project.join(".claude/settings.json"),
            "",
        ),
        file_attempt(
            "the MCP server list",
            "echo '{\"mcpServers\":{}}' > .mcp.json".into(),
            world.project.join(".mcp.json"),
            "{}",
        ),
        file_attempt(
            "replacing the hooks directory",
            "mv .git/hooks .git/hooks.old && mkdir .git/hooks && echo x > .git/hooks/post-checkout".into(),
            world.project.join(".git/hooks/post-checkout"),
            "",
        ),
        file_attempt(
            "through a hard link",
            format!("ln {outside}/secret.txt {project}/hard && echo pwned > {project}/hard"),
            world.outside.join("secret.txt"),
            "outside\n",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_blocks_every_escape_and_each_would_work_unsandboxed() {
    let world = World::new();
    let sandbox = world.bubblewrap();
    assert_eq!(sandbox.kind(), SandboxKind::Bubblewrap);
    let mut blocked = Vec::new();
    for attempt in write_attempts(&world) {
        run(&sandbox, &attempt.script, &world.project, true).await;
        assert!(
            !(attempt.got_through)(),
            "escaped the sandbox: {}",
            attempt.name
        );
        blocked.push(attempt.name);
    }
    // The same attempts outside the sandbox get through (on a fresh world), so the checks
    // above can tell.
    let control = World::new();
    let unconfined = control.bubblewrap();
    for attempt in write_attempts(&control) {
        run(&unconfined, &attempt.script, &control.project, false).await;
        assert!(
            (attempt.got_through)(),
            "the control run did not do what the attempt tries: {}",
            attempt.name
        );
    }

    // The network: a loopback port on the host.
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let output = run(&sandbox, &connect, &world.project, true).await;
    assert!(!String::from_utf8_lossy(&output.stdout).contains("connected"));
    let output = run(&sandbox, &connect, &world.project, false).await;
    assert!(String::from_utf8_lossy(&output.stdout).contains("connected"));
    blocked.push("a loopback port on the host");

    // A process left behind, even one that starts its own session. Each keeps the
    // command's output pipe open, so the output ends only once every one of them is gone;
    // they would sleep for a minute, so an output that ends well before proves they were
    // killed with the command.
    let marker = format!("{}.4242", 60 + port % 7);
    let script =
        format!("(sleep {marker} &) ; setsid sleep {marker} & nohup sleep {marker} & echo started");
    let mut command = sandbox
        .shell_command(&script, &world.project)
        .expect("a command");
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = tokio::time::timeout(Duration::from_secs(30), command.output()).await;
    let output = output
        .unwrap_or_else(|_| panic!("a background process outlived its sandboxed command"))
        .expect("the command runs");
    assert!(String::from_utf8_lossy(&output.stdout).contains("started"));
    blocked.push("a background process outliving the command");

    // Inside the project the command works, and the protected paths are still readable.
    let output = run(
        &sandbox,
        "echo fine > made.txt && cat .git/config && mkdir -p target/debug && echo o > target/debug/out",
        &world.project,
        true,
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read_to_string(world.project.join("made.txt")).expect("made"),
        "fine\n"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("[core]"));
    eprintln!("bubblewrap blocked {} escapes: {blocked:#?}", blocked.len());
    assert_eq!(blocked.len(), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_confines_writes_and_the_network_where_the_kernel_has_it() {
    if larik_sandbox::landlock::kernel_abi() < 4 {
        eprintln!("this kernel's Landlock is missing or has no network rules; nothing to check");
        return;
    }
    let world = World::new();
    let sandbox = Sandbox::landlock(world.policy(Network::Off)).expect("Landlock is available");
    assert_eq!(sandbox.kind(), SandboxKind::Landlock);
    let confined_by_landlock = [
        "write outside the project",
        "overwrite a file outside the project",
        "through a symlink in the project",
        "through ..",
        "through /proc/self/root",
        "through a hard link",
    ];
    for attempt in write_attempts(&world)
        .into_iter()
        .filter(|attempt| confined_by_landlock.contains(&attempt.name))
    {
        run(&sandbox, &attempt.script, &world.project, true).await;
        assert!(
            !(attempt.got_through)(),
            "escaped Landlock: {}",
            attempt.name
        );
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let output = run(&sandbox, &connect, &world.project, true).await;
    assert!(!String::from_utf8_lossy(&output.stdout).contains("connected"));
    // An allowed port is reachable.
    let open = Sandbox::landlock(world.policy(Network::TcpPorts(vec![port]))).expect("Landlock");
    let output = run(&open, &connect, &world.project, true).await;
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("connected"),
        "{output:?}"
    );
    let output = run(&sandbox, "echo fine > made.txt", &world.project, true).await;
    assert!(output.status.success(), "{output:?}");

    // The seccomp filter older kernels get instead of Landlock's TCP rules: no IP socket at
    // all, Unix sockets still fine.
    let filtered =
        Sandbox::landlock_with_network_filter(world.policy(Network::Off)).expect("Landlock");
    let output = run(&filtered, &connect, &world.project, true).await;
    assert!(!String::from_utf8_lossy(&output.stdout).contains("connected"));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Permission denied"),
        "{output:?}"
    );
    let unix = "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"ok\"); print(b.recv(2).decode())'";
    let output = run(&filtered, unix, &world.project, true).await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "ok\n",
        "{output:?}"
    );
}

/// Which sandbox a project gets: bubblewrap when `bwrap` is on the PATH, else Landlock with
/// a notice saying what is weaker, and none (without a word) when the user switched it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_best_available_sandbox_is_chosen_and_a_weaker_one_is_announced() {
    let world = World::new();
    let bwrap_dir = bwrap().parent().expect("a directory").to_path_buf();
    let options = |path_dirs: Vec<PathBuf>, enabled: bool| larik_sandbox::SandboxOptions {
        enabled,
        writable_paths: Vec::new(),
        network_allow: Vec::new(),
        temp_dirs: vec![world.scratch.clone()],
        path_dirs,
    };
    let (sandbox, notices) = Sandbox::configure(&world.project, &options(vec![bwrap_dir], true));
    assert_eq!(sandbox.kind(), SandboxKind::Bubblewrap);
    assert!(sandbox.is_enforcing());
    assert_eq!(notices, Vec::<String>::new());

    let (sandbox, notices) = Sandbox::configure(&world.project, &options(Vec::new(), true));
    if larik_sandbox::landlock::kernel_abi() > 0 {
        assert_eq!(sandbox.kind(), SandboxKind::Landlock);
        assert!(
            notices[0].contains("bubblewrap (`bwrap`) is not usable here"),
            "{notices:?}"
        );
    } else {
        assert_eq!(sandbox.kind(), SandboxKind::Unconfined);
        assert!(notices[0].contains("every command asks"), "{notices:?}");
    }

    let (sandbox, notices) = Sandbox::configure(&world.project, &options(Vec::new(), false));
    assert_eq!(sandbox.kind(), SandboxKind::Unconfined);
    assert!(!sandbox.is_enforcing());
    assert_eq!(notices, Vec::<String>::new());
}
