//! Larik's own view of a diagnostic (1-based line and character column, severity, message,
//! source, code) and the conversion from the protocol's, so no `ls_types` value leaves the
//! crate through the diagnostics API.

use std::fmt;
use std::time::Duration;

use ls_types::{DiagnosticSeverity, NumberOrString};

use crate::encoding::{PositionEncoding, from_lsp};

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// An error: the code does not compile or type-check.
    Error,
    /// A warning.
    Warning,
    /// Information.
    Information,
    /// A hint (unused variable shading, style).
    Hint,
}

impl Severity {
    /// The upper-case label used in tool results (`ERROR`, `WARNING`, `INFO`, `HINT`).
    pub fn label(self) -> &'static str {
        match self {
            Self::Error => "ERROR",
            Self::Warning => "WARNING",
            Self::Information => "INFO",
            Self::Hint => "HINT",
        }
    }
}

/// One diagnostic in Larik's terms.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// How serious it is (an unset severity counts as an error).
    pub severity: Severity,
    /// 1-based line of the start.
    pub line: u32,
    /// 1-based column of the start, in characters.
    pub column: u32,
    /// 1-based line of the end.
    pub end_line: u32,
    /// 1-based column of the end (exclusive), in characters.
    pub end_column: u32,
    /// The message.
    pub message: String,
    /// Who produced it (`Pyright`, `clang`, `compiler`, `ts`).
    pub source: Option<String>,
    /// The diagnostic's code, as text.
    pub code: Option<String>,
}

impl fmt::Display for Diagnostic {
    /// `ERROR 5:19 message [source]`, on one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = self
            .message
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        write!(
            f,
            "{} {}:{} {}",
            self.severity.label(),
            self.line,
            self.column,
            message
        )?;
        if let Some(source) = &self.source {
            write!(f, " [{source}]")?;
        }
        Ok(())
    }
}

/// The outcome of waiting for a file's diagnostics after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagnosticsReport {
    /// Errors first, then by position.
    pub diagnostics: Vec<Diagnostic>,
    /// `false` when the wait ran out before the server reported on this version of the
    /// text: the list is then the last one known and may be out of date.
    pub fresh: bool,
}

/// How long to wait for fresh diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiagnosticsWait {
    /// The normal wait.
    pub quiet: Duration,
    /// The longer wait used while the server is still starting or reports work-done
    /// progress that has not ended (indexing, loading the workspace).
    pub loading: Duration,
}

impl Default for DiagnosticsWait {
    /// 3 s, or 15 s while the server is loading.
    fn default() -> Self {
        Self {
            quiet: Duration::from_secs(3),
            loading: Duration::from_secs(15),
        }
    }
}

/// Converts protocol diagnostics for `text`, merges duplicates and sorts them.
pub(crate) fn convert(
    text: &str,
    encoding: PositionEncoding,
    diagnostics: &[ls_types::Diagnostic],
) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = diagnostics
        .iter()
        .map(|diagnostic| {
            let (line, column) = from_lsp(text, diagnostic.range.start, encoding);
            let (end_line, end_column) = from_lsp(text, diagnostic.range.end, encoding);
            Diagnostic {
                severity: match diagnostic.severity {
                    Some(DiagnosticSeverity::WARNING) => Severity::Warning,
                    Some(DiagnosticSeverity::INFORMATION) => Severity::Information,
                    Some(DiagnosticSeverity::HINT) => Severity::Hint,
                    _ => Severity::Error,
                },
                line,
                column,
                end_line,
                end_column,
                message: diagnostic.message.clone(),
                source: diagnostic.source.clone(),
                code: diagnostic.code.as_ref().map(|code| match code {
                    NumberOrString::Number(number) => number.to_string(),
                    NumberOrString::String(text) => text.clone(),
                }),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (a.severity, a.line, a.column, &a.message).cmp(&(b.severity, b.line, b.column, &b.message))
    });
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ls_types::{Position, Range};

    #[test]
    fn converts_sorts_merges_and_renders() {
        let text = "x = \u{1F600}y\n";
        let lsp = |severity, start: u32, message: &str| ls_types::Diagnostic {
            range: Range::new(Position::new(0, start), Position::new(0, start + 1)),
            severity,
            message: message.into(),
            source: Some("test".into()),
            code: Some(NumberOrString::Number(7)),
            ..ls_types::Diagnostic::default()
        };
        let got = convert(
            text,
            PositionEncoding::Utf16,
            &[
                lsp(Some(DiagnosticSeverity::WARNING), 0, "w"),
                lsp(None, 6, "undefined\n  name"),
                lsp(None, 6, "undefined\n  name"),
            ],
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].to_string(), "ERROR 1:6 undefined name [test]");
        assert_eq!(got[0].code.as_deref(), Some("7"));
        assert_eq!(got[1].to_string(), "WARNING 1:1 w [test]");
    }
}
