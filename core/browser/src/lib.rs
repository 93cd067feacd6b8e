//! The browser tools: the system's Chromium driven over the DevTools protocol
//! (chromiumoxide), started on the first call with a persistent profile and started again
//! when the user closed it ([`session`]); tabs that watch their dialogs and console
//! ([`tab`]); navigation behind the same address guard as `web_fetch`, history and real
//! input ([`actions`]); screenshots with one pixel per CSS pixel ([`shot`]); and the
//! `browser_*` tools themselves ([`tools`]). The page side is `page.js`: the outline
//! snapshot with refs that stay put within a document, and the helpers that find a ref
//! across shadow roots.

pub mod actions;
pub mod session;
pub mod shot;
pub mod tab;
pub mod tools;

use std::path::{Path, PathBuf};

pub use session::{Browser, BrowserOptions, TabInfo};
pub use tools::{Action, BrowserTool, browser_tools};

/// Where Debian's package puts the Chromium program itself (`/usr/bin/chromium` is a
/// shell wrapper).
pub const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";

/// Names looked up on PATH when no browser is configured.
const BROWSER_NAMES: [&str; 5] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];

/// The browser program: `configured` (a path, or a name looked up on `path_var`), else
/// Debian's Chromium, else the first Chromium or Chrome on `path_var`. `None` when there is
/// none.
pub fn find_browser(configured: Option<&Path>, path_var: Option<&str>) -> Option<PathBuf> {
    let on_path = |name: &Path| -> Option<PathBuf> {
        std::env::split_paths(path_var.unwrap_or(""))
            .map(|dir| dir.join(name))
            .find(|candidate| is_program(candidate))
    };
    if let Some(configured) = configured {
        if configured.components().count() > 1 || configured.is_absolute() {
            return is_program(configured).then(|| configured.to_path_buf());
        }
        return on_path(configured);
    }
    let debian = Path::new(DEBIAN_CHROMIUM);
    if is_program(debian) {
        return Some(debian.to_path_buf());
    }
    BROWSER_NAMES
        .iter()
        .find_map(|name| on_path(Path::new(name)))
}

fn is_program(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// Why a browser action failed, in a sentence for the model (e.g. "no element has ref e4
/// in this document; take a new snapshot").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BrowserError(pub String);

impl From<String> for BrowserError {
    fn from(message: String) -> Self {
        BrowserError(message)
    }
}

impl From<&str> for BrowserError {
    fn from(message: &str) -> Self {
        BrowserError(message.to_string())
    }
}
