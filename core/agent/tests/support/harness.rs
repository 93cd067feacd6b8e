//! One agent under test: the fake model server, a project and a data directory of its own,
//! the agent spawned on them, and the waits every test needs (the next event, events up
//! to one that matches, a whole turn). [`Harness::start`] covers the common case;
//! [`Harness::setup`] also takes a working directory inside the project and a conversation
//! to start from, and [`Harness::spawn_agent`] starts a second agent on the same server and
//! project, whose turns [`prompt_agent`] runs. Included with `#[path]` next to
//! `fake_model.rs`.

#![allow(dead_code)] // each test file uses a different part of the harness

use std::path::PathBuf;
use std::time::Duration;

use larik_agent::{AgentConfig, AgentHandle};
use larik_protocol::{Event, Message, Op, PermissionDecision, StopReason};
use larik_session::SessionStore;
use larik_testkit::{FakeModelServer, RecordedRequest};
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
    /// The project directory.
    pub project: TempDir,
    /// The data directory the session file is written under.
    pub data: TempDir,
    /// The agent's working directory: the project or a directory inside it, canonical.
    pub cwd: PathBuf,
    /// The session file the agent writes.
    pub session_file: PathBuf,
    /// The running agent.
    pub agent: AgentHandle,
}

/// How to start a [`Harness`]: the model, the project's files, the working directory inside
/// the project and the conversation to start from.
pub struct Setup<'a> {
    model: &'a str,
    files: &'a [(&'a str, &'a str)],
    cwd: Option<&'a str>,
    history: Vec<Message>,
}

impl<'a> Setup<'a> {
    /// The project holds `files` (path relative to the project, text); parent directories
    /// are made as needed.
    pub fn files(mut self, files: &'a [(&'a str, &'a str)]) -> Self {
        self.files = files;
        self
    }

    /// The agent works in `dir`, relative to the project, instead of the project itself.
    pub fn cwd(mut self, dir: &'a str) -> Self {
        self.cwd = Some(dir);
        self
    }

    /// The agent starts from `history`, as one resumed from a session file would.
    pub fn history(mut self, history: Vec<Message>) -> Self {
        self.history = history;
        self
    }

    /// Starts the server and the agent, its config adjusted by `configure` first.
    pub async fn start(self, configure: impl FnOnce(&mut AgentConfig)) -> Harness {
        let server = FakeModelServer::start().await;
        let project = tempfile::tempdir().expect("project");
        let data = tempfile::tempdir().expect("data");
        for (name, text) in self.files {
            let path = project.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("project directories");
            }
            std::fs::write(path, text).expect("project file");
        }
        let dir = project.path().join(self.cwd.unwrap_or_default());
        std::fs::create_dir_all(&dir).expect("working directory");
        let cwd = dir.canonicalize().expect("cwd");
        let mut config = fake_model::config_for(&server, cwd.clone(), self.model);
        configure(&mut config);
        let writer = fake_model::new_session(data.path(), cwd.clone(), self.model);
        let session_file = writer.path().to_path_buf();
        let agent = fake_model::spawn(config, writer, self.history);
        Harness {
            server,
            project,
            data,
            cwd,
            session_file,
            agent,
        }
    }
}

impl Harness {
    /// An agent on `model` in a project holding `files` (relative path, text), its config
    /// adjusted by `configure` before it starts.
    pub async fn start(
        model: &str,
        files: &[(&str, &str)],
        configure: impl FnOnce(&mut AgentConfig),
    ) -> Harness {
        Harness::setup(model).files(files).start(configure).await
    }

    /// A setup for an agent on `model` in an empty project, to be changed before
    /// [`Setup::start`].
    pub fn setup(model: &str) -> Setup<'_> {
        Setup {
            model,
            files: &[],
            cwd: None,
            history: Vec::new(),
        }
    }

    /// Spawns another agent on this server in the same working directory: on `model`,
    /// starting from `history`, writing a new session file in the data directory, its
    /// config adjusted by `configure`. [`prompt_agent`] runs its turns.
    pub fn spawn_agent(
        &self,
        model: &str,
        history: Vec<Message>,
        configure: impl FnOnce(&mut AgentConfig),
    ) -> AgentHandle {
        let mut config = fake_model::config_for(&self.server, self.cwd.clone(), model);
        configure(&mut config);
        let writer = fake_model::new_session(self.data.path(), self.cwd.clone(), model);
        fake_model::spawn(config, writer, history)
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
        next_event(&mut self.agent).await
    }

    /// The next event, or `None` once the agent has stopped and every event was read.
    pub async fn next_unless_stopped(&mut self) -> Option<Event> {
        tokio::time::timeout(WAIT, self.agent.events.recv())
            .await
            .expect("an event arrives or the agent stops")
    }

    /// Events until one matches, returned with everything before it.
    pub async fn until(&mut self, wanted: impl Fn(&Event) -> bool) -> Vec<Event> {
        events_until(&mut self.agent, wanted).await
    }

    /// Events up to the end of the running turn, and its stop reason.
    pub async fn turn_complete(&mut self) -> (Vec<Event>, StopReason) {
        turn_events(&mut self.agent).await
    }

    /// Events up to the next permission request.
    pub async fn asked(&mut self) -> Vec<Event> {
        self.until(|event| matches!(event, Event::PermissionRequest { .. }))
            .await
    }

    /// Answers the permission request among `events` with `decision`.
    pub fn reply(&self, events: &[Event], decision: PermissionDecision) {
        self.send(Op::PermissionReply {
            request_id: permission_request(events).expect("a permission request"),
            decision,
        });
    }

    /// Sends a prompt and waits for its turn to end.
    pub async fn prompt(&mut self, text: &str) -> (Vec<Event>, StopReason) {
        prompt_agent(&mut self.agent, text).await
    }

    /// The session file's messages, read back from disk.
    pub fn saved_messages(&self) -> Vec<Message> {
        SessionStore::new(self.data.path())
            .load(&self.session_file)
            .expect("load")
            .messages
    }

    /// The requests for answers, without the model descriptions some providers ask for.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|request| !request.is_model_info())
            .collect()
    }
}

/// The next event from `agent`.
async fn next_event(agent: &mut AgentHandle) -> Event {
    tokio::time::timeout(WAIT, agent.events.recv())
        .await
        .expect("an event arrives")
        .expect("the agent is running")
}

/// Events from `agent` until one matches, returned with everything before it.
async fn events_until(agent: &mut AgentHandle, wanted: impl Fn(&Event) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    loop {
        let event = next_event(agent).await;
        let done = wanted(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// Events from `agent` up to the end of its running turn, and the turn's stop reason.
async fn turn_events(agent: &mut AgentHandle) -> (Vec<Event>, StopReason) {
    let events = events_until(agent, |event| matches!(event, Event::TurnComplete { .. })).await;
    let Some(Event::TurnComplete { stop_reason, .. }) = events.last() else {
        unreachable!("events_until returns the matching event last");
    };
    let stop = *stop_reason;
    (events, stop)
}

/// Sends a prompt to `agent` and waits for its turn to end.
pub async fn prompt_agent(agent: &mut AgentHandle, text: &str) -> (Vec<Event>, StopReason) {
    agent
        .ops
        .send(Op::user_text(text))
        .expect("agent is running");
    turn_events(agent).await
}

/// The id of the first permission request among `events`.
pub fn permission_request(events: &[Event]) -> Option<String> {
    events.iter().find_map(|event| match event {
        Event::PermissionRequest { request_id, .. } => Some(request_id.clone()),
        _ => None,
    })
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
