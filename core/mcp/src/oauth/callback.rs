//! The redirect listener of a login: a socket on 127.0.0.1 that the browser is sent back
//! to with the authorization code. It answers each request with a short page; requests
//! for other paths (a browser asking for its icon) are answered and ignored. The first
//! request to the callback path ends the wait, carrying either the code or the error the
//! authorization server sent.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The path the browser comes back to.
pub(crate) const CALLBACK_PATH: &str = "/callback";

/// Largest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;

/// A bound redirect listener.
pub(crate) struct CallbackListener {
    listener: TcpListener,
    port: u16,
}

/// What the browser brought back.
#[derive(Debug)]
pub(crate) struct Callback {
    pub(crate) code: String,
    pub(crate) state: String,
    pub(crate) issuer: Option<String>,
}

impl CallbackListener {
    /// Listens on `127.0.0.1:port` (any free port when `None`).
    pub(crate) async fn bind(port: Option<u16>) -> Result<CallbackListener, String> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0)))
            .await
            .map_err(|error| {
                format!(
                    "cannot listen for the login's redirect on 127.0.0.1:{}: {error}",
                    port.unwrap_or(0)
                )
            })?;
        let port = listener
            .local_addr()
            .map_err(|error| error.to_string())?
            .port();
        Ok(CallbackListener { listener, port })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits at most `within` for the browser to come back.
    pub(crate) async fn wait(self, server: &str, within: Duration) -> Result<Callback, String> {
        let waited = async {
            loop {
                let (mut stream, _) =
                    self.listener.accept().await.map_err(|error| {
                        format!("the login's redirect listener failed: {error}")
                    })?;
                let target = match read_target(&mut stream).await {
                    Some(target) => target,
                    None => continue,
                };
                let Some(query) = target
                    .strip_prefix(CALLBACK_PATH)
                    .and_then(|rest| rest.strip_prefix('?').or(Some(rest)))
                else {
                    answer(&mut stream, "404 Not Found", "Not found.").await;
                    continue;
                };
                let outcome = parse(query);
                let page = match &outcome {
                    Ok(_) => format!(
                        "Larik received the authorization for the MCP server {server}. You can close this tab."
                    ),
                    Err(why) => format!("Larik could not log in to the MCP server {server}: {why}"),
                };
                answer(&mut stream, "200 OK", &page).await;
                return outcome;
            }
        };
        tokio::time::timeout(within, waited)
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "no answer from the browser within {} s",
                    within.as_secs()
                ))
            })
    }
}

/// The request target of the request on `stream` (`None` when it is not HTTP).
async fn read_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.lines().next()?.split_whitespace();
    let method = words.next()?;
    let target = words.next()?;
    (method == "GET").then(|| target.to_string())
}

/// The code, state and issuer of a callback's query, or the error it reports.
fn parse(query: &str) -> Result<Callback, String> {
    let mut code = None;
    let mut state = None;
    let mut issuer = None;
    let mut error = None;
    let mut description = None;
    for (name, value) in form_pairs(query) {
        match name.as_str() {
            "code" => code = Some(value),
            "state" => state = Some(value),
            "iss" => issuer = Some(value),
            "error" => error = Some(value),
            "error_description" => description = Some(value),
            _ => {}
        }
    }
    if let Some(error) = error {
        return Err(match description {
            Some(description) => {
                format!("the authorization server refused: {error} ({description})")
            }
            None => format!("the authorization server refused: {error}"),
        });
    }
    match (code, state) {
        (Some(code), Some(state)) => Ok(Callback {
            code,
            state,
            issuer,
        }),
        _ => Err("the redirect carried no authorization code".to_string()),
    }
}

/// The decoded pairs of a query string.
fn form_pairs(query: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(&format!("http://127.0.0.1/?{query}"))
        .map(|url| url.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

async fn answer(stream: &mut tokio::net::TcpStream, status: &str, text: &str) {
    let body = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>Larik</title><p>{}</p>",
        escape(text)
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // The browser may have gone; the login goes on either way.
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callback_carries_a_code_or_the_servers_refusal() {
        let callback = parse("code=abc&state=x%20y&iss=http%3A%2F%2Fas").expect("a code");
        assert_eq!(callback.code, "abc");
        assert_eq!(callback.state, "x y");
        assert_eq!(callback.issuer.as_deref(), Some("http://as"));
        assert_eq!(
            parse("error=access_denied&error_description=no+thanks").unwrap_err(),
            "the authorization server refused: access_denied (no thanks)"
        );
        assert!(parse("state=only").is_err());
    }
}
