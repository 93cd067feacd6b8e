//! The crate's error type: every way talking to a language server can fail.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong while starting or talking to a language server.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The server command could not be started.
    #[error("could not start `{command}`: {source}")]
    Spawn {
        /// The command as configured.
        command: String,
        /// Why the operating system refused.
        source: std::io::Error,
    },
    /// The log file could not be opened.
    #[error("could not open the log file {path}: {source}")]
    Log {
        /// The log file's path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The server did not answer a request in time.
    #[error("the language server did not answer `{method}` within {timeout:?}")]
    Timeout {
        /// The request's method.
        method: String,
        /// How long we waited.
        timeout: Duration,
    },
    /// The server exited (or closed its output) before answering.
    #[error("{reason}")]
    Exited {
        /// What was observed, as a sentence naming the server: its exit status, or that
        /// it closed its output or stopped answering.
        reason: String,
    },
    /// `initialize` failed or timed out earlier, so the server cannot be used.
    #[error("the language server failed to initialize: {reason}")]
    Initialize {
        /// Why it failed.
        reason: String,
    },
    /// The server answered a request with an error.
    #[error("`{method}` failed: {message} (code {code})")]
    Server {
        /// The request's method.
        method: String,
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
        /// The error's `data`, if any (boxed: it is rare and would make every result
        /// carrying this error large).
        data: Option<Box<serde_json::Value>>,
    },
    /// The server's answer did not have the shape the protocol gives it.
    #[error("unexpected answer to `{method}`: {source}")]
    Decode {
        /// The request's method.
        method: String,
        /// What did not fit.
        source: serde_json::Error,
    },
    /// The server's answer had the protocol's shape but not the content asked for.
    #[error("unusable answer to `{method}`: {reason}")]
    Unusable {
        /// The request's method.
        method: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A path that cannot name a document (relative, or not representable as a URI).
    #[error("{0} is not an absolute file path")]
    InvalidPath(PathBuf),
    /// A file needed for a request could not be read.
    #[error("could not read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}
