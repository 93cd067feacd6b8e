//! The web extension: `web_fetch`, `web_search` and the `browser_*` tools for every session
//! whose settings leave the web tools on. Fetchers live as long as the process, one per
//! list of allowed hosts, so the 15-minute page cache serves every session with the same
//! rules. The search service comes from the personal `web.search` setting, else from the
//! environment (`BRAVE_API_KEY`, `TAVILY_API_KEY`, `SEARXNG_URL`, in that order); without
//! one, `web_search` is still offered and each call says how to configure it. The browser
//! tools are offered where a Chromium is found (`web.browser.path`, Debian's, or one on
//! PATH); one browser serves the whole process, with its profile in the data directory,
//! and is closed when the process ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use larik_browser::{Browser, BrowserOptions, browser_tools, find_browser};

use larik_config::{Environment, SearchSettings};
use larik_protocol::sync::locked;
use larik_web::search::{BRAVE_URL, TAVILY_URL};
use larik_web::{FetchOptions, Fetcher, SearchBackend, WebFetchTool, WebSearchTool};

use super::error::{Notice, SetupError};
use super::extension::{Contributions, Extension, Scope, ShutDown};

/// The environment variable each key-based service's key is read from by default.
const BRAVE_KEY: &str = "BRAVE_API_KEY";
const TAVILY_KEY: &str = "TAVILY_API_KEY";
/// The environment variable naming a SearXNG instance.
const SEARXNG_URL: &str = "SEARXNG_URL";

/// The web tools.
#[derive(Default)]
pub struct WebExtension {
    /// One fetcher per list of allowed hosts.
    fetchers: Mutex<HashMap<Vec<String>, Arc<Fetcher>>>,
    /// The process's browser, made by the first session that offers the browser tools (its
    /// program and window setting hold for the process).
    browser: Mutex<Option<Arc<Browser>>>,
}

impl WebExtension {
    fn fetcher(&self, allowed_hosts: Vec<String>) -> Arc<Fetcher> {
        let mut fetchers = locked(&self.fetchers);
        Arc::clone(fetchers.entry(allowed_hosts.clone()).or_insert_with(|| {
            Arc::new(Fetcher::new(FetchOptions {
                allowed_hosts,
                ..FetchOptions::default()
            }))
        }))
    }
}

impl WebExtension {
    /// The process's browser, made now if this is the first session to want one; `true`
    /// with it when it was made now.
    fn browser(&self, options: BrowserOptions) -> (Arc<Browser>, bool) {
        let mut browser = locked(&self.browser);
        match browser.as_ref() {
            Some(existing) => (Arc::clone(existing), false),
            None => {
                let made = Arc::new(Browser::new(options));
                *browser = Some(Arc::clone(&made));
                (made, true)
            }
        }
    }
}

/// Closes the browser when the process ends.
struct CloseBrowser(Arc<Browser>);

#[async_trait::async_trait]
impl ShutDown for CloseBrowser {
    async fn shut_down(&self) {
        self.0.shut_down().await;
    }
}

