//! The browser tools against Debian's Chromium, headless, on pages this test serves on
//! loopback: a form inside a shadow root filled and submitted; a page opening a new tab,
//! which becomes active; an alert (accepted) and a confirm (dismissed), logged; back and
//! forward across a back/forward-cached page; console errors and uncaught exceptions;
//! element and labelled screenshots by their size; refs that stay put across snapshots and
//! `since_last` smaller than a whole snapshot; the address guard and the refused schemes.

use std::sync::Arc;

use axum::Router;
use axum::extract::Query;
use axum::response::Html;
use axum::routing::get;
use larik_browser::{Browser, BrowserOptions, browser_tools};
use larik_protocol::transcript::ResultPart;
use larik_tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

#[path = "support/setup.rs"]
mod setup;

use setup::{chromium, tool_context};

const FORM: &str = r#"<!doctype html><html><head><title>Sign up</title></head><body>
<h1>Join</h1>
<signup-form></signup-form>
<script>
customElements.define('signup-form', class extends HTMLElement {
  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    root.innerHTML = '<form action="/thanks" method="get"><label>Name <input name="name"></label>' +
      '<select name="plan"><option value="free">Free</option><option value="pro">Pro plan</option></select>' +
      '<button type="submit">Sign up</button></form>';
    const input = root.querySelector('input');
    input.addEventListener('input', () => { window.inputEvents = (window.inputEvents || 0) + 1; });
  }
});
</script></body></html>"#;

const OPENER: &str = r#"<!doctype html><html><head><title>Opener</title></head><body>
<button onclick="window.open('/child')">Open child</button></body></html>"#;

const CHILD: &str = r#"<!doctype html><html><head><title>Child tab</title></head><body><p>I am the child.</p></body></html>"#;

const DIALOGS: &str = r#"<!doctype html><html><head><title>Dialogs</title></head><body>
<button onclick="alert('hello there')">Alert</button>
<button onclick="document.getElementById('out').textContent = 'confirmed: ' + confirm('Delete it?')">Confirm</button>
<p id="out">nothing yet</p></body></html>"#;

const CONSOLE: &str = r#"<!doctype html><html><head><title>Console</title></head><body><p>Logging</p>
<script>
console.log('ready', 42);
console.error('boom happened');
setTimeout(() => { throw new Error('kaput'); }, 0);
</script></body></html>"#;

const SHOT: &str = r#"<!doctype html><html><head><title>Shot</title><style>
body { margin: 0; height: 6000px; }
#box { position: absolute; left: 100px; top: 150px; width: 200px; height: 100px; background: #36c; border: 0; }
</style></head><body><button id="box">Inside</button></body></html>"#;

fn page(title: &str, body: &str) -> String {
    format!("<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>")
}

