//! Fuzz targets for every parser that reads input from outside Larik, and the engine that
//! runs them.
//!
//! A [`Target`] feeds arbitrary bytes to one parser the way its peer would (a provider's
//! response body, a session file, a rule in a settings file, a hook's stdout...) and checks
//! what must hold whatever the bytes: no panic, no hang, and the parser's own invariants
//! (a stream ends, nothing follows a completed response, a loaded session replays). The
//! [`engine`] runs a target on its corpus (`corpus/<target>/`, real inputs of each kind)
//! and its regressions (`regressions/<target>/`, inputs that once failed), then on inputs
//! mutated from them for a bounded number of cases or time. The tests run every target
//! that way; the `larik-fuzz` binary runs them for as long as asked.

pub mod engine;
mod mutate;
pub mod targets;

use std::path::PathBuf;

/// One parser under test.
#[derive(Debug)]
pub struct Target {
    /// The target's name: its corpus and regressions folders are named after it.
    pub name: &'static str,
    /// Feeds one input to the parser; panics when an invariant does not hold.
    pub run: fn(&[u8]),
    /// Fragments of the input's format that mutations splice in (field names, framing
    /// lines), so mutated inputs reach past the first syntax check.
    pub tokens: &'static [&'static str],
}

/// Every target, by group.
pub fn all() -> impl Iterator<Item = &'static Target> {
    targets::files::TARGETS
        .iter()
        .chain(targets::providers::TARGETS)
        .chain(targets::protocols::TARGETS)
        .chain(targets::extensions::TARGETS)
}

/// The target called `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    all().find(|target| target.name == name)
}

/// This crate's folder, where the corpus and regressions live.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