impl Extension for WebExtension {
    fn name(&self) -> &'static str {
        "web"
    }

    fn contribute(&self, scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError> {
        let web = &scope.settings.web;
        if !web.enabled() {
            return Ok(());
        }
        let allowed_hosts = web.allowed_hosts();
        let fetcher = self.fetcher(allowed_hosts.clone());
        into.tools.push(Arc::new(WebFetchTool::new(fetcher)));
        let backend = match &web.search {
            Some(search) => match configured_backend(search, scope.env) {
                Ok(backend) => Some(backend),
                Err(message) => {
                    into.notices.push(Notice::configuration(message));
                    None
                }
            },
            None => backend_from_environment(scope.env),
        };
        into.tools.push(Arc::new(WebSearchTool::new(backend)));

        let configured = web.browser.path.as_deref();
        match find_browser(configured, scope.env.get("PATH")) {
            Some(executable) => {
                let profile_dir: PathBuf = match scope.env.data_dir() {
                    Ok(dir) => dir.join("browser-profile"),
                    Err(error) => {
                        into.notices.push(Notice::configuration(format!(
                            "the browser tools are off: no place for the browser's profile ({error})"
                        )));
                        return Ok(());
                    }
                };
                let (browser, made) = self.browser(BrowserOptions {
                    executable,
                    headless: web.browser.headless.unwrap_or(true),
                    profile_dir,
                    env: Vec::new(),
                });
                if made {
                    into.shutdown
                        .push(Arc::new(CloseBrowser(Arc::clone(&browser))));
                }
                into.tools.extend(browser_tools(&browser, allowed_hosts));
            }
            None => {
                if let Some(path) = configured {
                    into.notices.push(Notice::configuration(format!(
                        "the browser tools are off: `web.browser.path` names {}, which is not \
                         a program",
                        path.display()
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The service `web.search` names, with its key.
fn configured_backend(search: &SearchSettings, env: &Environment) -> Result<SearchBackend, String> {
    let key = |default_env: &str| {
        let variable = search.api_key_env.as_deref().unwrap_or(default_env);
        search
            .api_key
            .clone()
            .or_else(|| env.get(variable).map(str::to_string))
            .ok_or_else(|| {
                format!(
                    "web_search has no service: `web.search` names {} but gives no `api_key` \
                     and {variable} is not set",
                    search.backend
                )
            })
    };
    let url = |default: &str| search.url.clone().unwrap_or_else(|| default.to_string());
    match search.backend.as_str() {
        "brave" => Ok(SearchBackend::Brave {
            url: url(BRAVE_URL),
            key: key(BRAVE_KEY)?,
        }),
        "tavily" => Ok(SearchBackend::Tavily {
            url: url(TAVILY_URL),
            key: key(TAVILY_KEY)?,
        }),
        "searxng" => match &search.url {
            Some(url) => Ok(SearchBackend::Searxng { url: url.clone() }),
            None => Err("web_search has no service: a `searxng` backend needs its `url`".into()),
        },
        other => Err(format!(
            "web_search has no service: unknown backend `{other}`"
        )),
    }
}

/// The first service the environment gives a key or address for.
fn backend_from_environment(env: &Environment) -> Option<SearchBackend> {
    if let Some(key) = env.get(BRAVE_KEY) {
        return Some(SearchBackend::Brave {
            url: BRAVE_URL.to_string(),
            key: key.to_string(),
        });
    }
    if let Some(key) = env.get(TAVILY_KEY) {
        return Some(SearchBackend::Tavily {
            url: TAVILY_URL.to_string(),
            key: key.to_string(),
        });
    }
    env.get(SEARXNG_URL).map(|url| SearchBackend::Searxng {
        url: url.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_chooses_brave_then_tavily_then_searxng() {
        let env =
            Environment::from_pairs([(SEARXNG_URL, "http://searx.local"), (TAVILY_KEY, "tvly")]);
        assert_eq!(
            backend_from_environment(&env),
            Some(SearchBackend::Tavily {
                url: TAVILY_URL.into(),
                key: "tvly".into()
            })
        );
        let env = Environment::from_pairs([(SEARXNG_URL, "http://searx.local")]);
        assert_eq!(
            backend_from_environment(&env).map(|backend| backend.name()),
            Some("SearXNG")
        );
        assert_eq!(
            backend_from_environment(&Environment::from_pairs([("BRAVE_API_KEY", "")])),
            None
        );
    }

    #[test]
    fn a_configured_service_takes_its_key_from_the_file_or_the_named_variable() {
        let env = Environment::from_pairs([("MY_KEY", "from-env"), (BRAVE_KEY, "default")]);
        let search = SearchSettings {
            backend: "brave".into(),
            api_key_env: Some("MY_KEY".into()),
            ..SearchSettings::default()
        };
        assert_eq!(
            configured_backend(&search, &env),
            Ok(SearchBackend::Brave {
                url: BRAVE_URL.into(),
                key: "from-env".into()
            })
        );
        let search = SearchSettings {
            backend: "tavily".into(),
            ..SearchSettings::default()
        };
        assert_eq!(
            configured_backend(&search, &env),
            Err("web_search has no service: `web.search` names tavily but gives no `api_key` and TAVILY_API_KEY is not set".into())
        );
    }
}
