//! The sandbox, run for real: every escape a command might try is blocked, each case
//! asserted on its own next to a control run outside the sandbox that shows the attempt
//! would have worked. Writing outside the project (directly, through symlinks, `..`,
//! `/proc/self/root` or a hard link), connecting to a loopback port and leaving a process
//! behind; and every protected path, missing and present, created, changed, removed,
//! renamed, replaced by a link or reached through a hard link. bubblewrap blocks them as they
//! happen; Landlock cannot, so its guard puts the protected paths back once the command has
//! ended, and says which. Either way nothing is left on disk. bubblewrap must be installed
//! (`tests/run` installs it); the Landlock tests need a kernel with Landlock ABI 4 (they are
//! named `landlock_…`, and `tests/run` leaves them out by name, saying so, on a kernel
//! without it).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use larik_sandbox::{Network, Policy, ProtectedChange, Sandbox, SandboxKind};
use larik_testkit::tree::{Tree, tree};

#[path = "support/bwrap.rs"]
mod support;

use support::bwrap;

/// A project next to an outside directory and a scratch temp directory; only the project
/// and the scratch are writable inside the sandbox.
struct World {
    _dir: tempfile::TempDir,
    project: PathBuf,
    outside: PathBuf,
    scratch: PathBuf,
}

impl World {
    /// A project with a git directory (`.git/hooks`, `.git/config`) and nothing else
    /// protected.
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let project = root.join("project");
        let outside = root.join("outside");
        let scratch = root.join("scratch");
        for path in [project.join(".git/hooks"), outside.clone(), scratch.clone()] {
            std::fs::create_dir_all(path).expect("mkdir");
        }
        std::fs::write(project.join(".git/config"), "[core]\n").expect("write");
        std::fs::write(project.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(project.join("README.md"), "a project\n").expect("write");
        std::fs::write(outside.join("secret.txt"), "outside\n").expect("write");
        std::os::unix::fs::symlink(&outside, project.join("link")).expect("symlink");
        Self {
            _dir: dir,
            project,
            outside,
            scratch,
        }
    }

    /// The world one protected-path case starts from.
    fn for_case(case: &Case) -> Self {
        let world = World::new();
        let path = world.project.join(case.path);
        if case.path == ".git" {
            std::fs::remove_dir_all(&path).expect("no repository");
        } else if case.path.starts_with(".git/") && path.exists() {
            remove(&path);
        }
        if case.present {
            match case.kind {
                Kind::Dir => {
                    std::fs::create_dir_all(&path).expect("mkdir");
                    std::fs::write(path.join("existing"), "original\n").expect("write");
                }
                Kind::File => std::fs::write(&path, "original\n").expect("write"),
            }
        }
        world
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

    fn landlock(&self) -> Sandbox {
        Sandbox::landlock(self.policy(Network::Off)).expect("this kernel has Landlock")
    }
}

fn remove(path: &Path) {
    match path.symlink_metadata() {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).expect("remove"),
        Ok(_) => std::fs::remove_file(path).expect("remove"),
        Err(_) => {}
    }
}

/// What a command's run left: its output, and what the guard put back.
struct Ran {
    output: Output,
    changes: Vec<ProtectedChange>,
}

impl Ran {
    fn text(&self) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }
}

/// Runs `script` in `cwd`, sandboxed or (the control) not, the way the `bash` tool does:
/// spawn, wait for the shell, then end the guard, which kills what is left of a sandboxed
/// command's group and puts back what it changed.
async fn run(sandbox: &Sandbox, script: &str, cwd: &Path, sandboxed: bool) -> Ran {
    let shell = if sandboxed {
        sandbox.shell_command(script, cwd).expect("a command")
    } else {
        sandbox.unconfined_shell_command(script, cwd)
    };
    let (mut command, mut guard) = (shell.command, shell.guard);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("the command starts");
    drop(command);
    if let Some(pid) = child.id() {
        assert!(guard.started(pid).await, "the sandbox was built");
    }
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the command ends")
        .expect("the command runs");
    let changes = guard.finish().await;
    Ran { output, changes }
}

