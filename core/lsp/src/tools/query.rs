//! The `lsp` tool: definition, references, hover, document and workspace symbols,
//! diagnostics, and the code actions offered for a line. It changes no file.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use larik_protocol::{FileLocation, ToolKind};
use larik_tools::{CallTarget, Tool, ToolContext, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    CallError, Subject, cap, display, file_location, file_path, file_target, guarded,
    offered_actions, resolve, server_for,
};
use crate::client::LanguageServer;
use crate::diagnostics::DiagnosticsWait;
use crate::manager::LanguageServers;
use crate::requests::{Location, Symbol};

/// At most this many locations or symbols are listed; the rest are counted.
const MAX_ITEMS: usize = 100;
/// Hover text beyond this many characters is cut.
const MAX_HOVER_CHARS: usize = 4_000;

/// Asks the file's language server about code, changing nothing.
pub struct LspTool {
    servers: Arc<LanguageServers>,
    wait: DiagnosticsWait,
}

impl LspTool {
    /// The tool over `servers`; `diagnostics` and `code_actions` wait for fresh
    /// diagnostics as `wait` allows.
    pub fn new(servers: Arc<LanguageServers>, wait: DiagnosticsWait) -> Self {
        Self { servers, wait }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Operation {
    Definition,
    References,
    Hover,
    DocumentSymbols,
    WorkspaceSymbols,
    Diagnostics,
    CodeActions,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LspInput {
    operation: Operation,
    file_path: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    column: Option<u32>,
    #[serde(default)]
    query: Option<String>,
}

#[async_trait::async_trait]
impl Tool for LspTool {
    fn name(&self) -> &str {
        "lsp"
    }

    fn description(&self) -> &str {
        "Asks the language server of a file what an editor would show. Operations: \
         `definition`, `references` and `hover` at `line` and `column` (1-based, the column \
         counted in characters; point at the name); `document_symbols` (the file's outline); \
         `workspace_symbols` (symbols matching `query`, searched by the server of \
         `file_path`'s language); `diagnostics` (the file's current errors and warnings); \
         `code_actions` (the fixes and refactorings offered for `line`, with the \
         diagnostics on that line; give `column` too for refactorings of the code at that \
         point; apply one with `apply_code_action`). The file's current \
         text (including unsaved editor changes) is what the server sees. Changes nothing."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": [
                    "definition", "references", "hover", "document_symbols",
                    "workspace_symbols", "diagnostics", "code_actions"
                ]},
                "file_path": {"type": "string", "description": "Path of the file, absolute or relative to the working directory"},
                "line": {"type": "integer", "minimum": 1, "description": "1-based line (definition, references, hover, code_actions)"},
                "column": {"type": "integer", "minimum": 1, "description": "1-based column in characters (definition, references, hover; optional for code_actions)"},
                "query": {"type": "string", "description": "What to search for (workspace_symbols)"}
            },
            "required": ["operation", "file_path"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, ctx: &ToolContext) -> String {
        let operation = input
            .get("operation")
            .and_then(Value::as_str)
            .unwrap_or("query")
            .replace('_', " ");
        let Some(path) = file_path(input) else {
            return format!("LSP {operation}");
        };
        let mut title = format!(
            "LSP {operation} {}",
            display(&ctx.cwd, &resolve(&ctx.cwd, path))
        );
        if let Some(line) = input.get("line").and_then(Value::as_u64) {
            let _ = write!(title, ":{line}");
            if let Some(column) = input.get("column").and_then(Value::as_u64) {
                let _ = write!(title, ":{column}");
            }
        }
        if let Some(query) = input.get("query").and_then(Value::as_str) {
            let _ = write!(title, " {query:?}");
        }
        title
    }

    fn locations(&self, input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
        file_location(input, ctx)
    }

    fn target(&self, input: &Value, ctx: &ToolContext) -> CallTarget {
        file_target(input, ctx)
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let (servers, wait, owned) = (Arc::clone(&self.servers), self.wait, ctx.clone());
        guarded(
            ctx,
            async move {
                match query(&servers, wait, input, &owned).await {
                    Ok(text) => ToolOutput::text(cap(text, owned.limits.output_chars)),
                    Err(error) => ToolOutput::error(error.to_string()),
                }
            },
            true,
        )
        .await
    }
}

async fn query(
    servers: &LanguageServers,
    wait: DiagnosticsWait,
    input: Value,
    ctx: &ToolContext,
) -> Result<String, CallError> {
    let input: LspInput =
        serde_json::from_value(input).map_err(|source| CallError::InvalidInput {
            tool: "lsp",
            source,
        })?;
    let subject = Subject::load(ctx, &input.file_path).await?;
    let server = server_for(servers, &subject.path, &subject.shown)?;
    let position = || -> Result<(u32, u32), CallError> {
        let (Some(line), Some(column)) = (input.line, input.column) else {
            return Err(CallError::NeedsPosition {
                shown: subject.shown.clone(),
            });
        };
        subject.check_position(line, column)?;
        Ok((line, column))
    };
    let answers = Answers {
        server: &server,
        subject: &subject,
        ctx,
    };
    match input.operation {
        Operation::Definition => {
            let (line, column) = position()?;
            answers.sync().await?;
            let found = server
                .definition(&subject.path, line, column)
                .await
                .map_err(CallError::Server)?;
            if found.is_empty() {
                return Ok(format!(
                    "No definition found at {}:{line}:{column}.",
                    subject.shown
                ));
            }
            Ok(answers.locations(found).await)
        }
        Operation::References => {
            let (line, column) = position()?;
            answers.sync().await?;
            let mut found = server
                .references(&subject.path, line, column, true)
                .await
                .map_err(CallError::Server)?;
            if found.is_empty() {
                return Ok(format!(
                    "No references found at {}:{line}:{column}.",
                    subject.shown
                ));
            }
            found.sort_by(|a, b| (&a.path, a.line, a.column).cmp(&(&b.path, b.line, b.column)));
            let count = found.len();
            let plural = if count == 1 { "" } else { "s" };
            Ok(format!(
                "{count} reference{plural} (the declaration included):\n{}",
                answers.locations(found).await
            ))
        }
        Operation::Hover => {
            let (line, column) = position()?;
            answers.sync().await?;
            let hover = server
                .hover(&subject.path, line, column)
                .await
                .map_err(CallError::Server)?;
            Ok(match hover {
                Some(text) => cap(text.trim().to_string(), MAX_HOVER_CHARS),
                None => format!("Nothing to show at {}:{line}:{column}.", subject.shown),
            })
        }
        Operation::DocumentSymbols => {
            answers.sync().await?;
            let symbols = server
                .document_symbols(&subject.path)
                .await
                .map_err(CallError::Server)?;
            if symbols.is_empty() {
                return Ok(format!("No symbols in {}.", subject.shown));
            }
            Ok(outline(&symbols))
        }
        Operation::WorkspaceSymbols => {
            let query = input.query.as_deref().ok_or(CallError::NeedsQuery)?;
            answers.sync().await?;
            let symbols = server
                .workspace_symbols(query)
                .await
                .map_err(CallError::Server)?;
            if symbols.is_empty() {
                return Ok(format!("No symbols match {query:?}."));
            }
            let mut out = String::new();
            for symbol in symbols.iter().take(MAX_ITEMS) {
                let _ = writeln!(
                    out,
                    "{} {}  {}:{}:{}",
                    symbol.kind,
                    symbol.name,
                    display(&ctx.cwd, &symbol.location.path),
                    symbol.name_line,
                    symbol.name_column
                );
            }
            more(&mut out, symbols.len());
            Ok(out.trim_end().to_string())
        }
        Operation::Diagnostics => {
            let report = servers
                .diagnostics_after_change(&subject.path, &subject.text, wait)
                .await
                .map_err(CallError::Server)?
                .ok_or_else(|| CallError::NoLongerHandled {
                    shown: subject.shown.clone(),
                })?;
            let mut out = if report.diagnostics.is_empty() {
                format!("No diagnostics in {}.", subject.shown)
            } else {
                report
                    .diagnostics
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            if !report.fresh {
                out.push_str(&format!(
                    "\n({} had not finished checking the file; this may be out of date.)",
                    server.name
                ));
            }
            Ok(out)
        }
        Operation::CodeActions => {
            let line = input.line.ok_or(CallError::NeedsLine)?;
            let (actions, place) =
                offered_actions(&server, &subject, line, input.column, wait).await?;
            if actions.is_empty() {
                return Ok(format!("No code actions offered for {place}."));
            }
            let mut out = format!("Code actions for {place}:\n");
            for (number, action) in actions.iter().enumerate() {
                let mut notes: Vec<&str> = action.kind.iter().map(String::as_str).collect();
                if action.preferred {
                    notes.push("preferred");
                }
                let _ = write!(out, "{}. {}", number + 1, action.title);
                if !notes.is_empty() {
                    let _ = write!(out, " ({})", notes.join(", "));
                }
                out.push('\n');
            }
            out.push_str(
                "Apply one with apply_code_action, giving its exact title and the same line and column.",
            );
            Ok(out)
        }
    }
}

/// What the answers need: the server, the file, and the call's context for reading other
/// files and showing paths.
struct Answers<'a> {
    server: &'a LanguageServer,
    subject: &'a Subject,
    ctx: &'a ToolContext,
}

impl Answers<'_> {
    /// Sends the file's current text to the server.
    async fn sync(&self) -> Result<(), CallError> {
        self.server
            .open_or_update(&self.subject.path, &self.subject.text)
            .await
            .map(drop)
            .map_err(CallError::Server)
    }

