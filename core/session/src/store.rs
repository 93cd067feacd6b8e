//! Where session files live, and the operations that open them.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use larik_protocol::{Message, Usage};

use crate::entry::{SessionMeta, new_session_id};
use crate::error::SessionError;
use crate::load::{self, LoadedSession, first_prompt, meta_cwd, session_id_of, summarize};
use crate::writer::SessionWriter;

/// How much of the first prompt a listing shows.
const FIRST_PROMPT_CHARS: usize = 80;

/// A session in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// The session file.
    pub path: PathBuf,
    /// When the file was last written.
    pub modified: SystemTime,
    /// The start of the first prompt, whitespace collapsed, at most about 80 characters.
    pub first_prompt: Option<String>,
}

/// What a listing shows of a session besides its [`SessionInfo`]: read through the whole
/// file, so asked for only where it is shown.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// The model that answered last (`provider/model`), else the one it started with.
    pub model: String,
    /// Its usage so far.
    pub usage: Usage,
}

/// The sessions under one data directory, grouped by project directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    data_dir: PathBuf,
}

/// The directory name for a project: the absolute cwd with every character that is not
/// alphanumeric, `.`, `_` or `-` replaced by `-` (`/home/a/proj` → `-home-a-proj`).
pub fn cwd_slug(cwd: &Path) -> String {
    larik_config::path_slug(cwd)
}

/// The entries of `dir`, or `None` when it does not exist (no session was written yet).
fn read_dir_if_any(dir: &Path) -> Result<Option<std::fs::ReadDir>, SessionError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(SessionError::io(dir, err)),
    }
}

impl SessionStore {
    /// A store keeping its sessions under `<data_dir>/sessions`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        SessionStore {
            data_dir: data_dir.into(),
        }
    }

    fn sessions_dir(&self) -> PathBuf {
        self.data_dir.join("sessions")
    }

    fn project_dir(&self, cwd: &Path) -> PathBuf {
        self.sessions_dir().join(cwd_slug(cwd))
    }

    /// Starts a new session file for `meta.cwd` and writes its meta entry; a failed write
    /// is [`SessionError::DataDirNotWritable`].
    pub fn create(&self, meta: SessionMeta) -> Result<SessionWriter, SessionError> {
        create_in(&self.project_dir(&meta.cwd), meta).map_err(|err| err.in_data_dir(&self.data_dir))
    }
}

/// Starts a new session file in `dir` (created when missing) and writes its meta entry: a
/// session's file in its project's directory, or a subagent's transcript beside its
/// session's.
pub(crate) fn create_in(dir: &Path, meta: SessionMeta) -> Result<SessionWriter, SessionError> {
    std::fs::create_dir_all(dir).map_err(|err| SessionError::io(dir, err))?;
    // Ids carry six random hex digits; retrying covers the rare same-second collision.
    let mut attempts = 0;
    let (id, path, file) = loop {
        let id = new_session_id(SystemTime::now());
        let path = dir.join(format!("{id}.jsonl"));
        match OpenOptions::new().append(true).create_new(true).open(&path) {
            Ok(file) => break (id, path, file),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempts < 8 => {
                attempts += 1;
            }
            Err(err) => return Err(SessionError::io(&path, err)),
        }
    };
    let mut writer = SessionWriter::new(id, path.clone(), file, None);
    if let Err(err) = writer.append_meta(&meta) {
        // A file without its meta entry is no session; leave none behind for `-c` to find.
        drop(writer);
        let _ = std::fs::remove_file(&path);
        return Err(err);
    }
    Ok(writer)
}

