//! What can go wrong while a session is put together, and what the user should hear about
//! it: a [`SetupError`] tells a user's mistake from Larik's own failure, so each front end
//! maps it once to its error form; a [`Notice`] carries its source apart from its text.

use std::fmt;
use std::path::PathBuf;

use larik_agent::AgentError;
use larik_providers::ProviderError;
use larik_session::SessionError;

/// Why a session could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// What the user asked for or set up cannot work as given (a missing key, an unknown
    /// model, a bad flag, no such session); fixing it and asking again helps.
    #[error("{0}")]
    Usage(String),
    /// Larik could not do its part (a session file it could not write, a store it could not
    /// open).
    #[error("{0}")]
    Internal(String),
}

impl SetupError {
    /// A user's mistake.
    pub fn usage(message: impl fmt::Display) -> Self {
        SetupError::Usage(message.to_string())
    }

    /// Larik's own failure.
    pub fn internal(message: impl fmt::Display) -> Self {
        SetupError::Internal(message.to_string())
    }

    /// Whether the user can fix it.
    pub fn is_usage(&self) -> bool {
        matches!(self, SetupError::Usage(_))
    }

    /// The same error with `context` before its message.
    pub fn context(self, context: &str) -> Self {
        match self {
            SetupError::Usage(message) => SetupError::Usage(format!("{context}: {message}")),
            SetupError::Internal(message) => SetupError::Internal(format!("{context}: {message}")),
        }
    }
}

impl From<ProviderError> for SetupError {
    fn from(error: ProviderError) -> Self {
        match error {
            ProviderError::MissingKey { .. }
            | ProviderError::BadModelName { .. }
            | ProviderError::UnknownProvider { .. }
            | ProviderError::BadEndpoint { .. } => SetupError::usage(error),
            other => SetupError::internal(other),
        }
    }
}

impl From<AgentError> for SetupError {
    fn from(error: AgentError) -> Self {
        match error {
            AgentError::Provider(error) => error.into(),
        }
    }
}

impl From<SessionError> for SetupError {
    fn from(error: SessionError) -> Self {
        match error {
            SessionError::NotFound { .. }
            | SessionError::InvalidId { .. }
            | SessionError::NoSuchPrompt { .. }
            | SessionError::NotATurnBoundary { .. } => SetupError::usage(error),
            other => SetupError::internal(other),
        }
    }
}

impl From<larik_config::ConfigError> for SetupError {
    fn from(error: larik_config::ConfigError) -> Self {
        SetupError::usage(error)
    }
}

/// Where a notice comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoticeSource {
    /// The configuration files.
    Configuration,
    /// A session file that was read.
    SessionFile(PathBuf),
    /// The upkeep of old checkpoints.
    Checkpoints,
}

/// Something the user should hear about once, before the session's first answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Where it comes from.
    pub source: NoticeSource,
    /// What to say.
    pub text: String,
}

impl Notice {
    /// A notice about the configuration.
    pub fn configuration(text: impl Into<String>) -> Self {
        Notice {
            source: NoticeSource::Configuration,
            text: text.into(),
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            NoticeSource::Configuration => write!(f, "configuration: {}", self.text),
            NoticeSource::SessionFile(path) => write!(f, "{}: {}", path.display(), self.text),
            NoticeSource::Checkpoints => f.write_str(&self.text),
        }
    }
}
