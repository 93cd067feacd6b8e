//! The `web` settings of a configuration file: whether the web and browser tools are there,
//! which hosts they may reach although those resolve to the local network, the search
//! backend, and how the browser starts.
//!
//! Reaching the local network, choosing a search backend and choosing the program started
//! as the browser loosen what the agent may do, so they count only from personal files (or
//! once approved). A shared file may switch the tools off and shorten `allowed_hosts`:
//! its list only keeps, of the personal hosts, those it names too.

use std::path::PathBuf;

use serde_json::Value;

use super::Layer;

/// `web` in a file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebSettings {
    /// `enabled` from personal files (`None`: Larik's default, on).
    pub enabled: Option<bool>,
    /// `enabled: false` from a shared file: the tools are off whatever personal files say.
    pub disabled_by_shared: bool,
    /// `allowed_hosts` from personal files: hosts `web_fetch` and the browser may reach
    /// though they are local or private addresses (e.g. `localhost`, `127.0.0.1`).
    pub allowed_hosts: Vec<String>,
    /// `allowed_hosts` from shared files, each file's list: only hosts every one of them
    /// names stay allowed.
    pub allowed_hosts_limits: Vec<Vec<String>>,
    /// `search`: the search backend (personal files only, or approved).
    pub search: Option<SearchSettings>,
    /// `browser`.
    pub browser: BrowserSettings,
}

impl WebSettings {
    /// Whether the web and browser tools are offered.
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(true) && !self.disabled_by_shared
    }

    /// The hosts that may be reached on the local network: the personal list, less what a
    /// shared file's list leaves out. Lowercase.
    pub fn allowed_hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for host in &self.allowed_hosts {
            let host = host.trim().to_ascii_lowercase();
            let kept = self.allowed_hosts_limits.iter().all(|limit| {
                limit
                    .iter()
                    .any(|named| named.trim().eq_ignore_ascii_case(&host))
            });
            if kept && !host.is_empty() && !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        hosts
    }
}

/// `web.search`: which service `web_search` asks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchSettings {
    /// `backend`: `brave`, `tavily` or `searxng`.
    pub backend: String,
    /// `url`: the service's address (required for SearXNG; the others have their own).
    pub url: Option<String>,
    /// `api_key`: the key, written in the file.
    pub api_key: Option<String>,
    /// `api_key_env`: the environment variable holding the key.
    pub api_key_env: Option<String>,
}

/// `web.browser`: how the browser tools start Chromium.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserSettings {
    /// `path`: the Chromium or Chrome program, made absolute, or a bare name to look up on
    /// PATH (personal files only, or approved).
    pub path: Option<PathBuf>,
    /// `headless`: `false` opens a window (Larik's default is headless).
    pub headless: Option<bool>,
}

/// The search backends `web.search.backend` may name.
pub const SEARCH_BACKENDS: [&str; 3] = ["brave", "tavily", "searxng"];

impl Layer<'_> {
    pub(super) fn web(&mut self, value: &Value, web: &mut WebSettings) {
        let Some(object) = self.object("web", value) else {
            return;
        };
        for (key, value) in object {
            match key.as_str() {
                "enabled" => self.web_enabled(value, web),
                "allowed_hosts" => {
                    let Some(hosts) = self.strings("web.allowed_hosts", value) else {
                        continue;
                    };
                    if self.shared() {
                        web.allowed_hosts_limits.push(hosts);
                    } else {
                        web.allowed_hosts.extend(hosts);
                    }
                }
                "search" => {
                    if let Some(search) = self.search(value)
                        && self.may_loosen("web.search", value, "choose the web search backend")
                    {
                        web.search = Some(search);
                    }
                }
                "browser" => self.browser(value, &mut web.browser),
                other => self.notice(format!("`web.{other}` ignored: not a setting")),
            }
        }
    }

    fn web_enabled(&mut self, value: &Value, web: &mut WebSettings) {
        let Some(enabled) = self.boolean("web.enabled", value) else {
            return;
        };
        if !self.shared() {
            web.enabled = Some(enabled);
        } else if !enabled {
            web.disabled_by_shared = true;
        } else {
            self.notice(
                "`web.enabled` ignored: a file shared with the repository may switch the web \
                 tools off, not on"
                    .to_string(),
            );
        }
    }

    fn search(&mut self, value: &Value) -> Option<SearchSettings> {
        let object = self.object("web.search", value)?;
        let mut search = SearchSettings::default();
        for (key, value) in object {
            let field = format!("web.search.{key}");
            match key.as_str() {
                "backend" => search.backend = self.string(&field, value)?.to_ascii_lowercase(),
                "url" => search.url = Some(self.string(&field, value)?),
                "api_key" => search.api_key = Some(self.string(&field, value)?),
                "api_key_env" => search.api_key_env = Some(self.string(&field, value)?),
                other => self.notice(format!("`web.search.{other}` ignored: not a setting")),
            }
        }
        if !SEARCH_BACKENDS.contains(&search.backend.as_str()) {
            self.notice(format!(
                "`web.search` ignored: `backend` must be one of {}",
                SEARCH_BACKENDS.join(", ")
            ));
            return None;
        }
        if search.backend == "searxng" && search.url.is_none() {
            self.notice("`web.search` ignored: a `searxng` backend needs its `url`".to_string());
            return None;
        }
        Some(search)
    }

    fn browser(&mut self, value: &Value, browser: &mut BrowserSettings) {
        let Some(object) = self.object("web.browser", value) else {
            return;
        };
        for (key, value) in object {
            match key.as_str() {
                "path" => {
                    if let Some(path) = self.string("web.browser.path", value)
                        && self.may_loosen(
                            "web.browser.path",
                            value,
                            "choose the program started as the browser",
                        )
                    {
                        // A bare name is looked up on PATH when the browser starts.
                        browser.path = Some(if path.contains('/') {
                            self.resolve(&path)
                        } else {
                            PathBuf::from(path)
                        });
                    }
                }
                "headless" => {
                    if let Some(headless) = self.boolean("web.browser.headless", value) {
                        browser.headless = Some(headless);
                    }
                }
                other => self.notice(format!("`web.browser.{other}` ignored: not a setting")),
            }
        }
    }
}