struct Site {
    base: String,
    /// Requests for `/secret`, which pages reach only through `localhost`.
    secret_hits: Arc<std::sync::atomic::AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn site() -> Site {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let base = format!("http://127.0.0.1:{port}");
    let secret_hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&secret_hits);
    let app = Router::new()
        .route(
            "/secret",
            get(move || {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { Html("secret") }
            }),
        )
        .route(
            "/leaky",
            get(move || async move {
                Html(page(
                    "Leaky",
                    &format!(
                        "<img src=\"http://localhost:{port}/secret?img\" alt=\"pixel\">\
                         <a href=\"http://localhost:{port}/secret?link\">Secret</a>"
                    ),
                ))
            }),
        )
        .route("/form", get(|| async { Html(FORM) }))
        .route(
            "/thanks",
            get(
                |Query(params): Query<std::collections::HashMap<String, String>>| async move {
                    let name = params.get("name").cloned().unwrap_or_default();
                    let plan = params.get("plan").cloned().unwrap_or_default();
                    Html(page("Thanks", &format!("<h1>Thanks, {name}</h1><p>Plan: {plan}</p>")))
                },
            ),
        )
        .route("/opener", get(|| async { Html(OPENER) }))
        .route("/child", get(|| async { Html(CHILD) }))
        .route("/dialogs", get(|| async { Html(DIALOGS) }))
        .route("/console", get(|| async { Html(CONSOLE) }))
        .route("/shot", get(|| async { Html(SHOT) }))
        .route(
            "/a",
            get(|| async {
                Html(page(
                    "Page A",
                    "<h1>Page A</h1><a href=\"/b\">to B</a><p id=\"cache\">loaded</p>\
                     <script>addEventListener('pageshow', (event) => { if (event.persisted) \
                     document.getElementById('cache').textContent = 'restored from the back/forward cache'; });</script>",
                ))
            }),
        )
        .route(
            "/b",
            get(|| async { Html(page("Page B", "<h1>Page B</h1><p>Second page</p>")) }),
        )
        .route(
            "/counter",
            get(|| async {
                Html(page(
                    "Counter",
                    "<h1>Counter</h1><button onclick=\"document.getElementById('n').textContent = Number(document.getElementById('n').textContent) + 1\">Add</button><p id=\"n\">0</p><a href=\"/a\">A link</a><input placeholder=\"Search\">",
                ))
            }),
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
    Site {
        base,
        secret_hits,
        _stop: stop,
    }
}

/// A browser with its own profile, allowed to reach the test's server.
struct World {
    tools: Vec<Arc<dyn Tool>>,
    browser: Arc<Browser>,
    profile: tempfile::TempDir,
    ctx: ToolContext,
}

impl World {
    fn new(allowed_hosts: &[&str]) -> World {
        World::showing(allowed_hosts, None)
    }

    /// A browser with a window on the X display `display`, or headless without one.
    fn showing(allowed_hosts: &[&str], display: Option<&str>) -> World {
        let executable = chromium();
        let profile = tempfile::tempdir().expect("profile dir");
        let browser = Arc::new(Browser::new(BrowserOptions {
            executable,
            headless: display.is_none(),
            profile_dir: profile.path().join("profile"),
            env: display
                .map(|display| vec![("DISPLAY".to_string(), display.to_string())])
                .unwrap_or_default(),
        }));
        World {
            tools: browser_tools(
                &browser,
                allowed_hosts.iter().map(|host| host.to_string()).collect(),
            ),
            browser,
            profile,
            ctx: tool_context(),
        }
    }

    async fn call(&self, name: &str, input: Value) -> ToolOutput {
        let tool = self
            .tools
            .iter()
            .find(|tool| tool.name() == name)
            .unwrap_or_else(|| panic!("no tool {name}"));
        tool.run(input, &self.ctx).await
    }

    /// Runs a call that must succeed and returns its text.
    async fn ok(&self, name: &str, input: Value) -> String {
        let output = self.call(name, input.clone()).await;
        let text = larik_protocol::transcript::result_text(&output.content);
        assert!(!output.is_error, "{name} {input}: {text}");
        text
    }

    async fn snapshot(&self) -> String {
        self.ok("browser_snapshot", json!({})).await
    }

    /// Calls `name` until its text contains `needle` (a page that starts loading later than
    /// the tools wait for, on a loaded machine), at most 100 times.
    async fn until(&self, name: &str, input: Value, needle: &str) -> String {
        let mut text = String::new();
        for _ in 0..100 {
            text = self.ok(name, input.clone()).await;
            if text.contains(needle) {
                return text;
            }
        }
        panic!("{name} never showed {needle}: {text}");
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let browser = Arc::clone(&self.browser);
        // Close Chromium before the profile directory goes.
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(browser.shut_down());
        })
        .join();
    }
}

/// The test's site, and a browser allowed to reach it with `path` open in its tab.
async fn opened(path: &str) -> (Site, World) {
    let site = site().await;
    let world = World::new(&["127.0.0.1"]);
    world
        .ok(
            "browser_navigate",
            json!({"url": format!("{}{path}", site.base)}),
        )
        .await;
    (site, world)
}

/// The ref of the first snapshot line containing `needle`.
fn ref_of(snapshot: &str, needle: &str) -> String {
    let line = snapshot
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle} in:\n{snapshot}"));
    let start = line.find("[ref=").expect("a ref") + 5;
    line[start..].trim_end_matches(']').to_string()
}

