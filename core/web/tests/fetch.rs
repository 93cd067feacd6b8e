//! Fetches against a server on loopback: the server's own address reached only when the
//! user allows it; redirects followed, and refused when a hop leads to a private address or
//! to a name that resolves to this machine; `http` tried as `https` first and used as it is
//! when the host does not answer that; each format; paging; the cache.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use larik_web::{FetchError, FetchOptions, Fetcher, Format, fetch};

const PAGE: &str = "<!doctype html><html><head><script>track()</script></head><body>\
<nav>Menu</nav><h1>Release notes</h1><p>See <a href=\"/docs/install\">install</a>.</p>\
<footer>Footer text</footer></body></html>";

struct Server {
    base: String,
    port: u16,
    hits: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn serve() -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let app = Router::new()
        .route("/page", get(|| async { Html(PAGE) }))
        .route(
            "/long",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain")],
                    "0123456789".repeat(5_000),
                )
            }),
        )
        .route(
            "/counted",
            get(move || {
                let counted = Arc::clone(&counted);
                async move {
                    let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                    ([(header::CONTENT_TYPE, "text/plain")], format!("visit {n}"))
                }
            }),
        )
        .route("/to-page", get(|| async { redirect("/page") }))
        .route(
            "/to-private",
            get(|| async { redirect("http://10.255.255.1/secret") }),
        )
        .route(
            "/to-localhost",
            get(move || async move { redirect(&format!("http://localhost:{port}/page")) }),
        )
        .route("/to-file", get(|| async { redirect("file:///etc/passwd") }))
        .route(
            "/to-public",
            get(|| async { redirect("http://93.184.216.34/elsewhere") }),
        );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("serve");
    });
    Server {
        base: format!("http://127.0.0.1:{port}"),
        port,
        hits,
        _stop: stop,
    }
}

fn redirect(to: &str) -> impl IntoResponse + use<> {
    (StatusCode::FOUND, [(header::LOCATION, to.to_string())])
}

fn allowing(hosts: &[&str]) -> FetchOptions {
    FetchOptions {
        allowed_hosts: hosts.iter().map(|host| host.to_string()).collect(),
        ..FetchOptions::default()
    }
}

#[tokio::test]
async fn this_machine_is_refused_unless_allowed() {
    let server = serve().await;
    let refused = fetch(&format!("{}/page", server.base), &FetchOptions::default())
        .await
        .expect_err("loopback is refused");
    assert!(
        matches!(&refused, FetchError::Refused(why) if why.contains("127.0.0.1")),
        "{refused}"
    );
    assert_eq!(server.hits.load(Ordering::SeqCst), 0);

    let fetched = fetch(&format!("{}/page", server.base), &allowing(&["127.0.0.1"]))
        .await
        .expect("allowed");
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.url.as_str(), format!("{}/page", server.base));
}

#[tokio::test]
async fn every_redirect_hop_is_checked() {
    let server = serve().await;
    let options = allowing(&["127.0.0.1"]);
    let followed = fetch(&format!("{}/to-page", server.base), &options)
        .await
        .expect("a redirect to the same host");
    assert_eq!(followed.url.as_str(), format!("{}/page", server.base));

    let private = fetch(&format!("{}/to-private", server.base), &options)
        .await
        .expect_err("a private address");
    assert!(
        matches!(&private, FetchError::Refused(why) if why.contains("10.255.255.1")),
        "{private}"
    );

    // `localhost` resolves to this machine: not allowed, though 127.0.0.1 is.
    let named = fetch(&format!("{}/to-localhost", server.base), &options)
        .await
        .expect_err("a name for this machine");
    assert!(
        matches!(&named, FetchError::Refused(why) if why.contains("localhost")),
        "{named}"
    );

    // The user's allowed hosts count for the call's own host, not for where it leads.
    let both = allowing(&["127.0.0.1", "localhost"]);
    let named = fetch(&format!("{}/to-localhost", server.base), &both)
        .await
        .expect_err("an allowed host reached by a redirect");
    assert!(matches!(&named, FetchError::Refused(_)), "{named}");

    // Another public host is not followed: the call names it, for the permission step.
    let elsewhere = fetch(&format!("{}/to-public", server.base), &options)
        .await
        .expect_err("another host");
    assert_eq!(
        elsewhere,
        FetchError::OtherHost("http://93.184.216.34/elsewhere".into())
    );

    let file = fetch(&format!("{}/to-file", server.base), &options)
        .await
        .expect_err("a file URL");
    assert!(
        matches!(&file, FetchError::BadUrl(why) if why.contains("file:")),
        "{file}"
    );
    let direct = fetch("file:///etc/passwd", &options)
        .await
        .expect_err("file");
    assert!(matches!(direct, FetchError::BadUrl(_)));
    assert!(server.port > 0);
}

