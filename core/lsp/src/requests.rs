//! The requests behind the `lsp` tool, as thin wrappers: definition, references, hover,
//! document and workspace symbols, code actions for a line range. Positions go in and come
//! out in Larik's terms (1-based line, character column); code actions also carry the
//! server's raw JSON so a later step can resolve and apply them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use larik_protocol::sync::locked;
use ls_types::{
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, MarkedString,
    WorkspaceSymbolResponse,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::LspError;
use crate::capabilities::file_uri;
use crate::client::LanguageServer;
use crate::encoding::{PositionEncoding, from_lsp, to_lsp};

/// A range in a file, in Larik's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub path: PathBuf,
    /// 1-based start line.
    pub line: u32,
    /// 1-based start column, in characters.
    pub column: u32,
    /// 1-based end line.
    pub end_line: u32,
    /// 1-based end column (exclusive), in characters.
    pub end_column: u32,
}

/// A symbol from `documentSymbol` or `workspace/symbol`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The symbol's name.
    pub name: String,
    /// Its kind (`Function`, `Class`, `Variable`, …).
    pub kind: String,
    /// Extra detail the server gives (often a signature).
    pub detail: Option<String>,
    /// The enclosing symbol's name, if any.
    pub container: Option<String>,
    /// Where it is (the whole symbol; for document symbols, its full range).
    pub location: Location,
    /// 1-based line of its name (where definition and references find it).
    pub name_line: u32,
    /// 1-based column of its name, in characters.
    pub name_column: u32,
}

/// A code action offered by the server.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeActionItem {
    /// The title shown to users, which also identifies the action when applying it.
    pub title: String,
    /// Its kind (`quickfix`, `refactor.extract`, …).
    pub kind: Option<String>,
    /// Whether the server marks it as the preferred fix.
    pub preferred: bool,
    /// The action exactly as the server sent it (a `CodeAction` or a bare `Command`).
    pub raw: Value,
}

impl LanguageServer {
    /// The text of `path` as the server sees it: the open document's, else the file's.
    pub(crate) fn text_of(&self, path: &Path) -> Option<String> {
        let open = locked(&self.connection.shared.state)
            .documents
            .get(path)
            .map(|document| document.text.clone());
        open.or_else(|| std::fs::read_to_string(path).ok())
    }

    /// Opens `path` from disk if the server does not have it open yet; returns its text.
    async fn ensure_open(&self, path: &Path) -> Result<String, LspError> {
        let open = locked(&self.connection.shared.state)
            .documents
            .get(path)
            .map(|document| document.text.clone());
        if let Some(text) = open {
            return Ok(text);
        }
        let text = std::fs::read_to_string(path).map_err(|source| LspError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.open_or_update(path, &text).await?;
        Ok(text)
    }

    /// Opens the file and builds `textDocument` + `position` parameters.
    async fn position_params(
        &self,
        path: &Path,
        line: u32,
        column: u32,
    ) -> Result<Value, LspError> {
        let text = self.ensure_open(path).await?;
        let position = to_lsp(&text, line, column, self.position_encoding().await?);
        Ok(json!({"textDocument": {"uri": file_uri(path)?}, "position": position}))
    }

    async fn typed<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Option<T>, LspError> {
        let answer = self.request(method, params).await?;
        if answer.is_null() {
            return Ok(None);
        }
        serde_json::from_value(answer)
            .map(Some)
            .map_err(|source| LspError::Decode {
                method: method.into(),
                source,
            })
    }

    /// Converts the server's locations for one answer, reading each file's text once.
    fn locations(&self, encoding: PositionEncoding) -> Locations<'_> {
        Locations {
            server: self,
            encoding,
            texts: HashMap::new(),
        }
    }

    /// `textDocument/definition` at a 1-based line and character column.
    pub async fn definition(
        &self,
        path: &Path,
        line: u32,
        column: u32,
    ) -> Result<Vec<Location>, LspError> {
        let params = self.position_params(path, line, column).await?;
        let mut locations = self.locations(self.position_encoding().await?);
        let answer: Option<GotoDefinitionResponse> =
            self.typed("textDocument/definition", params).await?;
        let pairs = match answer {
            None => Vec::new(),
            Some(GotoDefinitionResponse::Scalar(location)) => vec![(location.uri, location.range)],
            Some(GotoDefinitionResponse::Array(locations)) => locations
                .into_iter()
                .map(|location| (location.uri, location.range))
                .collect(),
            Some(GotoDefinitionResponse::Link(links)) => links
                .into_iter()
                .map(|link| (link.target_uri, link.target_selection_range))
                .collect(),
        };
        Ok(pairs
            .iter()
            .filter_map(|(uri, range)| locations.location(uri, *range))
            .collect())
    }

