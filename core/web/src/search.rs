//! Web search through a service the user chose: Brave's Search API, Tavily or a SearXNG
//! instance, each asked in its own wire format and answered in one shape (title, URL,
//! snippet) the model can cite. The user's own configuration names the service, so its
//! address is not held to the address guard (a SearXNG instance often runs on localhost).

use std::time::Duration;

use serde_json::{Value, json};

/// Brave's Search API, where no other address is configured.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
/// Tavily's search endpoint, where no other address is configured.
pub const TAVILY_URL: &str = "https://api.tavily.com/search";

/// The service `web_search` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchBackend {
    /// Brave's Search API: `GET` with `X-Subscription-Token`.
    Brave {
        /// The endpoint.
        url: String,
        /// The subscription token.
        key: String,
    },
    /// Tavily: `POST` a JSON query with a bearer key.
    Tavily {
        /// The endpoint.
        url: String,
        /// The API key.
        key: String,
    },
    /// A SearXNG instance with its JSON output format switched on.
    Searxng {
        /// The instance's address; `/search` is added.
        url: String,
    },
}

/// Why a search failed, in a sentence for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SearchError(pub String);

impl From<String> for SearchError {
    fn from(message: String) -> Self {
        SearchError(message)
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult {
    /// The page's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// The words around the match, as plain text.
    pub snippet: String,
}

impl SearchBackend {
    /// The service's name, for titles and messages.
    pub fn name(&self) -> &'static str {
        match self {
            SearchBackend::Brave { .. } => "Brave Search",
            SearchBackend::Tavily { .. } => "Tavily",
            SearchBackend::Searxng { .. } => "SearXNG",
        }
    }

    /// Asks for up to `count` results for `query`.
    pub async fn search(
        &self,
        query: &str,
        count: usize,
    ) -> Result<Vec<SearchResult>, SearchError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("Larik/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| format!("cannot make a client: {error}"))?;
        let request = match self {
            SearchBackend::Brave { url, key } => client
                .get(url)
                .query(&[("q", query), ("count", &count.min(20).to_string())])
                .header("Accept", "application/json")
                .header("X-Subscription-Token", key),
            SearchBackend::Tavily { url, key } => client.post(url).bearer_auth(key).json(
                &json!({"query": query, "max_results": count.min(20), "search_depth": "basic"}),
            ),
            SearchBackend::Searxng { url } => client
                .get(format!("{}/search", url.trim_end_matches('/')))
                .query(&[("q", query), ("format", "json")]),
        };
        let name = self.name();
        let response = request
            .send()
            .await
            .map_err(|error| format!("{name} could not be reached: {error}"))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|error| format!("{name}'s answer could not be read: {error}"))?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let text: String = text.chars().take(300).collect();
            return Err(SearchError(format!("{name} answered {status}: {text}")));
        }
        let value: Value = serde_json::from_slice(&body)
            .map_err(|error| format!("{name}'s answer is not JSON: {error}"))?;
        let mut results = self.results(&value).ok_or_else(|| {
            format!("{name}'s answer has no result list where its format puts one")
        })?;
        results.truncate(count);
        Ok(results)
    }

    /// The results in a service's answer; `None` when its list is missing.
    fn results(&self, value: &Value) -> Option<Vec<SearchResult>> {
        let (list, snippet_key) = match self {
            // Brave leaves `web` out when nothing matched.
            SearchBackend::Brave { .. } => match value.get("web") {
                Some(web) => (web.get("results")?, "description"),
                None if value.get("type").is_some() => return Some(Vec::new()),
                None => return None,
            },
            SearchBackend::Tavily { .. } | SearchBackend::Searxng { .. } => {
                (value.get("results")?, "content")
            }
        };
        let text = |item: &Value, key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .map(strip_tags)
                .unwrap_or_default()
        };
        Some(
            list.as_array()?
                .iter()
                .filter_map(|item| {
                    let url = item.get("url")?.as_str()?.to_string();
                    Some(SearchResult {
                        title: text(item, "title"),
                        url,
                        snippet: text(item, snippet_key),
                    })
                })
                .collect(),
        )
    }
}

/// Text with HTML tags left out and the common entities read (Brave marks matches with
/// `<strong>`).
fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
        .trim()
        .to_string()
}

/// Whether `url`'s host is `domain` or below it.
pub fn in_domain(url: &str, domain: &str) -> bool {
    let domain = domain
        .trim()
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .to_ascii_lowercase();
    let Some(host) = url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
    else {
        return false;
    };
    !domain.is_empty()
        && (host == domain
            || host
                .strip_suffix(&domain)
                .is_some_and(|rest| rest.ends_with('.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_entities_leave_plain_text() {
        assert_eq!(
            strip_tags("The <strong>Rust</strong> &amp; &quot;Cargo&quot; book"),
            "The Rust & \"Cargo\" book"
        );
    }

    #[test]
    fn domains_match_their_hosts_and_those_below() {
        assert!(in_domain("https://docs.rs/x", "docs.rs"));
        assert!(in_domain("https://a.docs.rs/x", "*.docs.rs"));
        assert!(!in_domain("https://xdocs.rs/x", "docs.rs"));
        assert!(!in_domain("not a url", "docs.rs"));
    }
}
