//! What we tell a server we can do, and what we read back from its answer. The client
//! capabilities are honest: only what this crate really handles is declared.

use std::path::Path;

use ls_types::{
    ClientCapabilities, InitializeParams, InitializeResult, ServerCapabilities,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncSaveOptions, Uri,
    WorkspaceFolder,
};
use serde_json::{Value, json};

use crate::LspError;
use crate::encoding::PositionEncoding;

/// The client capabilities, as JSON first because that reads like the protocol; a unit test
/// checks they survive a round trip through `ls_types`, so no key is misspelled.
fn client_capabilities_json() -> Value {
    json!({
        "general": {"positionEncodings": ["utf-8", "utf-16"]},
        "window": {"workDoneProgress": true},
        "workspace": {
            // Edits are applied by `apply_code_action`: text edits only, no file operations,
            // and a server's own `workspace/applyEdit` only while its command runs.
            "applyEdit": true,
            "workspaceEdit": {"documentChanges": true},
            "executeCommand": {"dynamicRegistration": false},
            "configuration": true,
            "workspaceFolders": true,
            "symbol": {"dynamicRegistration": false},
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": false, "didSave": true},
            "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
            "diagnostic": {"dynamicRegistration": true, "relatedDocumentSupport": false},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "definition": {"linkSupport": true},
            "references": {},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
            "codeAction": {
                "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                    "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                    "refactor.rewrite", "source", "source.organizeImports", "source.fixAll",
                ]}},
                "isPreferredSupport": true,
                "dataSupport": true,
                "resolveSupport": {"properties": ["edit"]},
            },
        },
    })
}

/// The capabilities sent in `initialize`.
pub(crate) fn client_capabilities() -> ClientCapabilities {
    serde_json::from_value(client_capabilities_json())
        .expect("the capabilities literal matches ls_types (checked by a unit test)")
}

/// Builds the `initialize` parameters for a project rooted at `root`.
pub(crate) fn initialize_params(root: &Path) -> Result<Value, LspError> {
    let uri = file_uri(root)?;
    let name = root.file_name().map_or_else(
        || root.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    #[allow(deprecated, reason = "older servers still read rootUri and rootPath")]
    let params = InitializeParams {
        process_id: Some(std::process::id()),
        root_path: Some(root.display().to_string()),
        root_uri: Some(uri.clone()),
        capabilities: client_capabilities(),
        workspace_folders: Some(vec![WorkspaceFolder { uri, name }]),
        client_info: Some(ls_types::ClientInfo {
            name: "larik".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        ..InitializeParams::default()
    };
    Ok(serde_json::to_value(params).expect("initialize params serialize"))
}

/// The `file://` URI for an absolute path.
pub(crate) fn file_uri(path: &Path) -> Result<Uri, LspError> {
    if !path.is_absolute() {
        return Err(LspError::InvalidPath(path.to_path_buf()));
    }
    Uri::from_file_path(path).ok_or_else(|| LspError::InvalidPath(path.to_path_buf()))
}

/// How the server wants `didSave`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Save {
    /// Not wanted.
    No,
    /// Wanted, without the text.
    Yes,
    /// Wanted, with the full text.
    WithText,
}

/// What the rest of the crate needs from the server's capabilities.
#[derive(Debug, Clone)]
pub(crate) struct ServerFeatures {
    pub(crate) encoding: PositionEncoding,
    pub(crate) change: TextDocumentSyncKind,
    pub(crate) save: Save,
    /// `diagnosticProvider`'s identifier, when pull diagnostics are declared statically.
    pub(crate) static_pull: Option<Option<String>>,
    /// Whether the server passes requests on to TypeScript's server, which then answers a
    /// file's diagnostics directly (typescript-language-server; see `tsserver`).
    pub(crate) asks_typescript: bool,
    /// The raw capabilities, for callers that want to check a provider.
    pub(crate) capabilities: ServerCapabilities,
}

impl ServerFeatures {
    /// Reads the answer to `initialize`.
    pub(crate) fn from_initialize(result: Value) -> Result<Self, LspError> {
        let result: InitializeResult =
            serde_json::from_value(result).map_err(|source| LspError::Decode {
                method: "initialize".into(),
                source,
            })?;
        let capabilities = result.capabilities;
        let (change, save) = match &capabilities.text_document_sync {
            None => (TextDocumentSyncKind::NONE, Save::No),
            Some(TextDocumentSyncCapability::Kind(kind)) => (*kind, Save::No),
            Some(TextDocumentSyncCapability::Options(options)) => (
                options.change.unwrap_or(TextDocumentSyncKind::NONE),
                match &options.save {
                    None | Some(TextDocumentSyncSaveOptions::Supported(false)) => Save::No,
                    Some(TextDocumentSyncSaveOptions::Supported(true)) => Save::Yes,
                    Some(TextDocumentSyncSaveOptions::SaveOptions(options)) => {
                        if options.include_text == Some(true) {
                            Save::WithText
                        } else {
                            Save::Yes
                        }
                    }
                },
            ),
        };
        let static_pull = capabilities.diagnostic_provider.as_ref().map(|provider| {
            let provider = serde_json::to_value(provider).unwrap_or(Value::Null);
            provider["identifier"].as_str().map(str::to_string)
        });
        Ok(Self {
            encoding: PositionEncoding::from_kind(capabilities.position_encoding.as_ref()),
            change,
            save,
            static_pull,
            asks_typescript: crate::tsserver::offered(&capabilities),
            capabilities,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_capabilities_round_trip_through_ls_types() {
        let typed = serde_json::to_value(client_capabilities()).expect("serializes");
        assert_eq!(typed, client_capabilities_json());
    }

    #[test]
    fn reads_sync_save_encoding_and_pull() {
        let features = ServerFeatures::from_initialize(json!({"capabilities": {
            "positionEncoding": "utf-8",
            "textDocumentSync": {"openClose": true, "change": 2, "save": {"includeText": true}},
            "diagnosticProvider": {"identifier": "x", "interFileDependencies": false,
                                   "workspaceDiagnostics": false},
        }}))
        .expect("valid");
        assert_eq!(features.encoding, PositionEncoding::Utf8);
        assert_eq!(features.change, TextDocumentSyncKind::INCREMENTAL);
        assert_eq!(features.save, Save::WithText);
        assert_eq!(features.static_pull, Some(Some("x".into())));

        let features =
            ServerFeatures::from_initialize(json!({"capabilities": {"textDocumentSync": 1}}))
                .expect("valid");
        assert_eq!(features.encoding, PositionEncoding::Utf16);
        assert_eq!(features.change, TextDocumentSyncKind::FULL);
        assert_eq!(features.save, Save::No);
        assert_eq!(features.static_pull, None);
    }
}
