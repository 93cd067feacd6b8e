//! The model's web tools: `web_fetch` (a page through the [`Fetcher`], in the format and
//! part asked for) and `web_search` (the configured [`SearchBackend`], results numbered for
//! citing). Both reach the network, so the permission step asks before they run; a call's
//! target is the host it reaches, for `WebFetch(domain:…)` rules.

use std::sync::Arc;

use larik_protocol::ToolKind;
use larik_tools::{CallTarget, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::search::{SearchBackend, in_domain};
use crate::{FetchError, Fetcher, Format};

/// Characters a `web_fetch` call returns when it sets no `max_length`.
pub const DEFAULT_MAX_LENGTH: usize = 20_000;
/// The most characters one `web_fetch` call returns.
pub const MOST_MAX_LENGTH: usize = 100_000;

/// `web_fetch`.
pub struct WebFetchTool {
    fetcher: Arc<Fetcher>,
}

impl WebFetchTool {
    /// The tool, fetching through `fetcher` (whose cache it shares).
    pub fn new(fetcher: Arc<Fetcher>) -> Self {
        WebFetchTool { fetcher }
    }
}

/// The lowercase host of the URL in `input`, if it has one.
fn host_of(input: &Value) -> Option<String> {
    url_host(input.get("url")?.as_str()?)
}

/// The host of `url` as `domain:` rules compare it ([`normal_host`]), if it names one.
pub fn url_host(url: &str) -> Option<String> {
    url::Url::parse(url.trim())
        .ok()?
        .host_str()
        .map(normal_host)
}

/// A URL's host as `domain:` rules compare it: lowercase, without a trailing dot or an
/// IPv6 address's brackets (names with other letters are in their `xn--` form already).
pub fn normal_host(host: &str) -> String {
    host.trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// A whole number field, `default` when absent; `Err` names a field of the wrong type.
fn count(input: &Value, field: &str, default: usize) -> Result<usize, String> {
    match input.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(value) => value
            .as_u64()
            .and_then(|count| usize::try_from(count).ok())
            .ok_or_else(|| format!("`{field}` must be a whole number, not {value}")),
    }
}

#[async_trait::async_trait]
impl Tool for WebFetchTool {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn description(&self) -> &str {
        "Fetch a web page by URL and return its content: HTML as Markdown (scripts, \
         navigation, headers and footers left out, links made absolute) by default, `text` \
         for plain text or `raw` for the body as sent. Long pages come in parts: the result \
         says which `start` reads on. Pages are kept for 15 minutes, so reading on is cheap. \
         Addresses on this machine or a private network are refused unless the user allowed \
         them."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http or https URL."},
                "format": {"type": "string", "enum": ["markdown", "text", "raw"], "description": "How to give the page (default markdown)."},
                "start": {"type": "integer", "minimum": 0, "description": "The character to start at (default 0)."},
                "max_length": {"type": "integer", "minimum": 1, "maximum": MOST_MAX_LENGTH, "description": "The most characters to return (default 20000)."}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Fetch
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        match input.get("url").and_then(Value::as_str) {
            Some(url) => format!("Fetch {url}"),
            None => "Fetch a web page".to_string(),
        }
    }

    fn target(&self, input: &Value, _ctx: &ToolContext) -> CallTarget {
        host_of(input).map_or(CallTarget::None, CallTarget::Domain)
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let Some(url) = input.get("url").and_then(Value::as_str) else {
            return ToolOutput::error("`url` is required: the http or https address to fetch.");
        };
        let format = match input.get("format").and_then(Value::as_str) {
            None => Format::Markdown,
            Some(name) => match Format::from_name(name) {
                Some(format) => format,
                None => {
                    return ToolOutput::error(format!(
                        "`format` must be markdown, text or raw, not `{name}`"
                    ));
                }
            },
        };
        let (start, max_length) = match (
            count(&input, "start", 0),
            count(&input, "max_length", DEFAULT_MAX_LENGTH),
        ) {
            (Ok(start), Ok(max_length)) => (start, max_length.clamp(1, MOST_MAX_LENGTH)),
            (Err(message), _) | (_, Err(message)) => return ToolOutput::error(message),
        };
        let page = tokio::select! {
            page = self.fetcher.page(url, format, start, max_length) => page,
            () = ctx.cancel.cancelled() => return ToolOutput::error("Cancelled."),
        };
        match page {
            Ok(page) => {
                let mut head = format!(
                    "{} (HTTP {}, {} characters{})",
                    page.url,
                    page.status,
                    page.total_chars,
                    if page.cached { ", from the cache" } else { "" }
                );
                if start > 0 {
                    head.push_str(&format!(", from character {start}"));
                }
                let text = format!("{head}\n\n{}", page.content);
                if page.status >= 400 {
                    ToolOutput::error(text)
                } else {
                    ToolOutput::text(text)
                }
            }
            Err(FetchError::Refused(reason)) => ToolOutput::error(format!("Refused: {reason}.")),
            Err(FetchError::OtherHost(target)) => ToolOutput::error(format!(
                "{url} redirects to another host: {target}. Fetch that URL to read it."
            )),
            Err(error) => ToolOutput::error(error.to_string()),
        }
    }
}

/// `web_search`.
pub struct WebSearchTool {
    backend: Option<SearchBackend>,
}

impl WebSearchTool {
    /// The tool asking `backend`; without one, each call says how to configure one.
    pub fn new(backend: Option<SearchBackend>) -> Self {
        WebSearchTool { backend }
    }
}

/// Results with a domain list applied: only those in `allowed` (when it is not empty), none
/// in `blocked`.
fn filtered(
    results: Vec<crate::search::SearchResult>,
    allowed: &[String],
    blocked: &[String],
) -> Vec<crate::search::SearchResult> {
    results
        .into_iter()
        .filter(|result| {
            (allowed.is_empty() || allowed.iter().any(|domain| in_domain(&result.url, domain)))
                && !blocked.iter().any(|domain| in_domain(&result.url, domain))
        })
        .collect()
}

fn domains(input: &Value, field: &str) -> Vec<String> {
    input
        .get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[async_trait::async_trait]
impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "web_search"
    }

    fn description(&self) -> &str {
        "Search the web. Returns numbered results, each with its title, URL and a snippet; \
         cite the URLs you use, and fetch a page with web_fetch to read more than its \
         snippet."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many results (default 8)."},
                "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Only results from these domains."},
                "blocked_domains": {"type": "array", "items": {"type": "string"}, "description": "No results from these domains."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Fetch
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        match input.get("query").and_then(Value::as_str) {
            Some(query) => format!("Search the web for \"{query}\""),
            None => "Search the web".to_string(),
        }
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let Some(backend) = &self.backend else {
            return ToolOutput::error(
                "No web search service is configured, so web_search cannot run. The user can \
                 set BRAVE_API_KEY, TAVILY_API_KEY or SEARXNG_URL in the environment, or \
                 `web.search` in their personal settings (backend brave, tavily or searxng).",
            );
        };
        let Some(query) = input
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|query| !query.is_empty())
        else {
            return ToolOutput::error("`query` is required: what to search for.");
        };
        let wanted = match count(&input, "max_results", 8) {
            Ok(wanted) => wanted.clamp(1, 20),
            Err(message) => return ToolOutput::error(message),
        };
        let allowed = domains(&input, "allowed_domains");
        let blocked = domains(&input, "blocked_domains");
        // Ask for more when a domain filter will drop some.
        let asked = if allowed.is_empty() && blocked.is_empty() {
            wanted
        } else {
            20
        };
        let results = tokio::select! {
            results = backend.search(query, asked) => results,
            () = ctx.cancel.cancelled() => return ToolOutput::error("Cancelled."),
        };
        let results = match results {
            Ok(results) => filtered(results, &allowed, &blocked),
            Err(error) => return ToolOutput::error(error.0),
        };
        if results.is_empty() {
            let filtered = if allowed.is_empty() && blocked.is_empty() {
                ""
            } else {
                " in the domains asked for"
            };
            return ToolOutput::text(format!(
                "{} found nothing for \"{query}\"{filtered}.",
                backend.name()
            ));
        }
        let mut text = format!("{} results for \"{query}\":\n", backend.name());
        for (number, result) in results.iter().take(wanted).enumerate() {
            text.push_str(&format!(
                "\n{}. {}\n   {}\n",
                number + 1,
                result.title,
                result.url
            ));
            if !result.snippet.is_empty() {
                text.push_str(&format!("   {}\n", result.snippet));
            }
        }
        ToolOutput::text(text)
    }
}
