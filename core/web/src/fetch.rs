//! One fetch: `http` upgraded to `https` where the host answers it, every hop's host
//! resolved and checked by the address guard and the connection pinned to the checked
//! address, redirects followed by hand (each one checked again, at most ten, only to
//! `http` and `https`), a time limit for the whole fetch and a size limit for the body.

use std::net::SocketAddr;
use std::time::Duration;

use url::Url;

use crate::guard;

/// How long connecting to one address may take, so an `https` attempt at a host that
/// drops the connection leaves time for plain `http`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a fetch may do.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Hosts reached even on this machine or a private network (`web.allowed_hosts`).
    pub allowed_hosts: Vec<String>,
    /// How long one fetch may take, redirects included.
    pub timeout: Duration,
    /// The most bytes of a body kept; the rest is cut.
    pub max_bytes: usize,
    /// The most redirects followed.
    pub max_redirects: usize,
    /// Certificates (PEM) trusted besides the system's, e.g. a company's own authority.
    pub extra_roots: Vec<Vec<u8>>,
    /// Addresses used for a name and port instead of asking DNS, as a hosts file would;
    /// the address guard still checks them.
    pub hosts: Vec<(String, u16, SocketAddr)>,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            allowed_hosts: Vec::new(),
            timeout: Duration::from_secs(30),
            max_bytes: 10 * 1024 * 1024,
            max_redirects: 10,
            extra_roots: Vec::new(),
            hosts: Vec::new(),
        }
    }
}