/// Every protected path of `world`, as it stands.
fn protected_state(world: &World) -> BTreeMap<&'static str, Option<Tree>> {
    [".git"]
        .into_iter()
        .chain(larik_sandbox::PROTECTED_PATHS)
        .map(|path| {
            let full = world.project.join(path);
            // `.git` itself counts by its kind only; its protected entries are listed.
            let state = if path == ".git" {
                tree(&full).map(|found| match found {
                    Tree::Dir(_) => Tree::Dir(BTreeMap::new()),
                    other => other,
                })
            } else {
                tree(&full)
            };
            (path, state)
        })
        .collect()
}

/// Names a placeholder or a restore leaves while it works; none may be left afterwards.
fn leftovers(world: &World) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in [world.project.clone(), world.project.join(".git")] {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.contains(".larik-placeholder-") || name.contains(".larik-restore-") {
                found.push(entry.path());
            }
        }
    }
    found
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
}

/// One attempt on one protected path in one state.
#[derive(Debug)]
struct Case {
    path: &'static str,
    kind: Kind,
    present: bool,
    attack: &'static str,
    script: String,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{} {} ({})",
            self.attack,
            self.path,
            if self.present { "present" } else { "missing" }
        )
    }
}

/// Every attack on every protected path, missing and present.
fn protected_cases() -> Vec<Case> {
    let dirs = [
        ".git/hooks",
        ".git/info",
        ".git/modules",
        ".larik",
        ".claude",
        ".agents",
    ];
    let files = [
        ".git/config",
        ".git/config.worktree",
        ".git/commondir",
        ".mcp.json",
    ];
    let mut cases = Vec::new();
    let mut add = |path: &'static str, kind, present, attack, script: String| {
        cases.push(Case {
            path,
            kind,
            present,
            attack,
            script,
        });
    };
    for path in dirs.into_iter().chain([".git"]) {
        add(
            path,
            Kind::Dir,
            false,
            "create",
            format!("mkdir -p {path} && echo x > {path}/planted"),
        );
        add(
            path,
            Kind::Dir,
            false,
            "rename into",
            format!("mkdir made && echo x > made/planted && mv made {path}"),
        );
        add(
            path,
            Kind::Dir,
            false,
            "symlink",
            format!("ln -s ../outside {path}"),
        );
    }
    add(
        ".git",
        Kind::Dir,
        false,
        "git init",
        "git init -q . && echo x > .git/hooks/pre-commit".into(),
    );
    for path in dirs {
        add(
            path,
            Kind::Dir,
            true,
            "add a file",
            format!("echo x > {path}/planted"),
        );
        add(
            path,
            Kind::Dir,
            true,
            "change",
            format!("echo changed > {path}/existing"),
        );
        add(path, Kind::Dir, true, "delete", format!("rm -rf {path}"));
        add(
            path,
            Kind::Dir,
            true,
            "rename away",
            format!("mv {path} moved-away"),
        );
        add(
            path,
            Kind::Dir,
            true,
            "replace by a symlink",
            format!("rm -rf {path} && ln -s ../outside {path}"),
        );
        add(
            path,
            Kind::Dir,
            true,
            "hard link",
            format!("ln {path}/existing linked && echo changed > linked"),
        );
    }
    for path in files {
        add(
            path,
            Kind::File,
            false,
            "create",
            format!("echo x > {path}"),
        );
        add(
            path,
            Kind::File,
            false,
            "rename into",
            format!("echo x > made && mv made {path}"),
        );
        add(
            path,
            Kind::File,
            false,
            "symlink",
            format!("ln -s ../outside/secret.txt {path}"),
        );
        add(
            path,
            Kind::File,
            false,
            "hard link",
            format!("echo x > made && ln made {path}"),
        );
    }
    for path in files.into_iter().chain([".git"]) {
        add(
            path,
            Kind::File,
            true,
            "change",
            format!("echo changed > {path}"),
        );
        add(path, Kind::File, true, "delete", format!("rm -f {path}"));
        add(
            path,
            Kind::File,
            true,
            "rename away",
            format!("mv {path} moved-away"),
        );
        add(
            path,
            Kind::File,
            true,
            "replace by a symlink",
            format!("ln -sf ../outside/secret.txt {path}"),
        );
        add(
            path,
            Kind::File,
            true,
            "hard link",
            format!("ln {path} linked && echo changed > linked"),
        );
    }
    cases
}

