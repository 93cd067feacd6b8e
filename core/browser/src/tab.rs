//! One tab: its page, the listeners that answer dialogs (alerts accepted, the rest
//! dismissed, since an open dialog would block the page and every later call) and log them
//! with console messages and uncaught exceptions in a 200-line buffer, and the last
//! snapshot taken of it (for `since_last`). Scripts run through `Runtime.evaluate` in an
//! isolated world, with the page helpers installed first.

use crate::BrowserError;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::fetch::{
    ContinueRequestParams, EnableParams as InterceptParams, EventRequestPaused, FailRequestParams,
    RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::cdp::browser_protocol::page::{
    DialogType, EventJavascriptDialogOpening, HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::browser_protocol::target::SetAutoAttachParams;
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, EventConsoleApiCalled, EventExceptionThrown, RemoteObject,
};
use futures::StreamExt;
use larik_protocol::sync::locked;
use serde_json::Value;

/// The page helpers (`window.__larik`).
const PAGE_JS: &str = include_str!("page.js");

/// Lines a tab's console buffer keeps.
pub const LOG_LINES: usize = 200;

/// How long one script may run.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(30);

/// The last snapshot of a tab.
#[derive(Debug, Clone, Default)]
pub struct LastSnapshot {
    /// The document it was of (its address).
    pub url: String,
    /// The subtree it was of, if one was asked for.
    pub root: Option<String>,
    /// Its text.
    pub text: String,
}

/// A tab and what is kept about it.
pub struct Tab {
    /// The page.
    pub page: Page,
    log: Arc<Mutex<VecDeque<String>>>,
    /// The last snapshot taken.
    pub last: Mutex<Option<LastSnapshot>>,
    listeners: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Tab {
    fn drop(&mut self) {
        for listener in &self.listeners {
            listener.abort();
        }
    }
}

/// The most characters of one console line kept.
const LINE_MOST: usize = 2_000;

fn push(log: &Mutex<VecDeque<String>>, mut line: String) {
    if line.chars().count() > LINE_MOST {
        line = line.chars().take(LINE_MOST).collect::<String>() + " […]";
    }
    let mut log = locked(log);
    if log.len() == LOG_LINES {
        log.pop_front();
    }
    log.push_back(line);
}

/// A console argument as text.
fn show(object: &RemoteObject) -> String {
    match &object.value {
        Some(Value::String(text)) => text.clone(),
        Some(value) => value.to_string(),
        None => object
            .description
            .clone()
            .or_else(|| {
                object
                    .unserializable_value
                    .as_ref()
                    .map(|value| value.inner().clone())
            })
            .unwrap_or_else(|| format!("{:?}", object.r#type).to_lowercase()),
    }
}

impl Tab {
    /// Starts watching `page`: every request it makes goes through the address guard
    /// (`allowed` read at each request), and its dialogs, console and exceptions are kept.
    pub async fn watch(page: Page, allowed: Arc<std::sync::RwLock<Vec<String>>>) -> Tab {
        // chromiumoxide asks each page to attach the tabs it opens and hold them until a
        // debugger lets them run; a tab opened that way would wait forever. Tabs the page
        // opens are found by the browser's target discovery instead.
        let mut detached = SetAutoAttachParams::new(false, false);
        detached.flatten = Some(true);
        let _ = page.execute(detached).await;
        let log: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let mut listeners = Vec::new();
        if let Ok(mut paused) = page.event_listener::<EventRequestPaused>().await {
            let answering = page.clone();
            let log = Arc::clone(&log);
            listeners.push(tokio::spawn(async move {
                let page = answering;
                while let Some(request) = paused.next().await {
                    let allowed = larik_protocol::sync::read_locked(&allowed).clone();
                    let verdict =
                        crate::actions::check_request(&request.request.url, &allowed).await;
                    let id = request.request_id.clone();
                    match verdict {
                        Ok(()) => {
                            let _ = page.execute(ContinueRequestParams::new(id)).await;
                        }
                        Err(reason) => {
                            push(&log, format!("[blocked] {}: {reason}", request.request.url));
                            let _ = page
                                .execute(FailRequestParams::new(id, ErrorReason::BlockedByClient))
                                .await;
                        }
                    }
                }
            }));
            let intercept = InterceptParams {
                patterns: Some(vec![RequestPattern {
                    url_pattern: Some("*".to_string()),
                    resource_type: None,
                    request_stage: None,
                }]),
                handle_auth_requests: None,
            };
            let _ = page.execute(intercept).await;
        }
        if let Ok(mut dialogs) = page.event_listener::<EventJavascriptDialogOpening>().await {
            let page = page.clone();
            let log = Arc::clone(&log);
            listeners.push(tokio::spawn(async move {
                while let Some(dialog) = dialogs.next().await {
                    // Leaving a page is never held up by it.
                    let accept =
                        matches!(dialog.r#type, DialogType::Alert | DialogType::Beforeunload);
                    let _ = page
                        .execute(HandleJavaScriptDialogParams::new(accept))
                        .await;
                    push(
                        &log,
                        format!(
                            "[dialog] {} {:?} {}",
                            dialog.r#type.as_ref(),
                            dialog.message,
                            if accept { "accepted" } else { "dismissed" }
                        ),
                    );
                }
            }));
        }
        if let Ok(mut messages) = page.event_listener::<EventConsoleApiCalled>().await {
            let log = Arc::clone(&log);
            listeners.push(tokio::spawn(async move {
                while let Some(message) = messages.next().await {
                    let text: Vec<String> = message.args.iter().map(show).collect();
                    push(
                        &log,
                        format!("[{}] {}", message.r#type.as_ref(), text.join(" ")),
                    );
                }
            }));
        }
        if let Ok(mut exceptions) = page.event_listener::<EventExceptionThrown>().await {
            let log = Arc::clone(&log);
            listeners.push(tokio::spawn(async move {
                while let Some(thrown) = exceptions.next().await {
                    let details = &thrown.exception_details;
                    let text = details
                        .exception
                        .as_ref()
                        .and_then(|exception| exception.description.clone())
                        .unwrap_or_else(|| details.text.clone());
                    push(&log, format!("[exception] {text}"));
                }
            }));
        }
        Tab {
            page,
            log,
            last: Mutex::default(),
            listeners,
        }
    }

    /// The console buffer's lines, oldest first.
    pub fn log_lines(&self) -> Vec<String> {
        locked(&self.log).iter().cloned().collect()
    }

    /// Empties the console buffer.
    pub fn clear_log(&self) {
        locked(&self.log).clear();
    }

    /// The page's title and address.
    pub async fn title_and_url(&self) -> (String, String) {
        match self
            .eval("({ title: document.title, url: location.href })")
            .await
        {
            Ok(page) => {
                let field = |name: &str| page.get(name).and_then(Value::as_str).unwrap_or("");
                // A title is the page's to choose: kept short.
                let title = field("title").chars().take(300).collect();
                (title, field("url").to_string())
            }
            Err(_) => (
                self.page
                    .get_title()
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
                self.page.url().await.ok().flatten().unwrap_or_default(),
            ),
        }
    }

    /// For a tab a page just opened: waits (up to 10 s) until it leaves the blank document
    /// it starts with, then for it to load.
    pub async fn wait_for_opened_page(&self) {
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match self.eval("location.href").await {
                    Ok(Value::String(url)) if url != "about:blank" => return,
                    _ => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        })
        .await;
        self.wait_for_load().await;
    }

    /// Shows the tab.
    pub async fn bring_to_front(&self) {
        let _ = self.page.bring_to_front().await;
    }

    /// Evaluates `expression` (which may use `window.__larik`), waiting for a promise, and
    /// returns its value; an exception or a failure to run is the `Err` text. Scripts run
    /// in an isolated world of the page's main frame: they share the page's DOM but not its
    /// JavaScript, so a page cannot replace the helpers or the native setters they use.
    pub async fn eval(&self, expression: &str) -> Result<Value, BrowserError> {
        let context = self
            .page
            .secondary_execution_context()
            .await
            .map_err(|error| format!("the page is not reachable: {error}"))?
            .ok_or("the page is not ready yet")?;
        let script = format!("{PAGE_JS}\n;({expression})");
        let params = EvaluateParams::builder()
            .context_id(context)
            .expression(script)
            .return_by_value(true)
            .await_promise(true)
            .build()
            .map_err(|error| format!("cannot build the script: {error}"))?;
        let reply = tokio::time::timeout(SCRIPT_TIMEOUT, self.page.execute(params))
            .await
            .map_err(|_| "the page did not answer within 30 s".to_string())?
            .map_err(|error| format!("the page could not run the script: {error}"))?;
        if let Some(details) = &reply.result.exception_details {
            let text = details
                .exception
                .as_ref()
                .and_then(|exception| exception.description.clone())
                .unwrap_or_else(|| details.text.clone());
            return Err(format!("the script failed in the page: {text}").into());
        }
        Ok(reply.result.result.value.clone().unwrap_or(Value::Null))
    }
}
