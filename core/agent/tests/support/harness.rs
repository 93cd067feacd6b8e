//! One agent under test: the fake model server, a project and a data directory of its own,
//! the agent spawned on them, and the waits every test needs (the next event, events up
//! to one that matches, a whole turn). Included with `#[path]` next to `fake_model.rs`.

use std::path::PathBuf;
use std::time::Duration;

use larik_agent::{AgentConfig, AgentHandle};
use larik_protocol::{Event, Message, Op, StopReason};
use larik_session::SessionStore;
use larik_testkit::FakeModelServer;
use tempfile::TempDir;

use crate::fake_model;

/// How long any one event may take; generous, since a test waits on the event itself.
pub const WAIT: Duration = Duration::from_secs(30);

/// The model most cases run on.
pub const CLAUDE: &str = "anthropic/claude-sonnet-4-5";

/// An agent with its fake model server, project and data directory.
pub struct Harness {
    /// The fake model server.
    pub server: FakeModelServer,
    /// The project directory (the agent's working directory, canonical).
    pub project: TempDir,
    /// The data directory the session file is written under.
    pub data: TempDir,
    /// The running agent.
    pub agent: AgentHandle,
}

impl Harness {
    /// An agent on `model` in a project holding `files` (relative path, text), its config
    /// adjusted by `configure` before it starts.
    pub async fn start(
        model: &str,
        files: &[(&str, &str)],
        configure: impl FnOnce(&mut AgentConfig),
    ) -> Harness {
        let server = FakeModelServer::start().await;
        let project = tempfile::tempdir().expect("project");
        let data = tempfile::tempdir().expect("data");
        for (name, text) in files {
            let path = project.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("project directories");
            }
            std::fs::write(path, text).expect("project file");
        }
        let cwd = project.path().canonicalize().expect("cwd");
        let mut config = fake_model::config_for(&server, cwd.clone(), model);
        configure(&mut config);
        let writer = fake_model::new_session(data.path(), cwd, model);
        let agent = fake_model::spawn(config, writer, Vec::new());
        Harness {
            server,
            project,
            data,
            agent,
        }
    }

    /// The path of `name` in the project.
    pub fn path(&self, name: &str) -> PathBuf {
        self.project.path().join(name)
    }

    /// Sends an op.
    pub fn send(&self, op: Op) {
        self.agent.ops.send(op).expect("agent is running");
    }

    /// The next event.
    pub async fn next(&mut self) -> Event {
        tokio::time::timeout(WAIT, self.agent.events.recv())
            .await
            .expect("an event arrives")
            .expect("the agent is running")
    }

    /// Events until one matches, returned with everything before it.
    pub async fn until(&mut self, wanted: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut seen = Vec::new();
        loop {
            let event = self.next().await;
            let done = wanted(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }

    /// Events up to the end of the running turn, and its stop reason.
    pub async fn turn_complete(&mut self) -> (Vec<Event>, StopReason) {
        let events = self
            .until(|event| matches!(event, Event::TurnComplete { .. }))
            .await;
        let Some(Event::TurnComplete { stop_reason, .. }) = events.last() else {
            unreachable!("until returns the matching event last");
        };
        let stop = *stop_reason;
        (events, stop)
    }

    /// Sends a prompt and waits for its turn to end.
    pub async fn prompt(&mut self, text: &str) -> (Vec<Event>, StopReason) {
        self.send(Op::user_text(text));
        self.turn_complete().await
    }

    /// The session file's messages, read back from disk.
    pub fn saved_messages(&self) -> Vec<Message> {
        let store = SessionStore::new(self.data.path());
        let cwd = self.project.path().canonicalize().expect("cwd");
        let latest = store.latest(&cwd).expect("list").expect("a session");
        store.load(&latest.path).expect("load").messages
    }
}

/// The notices among `events`.
pub fn notices(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect()
}