/// Runs every protected-path case sandboxed (must leave every protected path as it was,
/// with nothing left behind) and as a control outside the sandbox (must change it).
/// Returns what the sandboxed runs said and put back, per case.
async fn protected_paths_hold(make: fn(&World) -> Sandbox) -> Vec<(String, Ran)> {
    let mut runs = Vec::new();
    for case in protected_cases() {
        let world = World::for_case(&case);
        let before = protected_state(&world);
        let sandbox = make(&world);
        let ran = run(&sandbox, &case.script, &world.project, true).await;
        assert_eq!(
            protected_state(&world),
            before,
            "got through: {} — {}",
            case.name(),
            ran.text()
        );
        assert_eq!(leftovers(&world), Vec::<PathBuf>::new(), "{}", case.name());
        let control = World::for_case(&case);
        let before = protected_state(&control);
        run(&make(&control), &case.script, &control.project, false).await;
        assert_ne!(
            protected_state(&control),
            before,
            "the control run did not do what the attempt tries: {}",
            case.name()
        );
        runs.push((case.name(), ran));
    }
    runs
}

/// A `.git` renamed away to make room for a new one with other hooks.
const GIT_REPLACED: &str = "mv .git .git.old; mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit && \
     cp .git.old/config .git/config";

/// Attempts on paths outside the project: a script and a check on the real file system.
struct Attempt {
    name: &'static str,
    script: String,
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

fn outside_attempts(world: &World) -> Vec<Attempt> {
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
            "through a hard link",
            format!("ln {outside}/secret.txt {project}/hard && echo pwned > {project}/hard"),
            world.outside.join("secret.txt"),
            "outside\n",
        ),
    ]
}

async fn outside_writes_are_blocked(make: fn(&World) -> Sandbox) {
    let count = outside_attempts(&World::new()).len();
    for index in 0..count {
        let world = World::new();
        let attempt = outside_attempts(&world)
            .into_iter()
            .nth(index)
            .expect("an attempt");
        let ran = run(&make(&world), &attempt.script, &world.project, true).await;
        assert!(
            !(attempt.got_through)(),
            "escaped: {} — {}",
            attempt.name,
            ran.text()
        );
        let control = World::new();
        let again = outside_attempts(&control)
            .into_iter()
            .nth(index)
            .expect("an attempt");
        run(&make(&control), &again.script, &control.project, false).await;
        assert!(
            (again.got_through)(),
            "the control run did not do what the attempt tries: {}",
            attempt.name
        );
    }
}

async fn a_loopback_port_is_out_of_reach(make: fn(&World) -> Sandbox) {
    let world = World::new();
    let sandbox = make(&world);
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let ran = run(&sandbox, &connect, &world.project, true).await;
    assert!(!ran.text().contains("connected"), "{}", ran.text());
    let ran = run(&sandbox, &connect, &world.project, false).await;
    assert!(ran.text().contains("connected"), "{}", ran.text());
}

/// The processes whose command line holds `marker`.
fn pids_with(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(marker))
        })
        .filter_map(|entry| entry.file_name().to_string_lossy().parse().ok())
        .collect()
}