impl SessionStore {
    /// The sessions of the project at `cwd`, newest first.
    ///
    /// Ids start with their creation time, so they order the list; sessions created in the
    /// same second are ordered by modification time.
    pub fn list(&self, cwd: &Path) -> Result<Vec<SessionInfo>, SessionError> {
        let dir = self.project_dir(cwd);
        let Some(entries) = read_dir_if_any(&dir)? else {
            return Ok(Vec::new());
        };
        let mut sessions = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|err| SessionError::io(&dir, err))?;
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "jsonl") || !path.is_file() {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|metadata| metadata.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            sessions.push(SessionInfo {
                id: session_id_of(&path),
                first_prompt: first_prompt(&path).map(|text| preview(&text, FIRST_PROMPT_CHARS)),
                path,
                modified,
            });
        }
        sessions.sort_by(|a, b| {
            let time_of = |info: &SessionInfo| {
                // `YYYYMMDD-HHMMSS` is the part of an id that is a time.
                info.id.get(..15).unwrap_or(&info.id).to_owned()
            };
            time_of(b)
                .cmp(&time_of(a))
                .then(b.modified.cmp(&a.modified))
                .then(b.id.cmp(&a.id))
        });
        Ok(sessions)
    }

    /// The sessions of every project, newest first, each with the working directory its
    /// meta entry names (files without a readable meta entry are left out).
    pub fn list_all(&self) -> Result<Vec<(PathBuf, SessionInfo)>, SessionError> {
        let dir = self.sessions_dir();
        let Some(entries) = read_dir_if_any(&dir)? else {
            return Ok(Vec::new());
        };
        let mut sessions = Vec::new();
        for entry in entries {
            let project = entry.map_err(|err| SessionError::io(&dir, err))?.path();
            if !project.is_dir() {
                continue;
            }
            // Any session file of the project names its cwd; the slug alone is lossy.
            let listed = std::fs::read_dir(&project)
                .map_err(|err| SessionError::io(&project, err))?
                .filter_map(Result::ok)
                .map(|file| file.path())
                .find_map(|path| meta_cwd(&path));
            let Some(cwd) = listed else { continue };
            if self.project_dir(&cwd) != project {
                continue;
            }
            for info in self.list(&cwd)? {
                sessions.push((cwd.clone(), info));
            }
        }
        sessions.sort_by(|(_, a), (_, b)| b.modified.cmp(&a.modified).then(b.id.cmp(&a.id)));
        Ok(sessions)
    }

    /// The newest session of the project at `cwd`, if it has any.
    pub fn latest(&self, cwd: &Path) -> Result<Option<SessionInfo>, SessionError> {
        Ok(self.list(cwd)?.into_iter().next())
    }

    /// The file of session `id` in the project at `cwd`, and in no other project.
    pub fn find_in_project(&self, cwd: &Path, id: &str) -> Result<PathBuf, SessionError> {
        let invalid = id.is_empty()
            || id.contains(['/', '\\'])
            || id.contains("..")
            || Path::new(id).is_absolute();
        if invalid {
            return Err(SessionError::InvalidId { id: id.to_owned() });
        }
        let here = self.project_dir(cwd).join(format!("{id}.jsonl"));
        if here.is_file() {
            Ok(here)
        } else {
            Err(SessionError::NotFound { id: id.to_owned() })
        }
    }

    /// The file of session `id`: looked for in the project at `cwd` first, then in every
    /// other project.
    pub fn find(&self, cwd: &Path, id: &str) -> Result<PathBuf, SessionError> {
        match self.find_in_project(cwd, id) {
            Err(SessionError::NotFound { .. }) => {}
            found => return found,
        }
        let file_name = format!("{id}.jsonl");
        let sessions_dir = self.sessions_dir();
        let projects = match std::fs::read_dir(&sessions_dir) {
            Ok(projects) => projects,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound { id: id.to_owned() });
            }
            Err(err) => return Err(SessionError::io(&sessions_dir, err)),
        };
        let mut candidates: Vec<PathBuf> = projects
            .filter_map(Result::ok)
            .map(|project| project.path().join(&file_name))
            .filter(|path| path.is_file())
            .collect();
        // Deterministic when (unexpectedly) two projects hold the same id.
        candidates.sort();
        candidates
            .into_iter()
            .next()
            .ok_or_else(|| SessionError::NotFound { id: id.to_owned() })
    }

    /// The model and usage of the session file at `path`, or `None` when it is not a
    /// readable session file.
    pub fn summary(&self, path: &Path) -> Option<SessionSummary> {
        summarize(path).map(|(model, usage)| SessionSummary { model, usage })
    }

    /// Reads the session file at `path`.
    pub fn load(&self, path: &Path) -> Result<LoadedSession, SessionError> {
        load::load(path)
    }

    /// Reopens a loaded session to append to it; a file that cannot be written is
    /// [`SessionError::DataDirNotWritable`].
    ///
    /// When the file ends in a torn line, a newline is written first so the next entry
    /// starts on a line of its own.
    pub fn resume(&self, loaded: &LoadedSession) -> Result<SessionWriter, SessionError> {
        self.reopen(loaded)
            .map_err(|err| err.in_data_dir(&self.data_dir))
    }

    fn reopen(&self, loaded: &LoadedSession) -> Result<SessionWriter, SessionError> {
        let path = &loaded.path;
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|err| SessionError::io(path, err))?;
        let ends_clean = ends_with_newline(&mut file).map_err(|err| SessionError::io(path, err))?;
        let mut writer = SessionWriter::new(
            loaded.id.clone(),
            path.clone(),
            file,
            loaded.last_entry.clone(),
        );
        if !ends_clean {
            writer.end_torn_line()?;
        }
        Ok(writer)
    }

    /// Starts a new session holding the first `keep` messages of `source`.
    ///
    /// `keep` must not split a turn: it is either the number of messages or the index of
    /// a prompt. The source file is not touched; usage is not copied, so the fork's usage
    /// counts only its own requests.
    pub fn fork(&self, source: &LoadedSession, keep: usize) -> Result<SessionWriter, SessionError> {
        let len = source.messages.len();
        let on_boundary = keep == len || source.messages.get(keep).is_some_and(Message::is_prompt);
        if !on_boundary {
            return Err(SessionError::NotATurnBoundary { keep, len });
        }
        let meta = SessionMeta {
            fork_of: Some(source.id.clone()),
            fork_at: Some(keep),
            ..source.meta.clone()
        };
        let mut writer = self.create(meta)?;
        let mut kept = &source.messages[..keep];
        if let Some(summary) = &source.compaction
            && let Some((_, after_summary)) = kept.split_first()
        {
            writer.append_compaction(summary)?;
            kept = after_summary;
        }
        for message in kept {
            writer.append_message(message)?;
        }
        Ok(writer)
    }

    /// Branches `source` just before its `prompt_number`-th prompt (1-based), returning the
    /// new session and that prompt, so the caller can offer it for editing.
    pub fn rewind(
        &self,
        source: &LoadedSession,
        prompt_number: usize,
    ) -> Result<(SessionWriter, Message), SessionError> {
        let index = prompt_number
            .checked_sub(1)
            .and_then(|n| source.prompt_indexes.get(n))
            .copied()
            .ok_or(SessionError::NoSuchPrompt {
                number: prompt_number,
                count: source.prompt_indexes.len(),
            })?;
        let writer = self.fork(source, index)?;
        Ok((writer, source.messages[index].clone()))
    }
}

/// Whether `file` is empty or its last byte is a newline.
fn ends_with_newline(file: &mut File) -> std::io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// A one-line preview of a prompt: whitespace collapsed, cut to at most `chars` characters
/// (the last one `…` when cut).
pub fn preview(text: &str, chars: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= chars {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