/// A fetched resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Where it was found, after redirects.
    pub url: Url,
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`, if given.
    pub content_type: Option<String>,
    /// The body, at most the size limit.
    pub body: Vec<u8>,
    /// Whether the body was cut at the size limit.
    pub cut: bool,
}

/// Why a fetch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The URL cannot be fetched.
    #[error("{0}")]
    BadUrl(String),
    /// The address guard refused a host.
    #[error("refused: {0}")]
    Refused(String),
    /// The server could not be reached or did not answer in time.
    #[error("{0}")]
    Network(String),
    /// The resource redirects to another host (which passed the guard): not followed, so
    /// the permission step sees that host when the URL is fetched.
    #[error("redirects to another host: {0}")]
    OtherHost(String),
}

/// Fetches `address` as the options allow.
pub async fn fetch(address: &str, options: &FetchOptions) -> Result<Fetched, FetchError> {
    let url = Url::parse(address.trim())
        .map_err(|error| FetchError::BadUrl(format!("`{address}` is not a URL: {error}")))?;
    check_scheme(&url)?;
    let work = async {
        if url.scheme() == "http" {
            let mut secure = url.clone();
            if secure.set_scheme("https").is_ok() && url.port().is_none() {
                // A third of the time at most, so plain http keeps the rest.
                let attempt =
                    tokio::time::timeout(options.timeout / 3, follow(secure, options)).await;
                match attempt {
                    Err(_) | Ok(Err(FetchError::Network(_))) => {}
                    Ok(answered) => return answered,
                }
            }
        }
        follow(url.clone(), options).await
    };
    tokio::time::timeout(options.timeout, work)
        .await
        .map_err(|_| {
            FetchError::Network(format!(
                "no answer within {} s",
                options.timeout.as_secs_f64()
            ))
        })?
}

fn check_scheme(url: &Url) -> Result<(), FetchError> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(FetchError::BadUrl(format!(
            "only http and https URLs can be fetched, not `{other}:`"
        ))),
    }
}

/// Follows `url` through its redirects.
async fn follow(mut url: Url, options: &FetchOptions) -> Result<Fetched, FetchError> {
    for _ in 0..=options.max_redirects {
        let response = request(&url, options).await?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            let location = location.to_str().map_err(|_| {
                FetchError::Network(format!("{url} redirects to an unreadable location"))
            })?;
            let next = url.join(location).map_err(|error| {
                FetchError::BadUrl(format!("{url} redirects to `{location}`: {error}"))
            })?;
            check_scheme(&next)?;
            if !same_host(&url, &next) {
                // The user's allowed hosts count for the call's own host only.
                let host = next.host_str().unwrap_or_default();
                let port = next.port_or_known_default().unwrap_or(443);
                checked_address(host, port, &[])
                    .await
                    .map_err(|error| match error {
                        FetchError::Refused(_) => FetchError::Refused(format!(
                            "{url} redirects to {next}, which is on this machine or a private \
                             network; a redirect there is never followed"
                        )),
                        other => other,
                    })?;
                return Err(FetchError::OtherHost(next.to_string()));
            }
            url = next;
            continue;
        }
        return read(url, response, options.max_bytes).await;
    }
    Err(FetchError::Network(format!(
        "more than {} redirects",
        options.max_redirects
    )))
}

/// Whether two URLs name the same host (`www.` and case count; the port and scheme do not).
fn same_host(a: &Url, b: &Url) -> bool {
    match (a.host_str(), b.host_str()) {
        (Some(a), Some(b)) => a
            .trim_end_matches('.')
            .eq_ignore_ascii_case(b.trim_end_matches('.')),
        _ => false,
    }
}

/// One request to `url`, its host checked and the connection pinned to a checked address.
async fn request(url: &Url, options: &FetchOptions) -> Result<reqwest::Response, FetchError> {
    let host = url
        .host_str()
        .ok_or_else(|| FetchError::BadUrl(format!("`{url}` names no host")))?
        .to_string();
    let port = url
        .port_or_known_default()
        .ok_or_else(|| FetchError::BadUrl(format!("`{url}` names no port")))?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let listed = options
        .hosts
        .iter()
        .filter(|(name, listed_port, _)| name.eq_ignore_ascii_case(bare) && *listed_port == port)
        .map(|(_, _, address)| *address)
        .collect::<Vec<_>>();
    let pinned = if listed.is_empty() {
        checked_addresses(&host, port, &options.allowed_hosts).await?
    } else {
        pick(&host, &listed, &options.allowed_hosts)?
    };
    // No proxy: a proxy would look the name up again, past the guard.
    let mut client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .resolve_to_addrs(bare, &pinned)
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("Larik/", env!("CARGO_PKG_VERSION")));
    for pem in &options.extra_roots {
        let certificate = reqwest::Certificate::from_pem(pem).map_err(|error| {
            FetchError::Network(format!("a trusted certificate is unreadable: {error}"))
        })?;
        client = client.add_root_certificate(certificate);
    }
    let client = client
        .build()
        .map_err(|error| FetchError::Network(format!("cannot make a client: {error}")))?;
    client
        .get(url.clone())
        .send()
        .await
        .map_err(|error| FetchError::Network(format!("cannot fetch {url}: {error}")))
}

/// Checks `host` (a name or an address, as in a URL) at `port`: every address the name
/// resolves to must be public, unless `allowed` names the host.
pub async fn checked_address(host: &str, port: u16, allowed: &[String]) -> Result<(), FetchError> {
    checked_addresses(host, port, allowed).await.map(|_| ())
}

/// The addresses to connect to for `host` at `port`, once [`checked_address`] passes.
async fn checked_addresses(
    host: &str,
    port: u16,
    allowed: &[String],
) -> Result<Vec<SocketAddr>, FetchError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|error| FetchError::Network(format!("cannot resolve `{host}`: {error}")))?
            .collect(),
    };
    pick(host, &addresses, allowed)
}

/// `addresses` when the user allows `host` or the guard passes them all.
fn pick(
    host: &str,
    addresses: &[SocketAddr],
    allowed: &[String],
) -> Result<Vec<SocketAddr>, FetchError> {
    if addresses.is_empty() {
        return Err(FetchError::Network(format!("`{host}` has no address")));
    }
    if !guard::is_allowed(host, allowed) {
        guard::choose(host, addresses).map_err(FetchError::Refused)?;
    }
    Ok(addresses.to_vec())
}

/// Reads a response's body up to `max_bytes`.
async fn read(
    url: Url,
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<Fetched, FetchError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string);
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| FetchError::Network(format!("reading {url}: {error}")))?
    {
        let room = max_bytes.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            cut = true;
            break;
        }
    }
    Ok(Fetched {
        url,
        status,
        content_type,
        body,
        cut,
    })
}
