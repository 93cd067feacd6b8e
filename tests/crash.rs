//! Crash safety: `larik -p` killed with SIGKILL at seeded random points of scripted
//! sessions, then checked the way a user would find things afterwards.
//!
//! Each run sets up a project and a first turn that edits `a.txt` (v0 → v1), then starts a
//! second process on the same session and kills it at a random moment of its life: while
//! it starts, streams the answer, writes `a.txt` (v1 → v2) and takes its checkpoint, runs a
//! sandboxed command, appends to the session file, or compacts the conversation; or kills
//! `larik config set` while it rewrites the personal `config.json`; or kills a turn whose
//! subagent works in a git worktree of its own (made, written, committed, kept). The
//! moment is drawn from the length of an uninterrupted run of the same kind, measured first.
//! Afterwards:
//! - every line of the session file but a torn last one is whole JSON, and the session
//!   still holds every message it held before the killed process started;
//! - `a.txt` holds v1 or v2, never a mix or nothing; `config.json` is whole JSON with its
//!   other keys, and the key set or not;
//! - `/undo` runs and restores: v2 goes back to v1; v1 goes back to v0 (or stays, when the
//!   kill fell between the checkpoint and the write);
//! - the user's checkout is not locked or broken (`git status` runs, also where the kill
//!   left the sandbox's placeholders, which the next start removes), and the next turn resumes the
//!   session, answers, and loses nothing: no lock or torn line blocks it; after a killed
//!   worktree subagent, the next turn's subagent gets a worktree of its own, kept for review.
//!
//! `LARIK_CRASH_RUNS` sets how many runs (default 60) and `LARIK_CRASH_SEED` the first
//! seed; the long version is `LARIK_CRASH_RUNS=300 cargo nextest run -p larik-server
//! --test crash` (see docs/reliability.md).

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use larik_protocol::Message;
use larik_session::{LoadedSession, SessionStore, Shown};
use larik_testkit::git::git;
use larik_testkit::{FakeModelServer, Reply, turn};
use serde_json::json;
use tempfile::TempDir;
use tokio::process::Command;

/// How long any one `larik` process may take before the test calls it hung.
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// What the killed process was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Victim {
    /// A turn that reads and rewrites `a.txt`, runs a sandboxed command and answers.
    EditAndRun,
    /// `/compact`: the model summarises and the session records the compaction.
    Compact,
    /// `larik config set`: a key written into the personal `config.json`.
    ConfigSet,
    /// A subagent in a worktree of its own: the worktree made, a file written there,
    /// committed and kept for review.
    Worktree,
}

/// The replies of a turn that starts a subagent in a worktree: the parent's task call, the
/// subagent's write and answer, the parent's answer.
fn worktree_replies(file: &str) -> Vec<Reply> {
    vec![
        turn()
            .tool_call(
                "t1",
                "task",
                json!({
                    "description": "write a note",
                    "prompt": format!("write {file}"),
                    "subagent_type": "general-purpose",
                    "isolation": "worktree"
                }),
            )
            .into(),
        turn()
            .tool_call(
                "sw",
                "write",
                json!({"file_path": file, "content": "from the subagent\n"}),
            )
            .into(),
        turn().text("Wrote it.").into(),
        turn()
            .text("The subagent wrote a note in its worktree.")
            .into(),
    ]
}

impl Victim {
    fn replies(self) -> Vec<Reply> {
        match self {
            Victim::EditAndRun => vec![
                turn()
                    .tool_call("r2", "read", json!({"file_path": "a.txt"}))
                    .into(),
                turn()
                    .text("Rewriting a.txt.")
                    .tool_call(
                        "w2",
                        "write",
                        json!({"file_path": "a.txt", "content": "v2\n"}),
                    )
                    .tool_call("b2", "bash", json!({"command": "echo ran"}))
                    .into(),
                turn().text("Done: a.txt is v2.").into(),
            ],
            Victim::Compact => vec![
                turn()
                    .text("Summary: a.txt was rewritten from v0 to v1 at the user's request.")
                    .into(),
            ],
            Victim::ConfigSet => Vec::new(),
            Victim::Worktree => worktree_replies("note.txt"),
        }
    }

    fn args(self) -> Vec<&'static str> {
        match self {
            Victim::EditAndRun => vec![
                "-c",
                "-p",
                "rewrite a.txt again and run echo",
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                "Bash(echo:*)",
            ],
            Victim::Compact => vec!["-c", "-p", "/compact"],
            Victim::ConfigSet => vec!["config", "set", "permissions.defaultMode", "acceptEdits"],
            Victim::Worktree => vec![
                "-c",
                "-p",
                "have a subagent write a note",
                "--permission-mode",
                "acceptEdits",
            ],
        }
    }
}

