//! Why an `lsp` or `apply_code_action` call failed. Each error displays as the message the
//! model reads (or, for a `workspace/applyEdit` the server sent, as the reason it is told),
//! so it can act on it: fix the position, pick another title, read the file again.

use crate::LspError;
use crate::workspace_edit::WorkspaceEditError;

/// What went wrong in a call to the language server tools.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The call's input does not fit the tool's schema.
    #[error("Invalid input for {tool}: {source}")]
    InvalidInput {
        /// The tool's name.
        tool: &'static str,
        /// What did not fit.
        source: serde_json::Error,
    },
    /// The call names a directory.
    #[error("{shown} is a directory, not a file.")]
    Directory {
        /// The path as shown to the model.
        shown: String,
    },
    /// The call's file could not be read.
    #[error("Cannot read {shown}: {source}.")]
    Read {
        /// The path as shown to the model.
        shown: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The line is not in the file.
    #[error("Line {line} is not in {shown} (it has {lines} lines; lines start at 1).")]
    NoSuchLine {
        /// The 1-based line asked for.
        line: u32,
        /// The path as shown to the model.
        shown: String,
        /// How many lines the file has.
        lines: usize,
    },
    /// The column is not on the line.
    #[error(
        "Column {column} is not on line {line} of {shown} (it has {length} characters; columns start at 1)."
    )]
    NoSuchColumn {
        /// The 1-based column asked for, in characters.
        column: u32,
        /// The 1-based line.
        line: u32,
        /// The path as shown to the model.
        shown: String,
        /// How many characters the line has.
        length: u32,
    },
    /// No configured server serves the file's type.
    #[error("No language server handles {shown}{}.", available_note(.available))]
    NoServer {
        /// The path as shown to the model.
        shown: String,
        /// The servers that can be used, by name.
        available: Vec<String>,
    },
    /// The file's server cannot be started or was given up on.
    #[error("The language server for {shown} cannot be used: {source}.")]
    Unusable {
        /// The path as shown to the model.
        shown: String,
        /// Why.
        source: LspError,
    },
    /// The server stopped handling the file while the call ran.
    #[error("No language server handles {shown}.")]
    NoLongerHandled {
        /// The path as shown to the model.
        shown: String,
    },
    /// A request to the file's server failed.
    #[error("The language server failed: {0}.")]
    Server(LspError),
    /// `definition`, `references` or `hover` without a position.
    #[error("This operation needs `line` and `column` (1-based) of {shown}.")]
    NeedsPosition {
        /// The path as shown to the model.
        shown: String,
    },
    /// `workspace_symbols` without a query.
    #[error("The workspace_symbols operation needs `query`.")]
    NeedsQuery,
    /// `code_actions` without a line.
    #[error("The code_actions operation needs `line` (1-based).")]
    NeedsLine,
    /// No code action is offered at the place at all.
    #[error("No code action titled {title:?} is offered for {place}: none is offered there now.")]
    NoneOffered {
        /// The title asked for.
        title: String,
        /// The place as the model names it (`path:line[:column]`).
        place: String,
    },
    /// Code actions are offered at the place, but none with the title.
    #[error(
        "No code action titled {title:?} is offered for {place}. Offered now:\n{}",
        listed(.offered)
    )]
    NotOffered {
        /// The title asked for.
        title: String,
        /// The place as the model names it (`path:line[:column]`).
        place: String,
        /// The titles that are offered.
        offered: Vec<String>,
    },
    /// The action's workspace edit cannot be applied.
    #[error("Cannot apply {title:?}: {source}. Nothing was written.")]
    Unappliable {
        /// The action's title.
        title: String,
        /// Why.
        source: WorkspaceEditError,
    },
    /// The action has neither an edit nor a command.
    #[error("The code action {title:?} changes nothing in the current text.")]
    ChangesNothing {
        /// The action's title.
        title: String,
    },
    /// A file to change could not be saved for undo first.
    #[error(transparent)]
    NotSaved(#[from] larik_tools::NotSavedForUndo),
    /// A file could not be written.
    #[error("Could not write {shown}: {source}. {}.", written_note(.anything_written))]
    Write {
        /// The path as shown to the model.
        shown: String,
        /// The underlying error.
        source: std::io::Error,
        /// Whether files were written before this one.
        anything_written: bool,
    },
    /// The action's command failed.
    #[error("The action's command `{name}` failed: {source}.")]
    Command {
        /// The command's name.
        name: String,
        /// Why.
        source: LspError,
    },
    /// The position encoding for a server's own edit is not known.
    #[error(transparent)]
    PositionEncoding(LspError),
    /// A server's own edit cannot be applied.
    #[error("refused: {0}")]
    Refused(WorkspaceEditError),
    /// A server's own edit arrived after its command had finished.
    #[error("the command had finished when this edit arrived")]
    AfterCommand,
}

/// The servers that could be used, as a parenthesised note.
fn available_note(available: &[String]) -> String {
    if available.is_empty() {
        " (none is installed)".to_string()
    } else {
        format!(" (available: {})", available.join(", "))
    }
}

/// The offered titles, one `- title` line each.
fn listed(offered: &[String]) -> String {
    offered
        .iter()
        .map(|title| format!("- {title}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a failed write leaves behind.
fn written_note(anything_written: &bool) -> &'static str {
    if *anything_written {
        "Only the files listed above were written"
    } else {
        "Nothing was written"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composed_messages_read_as_before() {
        let no_server = |available: &[&str]| CallError::NoServer {
            shown: "a.c".into(),
            available: available.iter().map(|name| name.to_string()).collect(),
        };
        assert_eq!(
            no_server(&[]).to_string(),
            "No language server handles a.c (none is installed)."
        );
        assert_eq!(
            no_server(&["clangd", "pyright"]).to_string(),
            "No language server handles a.c (available: clangd, pyright)."
        );
        let not_offered = CallError::NotOffered {
            title: "Fix".into(),
            place: "a.c:3".into(),
            offered: vec!["Add include".into(), "Remove".into()],
        };
        assert_eq!(
            not_offered.to_string(),
            "No code action titled \"Fix\" is offered for a.c:3. Offered now:\n- Add include\n- Remove"
        );
        let write = |anything_written| CallError::Write {
            shown: "b.c".into(),
            source: std::io::Error::other("disk full"),
            anything_written,
        };
        assert_eq!(
            write(false).to_string(),
            "Could not write b.c: disk full. Nothing was written."
        );
        assert_eq!(
            write(true).to_string(),
            "Could not write b.c: disk full. Only the files listed above were written."
        );
    }
}
