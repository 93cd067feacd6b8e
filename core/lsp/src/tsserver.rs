//! Asking typescript-language-server for a file's diagnostics directly.
//!
//! The server has no pull diagnostics, and its pushes carry no document version: it asks
//! TypeScript for a file's errors a while after each change (300 to 800 ms, longer for
//! longer files) and publishes each kind (syntax, semantic, suggestion) as it arrives, so
//! a client cannot tell a final push from an early one. It does offer the command
//! `typescript.tsserverRequest`, which passes a request to TypeScript's own server and
//! returns its answer. TypeScript answers `syntacticDiagnosticsSync`,
//! `semanticDiagnosticsSync` and `suggestionDiagnosticsSync` for the text it has now (the
//! change sent before the request is applied first), complete and at once: that is the
//! answer for exactly the version Larik sent, with no waiting for pushes.

use ls_types::{
    Diagnostic, DiagnosticSeverity, DiagnosticTag, NumberOrString, Position, Range,
    ServerCapabilities,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// The command that passes a request to TypeScript's server.
pub(crate) const COMMAND: &str = "typescript.tsserverRequest";

/// The three kinds of diagnostics TypeScript keeps apart, all of which its pushes carry.
pub(crate) const KINDS: [&str; 3] = [
    "syntacticDiagnosticsSync",
    "semanticDiagnosticsSync",
    "suggestionDiagnosticsSync",
];

/// Whether the server offers [`COMMAND`].
pub(crate) fn offered(capabilities: &ServerCapabilities) -> bool {
    capabilities
        .execute_command_provider
        .as_ref()
        .is_some_and(|provider| provider.commands.iter().any(|command| command == COMMAND))
}

/// The `workspace/executeCommand` parameters asking for one kind of diagnostics of `uri`.
pub(crate) fn params(kind: &str, uri: &ls_types::Uri) -> Value {
    json!({"command": COMMAND, "arguments": [kind, {"file": uri.as_str()}]})
}

/// TypeScript's answer to a request.
#[derive(Debug, Deserialize)]
struct Response {
    success: bool,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    body: Option<Vec<TsDiagnostic>>,
}

/// A diagnostic as TypeScript's server gives it: 1-based lines, and 1-based offsets in
/// UTF-16 code units.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TsDiagnostic {
    start: Location,
    end: Location,
    text: String,
    #[serde(default)]
    code: Option<i32>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    reports_unnecessary: Option<Value>,
    #[serde(default)]
    reports_deprecated: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Location {
    line: u32,
    offset: u32,
}

impl Location {
    fn position(&self) -> Position {
        Position::new(self.line.saturating_sub(1), self.offset.saturating_sub(1))
    }
}

/// Reads the command's answer as protocol diagnostics (UTF-16 positions), the way the
/// server itself turns them into pushes; an answer that is not TypeScript's, or a failed
/// request, is an error naming why.
pub(crate) fn diagnostics(answer: Value) -> Result<Vec<Diagnostic>, String> {
    let response: Response = serde_json::from_value(answer)
        .map_err(|error| format!("not an answer from TypeScript's server: {error}"))?;
    if !response.success {
        return Err(response
            .message
            .unwrap_or_else(|| "TypeScript's server refused the request".into()));
    }
    Ok(response
        .body
        .unwrap_or_default()
        .into_iter()
        .map(|found| {
            let severity = match found.category.as_deref() {
                Some("warning") => DiagnosticSeverity::WARNING,
                Some("suggestion") => DiagnosticSeverity::HINT,
                Some("message") => DiagnosticSeverity::INFORMATION,
                _ => DiagnosticSeverity::ERROR,
            };
            let mut tags = Vec::new();
            if found.reports_unnecessary.is_some() {
                tags.push(DiagnosticTag::UNNECESSARY);
            }
            if found.reports_deprecated.is_some() {
                tags.push(DiagnosticTag::DEPRECATED);
            }
            Diagnostic {
                range: Range::new(found.start.position(), found.end.position()),
                severity: Some(severity),
                code: found.code.map(NumberOrString::Number),
                source: Some(found.source.unwrap_or_else(|| "typescript".into())),
                message: found.text,
                tags: (!tags.is_empty()).then_some(tags),
                ..Diagnostic::default()
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_found_among_the_servers_commands() {
        let with: ServerCapabilities = serde_json::from_value(json!({
            "executeCommandProvider": {"commands": ["_typescript.organizeImports", COMMAND]}
        }))
        .expect("capabilities");
        assert!(offered(&with));
        let without: ServerCapabilities = serde_json::from_value(json!({
            "executeCommandProvider": {"commands": ["_typescript.organizeImports"]}
        }))
        .expect("capabilities");
        assert!(!offered(&without));
        assert!(!offered(&ServerCapabilities::default()));
    }

    #[test]
    fn answers_become_protocol_diagnostics_as_the_server_pushes_them() {
        let answer = json!({
            "seq": 0, "type": "response", "command": "semanticDiagnosticsSync",
            "request_seq": 6, "success": true,
            "body": [
                {"start": {"line": 1, "offset": 7}, "end": {"line": 1, "offset": 8},
                 "text": "Type 'string' is not assignable to type 'number'.",
                 "code": 2322, "category": "error"},
                {"start": {"line": 3, "offset": 1}, "end": {"line": 3, "offset": 9},
                 "text": "'y' is declared but its value is never read.", "code": 6133,
                 "category": "suggestion", "reportsUnnecessary": {}},
                {"start": {"line": 4, "offset": 2}, "end": {"line": 4, "offset": 5},
                 "text": "old", "category": "warning", "reportsDeprecated": {},
                 "source": "eslint"},
            ]
        });
        let found = diagnostics(answer).expect("diagnostics");
        assert_eq!(found.len(), 3);
        assert_eq!(
            found[0].range,
            Range::new(Position::new(0, 6), Position::new(0, 7))
        );
        assert_eq!(found[0].severity, Some(DiagnosticSeverity::ERROR));
        assert_eq!(found[0].code, Some(NumberOrString::Number(2322)));
        assert_eq!(found[0].source.as_deref(), Some("typescript"));
        assert_eq!(found[0].tags, None);
        assert_eq!(found[1].severity, Some(DiagnosticSeverity::HINT));
        assert_eq!(found[1].tags, Some(vec![DiagnosticTag::UNNECESSARY]));
        assert_eq!(found[2].severity, Some(DiagnosticSeverity::WARNING));
        assert_eq!(found[2].tags, Some(vec![DiagnosticTag::DEPRECATED]));
        assert_eq!(found[2].source.as_deref(), Some("eslint"));
    }

    #[test]
    fn failed_or_foreign_answers_are_errors() {
        let refused = json!({"success": false, "message": "No Project."});
        assert_eq!(diagnostics(refused), Err("No Project.".to_string()));
        let foreign = diagnostics(json!(["not", "this"])).expect_err("foreign");
        assert!(foreign.starts_with("not an answer"), "{foreign}");
        let empty = diagnostics(json!({"success": true})).expect("no body");
        assert!(empty.is_empty());
        // Out-of-range numbers never underflow.
        let zero = json!({"success": true, "body": [
            {"start": {"line": 0, "offset": 0}, "end": {"line": 0, "offset": 0}, "text": "x"}
        ]});
        let found = diagnostics(zero).expect("diagnostics");
        assert_eq!(found[0].range, Range::default());
    }
}