    /// `path:line:column: source line` per location, as grep shows matches.
    async fn locations(&self, found: Vec<Location>) -> String {
        let mut texts: HashMap<PathBuf, String> = HashMap::new();
        texts.insert(self.subject.path.clone(), self.subject.text.clone());
        let mut out = String::new();
        for location in found.iter().take(MAX_ITEMS) {
            if !texts.contains_key(&location.path) {
                let text = self
                    .ctx
                    .files
                    .read_text(&location.path)
                    .await
                    .unwrap_or_default();
                texts.insert(location.path.clone(), text);
            }
            let source = texts[&location.path]
                .lines()
                .nth(location.line.saturating_sub(1) as usize)
                .unwrap_or("")
                .trim();
            let source: String = source.chars().take(200).collect();
            let _ = writeln!(
                out,
                "{}:{}:{}: {source}",
                display(&self.ctx.cwd, &location.path),
                location.line,
                location.column
            );
        }
        more(&mut out, found.len());
        out.trim_end().to_string()
    }
}

/// `kind name  line:column` per symbol, indented by nesting: a symbol whose range lies in
/// an earlier one's is shown under it.
fn outline(symbols: &[Symbol]) -> String {
    let mut out = String::new();
    let mut open: Vec<&Location> = Vec::new();
    for symbol in symbols.iter().take(MAX_ITEMS) {
        let here = &symbol.location;
        while let Some(parent) = open.last() {
            let inside = (parent.line, parent.column) <= (here.line, here.column)
                && (here.end_line, here.end_column) <= (parent.end_line, parent.end_column);
            if inside {
                break;
            }
            open.pop();
        }
        let _ = writeln!(
            out,
            "{}{} {}  {}:{}",
            "  ".repeat(open.len()),
            symbol.kind,
            symbol.name,
            symbol.name_line,
            symbol.name_column
        );
        open.push(here);
    }
    more(&mut out, symbols.len());
    out.trim_end().to_string()
}

/// Notes how many items were left out of a list cut at [`MAX_ITEMS`].
fn more(out: &mut String, total: usize) {
    if total > MAX_ITEMS {
        let _ = writeln!(out, "… and {} more", total - MAX_ITEMS);
    }
}
