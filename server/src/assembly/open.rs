//! How a session is opened: a new one, the latest of the directory, one by id, or one a
//! front end already loaded; then appended to, cleared (a fresh context in the same file),
//! forked at its end, or rewound to just before one of its prompts.

use std::collections::BTreeMap;
use std::path::Path;

use larik_agent::SessionState;
use larik_protocol::{Message, Usage};
use larik_providers::split_model_name;
use larik_session::{LoadedSession, SessionMeta, SessionStore};

use super::error::{Notice, NoticeSource, SetupError};

/// Which session to open.
pub enum Open {
    /// A new, empty session.
    New,
    /// The most recent session of the working directory (`-c`).
    Latest(Branch),
    /// The session with this id (`--resume ID`).
    Id(String, Branch),
    /// A session the front end has loaded already (it checked the id against its project).
    Loaded(Box<LoadedSession>, Branch),
}

/// What happens to a stored session once open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// Append to it.
    Append,
    /// Append to it after a clear mark: a fresh context, the history kept in the file.
    Clear,
    /// Continue in a new session that starts with all of it.
    Fork,
    /// Continue in a new session cut just before prompt N (1-based).
    Rewind(usize),
}

/// A stored session opened for its agent.
pub(super) struct Opened {
    /// What the agent starts from.
    pub(super) session: SessionState,
    /// With a rewind, the prompt the branch was cut before.
    pub(super) rewound: Option<Message>,
    /// For a branch, how many messages of the source it kept.
    pub(super) fork_at: Option<usize>,
    /// Its usage by model (empty for a branch, which counts only its own requests).
    pub(super) usage_by_model: BTreeMap<String, Usage>,
    /// A notice for each line of its file that could not be read.
    pub(super) notices: Vec<Notice>,
}

/// A stored session before its agent starts.
pub struct Stored {
    pub(super) loaded: LoadedSession,
    pub(super) branch: Branch,
}

impl Open {
    /// Loads the stored session this asks for; `None` for a new one.
    pub(super) fn load(
        self,
        store: &SessionStore,
        cwd: &Path,
    ) -> Result<Option<Stored>, SetupError> {
        let (loaded, branch) = match self {
            Open::New => return Ok(None),
            Open::Latest(branch) => {
                let latest = store.latest(cwd)?.ok_or_else(|| {
                    SetupError::usage(format!(
                        "no earlier session in {} to continue",
                        cwd.display()
                    ))
                })?;
                (store.load(&latest.path)?, branch)
            }
            Open::Id(id, branch) => {
                let path = store.find(cwd, &id)?;
                (store.load(&path)?, branch)
            }
            Open::Loaded(loaded, branch) => (*loaded, branch),
        };
        Ok(Some(Stored { loaded, branch }))
    }
}

impl Stored {
    /// The model it continues with: the one that answered last, so a switch made during
    /// the session sticks.
    pub(super) fn model(&self) -> String {
        let loaded = &self.loaded;
        loaded
            .messages
            .iter()
            .rev()
            .find_map(|message| message.model.clone())
            .unwrap_or_else(|| format!("{}/{}", loaded.meta.provider, loaded.meta.model))
    }

    /// Opens it for writing as its branch says.
    pub(super) fn open(self, store: &SessionStore) -> Result<Opened, SetupError> {
        let Stored { loaded, branch } = self;
        let notices = loaded
            .warnings
            .iter()
            .map(|warning| Notice {
                source: NoticeSource::SessionFile(loaded.path.clone()),
                text: warning.clone(),
            })
            .collect();
        let mut usage_by_model = BTreeMap::new();
        let mut fork_at = None;
        let (session, rewound) = match branch {
            Branch::Append => {
                let writer = store.resume(&loaded)?;
                let starts_with_summary = loaded.starts_with_summary();
                usage_by_model = loaded.usage_by_model;
                let session = SessionState {
                    writer,
                    starts_with_summary,
                    messages: loaded.messages,
                    usage: loaded.usage,
                    pending_notes: loaded.pending_notes,
                };
                (session, None)
            }
            Branch::Clear => {
                let mut writer = store.resume(&loaded)?;
                writer.append_clear()?;
                usage_by_model = loaded.usage_by_model;
                let session = SessionState {
                    usage: loaded.usage,
                    ..fresh(writer, Vec::new(), false)
                };
                (session, None)
            }
            Branch::Fork => {
                let writer = store.fork(&loaded, loaded.messages.len())?;
                fork_at = Some(loaded.messages.len());
                let summary = loaded.starts_with_summary();
                (fresh(writer, loaded.messages, summary), None)
            }
            Branch::Rewind(prompt_number) => {
                let (writer, prompt) = store.rewind(&loaded, prompt_number)?;
                let keep = loaded.prompt_indexes[prompt_number - 1];
                fork_at = Some(keep);
                // A cut at the first prompt after a compaction keeps the summary.
                let summary = loaded.starts_with_summary();
                (
                    fresh(writer, loaded.messages[..keep].to_vec(), summary),
                    Some(prompt),
                )
            }
        };
        Ok(Opened {
            session,
            rewound,
            fork_at,
            usage_by_model,
            notices,
        })
    }
}

/// A new session for `cwd` answered by `model`.
pub(super) fn create(
    store: &SessionStore,
    cwd: &Path,
    model: &str,
) -> Result<SessionState, SetupError> {
    let (provider, model_id) = split_model_name(model)?;
    let writer = store.create(SessionMeta {
        cwd: cwd.to_path_buf(),
        provider: provider.to_string(),
        model: model_id.to_string(),
        fork_of: None,
        fork_at: None,
    })?;
    Ok(fresh(writer, Vec::new(), false))
}

fn fresh(
    writer: larik_session::SessionWriter,
    messages: Vec<Message>,
    starts_with_summary: bool,
) -> SessionState {
    SessionState {
        writer,
        messages,
        usage: Default::default(),
        pending_notes: Vec::new(),
        starts_with_summary,
    }
}