/// Each process's `/proc` stat line and command line, for a failure message.
fn describe(pids: &[i32]) -> String {
    pids.iter()
        .map(|pid| {
            let read = |name: &str| {
                std::fs::read(format!("/proc/{pid}/{name}"))
                    .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
                    .unwrap_or_else(|error| error.to_string())
            };
            format!("[{} | {}]", read("stat").trim(), read("cmdline").trim())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn processes_with(marker: &str) -> usize {
    pids_with(marker).len()
}

/// Waits until no process with `marker` in its command line is left, first killing each
/// one found when `kill` is set; else describes the ones left. A process in the middle of
/// exec shows no command line, so the scan is repeated until it finds none. Each process
/// found is watched (and killed) through a pidfd, which turns readable when it has ended.
async fn gone(marker: &str, kill: bool) -> Result<(), String> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    for _ in 0..100 {
        let pids = pids_with(marker);
        if pids.is_empty() {
            return Ok(());
        }
        for pid in pids {
            // SAFETY: pidfd_open only returns a new descriptor (or fails, for a process
            // that already ended), which the OwnedFd then owns and the AsyncFd alone uses.
            #[allow(unsafe_code)]
            let pidfd = unsafe {
                let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0);
                if fd < 0 {
                    continue;
                }
                let fd = OwnedFd::from_raw_fd(i32::try_from(fd).expect("a descriptor"));
                tokio::io::unix::AsyncFd::register(fd).expect("a pidfd can be watched")
            };
            if kill {
                // SAFETY: the signal goes to the process the pidfd holds, one this test's
                // control run started; a process that has ended makes it fail harmlessly.
                #[allow(unsafe_code)]
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        pidfd.get_ref().as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    );
                }
            }
            if tokio::time::timeout(Duration::from_secs(20), pidfd.readable())
                .await
                .is_err()
            {
                return Err(describe(&pids_with(marker)));
            }
        }
    }
    Err(format!(
        "processes keep coming: {}",
        describe(&pids_with(marker))
    ))
}

/// Background jobs, one that starts its own session and one under nohup: none outlives
/// the command once its guard has ended (the control run shows they would).
async fn nothing_outlives_the_command(make: fn(&World) -> Sandbox, seed: u16) {
    let world = World::new();
    let sandbox = make(&world);
    // Unique to this run, so processes of an earlier run cannot count: the process id has a
    // fixed width, so no other run's marker can be a part of this one.
    let marker = format!("{}.{:07}{seed}", 60 + seed % 7, std::process::id());
    let script = format!(
        "(sleep {marker} >/dev/null 2>&1 &) ; setsid sleep {marker} >/dev/null 2>&1 & \
         nohup sleep {marker} >/dev/null 2>&1 & echo started"
    );
    let ran = run(&sandbox, &script, &world.project, true).await;
    assert!(ran.text().contains("started"), "{}", ran.text());
    if let Err(left) = gone(&marker, false).await {
        panic!("a background process outlived its command: {left}");
    }
    let control = run(&sandbox, &script, &world.project, false).await;
    assert!(control.text().contains("started"));
    assert!(
        processes_with(&marker) > 0,
        "the control run left nothing running"
    );
    // The control's processes are no test's business beyond this point.
    if let Err(left) = gone(&marker, true).await {
        panic!("a control process lived on after SIGKILL: {left}");
    }
}

