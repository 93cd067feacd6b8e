//! Decoding a call's JSON input into a tool's typed input, and running a call's work so
//! that a panic stays inside the call.
//!
//! Models send malformed input now and then (a missing field, a string where a number
//! belongs); the message names the tool and the field so the model can retry.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ToolOutput;

/// Decodes `input` for `tool`, or an error output saying what is wrong with it.
pub fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input)
        .map_err(|error| ToolOutput::error(format!("Invalid input for {tool}: {error}")))
}

/// The string field `name` of `input`, for titles and targets computed before decoding.
pub fn str_field<'a>(input: &'a Value, name: &str) -> Option<&'a str> {
    input.get(name).and_then(Value::as_str)
}

/// Runs blocking file-system work off the async threads; a panic in it becomes an error
/// output rather than a crash of the agent.
pub async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| ToolOutput::error(format!("The tool failed internally: {error}")))
}

/// Runs a call's file work on a task of its own, so that a panic in it becomes an error
/// output rather than a crash of the agent.
pub async fn guarded<F>(work: F) -> ToolOutput
where
    F: Future<Output = ToolOutput> + Send + 'static,
{
    tokio::spawn(work)
        .await
        .unwrap_or_else(|error| ToolOutput::error(format!("The tool failed internally: {error}")))
}

/// Computes a preview on a task of its own; a panic in it means no preview.
pub async fn guarded_preview<F, T>(work: F) -> Option<T>
where
    F: Future<Output = Option<T>> + Send + 'static,
    T: Send + 'static,
{
    tokio::spawn(work).await.ok().flatten()
}
