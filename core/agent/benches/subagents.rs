//! Benchmarks of subagents: the time from the parent's answer that asks for a `task` (its
//! `message_complete`, as the front end receives it) to the child's first model request
//! arriving at the model server, in the default configuration (the sandbox a user gets,
//! the default permission mode, a project with an `AGENTS.md`); and the time to make a
//! git worktree for an isolated child and remove it again (the child changed nothing) in a
//! repository of 10,000 files, with `git worktree add` + `git worktree remove` beside it
//! for reference. Run with `cargo bench -p larik-agent --bench subagents`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use larik_protocol::{Event, Op};
use larik_subagents::{Finished, RoleSource, Roles, TaskTool, Worktrees, builtins};
use larik_testkit::bench::{Samples, within};
use larik_testkit::git::git;
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;

#[path = "../tests/support/fake_model.rs"]
mod fake_model;

const SPAWNS: usize = 30;
const WORKTREE_RUNS: usize = 10;
const FILES: usize = 10_000;
const CLAUDE: &str = "anthropic/claude-sonnet-4-5";

struct NoRoles;

impl RoleSource for NoRoles {
    fn roles(&self) -> Roles {
        Roles::default()
    }
}

fn from_child(request: &larik_testkit::RecordedRequest) -> bool {
    request.body["system"]
        .to_string()
        .contains("You are a subagent")
}

async fn spawn_to_first_request() -> (Samples, &'static str) {
    let server = FakeModelServer::start().await;
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    let cwd = project.path().canonicalize().expect("cwd");
    std::fs::write(cwd.join("AGENTS.md"), "Run the tests before you finish.\n").expect("AGENTS");
    let mut config = fake_model::config_for(&server, cwd.clone(), CLAUDE);
    let (sandbox, kind) = fake_model::user_sandbox(&cwd, vec![PathBuf::from("/tmp")]);
    config.sandbox = Arc::new(sandbox);
    let definitions = builtins()
        .into_iter()
        .map(|definition| (definition.name.clone(), definition))
        .collect();
    config.tools.register(Arc::new(TaskTool::new(
        definitions,
        Arc::new(NoRoles),
        1,
        Worktrees::new(data.path().join("worktrees")),
    )));
    let writer = fake_model::new_session(data.path(), cwd, CLAUDE);
    let mut agent = fake_model::spawn(config, writer, Vec::new());

    let mut samples = Samples::new();
    for run in 0..SPAWNS {
        server.enqueue_matching(
            |request| !from_child(request),
            turn().tool_call(
                format!("t{run}"),
                "task",
                json!({"description": "look", "prompt": format!("Look {run}."), "subagent_type": "explore"}),
            ),
        );
        server.enqueue_matching(from_child, turn().text("Looked."));
        server.enqueue_matching(|request| !from_child(request), turn().text("Done."));
        agent.ops.send(Op::user_text("go")).expect("agent runs");
        let mut asked_at = None;
        loop {
            match agent.events.recv().await.expect("event") {
                Event::MessageComplete { .. } if asked_at.is_none() => {
                    asked_at = Some(Instant::now());
                }
                Event::TurnComplete { .. } => break,
                _ => {}
            }
        }
        let asked_at = asked_at.expect("the parent answered");
        let child = server
            .requests()
            .into_iter()
            .rev()
            .find(from_child)
            .expect("the child's request");
        samples.push(child.received.saturating_duration_since(asked_at));
    }
    server.assert_no_violations();
    (samples, kind)
}

/// A repository of [`FILES`] small files in 100 directories, committed, under `base`.
fn big_repository(base: &Path) -> tempfile::TempDir {
    let repo = tempfile::tempdir_in(base).expect("repo");
    for dir in 0..100 {
        let dir_path = repo.path().join(format!("module{dir:03}"));
        std::fs::create_dir(&dir_path).expect("dir");
        for file in 0..FILES / 100 {
            std::fs::write(
                dir_path.join(format!("file{file:03}.rs")),
                format!("pub fn f{dir}_{file}() -> u32 {{ {file} }}\n"),
            )
            .expect("file");
        }
    }
    git(repo.path(), &["init", "-q", "-b", "main"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-qm", "files"]);
    repo
}

fn worktree_round_trips(repo: &Path, base: &Path) -> (Samples, Samples) {
    let store = tempfile::tempdir_in(base).expect("store");
    let worktrees = Worktrees::new(store.path());
    let mut larik = Samples::new();
    for _ in 0..WORKTREE_RUNS {
        let started = Instant::now();
        let created = worktrees
            .create(repo, "bench")
            .expect("create")
            .expect("a repository");
        let finished = worktrees.finish(created, "bench").expect("finish");
        larik.push(started.elapsed());
        assert_eq!(finished, Finished::Removed);
    }
    let mut cli = Samples::new();
    for run in 0..WORKTREE_RUNS {
        let path = store.path().join(format!("cli-{run}"));
        let path = path.to_string_lossy().into_owned();
        let branch = format!("cli-{run}");
        let started = Instant::now();
        git(repo, &["worktree", "add", "-q", "-b", &branch, &path]);
        git(repo, &["worktree", "remove", &path]);
        git(repo, &["branch", "-q", "-D", &branch]);
        cli.push(started.elapsed());
    }
    (larik, cli)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (spawns, sandbox) = runtime.block_on(spawn_to_first_request());
    println!("Commands ran in: {sandbox}.");
    println!("| subagent | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!("{}", spawns.row("parent's answer → child's first request"));
    within(
        "child spawn → first model request (median)",
        spawns.median(),
        5.0,
    );

    // The disk the temp directory is on, as a user's data directory would be, and memory
    // (tmpfs), which shows what is Larik's and what is the file system's.
    let mut bases = vec![(std::env::temp_dir(), "temp dir (disk)")];
    if Path::new("/dev/shm").is_dir() {
        bases.push((PathBuf::from("/dev/shm"), "/dev/shm (tmpfs)"));
    }
    for (base, name) in bases {
        let repo = big_repository(&base);
        let (larik, cli) = worktree_round_trips(repo.path(), &base);
        println!();
        println!("| worktree, {FILES} files, {name} | runs | median | p90 | max |");
        println!("|---|---|---|---|---|");
        println!("{}", larik.row("Larik: create + remove"));
        println!("{}", cli.row("git worktree add + remove (CLI)"));
        within(
            &format!("worktree create + remove on 10,000 files, {name} (median)"),
            larik.median(),
            300.0,
        );
    }
}
