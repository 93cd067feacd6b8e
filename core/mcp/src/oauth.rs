//! OAuth for HTTP and SSE servers, on the SDK's authorization support (metadata
//! discovery, PKCE, dynamic client registration, refresh). A login ([`PendingLogin`]) is
//! interactive and runs only when the user asks (`/mcp login`, `larik mcp login`); it keeps
//! the client, the authorization server's metadata and the tokens in the server's login
//! file ([`store`]). Connections made in the background use a kept login and never ask
//! the user ([`authorized`]): a server that wants a login it cannot get that way is shown
//! as needing one.

pub(crate) mod authorized;
mod callback;
mod login;
pub(crate) mod store;
pub(crate) mod watched;

pub use login::PendingLogin;

/// How the user logs in to the server `server`, for the messages that say it needs one.
pub fn login_hint(server: &str) -> String {
    format!("log in with `/mcp login {server}` (or `larik mcp login {server}`)")
}
pub(crate) use login::{begin, remote_url};