async fn work_inside_the_project_goes_on(make: fn(&World) -> Sandbox) {
    let world = World::new();
    let ran = run(
        &make(&world),
        "echo fine > made.txt && cat .git/config && mkdir -p target/debug && echo o > target/debug/out \
         && git init -q sub && git -C sub status --short",
        &world.project,
        true,
    )
    .await;
    assert!(ran.output.status.success(), "{}", ran.text());
    assert_eq!(
        std::fs::read_to_string(world.project.join("made.txt")).expect("made"),
        "fine\n"
    );
    assert!(ran.text().contains("[core]"));
    assert_eq!(ran.changes, Vec::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_keeps_every_protected_path_as_it_was() {
    let runs = protected_paths_hold(World::bubblewrap).await;
    for (name, ran) in &runs {
        // Blocked as it happened: nothing to put back, and the command was told.
        assert_eq!(ran.changes, Vec::new(), "{name}");
        let text = ran.text();
        assert!(
            [
                "Read-only file system",
                "Device or resource busy",
                "Invalid cross-device link",
                "File exists",
            ]
            .iter()
            .any(|error| text.contains(error)),
            "{name}: {text}"
        );
    }
    eprintln!("bubblewrap held {} protected-path attempts", runs.len());
    assert_eq!(runs.len(), protected_cases().len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_puts_every_protected_path_back_and_says_which() {
    let runs = protected_paths_hold(World::landlock).await;
    for (name, ran) in &runs {
        let path = name
            .split_whitespace()
            .rev()
            .nth(1)
            .expect("a path in the name");
        let top = path.split('/').take(2).collect::<Vec<_>>().join("/");
        assert!(
            ran.changes.iter().all(|change| change.restored.is_ok()),
            "{name}: {:?}",
            ran.changes
        );
        assert!(
            ran.changes.iter().any(|change| {
                let changed = change.path.display().to_string();
                changed.starts_with(&top) || top.starts_with(&changed)
            }),
            "{name}: the report names the path: {:?}",
            ran.changes
        );
    }
    eprintln!("Landlock put back {} protected-path attempts", runs.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_keeps_git_from_being_replaced() {
    let world = World::new();
    let before = protected_state(&world);
    let ran = run(&world.bubblewrap(), GIT_REPLACED, &world.project, true).await;
    assert!(
        ran.text().contains("Device or resource busy"),
        "{}",
        ran.text()
    );
    assert_eq!(protected_state(&world), before);
    assert!(!world.project.join(".git.old").exists());
    let control = World::new();
    run(&control.bubblewrap(), GIT_REPLACED, &control.project, false).await;
    assert!(control.project.join(".git/hooks/pre-commit").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_undoes_a_replaced_git_directory() {
    let world = World::new();
    let before = protected_state(&world);
    let ran = run(&world.landlock(), GIT_REPLACED, &world.project, true).await;
    assert_eq!(protected_state(&world), before, "{:?}", ran.changes);
    assert!(!world.project.join(".git/hooks/pre-commit").exists());
    assert!(
        ran.changes
            .iter()
            .any(|change| change.path == Path::new(".git/hooks/pre-commit")),
        "{:?}",
        ran.changes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_blocks_writes_outside_the_project() {
    outside_writes_are_blocked(World::bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_blocks_writes_outside_the_project() {
    outside_writes_are_blocked(World::landlock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_keeps_the_host_loopback_out_of_reach() {
    a_loopback_port_is_out_of_reach(World::bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_keeps_the_host_loopback_out_of_reach_and_allows_a_listed_port() {
    a_loopback_port_is_out_of_reach(World::landlock).await;
    let world = World::new();
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let open = Sandbox::landlock(world.policy(Network::TcpPorts(vec![port]))).expect("Landlock");
    let ran = run(&open, &connect, &world.project, true).await;
    assert!(ran.text().contains("connected"), "{}", ran.text());

    // The seccomp filter older kernels get instead of Landlock's TCP rules: no IP socket at
    // all, Unix sockets still fine.
    let filtered =
        Sandbox::landlock_with_network_filter(world.policy(Network::Off)).expect("Landlock");
    let ran = run(&filtered, &connect, &world.project, true).await;
    assert!(!ran.text().contains("connected"));
    assert!(ran.text().contains("Permission denied"), "{}", ran.text());
    let unix = "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"ok\"); print(b.recv(2).decode())'";
    let ran = run(&filtered, unix, &world.project, true).await;
    assert_eq!(
        String::from_utf8_lossy(&ran.output.stdout),
        "ok\n",
        "{}",
        ran.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_lets_nothing_outlive_the_command() {
    nothing_outlives_the_command(World::bubblewrap, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_lets_nothing_outlive_the_command() {
    nothing_outlives_the_command(World::landlock, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_lets_work_inside_the_project_go_on() {
    work_inside_the_project_goes_on(World::bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_lets_work_inside_the_project_go_on() {
    work_inside_the_project_goes_on(World::landlock).await;
}

/// Which sandbox a project gets: bubblewrap when `bwrap` is on the PATH (taken on trust
/// until the first command shows it works), else Landlock with a notice saying what is
/// weaker, and none (without a word) when the user switched it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_is_the_announced_fallback_and_off_means_unconfined() {
    let world = World::new();
    let bwrap_dir = bwrap().parent().expect("a directory").to_path_buf();
    let options = |path_dirs: Vec<PathBuf>, enabled: bool| larik_sandbox::SandboxOptions {
        enabled,
        writable_paths: Vec::new(),
        network_allow: Vec::new(),
        temp_dirs: vec![world.scratch.clone()],
        path_dirs,
    };
    let sandbox = Sandbox::configure(&world.project, &options(vec![bwrap_dir], true));
    assert_eq!(sandbox.kind(), SandboxKind::Bubblewrap);
    assert!(sandbox.is_enforcing());
    let ran = run(&sandbox, "echo inside > made.txt", &world.project, true).await;
    assert!(ran.output.status.success(), "{}", ran.text());
    assert_eq!(sandbox.kind(), SandboxKind::Bubblewrap, "it worked");
    assert_eq!(sandbox.take_notices(), Vec::<String>::new());

    let sandbox = Sandbox::configure(&world.project, &options(Vec::new(), true));
    assert_eq!(sandbox.kind(), SandboxKind::Landlock);
    let notices = sandbox.take_notices();
    assert!(
        notices[0].contains("bubblewrap (`bwrap`) is not usable here"),
        "{notices:?}"
    );
    assert_eq!(sandbox.take_notices(), Vec::<String>::new(), "told once");

    // A `bwrap` that cannot build a sandbox (as where user namespaces are off): the first
    // command finds out, runs nothing, and the sandbox falls back; built again, the command
    // runs under Landlock.
    let broken = tempfile::tempdir().expect("temp dir");
    let fake = broken.path().join("bwrap");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'bwrap: no namespaces here' >&2\nexit 1\n",
    )
    .expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let sandbox = Sandbox::configure(&world.project, &options(vec![broken.path().into()], true));
    assert_eq!(sandbox.kind(), SandboxKind::Bubblewrap, "taken on trust");
    let shell = sandbox
        .shell_command("echo ran > trial.txt", &world.project)
        .expect("a command");
    let (mut command, mut guard) = (shell.command, shell.guard);
    let mut child = command.spawn().expect("the fake bwrap starts");
    drop(command);
    let pid = child.id().expect("a pid");
    assert!(
        !guard.started(pid).await,
        "the trial says bubblewrap failed"
    );
    child.wait().await.expect("reaped");
    drop(guard);
    assert!(!world.project.join("trial.txt").exists(), "nothing ran");
    assert_eq!(sandbox.kind(), SandboxKind::Landlock);
    assert_eq!(sandbox.take_notices().len(), 1);
    let ran = run(&sandbox, "echo ran > trial.txt", &world.project, true).await;
    assert!(ran.output.status.success(), "{}", ran.text());
    assert!(world.project.join("trial.txt").exists());
    // Another project's sandbox in this process knows it already.
    let again = Sandbox::configure(&world.scratch, &options(vec![broken.path().into()], true));
    assert_eq!(again.kind(), SandboxKind::Landlock);

    let sandbox = Sandbox::configure(&world.project, &options(Vec::new(), false));
    assert_eq!(sandbox.kind(), SandboxKind::Unconfined);
    assert!(!sandbox.is_enforcing());
    assert_eq!(sandbox.take_notices(), Vec::<String>::new());
}

/// Placeholders a killed Larik left behind (empty, dated at the epoch) are held like any
/// missing path's and removed when the next command ends.
async fn a_left_placeholder_is_cleaned_up(make: fn(&World) -> Sandbox) {
    let world = World::new();
    let stale = world.project.join(".larik");
    std::fs::create_dir(&stale).expect("mkdir");
    std::fs::File::open(&stale)
        .and_then(|dir| dir.set_modified(std::time::SystemTime::UNIX_EPOCH))
        .expect("dated");
    std::fs::write(world.project.join(".mcp.json"), "").expect("an empty file");
    std::fs::File::options()
        .write(true)
        .open(world.project.join(".mcp.json"))
        .and_then(|file| file.set_modified(std::time::SystemTime::UNIX_EPOCH))
        .expect("dated");
    let ran = run(
        &make(&world),
        "echo x > .larik/planted",
        &world.project,
        true,
    )
    .await;
    assert!(!stale.exists(), "{}", ran.text());
    assert!(!world.project.join(".mcp.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_cleans_up_a_left_placeholder() {
    a_left_placeholder_is_cleaned_up(World::bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_cleans_up_a_left_placeholder() {
    a_left_placeholder_is_cleaned_up(World::landlock).await;
}
