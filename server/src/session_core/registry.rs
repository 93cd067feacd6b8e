//! The sessions of one front-end process, by id.
//!
//! A session is registered under the id the editor knows it by (its handle) from the moment
//! its agent starts until its task has stopped the agent (so its session file is complete):
//! a session being closed is still there, marked closing, and cannot be opened again until
//! the close has finished; a session whose agent stopped on its own is dropped on the next
//! lookup and can be opened afresh.
//!
//! A session may continue in another file (`/fork`, `/rewind`, `/resume`): its task then
//! writes a file whose id is not its handle. Looking up that file's id, or the id of any
//! file it wrote before, finds the same session, so an editor that follows the switches can
//! use each new id, and no second agent is started on a file a running session writes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use super::{Command, Wire};
use crate::commands::SlashCommands;
use larik_protocol::sync::locked;

/// What a running session shows of itself, kept current by its task.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// The id of the session file it writes now.
    pub file_id: String,
    /// The ids of the files it wrote before, oldest first.
    pub earlier: Vec<String>,
    /// Its slash commands.
    pub slash: SlashCommands,
}

/// What a session task hands its front end when it starts.
pub struct SessionHandle<W: Wire> {
    /// Where its commands go.
    pub commands: mpsc::UnboundedSender<Command<W>>,
    /// Turns true once the task has stopped its agent and ended.
    pub stopped: watch::Receiver<bool>,
    /// Its view, which the task updates when the session continues elsewhere.
    pub view: Arc<Mutex<SessionView>>,
}

/// A registered session.
struct Live<W: Wire> {
    handle: SessionHandle<W>,
    /// A close is under way.
    closing: bool,
}

/// A running session found by id.
pub struct Found<W: Wire> {
    /// The id it is registered under (its handle), which the id looked up may not be.
    pub handle: String,
    /// Where its commands go.
    pub commands: mpsc::UnboundedSender<Command<W>>,
    /// Its slash commands.
    pub slash: SlashCommands,
    /// The id of the file it writes now.
    pub file_id: String,
}

/// Where a session id stands.
pub enum Lookup<W: Wire> {
    /// Running.
    Running(Found<W>),
    /// Being closed.
    Closing,
    /// Not (or no longer) here.
    Absent,
}

/// The sessions of a front end.
pub struct SessionRegistry<W: Wire> {
    sessions: Mutex<HashMap<String, Live<W>>>,
}

impl<W: Wire> Default for SessionRegistry<W> {
    fn default() -> Self {
        SessionRegistry {
            sessions: Mutex::new(HashMap::new()),
        }
    }
}

/// The handle `id` names: itself when registered, else the session writing file `id`.
fn key_of<W: Wire>(sessions: &HashMap<String, Live<W>>, id: &str) -> Option<String> {
    if sessions.contains_key(id) {
        return Some(id.to_string());
    }
    sessions
        .iter()
        .find(|(_, live)| {
            if *live.handle.stopped.borrow() {
                return false;
            }
            let view = locked(&live.handle.view);
            view.file_id == id || view.earlier.iter().any(|earlier| earlier == id)
        })
        .map(|(key, _)| key.clone())
}

impl<W: Wire> SessionRegistry<W> {
    /// Registers a session task under `id`, the handle its editor knows it by.
    pub fn insert(&self, id: String, handle: SessionHandle<W>) {
        locked(&self.sessions).insert(
            id,
            Live {
                handle,
                closing: false,
            },
        );
    }

    /// Where `id` (a handle, or the file a session writes now) stands; a session whose
    /// agent stopped on its own is dropped.
    pub fn lookup(&self, id: &str) -> Lookup<W> {
        let mut sessions = locked(&self.sessions);
        let Some(key) = key_of(&sessions, id) else {
            return Lookup::Absent;
        };
        let Some(live) = sessions.get(&key) else {
            return Lookup::Absent;
        };
        if *live.handle.stopped.borrow() {
            sessions.remove(&key);
            return Lookup::Absent;
        }
        if live.closing {
            return Lookup::Closing;
        }
        let view = locked(&live.handle.view).clone();
        Lookup::Running(Found {
            handle: key,
            commands: live.handle.commands.clone(),
            slash: view.slash,
            file_id: view.file_id,
        })
    }

    /// The command channel of a running session.
    pub fn commands(&self, id: &str) -> Option<mpsc::UnboundedSender<Command<W>>> {
        match self.lookup(id) {
            Lookup::Running(found) => Some(found.commands),
            Lookup::Closing | Lookup::Absent => None,
        }
    }

    /// Whether session `id` may be resumed by the running session `by` (its handle, or a
    /// file it writes or wrote): `Err` says why not (another running session has it).
    pub fn check_resumable(&self, by: &str, id: &str) -> Result<(), String> {
        let sessions = locked(&self.sessions);
        let own = key_of(&sessions, by);
        match key_of(&sessions, id) {
            Some(key) if Some(&key) != own.as_ref() => Err(format!(
                "session `{id}` is open elsewhere in this editor; close it there first"
            )),
            _ => Ok(()),
        }
    }

    /// Stops session `id` and waits until it has; `false` when there is no such session.
    pub async fn close(&self, id: &str) -> bool {
        let (key, mut stopped) = {
            let mut sessions = locked(&self.sessions);
            let Some(key) = key_of(&sessions, id) else {
                return false;
            };
            let Some(live) = sessions.get_mut(&key) else {
                return false;
            };
            if !live.closing {
                live.closing = true;
                let _ = live.handle.commands.send(Command::Close);
            }
            (key, live.handle.stopped.clone())
        };
        // An error means the task is gone, which is as stopped as it gets.
        let _ = stopped.wait_for(|stopped| *stopped).await;
        let mut sessions = locked(&self.sessions);
        if sessions
            .get(&key)
            .is_some_and(|live| *live.handle.stopped.borrow())
        {
            sessions.remove(&key);
        }
        true
    }

    /// Stops every session and waits until all have.
    pub async fn close_all(&self) {
        let waiting: Vec<watch::Receiver<bool>> = locked(&self.sessions)
            .values_mut()
            .map(|live| {
                if !live.closing {
                    live.closing = true;
                    let _ = live.handle.commands.send(Command::Close);
                }
                live.handle.stopped.clone()
            })
            .collect();
        for mut stopped in waiting {
            let _ = stopped.wait_for(|stopped| *stopped).await;
        }
        locked(&self.sessions).clear();
    }
}
