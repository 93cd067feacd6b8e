//! The targets, by the kind of input they read: session files and permission rules
//! ([`files`]), model providers' response bodies ([`providers`]), peers' protocol messages
//! ([`protocols`]), and settings files and what extensions hand back ([`extensions`]).

pub mod extensions;
pub mod files;
pub mod protocols;
pub mod providers;

/// `data` as text when it is UTF-8; most formats reject anything else before parsing.
pub(crate) fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}