    /// `textDocument/references` at a 1-based line and character column.
    pub async fn references(
        &self,
        path: &Path,
        line: u32,
        column: u32,
        include_declaration: bool,
    ) -> Result<Vec<Location>, LspError> {
        let mut params = self.position_params(path, line, column).await?;
        params["context"] = json!({"includeDeclaration": include_declaration});
        let mut locations = self.locations(self.position_encoding().await?);
        let answer: Option<Vec<ls_types::Location>> =
            self.typed("textDocument/references", params).await?;
        Ok(answer
            .unwrap_or_default()
            .iter()
            .filter_map(|location| locations.location(&location.uri, location.range))
            .collect())
    }

    /// `textDocument/hover` at a 1-based line and character column, as plain text (markdown
    /// as the server wrote it); `None` when the server has nothing to say.
    pub async fn hover(
        &self,
        path: &Path,
        line: u32,
        column: u32,
    ) -> Result<Option<String>, LspError> {
        let params = self.position_params(path, line, column).await?;
        let answer: Option<Hover> = self.typed("textDocument/hover", params).await?;
        let marked = |marked: MarkedString| match marked {
            MarkedString::String(text) => text,
            MarkedString::LanguageString(code) => {
                format!("```{}\n{}\n```", code.language, code.value)
            }
        };
        let text = answer.map(|hover| match hover.contents {
            HoverContents::Scalar(one) => marked(one),
            HoverContents::Array(many) => many
                .into_iter()
                .map(marked)
                .collect::<Vec<_>>()
                .join("\n\n"),
            HoverContents::Markup(markup) => markup.value,
        });
        Ok(text.filter(|text| !text.trim().is_empty()))
    }