/// A JPEG's width and height, from its start-of-frame segment.
fn jpeg_size(base64: &str) -> (u32, u32) {
    let bytes = decode_base64(base64);
    assert_eq!(&bytes[..2], &[0xFF, 0xD8], "a JPEG");
    let mut at = 2;
    while at + 9 < bytes.len() {
        assert_eq!(bytes[at], 0xFF, "a segment marker at {at}");
        let marker = bytes[at + 1];
        let length = usize::from(bytes[at + 2]) << 8 | usize::from(bytes[at + 3]);
        if (0xC0..=0xC3).contains(&marker) {
            let height = u32::from(bytes[at + 5]) << 8 | u32::from(bytes[at + 6]);
            let width = u32::from(bytes[at + 7]) << 8 | u32::from(bytes[at + 8]);
            return (width, height);
        }
        at += 2 + length;
    }
    panic!("no start-of-frame segment");
}

fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut bits = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            bits |= value(*c) << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

fn image_of(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .find_map(|part| match part {
            ResultPart::Image { media_type, data } => {
                assert_eq!(media_type, "image/jpeg");
                Some(data.clone())
            }
            _ => None,
        })
        .expect("an image part")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_form_inside_a_shadow_root_is_filled_and_submitted() {
    let site = site().await;
    let world = World::new(&["127.0.0.1"]);
    let opened = world
        .ok(
            "browser_navigate",
            json!({"url": format!("{}/form", site.base)}),
        )
        .await;
    assert!(opened.contains("\"Sign up\""), "{opened}");
    let snapshot = world.snapshot().await;
    assert!(snapshot.contains("# Join"), "{snapshot}");
    let field = ref_of(&snapshot, "textbox \"Name\"");
    let plan = ref_of(&snapshot, "combobox");
    assert!(
        snapshot.contains("options=\"Free | Pro plan\""),
        "{snapshot}"
    );
    world
        .ok(
            "browser_type",
            json!({"ref": field, "text": "Ada Lovelace"}),
        )
        .await;
    let selected = world
        .ok(
            "browser_select",
            json!({"ref": plan, "values": ["Pro plan"]}),
        )
        .await;
    assert!(selected.starts_with("Selected Pro plan in"), "{selected}");
    let typed = world.snapshot().await;
    assert!(typed.contains("value=\"Ada Lovelace\""), "{typed}");
    let submit = ref_of(&typed, "button \"Sign up\"");
    world.ok("browser_click", json!({"ref": submit})).await;
    let thanks = world.until("browser_snapshot", json!({}), "# Thanks").await;
    assert!(thanks.contains("# Thanks, Ada Lovelace"), "{thanks}");
    assert!(thanks.contains("Plan: pro"), "{thanks}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tab_the_page_opens_becomes_active_and_tabs_can_be_closed() {
    let (_site, world) = opened("/opener").await;
    let button = ref_of(&world.snapshot().await, "button \"Open child\"");
    world.ok("browser_click", json!({"ref": button})).await;
    let tabs = world
        .until("browser_tabs", json!({}), "* 1: Child tab")
        .await;
    assert!(tabs.contains("  0: Opener"), "{tabs}");
    assert!(world.snapshot().await.contains("I am the child."));

    let closed = world
        .ok("browser_tabs", json!({"action": "close", "index": 1}))
        .await;
    assert!(
        closed.contains("* 0: Opener") && !closed.contains("Child tab"),
        "{closed}"
    );
    let wrong = world
        .call("browser_tabs", json!({"action": "select", "index": 7}))
        .await;
    assert!(wrong.is_error);

    // Selecting a tab makes the tools act on it.
    let button = ref_of(&world.snapshot().await, "button \"Open child\"");
    world.ok("browser_click", json!({"ref": button})).await;
    world
        .until("browser_tabs", json!({}), "* 1: Child tab")
        .await;
    let selected = world
        .ok("browser_tabs", json!({"action": "select", "index": 0}))
        .await;
    assert!(
        selected.contains("* 0: Opener") && selected.contains("  1: Child tab"),
        "{selected}"
    );
    assert!(world.snapshot().await.contains("Open child"));
}

#[tokio::test(flavor = "multi_thread")]
async fn alerts_are_accepted_confirms_dismissed_and_both_logged() {
    let (_site, world) = opened("/dialogs").await;
    let snapshot = world.snapshot().await;
    world
        .ok(
            "browser_click",
            json!({"ref": ref_of(&snapshot, "button \"Alert\"")}),
        )
        .await;
    world
        .ok(
            "browser_click",
            json!({"ref": ref_of(&snapshot, "button \"Confirm\"")}),
        )
        .await;
    assert!(world.snapshot().await.contains("confirmed: false"));
    let console = world.ok("browser_console", json!({"clear": true})).await;
    assert!(
        console.contains("[dialog] alert \"hello there\" accepted"),
        "{console}"
    );
    assert!(
        console.contains("[dialog] confirm \"Delete it?\" dismissed"),
        "{console}"
    );
    assert_eq!(
        world.ok("browser_console", json!({})).await,
        "The console is empty."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn console_messages_and_uncaught_errors_are_captured() {
    let (_site, world) = opened("/console").await;
    // The exception is thrown from a timer; the snapshot waits for the page to be loaded,
    // and the console is read until the exception has arrived.
    let mut console = String::new();
    for _ in 0..100 {
        console = world.ok("browser_console", json!({})).await;
        if console.contains("kaput") {
            break;
        }
        world.snapshot().await;
    }
    assert!(console.contains("[log] ready 42"), "{console}");
    assert!(console.contains("[error] boom happened"), "{console}");
    assert!(console.contains("[exception] Error: kaput"), "{console}");
}

#[tokio::test(flavor = "multi_thread")]
async fn back_and_forward_cross_a_cached_page() {
    let (_site, world) = opened("/a").await;
    let link = ref_of(&world.snapshot().await, "link \"to B\"");
    world.ok("browser_click", json!({"ref": link})).await;
    world.until("browser_snapshot", json!({}), "# Page B").await;
    let back = world.ok("browser_back", json!({})).await;
    assert!(back.contains("\"Page A\""), "{back}");
    let restored = world.snapshot().await;
    assert!(restored.contains("# Page A"), "{restored}");
    assert!(
        restored.contains("restored from the back/forward cache"),
        "page A came back from the cache, which fires no load event: {restored}"
    );
    let forward = world.ok("browser_forward", json!({})).await;
    assert!(forward.contains("\"Page B\""), "{forward}");
    let further = world.call("browser_forward", json!({})).await;
    assert!(further.is_error);
    assert_eq!(
        larik_protocol::transcript::result_text(&further.content),
        "There is no later page in this tab."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn element_and_labelled_screenshots_have_their_sizes() {
    let (_site, world) = opened("/shot").await;
    let snapshot = world.snapshot().await;
    let button = ref_of(&snapshot, "button \"Inside\"");

    let plain = world.call("browser_screenshot", json!({})).await;
    let labelled = world
        .call("browser_screenshot", json!({"labels": true}))
        .await;
    assert!(!labelled.is_error);
    assert_eq!(jpeg_size(&image_of(&plain)), (1280, 800));
    assert_eq!(jpeg_size(&image_of(&labelled)), (1280, 800));
    assert_ne!(
        image_of(&plain),
        image_of(&labelled),
        "the labels were drawn"
    );
    // The labels are gone after the picture.
    let tab = world.browser.active_tab().await.expect("tab");
    assert_eq!(
        tab.eval("document.getElementById('__larik_labels') === null")
            .await
            .expect("eval"),
        Value::Bool(true)
    );
    let overlay = world
        .ok("browser_snapshot", json!({"since_last": true}))
        .await;
    assert!(overlay.contains("Nothing changed"), "{overlay}");

    let full = world
        .call("browser_screenshot", json!({"full_page": true}))
        .await;
    assert_eq!(jpeg_size(&image_of(&full)), (1280, 5000));
    assert!(larik_protocol::transcript::result_text(&full.content).contains("cut at 5000 px"));

    // The button is 200×100; the picture adds 8 px on each side.
    let element = world
        .call("browser_screenshot", json!({"ref": button}))
        .await;
    assert_eq!(jpeg_size(&image_of(&element)), (216, 116));
}

#[tokio::test(flavor = "multi_thread")]
async fn refs_stay_put_and_since_last_gives_only_the_changes() {
    let (_site, world) = opened("/counter").await;
    let first = world.snapshot().await;
    let add = ref_of(&first, "button \"Add\"");
    let link = ref_of(&first, "link \"A link\"");
    let search = ref_of(&first, "textbox \"Search\"");
    world.ok("browser_click", json!({"ref": add})).await;
    let changed = world
        .ok("browser_snapshot", json!({"since_last": true}))
        .await;
    assert!(changed.contains("- 0\n+ 1\n"), "{changed}");
    world.ok("browser_click", json!({"ref": add})).await;
    let second = world.snapshot().await;
    assert_eq!(ref_of(&second, "button \"Add\""), add);
    assert_eq!(ref_of(&second, "link \"A link\""), link);
    assert_eq!(ref_of(&second, "textbox \"Search\""), search);
    assert!(second.contains("\n2\n"), "{second}");
    let since = world
        .ok("browser_snapshot", json!({"since_last": true}))
        .await;
    assert!(since.contains("Nothing changed"), "{since}");
    assert!(since.len() < second.len(), "{since}\n---\n{second}");
    let part = world.ok("browser_snapshot", json!({"ref": link})).await;
    assert!(
        part.contains(&format!("link \"A link\" → /a [ref={link}]")),
        "{part}"
    );
    assert!(!part.contains("Add"), "{part}");
    world.ok("browser_press_key", json!({"key": "Tab"})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_address_guard_and_refused_schemes_hold_for_navigation() {
    let site = site().await;
    let world = World::new(&[]);
    for (url, expected) in [
        (
            format!("{}/a", site.base),
            "Refused: `127.0.0.1` resolves to 127.0.0.1",
        ),
        (
            "file:///etc/passwd".to_string(),
            "Only http and https pages can be opened, not `file:` URLs.",
        ),
        (
            "javascript:alert(1)".to_string(),
            "Only http and https pages can be opened, not `javascript:` URLs.",
        ),
    ] {
        let output = world.call("browser_navigate", json!({"url": url})).await;
        assert!(output.is_error);
        let text = larik_protocol::transcript::result_text(&output.content);
        assert!(text.starts_with(expected), "{url}: {text}");
    }

    // Allowed 127.0.0.1 is reached; what its page asks of `localhost` (the same machine,
    // not allowed) is blocked, a picture as well as a followed link.
    let world = World::new(&["127.0.0.1"]);
    world
        .ok(
            "browser_navigate",
            json!({"url": format!("{}/leaky", site.base)}),
        )
        .await;
    let link = ref_of(&world.snapshot().await, "link \"Secret\"");
    world.ok("browser_click", json!({"ref": link})).await;
    world.snapshot().await;
    let console = world.ok("browser_console", json!({})).await;
    assert!(console.contains("[blocked] http://localhost:"), "{console}");
    assert!(console.contains("/secret?img"), "{console}");
    assert!(console.contains("/secret?link"), "{console}");
    assert_eq!(
        site.secret_hits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing reached the refused host"
    );

    let tool = world
        .tools
        .iter()
        .find(|tool| tool.name() == "browser_navigate")
        .expect("navigate");
    assert_eq!(
        tool.target(&json!({"url": "https://Docs.RS/x"}), &world.ctx),
        larik_tools::CallTarget::Domain("docs.rs".into())
    );
}

/// On a screen of two device pixels per CSS pixel the pictures have the same size: one
/// image pixel per CSS pixel.
#[tokio::test(flavor = "multi_thread")]
async fn screenshots_keep_one_pixel_per_css_pixel_on_a_dense_screen() {
    use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
    let (_site, world) = opened("/shot").await;
    let tab = world.browser.active_tab().await.expect("tab");
    tab.page
        .execute(SetDeviceMetricsOverrideParams::new(1280, 800, 2.0, false))
        .await
        .expect("a dense screen");
    assert_eq!(tab.eval("devicePixelRatio").await.expect("eval"), json!(2));
    let button = ref_of(&world.snapshot().await, "button \"Inside\"");
    let viewport = world.call("browser_screenshot", json!({})).await;
    assert_eq!(jpeg_size(&image_of(&viewport)), (1280, 800));
    let element = world
        .call("browser_screenshot", json!({"ref": button}))
        .await;
    assert_eq!(jpeg_size(&image_of(&element)), (216, 116));
}

/// A browser the user closed (here: killed) is started again by the next call, with a
/// fresh tab.
#[tokio::test(flavor = "multi_thread")]
async fn a_closed_browser_is_started_again_on_the_next_call() {
    let (site, world) = opened("/a").await;
    let profile = world.profile.path().display().to_string();
    // The browser itself: the test's own child among the processes of that profile.
    let listed = std::process::Command::new("pgrep")
        .args(["-P", &std::process::id().to_string(), "-f", &profile])
        .output()
        .expect("pgrep runs");
    let browser_pid = String::from_utf8_lossy(&listed.stdout).trim().to_string();
    assert!(!browser_pid.is_empty(), "Chromium runs as the test's child");
    let killed = std::process::Command::new("pkill")
        .args(["-KILL", "-f", &profile])
        .status()
        .expect("pkill runs");
    assert!(killed.success(), "Chromium ran with the test's profile");
    // Wait until the browser has ended, reaping it (afterwards the browser handle's own
    // wait finds no such child, which counts as ended too).
    let pid: i32 = browser_pid
        .lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
        .expect("a process id");
    let waited = tokio::task::spawn_blocking(move || {
        let mut status = 0;
        // SAFETY: waits for a child of this process, writing its status to a local.
        #[allow(unsafe_code)]
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        (waited, std::io::Error::last_os_error().raw_os_error())
    })
    .await
    .expect("the wait");
    assert!(
        waited.0 == pid || waited.1 == Some(libc::ECHILD),
        "Chromium ended: {waited:?}"
    );
    let opened = world
        .ok(
            "browser_navigate",
            json!({"url": format!("{}/b", site.base)}),
        )
        .await;
    assert!(opened.contains("\"Page B\""), "{opened}");
    let tabs = world
        .ok("browser_tabs", json!({"action": "select", "index": 0}))
        .await;
    assert!(tabs.contains("* 0: Page B"), "{tabs}");
}

/// Headless by default; asked for a window, Chromium opens one (here on a virtual X
/// display, Debian's Xvfb, installed by the test setup): its user agent no longer says
/// `HeadlessChrome`.
#[tokio::test(flavor = "multi_thread")]
async fn the_browser_is_headless_by_default_and_opens_a_window_on_request() {
    let agent = |world: &World| {
        let browser = Arc::clone(&world.browser);
        async move {
            let tab = browser.active_tab().await.expect("tab");
            tab.eval("navigator.userAgent")
                .await
                .expect("eval")
                .as_str()
                .expect("a user agent")
                .to_string()
        }
    };
    let (_site, world) = opened("/a").await;
    assert!(agent(&world).await.contains("HeadlessChrome"));

    // Xvfb picks a free display and, once it serves it, writes its number to stdout.
    let mut xvfb = std::process::Command::new("Xvfb")
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1280x800x24",
            "-nolisten",
            "tcp",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("Xvfb starts (tests/run installs Debian's xvfb)");
    let mut number = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(xvfb.stdout.take().expect("stdout")),
        &mut number,
    )
    .expect("the display number");
    assert!(!number.trim().is_empty(), "Xvfb serves a display");
    let display = format!(":{}", number.trim());
    let site = site().await;
    let headed = World::showing(&["127.0.0.1"], Some(&display));
    headed
        .ok(
            "browser_navigate",
            json!({"url": format!("{}/a", site.base)}),
        )
        .await;
    let user_agent = agent(&headed).await;
    assert!(!user_agent.contains("HeadlessChrome"), "{user_agent}");
    assert!(headed.snapshot().await.contains("# Page A"));
    drop(headed);
    let _ = xvfb.kill();
    let _ = xvfb.wait();
}
