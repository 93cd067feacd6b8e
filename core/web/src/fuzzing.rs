//! Entry points for the fuzz targets in `core/fuzz`, compiled only with the `fuzzing`
//! feature: one page of a resource already fetched, rendered and cut the way
//! [`crate::Fetcher::page`] does it, without the network. Nothing else uses them.

use crate::{FetchOptions, Fetched, Format, Page};

/// `fetched` rendered in `format`, and the page of `max_length` characters from `start` a
/// `web_fetch` call gets of it (the body-size note counts with the default size limit).
pub fn page(fetched: &Fetched, format: Format, start: usize, max_length: usize) -> (String, Page) {
    let rendered = crate::render(fetched, format);
    let page = crate::page_of(
        &rendered,
        fetched,
        start,
        max_length,
        FetchOptions::default().max_bytes,
        false,
    );
    (rendered, page)
}