#[tokio::test]
async fn formats_paging_and_the_cache() {
    let server = serve().await;
    let fetcher = Fetcher::new(allowing(&["127.0.0.1"]));
    let url = format!("{}/page", server.base);

    let markdown = fetcher
        .page(&url, Format::Markdown, 0, 20_000)
        .await
        .expect("markdown");
    assert!(
        markdown.content.contains("# Release notes"),
        "{}",
        markdown.content
    );
    assert!(
        markdown
            .content
            .contains(&format!("[install]({}/docs/install)", server.base)),
        "{}",
        markdown.content
    );
    for gone in ["track()", "Menu", "Footer text"] {
        assert!(
            !markdown.content.contains(gone),
            "{gone}: {}",
            markdown.content
        );
    }
    let text = fetcher
        .page(&url, Format::Text, 0, 20_000)
        .await
        .expect("text");
    assert!(text.content.contains("See install."), "{}", text.content);
    let raw = fetcher
        .page(&url, Format::Raw, 0, 20_000)
        .await
        .expect("raw");
    assert!(raw.content.contains("<script>track()</script>"));

    let long = format!("{}/long", server.base);
    let first = fetcher
        .page(&long, Format::Markdown, 0, 1_000)
        .await
        .expect("page 1");
    assert_eq!(first.total_chars, 50_000);
    assert!(first.content.starts_with("0123456789"));
    assert!(
        first
            .content
            .ends_with("[49000 more characters; fetch again with start=1000 to read on]"),
        "{}",
        &first.content[first.content.len() - 80..]
    );
    let last = fetcher
        .page(&long, Format::Markdown, 49_995, 1_000)
        .await
        .expect("last page");
    assert_eq!(last.content, "56789");

    let counted = format!("{}/counted", server.base);
    let once = fetcher
        .page(&counted, Format::Raw, 0, 100)
        .await
        .expect("first");
    let again = fetcher
        .page(&counted, Format::Raw, 0, 100)
        .await
        .expect("cached");
    assert_eq!((once.content.as_str(), once.cached), ("visit 1", false));
    assert_eq!((again.content.as_str(), again.cached), ("visit 1", true));
}

/// A one-page HTTPS server on loopback with a certificate for `name`, answering every
/// request with `body`; its certificate's PEM, to trust.
async fn tls_server(
    name: &str,
    body: &'static str,
) -> (
    std::net::SocketAddr,
    Vec<u8>,
    tokio::sync::oneshot::Sender<()>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let certified =
        rcgen::generate_simple_self_signed(vec![name.to_string()]).expect("certificate");
    let pem = certified.cert.pem().into_bytes();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = &mut stopped => return,
            };
            let Ok((stream, _)) = accepted else { return };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut stream) = acceptor.accept(stream).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buffer = [0u8; 1024];
                while !head.windows(4).any(|window| window == b"\r\n\r\n") {
                    match stream.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(read) => head.extend_from_slice(&buffer[..read]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (address, pem, stop)
}

/// `http://` without a port is tried as `https://` first: a host that answers it is read
/// over TLS (the result names the https address); a host that does not is read as asked.
#[tokio::test]
async fn http_is_upgraded_to_https_where_the_host_answers_it() {
    let plain = serve().await;
    let (secure, pem, _stop) = tls_server("upgrade.test", "over tls").await;
    // A port nothing listens on: bound, then released.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address");
    let plain_address: std::net::SocketAddr = format!("127.0.0.1:{}", plain.port)
        .parse()
        .expect("address");
    let options = FetchOptions {
        allowed_hosts: vec!["upgrade.test".into(), "plain.test".into()],
        extra_roots: vec![pem],
        hosts: vec![
            ("upgrade.test".into(), 443, secure),
            ("upgrade.test".into(), 80, plain_address),
            ("plain.test".into(), 443, closed),
            ("plain.test".into(), 80, plain_address),
        ],
        ..FetchOptions::default()
    };
    let fetched = fetch("http://upgrade.test/counted", &options)
        .await
        .expect("fetched");
    assert_eq!(fetched.url.as_str(), "https://upgrade.test/counted");
    assert_eq!(fetched.body, b"over tls");
    assert_eq!(
        plain.hits.load(Ordering::SeqCst),
        0,
        "plain http was not asked"
    );

    let fetched = fetch("http://plain.test/counted", &options)
        .await
        .expect("fetched");
    assert_eq!(fetched.url.as_str(), "http://plain.test/counted");
    assert_eq!(fetched.body, b"visit 1");

    // Without the user's allowance the listed address is still refused.
    let refused = fetch(
        "http://upgrade.test/counted",
        &FetchOptions {
            allowed_hosts: Vec::new(),
            ..options.clone()
        },
    )
    .await;
    assert!(
        matches!(refused, Err(FetchError::Refused(_))),
        "{refused:?}"
    );
}