    /// `textDocument/documentSymbol`, flattened in document order with container names.
    pub async fn document_symbols(&self, path: &Path) -> Result<Vec<Symbol>, LspError> {
        self.ensure_open(path).await?;
        let mut locations = self.locations(self.position_encoding().await?);
        let params = json!({"textDocument": {"uri": file_uri(path)?}});
        let answer: Option<DocumentSymbolResponse> =
            self.typed("textDocument/documentSymbol", params).await?;
        let mut out = Vec::new();
        match answer {
            None => {}
            Some(DocumentSymbolResponse::Flat(flat)) => {
                out = Self::flat_symbols(flat, &mut locations)
            }
            Some(DocumentSymbolResponse::Nested(nested)) => {
                let uri = file_uri(path)?;
                let mut stack: Vec<(ls_types::DocumentSymbol, Option<String>)> = nested
                    .into_iter()
                    .rev()
                    .map(|symbol| (symbol, None))
                    .collect();
                while let Some((symbol, container)) = stack.pop() {
                    if let Some(location) = locations.location(&uri, symbol.range) {
                        let name_at = locations
                            .location(&uri, symbol.selection_range)
                            .unwrap_or_else(|| location.clone());
                        out.push(Symbol {
                            name: symbol.name.clone(),
                            kind: format!("{:?}", symbol.kind),
                            detail: symbol.detail.clone(),
                            container,
                            name_line: name_at.line,
                            name_column: name_at.column,
                            location,
                        });
                    }
                    for child in symbol.children.unwrap_or_default().into_iter().rev() {
                        stack.push((child, Some(symbol.name.clone())));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Symbols given flat, as `SymbolInformation`, with their locations converted.
    fn flat_symbols(
        flat: Vec<ls_types::SymbolInformation>,
        locations: &mut Locations<'_>,
    ) -> Vec<Symbol> {
        flat.into_iter()
            .filter_map(|symbol| {
                let location = locations.location(&symbol.location.uri, symbol.location.range)?;
                Some(Symbol {
                    name: symbol.name,
                    kind: format!("{:?}", symbol.kind),
                    detail: None,
                    container: symbol.container_name,
                    name_line: location.line,
                    name_column: location.column,
                    location,
                })
            })
            .collect()
    }

    /// `workspace/symbol` for a query.
    pub async fn workspace_symbols(&self, query: &str) -> Result<Vec<Symbol>, LspError> {
        let mut locations = self.locations(self.position_encoding().await?);
        let answer: Option<WorkspaceSymbolResponse> = self
            .typed("workspace/symbol", json!({"query": query}))
            .await?;
        let mut out = Vec::new();
        match answer {
            None => {}
            Some(WorkspaceSymbolResponse::Flat(flat)) => {
                out = Self::flat_symbols(flat, &mut locations)
            }
            Some(WorkspaceSymbolResponse::Nested(nested)) => {
                for symbol in nested {
                    // A location without a range (to be resolved later) points at the file start.
                    let (uri, range) = match symbol.location {
                        ls_types::OneOf::Left(location) => (location.uri, location.range),
                        ls_types::OneOf::Right(location) => {
                            (location.uri, ls_types::Range::default())
                        }
                    };
                    if let Some(location) = locations.location(&uri, range) {
                        out.push(Symbol {
                            name: symbol.name,
                            kind: format!("{:?}", symbol.kind),
                            detail: None,
                            container: symbol.container_name,
                            name_line: location.line,
                            name_column: location.column,
                            location,
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    /// `textDocument/codeAction` for lines `start_line..=end_line` (1-based, whole lines),
    /// with the diagnostics known for those lines in the context so quick fixes come back.
    pub async fn code_actions(
        &self,
        path: &Path,
        start_line: u32,
        end_line: u32,
    ) -> Result<Vec<CodeActionItem>, LspError> {
        let end_line = end_line.max(start_line);
        self.code_actions_in(path, (start_line, 1), (end_line, u32::MAX))
            .await
    }

    /// `textDocument/codeAction` for the range from `start` to `end`, each a 1-based
    /// (line, character column); refactorings often need a precise range or a point on a
    /// name. The diagnostics known for the range's lines go in the context.
    pub async fn code_actions_in(
        &self,
        path: &Path,
        (start_line, start_column): (u32, u32),
        (end_line, end_column): (u32, u32),
    ) -> Result<Vec<CodeActionItem>, LspError> {
        let text = self.ensure_open(path).await?;
        let encoding = self.position_encoding().await?;
        let start = to_lsp(&text, start_line, start_column, encoding);
        let end = to_lsp(&text, end_line, end_column, encoding);
        let overlapping: Vec<ls_types::Diagnostic> = {
            let state = locked(&self.connection.shared.state);
            let pushed = state.pushed.get(path).map(|push| push.diagnostics.iter());
            let pulled = state.pulled.get(path).map(|pulled| pulled.iter());
            pushed
                .into_iter()
                .flatten()
                .chain(pulled.into_iter().flatten())
                .filter(|diagnostic| {
                    diagnostic.range.start.line <= end.line
                        && diagnostic.range.end.line >= start.line
                })
                .cloned()
                .collect()
        };
        let params = json!({
            "textDocument": {"uri": file_uri(path)?},
            "range": {"start": start, "end": end},
            "context": {"diagnostics": overlapping, "triggerKind": 1},
        });
        let answer = self.request("textDocument/codeAction", params).await?;
        let actions = answer.as_array().cloned().unwrap_or_default();
        Ok(actions
            .into_iter()
            .filter_map(|raw| {
                let title = raw["title"].as_str()?.to_string();
                Some(CodeActionItem {
                    title,
                    kind: raw["kind"].as_str().map(str::to_string),
                    preferred: raw["isPreferred"].as_bool().unwrap_or(false),
                    raw,
                })
            })
            .collect())
    }
}

/// The locations of one answer in Larik's terms: 1-based lines and character columns,
/// computed from each file's text, which is read (or copied) once per answer.
struct Locations<'a> {
    server: &'a LanguageServer,
    encoding: PositionEncoding,
    texts: HashMap<PathBuf, String>,
}

impl Locations<'_> {
    fn location(&mut self, uri: &ls_types::Uri, range: ls_types::Range) -> Option<Location> {
        let path = uri.to_file_path()?.into_owned();
        let server = self.server;
        let text = self
            .texts
            .entry(path.clone())
            .or_insert_with(|| server.text_of(&path).unwrap_or_default());
        let (line, column) = from_lsp(text, range.start, self.encoding);
        let (end_line, end_column) = from_lsp(text, range.end, self.encoding);
        Some(Location {
            path,
            line,
            column,
            end_line,
            end_column,
        })
    }
}
