//! Where a server's login is kept: one file per server and URL,
//! `<data dir>/mcp-auth/<name>-<hash of the URL>.json`, readable by its owner only (mode
//! 0600, in a 0700 folder), rewritten whole through a temporary file each time a token
//! is issued or refreshed. It holds the client Larik logged in as (registered dynamically
//! or configured), the authorization server's metadata (so a reconnect needs no
//! discovery), and the tokens. Processes that share the file take a lock on
//! `<file>.lock` around a refresh, so a rotated refresh token is used once.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};

use crate::files::{Fnv1a, private_dir, write_atomically};
use crate::naming::sanitize;

/// The client Larik logs in as.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct ClientRecord {
    pub(crate) client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    /// The redirect it was registered with (a dynamically registered client is used again
    /// only when its port can be listened on again).
    pub(crate) redirect_uri: String,
    /// Whether Larik registered it itself.
    #[serde(default)]
    pub(crate) registered: bool,
}

/// The whole file.
#[derive(Default, Serialize, Deserialize)]
pub(crate) struct Record {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client: Option<ClientRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<AuthorizationMetadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) credentials: Option<StoredCredentials>,
}

/// One server's login file.
#[derive(Debug, Clone)]
pub(crate) struct TokenFile {
    path: PathBuf,
}

impl TokenFile {
    /// The file for server `name` at `url`, in `dir`.
    pub(crate) fn new(dir: &Path, name: &str, url: &str) -> Self {
        let mut hasher = Fnv1a::default();
        hasher.write(url.as_bytes());
        let hash = hasher.finish();
        TokenFile {
            path: dir.join(format!("{}-{hash:016x}.json", sanitize(name))),
        }
    }

    /// Whether a login was kept.
    pub(crate) fn exists(&self) -> bool {
        self.path.is_file()
    }

    /// What it holds; a missing file is an empty record, one that cannot be read an error.
    pub(crate) fn read(&self) -> Result<Record, String> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => serde_json::from_str(&text).map_err(|error| {
                format!("the login file {} is damaged: {error}", self.path.display())
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Record::default()),
            Err(error) => Err(format!(
                "cannot read the login file {}: {error}",
                self.path.display()
            )),
        }
    }

    /// Replaces it with `record`, readable by its owner only.
    pub(crate) fn write(&self, record: &Record) -> Result<(), String> {
        let text = serde_json::to_vec_pretty(record).map_err(|error| error.to_string())?;
        write_atomically(&self.path, &text).map_err(|error| {
            format!(
                "cannot write the login file {}: {error}",
                self.path.display()
            )
        })
    }

    /// Changes the record with `change`, keeping the rest.
    pub(crate) fn update(&self, change: impl FnOnce(&mut Record)) -> Result<(), String> {
        let mut record = self.read()?;
        change(&mut record);
        self.write(&record)
    }

    /// Forgets the login.
    pub(crate) fn remove(&self) -> Result<bool, String> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(format!(
                "cannot remove the login file {}: {error}",
                self.path.display()
            )),
        }
    }
}

fn store_error(why: String) -> AuthError {
    AuthError::InternalError(why)
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read().map_err(store_error)?.credentials)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.update(|record| record.credentials = Some(credentials))
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.update(|record| record.credentials = None)
            .map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock_path = self.path.with_extension("json.lock");
        let locked = tokio::task::spawn_blocking(move || {
            if let Some(dir) = lock_path.parent() {
                private_dir(dir)?;
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|error| store_error(error.to_string()))?
        .map_err(|error| store_error(format!("cannot lock the login file: {error}")))?;
        // Closing the file releases the lock.
        Ok(Some(CredentialRefreshGuard::new(locked)))
    }
}