/// A small seeded generator (xorshift64*), so a failing run can be repeated by its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A fraction in [0, 1).
    fn fraction(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One project with its own data directory.
struct Project {
    project: TempDir,
    data: TempDir,
}

impl Project {
    fn new() -> Self {
        let project = tempfile::tempdir().expect("project dir");
        std::fs::write(project.path().join("a.txt"), "v0\n").expect("write a.txt");
        // A repository, as most projects are, so subagents can have worktrees.
        git(project.path(), &["init", "-q", "-b", "main"]);
        git(project.path(), &["add", "a.txt"]);
        git(project.path(), &["commit", "-q", "-m", "start"]);
        let data = tempfile::tempdir().expect("data dir");
        let config = data.path().join(".config/larik/config.json");
        std::fs::create_dir_all(config.parent().expect("config dir")).expect("mkdir");
        let settings = json!({"permissions": {"allow": ["Bash(ls:*)"]}, "cleanupPeriodDays": 60});
        std::fs::write(&config, settings.to_string()).expect("write config.json");
        Project { project, data }
    }

    /// How many subagent worktrees are kept for review.
    fn kept_worktrees(&self) -> usize {
        larik_subagents::Worktrees::new(self.data.path().join("share/larik/worktrees"))
            .list(&self.cwd())
            .expect("worktrees list")
            .len()
    }

    /// The personal `config.json`, which must always parse and keep the keys it had.
    fn config(&self, what: &str) -> serde_json::Value {
        let path = self.data.path().join(".config/larik/config.json");
        let text = std::fs::read(&path).expect("config.json exists");
        let config: serde_json::Value = serde_json::from_slice(&text)
            .unwrap_or_else(|error| panic!("{what}: config.json is not whole JSON ({error})"));
        assert_eq!(
            config["permissions"]["allow"],
            json!(["Bash(ls:*)"]),
            "{what}"
        );
        assert_eq!(config["cleanupPeriodDays"], 60, "{what}");
        config
    }

    fn cwd(&self) -> PathBuf {
        self.project.path().canonicalize().expect("canonical cwd")
    }

    fn a_txt(&self) -> String {
        std::fs::read_to_string(self.cwd().join("a.txt")).expect("a.txt exists")
    }

    fn store(&self) -> SessionStore {
        SessionStore::new(self.data.path().join("share/larik"))
    }

    /// The project's one session file.
    fn session_path(&self) -> PathBuf {
        let sessions = self.store().list(&self.cwd()).expect("list sessions");
        assert_eq!(sessions.len(), 1, "one session: {sessions:?}");
        self.store()
            .find(&self.cwd(), &sessions[0].id)
            .expect("session file")
    }

    fn load(&self) -> LoadedSession {
        self.store()
            .load(&self.session_path())
            .expect("the session loads")
    }

    /// `larik` with the default configuration (sandbox on, language servers off as no
    /// file here has one) against a fresh fake model server answering `replies`.
    async fn larik(&self, replies: Vec<Reply>) -> (Command, FakeModelServer) {
        let server = FakeModelServer::start().await;
        for reply in replies {
            server.enqueue(reply);
        }
        let mut command = Command::new(env!("CARGO_BIN_EXE_larik"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.data.path())
            .env("XDG_DATA_HOME", self.data.path().join("share"))
            .env("ANTHROPIC_API_KEY", "test-key")
            .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
            .env("LARIK_LSP", "off")
            .current_dir(self.project.path())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        (command, server)
    }

    async fn run(&self, args: &[&str], replies: Vec<Reply>) -> Output {
        let (mut command, _server) = self.larik(replies).await;
        let output = tokio::time::timeout(PROCESS_LIMIT, command.args(args).output())
            .await
            .expect("larik finishes")
            .expect("larik starts");
        assert!(
            output.status.success(),
            "larik {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        );
        output
    }

    /// The first turn, run to its end: `a.txt` goes from v0 to v1.
    async fn first_turn(&self) {
        let replies = vec![
            turn()
                .tool_call("r1", "read", json!({"file_path": "a.txt"}))
                .into(),
            turn()
                .tool_call(
                    "w1",
                    "write",
                    json!({"file_path": "a.txt", "content": "v1\n"}),
                )
                .into(),
            turn().text("a.txt is v1.").into(),
        ];
        self.run(
            &[
                "-p",
                "write v1 to a.txt",
                "--permission-mode",
                "acceptEdits",
            ],
            replies,
        )
        .await;
        assert_eq!(self.a_txt(), "v1\n");
    }

    /// Runs `victim` and kills it with SIGKILL `after` its start (or lets it end, when it
    /// ends sooner); how long it ran and whether it was killed.
    async fn kill_after(&self, victim: Victim, after: Duration) -> (Duration, bool) {
        let (mut command, _server) = self.larik(victim.replies()).await;
        let started = Instant::now();
        let mut child = command.args(victim.args()).spawn().expect("larik starts");
        let killed = tokio::select! {
            status = child.wait() => {
                status.expect("larik runs");
                false
            }
            () = tokio::time::sleep(after) => {
                // SIGKILL: nothing in the process gets to clean up.
                child.start_kill().expect("kill larik");
                tokio::time::timeout(PROCESS_LIMIT, child.wait())
                    .await
                    .expect("a killed larik is reaped")
                    .expect("wait");
                true
            }
        };
        (started.elapsed(), killed)
    }
}

/// The messages a replay shows, across clears and compactions.
fn shown_messages(session: &LoadedSession) -> Vec<Message> {
    session
        .replay()
        .into_iter()
        .filter_map(|shown| match shown {
            Shown::Message(message) => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Every line of `path` is whole JSON, but a last line without its newline.
fn assert_lines_whole(path: &Path, what: &str) {
    let text = std::fs::read(path).expect("session file");
    let ends_clean = text.ends_with(b"\n");
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let whole = lines.len() - 1;
    for (index, line) in lines.iter().enumerate() {
        if line.is_empty() || (index == whole && !ends_clean) {
            continue;
        }
        assert!(
            serde_json::from_slice::<serde_json::Value>(line).is_ok(),
            "{what}: line {} of {} is not whole JSON: {}",
            index + 1,
            path.display(),
            String::from_utf8_lossy(line)
        );
    }
}

/// How long an uninterrupted run of `victim` takes here: the span the kills are drawn from.
async fn calibrate(victim: Victim) -> Duration {
    let project = Project::new();
    project.first_turn().await;
    let (took, _) = project.kill_after(victim, PROCESS_LIMIT).await;
    let session = project.load();
    match victim {
        Victim::EditAndRun => assert_eq!(project.a_txt(), "v2\n", "the uninterrupted turn ran"),
        Victim::Compact => assert!(
            session.starts_with_summary(),
            "the uninterrupted /compact ran"
        ),
        Victim::ConfigSet => assert_eq!(
            project.config("calibration")["permissions"]["defaultMode"],
            "acceptEdits"
        ),
        Victim::Worktree => assert_eq!(project.kept_worktrees(), 1, "one kept worktree"),
    }
    took
}

/// What a run found after the kill.
#[derive(Debug, Default, Clone, Copy)]
struct Found {
    /// The process was killed before it ended.
    killed: bool,
    /// The session file ended in a torn line.
    torn: bool,
    /// `a.txt` held v2: the killed turn's write had happened.
    written: bool,
    /// The killed process left sandbox placeholders in the project.
    placeholders: bool,
}

/// The sandbox's placeholders (entries dated at the epoch) in the project and its `.git`.
fn placeholders(root: &Path) -> Vec<PathBuf> {
    [root.to_path_buf(), root.join(".git")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("list").flatten())
        .filter(|entry| {
            entry
                .metadata()
                .and_then(|meta| meta.modified())
                .is_ok_and(|time| time == std::time::SystemTime::UNIX_EPOCH)
        })
        .map(|entry| entry.path())
        .collect()
}

/// One run: a first turn, a killed second process, then the checks and the recovery.
async fn crash_run(seed: u64, victim: Victim, span: Duration) -> Found {
    let mut rng = Rng::new(seed);
    let project = Project::new();
    project.first_turn().await;
    let before = shown_messages(&project.load());

    // Anywhere in the run, and a little past its usual end.
    let after = span.mul_f64(rng.fraction() * 1.1);
    let (ran, killed) = project.kill_after(victim, after).await;
    let what = format!("seed {seed}, {victim:?} killed after {after:?} (ran {ran:?})");

    let left = !placeholders(&project.cwd()).is_empty();
    let path = project.session_path();
    assert_lines_whole(&path, &what);
    let torn = !std::fs::read(&path).expect("session file").ends_with(b"\n");
    let survived = project.load();
    let kept = shown_messages(&survived);
    assert!(
        kept.len() >= before.len() && kept[..before.len()] == before[..],
        "{what}: messages written before the process started were lost"
    );
    let mode = &project.config(&what)["permissions"]["defaultMode"];
    assert!(
        mode.is_null() || mode == "acceptEdits",
        "{what}: defaultMode is {mode}"
    );
    let content = project.a_txt();
    assert!(
        content == "v1\n" || content == "v2\n",
        "{what}: a.txt holds {content:?}"
    );

    let output = project.run(&["-c", "-p", "/undo"], Vec::new()).await;
    let undone = project.a_txt();
    match content.as_str() {
        "v2\n" => assert_eq!(undone, "v1\n", "{what}: /undo after v2: {output:?}"),
        _ => assert!(
            undone == "v0\n" || undone == "v1\n",
            "{what}: /undo after v1 left {undone:?}"
        ),
    }

    // The user's checkout is not left locked or broken.
    let status = std::process::Command::new("git")
        .args(["status", "--short"])
        .current_dir(project.cwd())
        .output()
        .expect("git runs");
    assert!(
        status.status.success(),
        "{what}: git status in the user's checkout: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    // The next turn; after a killed worktree subagent, another one, which must find no
    // lock or half-made worktree in its way.
    let (prompt, replies, answer) = if victim == Victim::Worktree {
        let answer = "The subagent wrote a note in its worktree.";
        ("again", worktree_replies("second.txt"), answer)
    } else {
        (
            "go on",
            vec![turn().text("Still here.").into()],
            "Still here.",
        )
    };
    let kept_before = project.kept_worktrees();
    let output = project
        .run(
            &[
                "-c",
                "-p",
                prompt,
                "--output-format",
                "json",
                "--permission-mode",
                "acceptEdits",
            ],
            replies,
        )
        .await;
    let result: serde_json::Value =
        serde_json::from_slice(output.stdout.trim_ascii_end()).expect("a JSON result");
    assert_eq!(result["result"], answer, "{what}");
    if victim == Victim::Worktree {
        assert_eq!(
            project.kept_worktrees(),
            kept_before + 1,
            "{what}: the new worktree is kept"
        );
        project.run(&["worktrees"], Vec::new()).await;
    }
    let resumed = shown_messages(&project.load());
    assert!(
        resumed.len() > kept.len() && resumed[..kept.len()] == kept[..],
        "{what}: resuming lost messages the killed process had written"
    );
    assert_eq!(
        placeholders(&project.cwd()),
        Vec::<PathBuf>::new(),
        "{what}: placeholders outlived the next run"
    );
    Found {
        killed,
        torn,
        written: content == "v2\n",
        placeholders: left,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_edits_checkpoints_compactions_and_config_writes_survive_sigkill_at_random_points()
{
    let runs: u64 = std::env::var("LARIK_CRASH_RUNS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(60);
    let first_seed: u64 = std::env::var("LARIK_CRASH_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    // The kills are to land in the real sandbox: without bubblewrap Larik would fall back
    // to Landlock, which makes no placeholders, and half of what is checked would not be.
    let bubblewrap = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .status();
    assert!(
        bubblewrap.as_ref().is_ok_and(|status| status.success()),
        "bubblewrap runs here (tests/run installs it): {bubblewrap:?}"
    );
    let spans = [
        (Victim::EditAndRun, calibrate(Victim::EditAndRun).await),
        (Victim::Compact, calibrate(Victim::Compact).await),
        (Victim::ConfigSet, calibrate(Victim::ConfigSet).await),
        (Victim::Worktree, calibrate(Victim::Worktree).await),
    ];
    // Two runs at a time: each is a few short processes.
    let mut found = Vec::new();
    let mut pending = Vec::new();
    for seed in first_seed..first_seed + runs {
        let (victim, span) = spans[(seed % 4) as usize];
        pending.push(tokio::spawn(crash_run(seed, victim, span)));
        if pending.len() == 2 || seed + 1 == first_seed + runs {
            for run in pending.drain(..) {
                found.push(run.await.expect("the run's checks hold"));
            }
        }
    }
    let count = |test: fn(&Found) -> bool| found.iter().filter(|f| test(f)).count();
    eprintln!(
        "{} runs: {} killed before their end ({} with a torn last line, {} after the write, {} leaving sandbox placeholders), spans {spans:?}",
        found.len(),
        count(|f| f.killed),
        count(|f| f.torn),
        count(|f| f.killed && f.written),
        count(|f| f.placeholders)
    );
    // Kills are drawn from the whole span, so nearly all land before the end; none would
    // mean the test exercised nothing.
    assert!(count(|f| f.killed) > 0, "no run was killed before it ended");
}
