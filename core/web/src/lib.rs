//! The web for the model, safely: [`fetch`] reaches only public addresses (checked on every
//! hop, see [`guard`]) unless the user allows a host, [`convert`] gives a page as raw,
//! Markdown or text, [`Fetcher`] pages long content and keeps what it fetched for 15
//! minutes, [`search`] asks the search service the user chose, and [`tools`] offers both
//! to the model as `web_fetch` and `web_search`.

pub mod convert;
pub mod fetch;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod guard;
pub mod search;
pub mod tools;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use larik_protocol::sync::locked;

pub use convert::{Format, render};
pub use fetch::{FetchError, FetchOptions, Fetched, checked_address, fetch};
pub use search::{SearchBackend, SearchError, SearchResult};
pub use tools::{WebFetchTool, WebSearchTool};

/// How long a fetched page is kept.
pub const CACHE_FOR: Duration = Duration::from_secs(15 * 60);

/// The most resources the cache keeps; past it the oldest goes.
pub const CACHE_MOST: usize = 32;

/// One page of a fetched resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Where the resource was found, after redirects.
    pub url: String,
    /// The HTTP status.
    pub status: u16,
    /// The part asked for, with a note saying how to read on when more follows.
    pub content: String,
    /// The length of the whole rendered resource, in characters.
    pub total_chars: usize,
    /// Whether it came from the cache.
    pub cached: bool,
}

/// Fetches pages and keeps them for [`CACHE_FOR`].
#[derive(Debug, Default)]
pub struct Fetcher {
    options: FetchOptions,
    cache: Mutex<HashMap<String, (Instant, Fetched)>>,
}

impl Fetcher {
    /// A fetcher with these options.
    pub fn new(options: FetchOptions) -> Self {
        Fetcher {
            options,
            cache: Mutex::default(),
        }
    }

    /// `max_length` characters from `start` of the resource at `url` in `format`.
    pub async fn page(
        &self,
        url: &str,
        format: Format,
        start: usize,
        max_length: usize,
    ) -> Result<Page, FetchError> {
        let cached = self.cached(url);
        let (fetched, from_cache) = match cached {
            Some(fetched) => (fetched, true),
            None => {
                let fetched = fetch(url, &self.options).await?;
                let mut cache = locked(&self.cache);
                if cache.len() >= CACHE_MOST
                    && let Some(oldest) = cache
                        .iter()
                        .min_by_key(|(_, (at, _))| *at)
                        .map(|(key, _)| key.clone())
                {
                    cache.remove(&oldest);
                }
                cache.insert(url.to_string(), (Instant::now(), fetched.clone()));
                (fetched, false)
            }
        };
        Ok(page_of(
            &render(&fetched, format),
            &fetched,
            start,
            max_length,
            self.options.max_bytes,
            from_cache,
        ))
    }

    fn cached(&self, url: &str) -> Option<Fetched> {
        let mut cache = locked(&self.cache);
        cache.retain(|_, (at, _)| at.elapsed() < CACHE_FOR);
        cache.get(url).map(|(_, fetched)| fetched.clone())
    }
}

/// `max_length` characters from `start` of `rendered` (`fetched` as the call asked for it),
/// with a note saying where to read on when more follows and one saying the body was cut
/// at `max_bytes`.
fn page_of(
    rendered: &str,
    fetched: &Fetched,
    start: usize,
    max_length: usize,
    max_bytes: usize,
    cached: bool,
) -> Page {
    let total_chars = rendered.chars().count();
    let mut content: String = rendered.chars().skip(start).take(max_length).collect();
    let shown_to = start.saturating_add(content.chars().count());
    if shown_to < total_chars {
        content.push_str(&format!(
            "\n\n[{} more characters; fetch again with start={shown_to} to read on]",
            total_chars - shown_to
        ));
    }
    if fetched.cut {
        content.push_str(&format!("\n\n[the body was cut at {max_bytes} bytes]"));
    }
    Page {
        url: fetched.url.to_string(),
        status: fetched.status,
        content,
        total_chars,
        cached,
    }
}
