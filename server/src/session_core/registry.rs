//! The sessions of one front-end process, by id.
//!
//! A session is registered from the moment its agent starts until its task has stopped
//! the agent (so its session file is complete): a session being closed is still there,
//! marked closing, and cannot be opened again until the close has finished; a session
//! whose agent stopped on its own is dropped on the next lookup and can be opened afresh.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::{mpsc, watch};

use super::{Command, Wire};
use crate::commands::SlashCommands;
use larik_protocol::sync::locked;

/// A registered session.
struct Live<W: Wire> {
    commands: mpsc::UnboundedSender<Command<W>>,
    /// Turns true once the session task has stopped its agent and ended.
    stopped: watch::Receiver<bool>,
    /// A close is under way.
    closing: bool,
    /// Its slash commands.
    slash: SlashCommands,
}

/// Where a session id stands.
pub enum Lookup<W: Wire> {
    /// Running: where its commands go, and its slash commands.
    Running(mpsc::UnboundedSender<Command<W>>, SlashCommands),
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

impl<W: Wire> SessionRegistry<W> {
    /// Registers a session task.
    pub fn insert(
        &self,
        id: String,
        commands: mpsc::UnboundedSender<Command<W>>,
        stopped: watch::Receiver<bool>,
        slash: SlashCommands,
    ) {
        locked(&self.sessions).insert(
            id,
            Live {
                commands,
                stopped,
                closing: false,
                slash,
            },
        );
    }

    /// Where `id` stands; a session whose agent stopped on its own is dropped.
    pub fn lookup(&self, id: &str) -> Lookup<W> {
        let mut sessions = locked(&self.sessions);
        match sessions.get(id) {
            None => Lookup::Absent,
            Some(live) if *live.stopped.borrow() => {
                sessions.remove(id);
                Lookup::Absent
            }
            Some(live) if live.closing => Lookup::Closing,
            Some(live) => Lookup::Running(live.commands.clone(), live.slash.clone()),
        }
    }

    /// The command channel of a running session.
    pub fn commands(&self, id: &str) -> Option<mpsc::UnboundedSender<Command<W>>> {
        match self.lookup(id) {
            Lookup::Running(commands, _) => Some(commands),
            Lookup::Closing | Lookup::Absent => None,
        }
    }

    /// Stops session `id` and waits until it has; `false` when there is no such session.
    pub async fn close(&self, id: &str) -> bool {
        let mut stopped = {
            let mut sessions = locked(&self.sessions);
            let Some(live) = sessions.get_mut(id) else {
                return false;
            };
            if !live.closing {
                live.closing = true;
                let _ = live.commands.send(Command::Close);
            }
            live.stopped.clone()
        };
        // An error means the task is gone, which is as stopped as it gets.
        let _ = stopped.wait_for(|stopped| *stopped).await;
        let mut sessions = locked(&self.sessions);
        if sessions.get(id).is_some_and(|live| *live.stopped.borrow()) {
            sessions.remove(id);
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
                    let _ = live.commands.send(Command::Close);
                }
                live.stopped.clone()
            })
            .collect();
        for mut stopped in waiting {
            let _ = stopped.wait_for(|stopped| *stopped).await;
        }
        locked(&self.sessions).clear();
    }
}
