//! The language servers as the edit tools' checker: after `write`, `edit` or `multi_edit`,
//! the file goes to its server and the errors and warnings it reports are appended to the
//! tool result, one compact line each (`ERROR 5:19 undefined: gret [compiler]`).
//!
//! An edit never fails or waits without bound because of a server: a missing server adds
//! nothing, a slow one is waited for as long as [`DiagnosticsWait`] allows, and one that
//! fails or crashed adds one line saying so.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use larik_protocol::sync::locked;
use larik_tools::EditFeedback;

use crate::diagnostics::{DiagnosticsWait, Severity};
use crate::manager::LanguageServers;

/// At most this many diagnostics are listed after an edit; the rest are counted.
pub const MAX_LISTED: usize = 20;

/// The edit tools' checker backed by a set of language servers.
pub struct ServerFeedback {
    servers: Arc<LanguageServers>,
    wait: DiagnosticsWait,
    /// Servers whose failure was already told: it is said once, not after every edit
    /// (a server that failed to start is not started again in the session).
    told: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for ServerFeedback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerFeedback")
            .field("servers", &self.servers.available())
            .field("wait", &self.wait)
            .finish()
    }
}

impl ServerFeedback {
    /// A checker asking `servers`, waiting as `wait` allows.
    pub fn new(servers: Arc<LanguageServers>, wait: DiagnosticsWait) -> Self {
        ServerFeedback {
            servers,
            wait,
            told: Mutex::new(HashSet::new()),
        }
    }
}

#[async_trait::async_trait]
impl EditFeedback for ServerFeedback {
    async fn after_edit(&self, path: &Path, text: &str) -> Option<String> {
        let name = self.servers.spec_for(path)?.name.clone();
        let unreadable_before = self.servers.unreadable_output(path);
        let outcome = self
            .servers
            .diagnostics_after_change(path, text, self.wait)
            .await;
        let mut lines: Vec<String> = self
            .servers
            .take_notices()
            .into_iter()
            // When this very request failed, its error says more than the exit notice.
            .filter(|notice| outcome.is_ok() || notice.server != name)
            .map(|notice| format!("({}: {})", notice.server, notice.message))
            .collect();
        match outcome {
            Ok(None) => {}
            Ok(Some(report)) => {
                let shown: Vec<_> = report
                    .diagnostics
                    .iter()
                    .filter(|d| matches!(d.severity, Severity::Error | Severity::Warning))
                    .collect();
                if !shown.is_empty() {
                    lines.push(format!("{name} reports:"));
                    lines.extend(shown.iter().take(MAX_LISTED).map(|d| d.to_string()));
                    if shown.len() > MAX_LISTED {
                        lines.push(format!("… and {} more", shown.len() - MAX_LISTED));
                    }
                }
                let unreadable = self
                    .servers
                    .unreadable_output(path)
                    .saturating_sub(unreadable_before);
                if !report.fresh && unreadable > 0 {
                    let log = self
                        .servers
                        .open_log(&name)
                        .map(|log| format!("; its log {} has it", log.display()))
                        .unwrap_or_default();
                    lines.push(format!(
                        "({name} did not report on this change: it wrote output that is not LSP \
                         ({unreadable} times{log}). Diagnostics may be missing or out of date.)"
                    ));
                } else if !report.fresh {
                    lines.push(format!(
                        "({name} had not finished checking this change; diagnostics may be missing or out of date.)"
                    ));
                }
            }
            Err(error) => {
                let first_time = locked(&self.told).insert(name.clone());
                if first_time {
                    let log = self
                        .servers
                        .open_log(&name)
                        .map(|log| format!(" Its log: {}.", log.display()))
                        .unwrap_or_default();
                    lines.push(format!("(No diagnostics from {name}: {error}.{log})"));
                }
            }
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    fn warm(&self, path: &Path) {
        if self.servers.spec_for(path).is_none() {
            return;
        }
        let (servers, path) = (Arc::clone(&self.servers), path.to_path_buf());
        // Outside a runtime there is nothing to warm in the background.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Ok(text) = tokio::fs::read_to_string(&path).await {
                    // A failure shows in the next edit's result.
                    let _ = servers.open(&path, &text).await;
                }
            });
        }
    }
}
