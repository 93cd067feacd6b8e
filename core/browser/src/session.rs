//! One Chromium for the process: launched on the first tool call (not tied to any call, so a
//! call ending never closes it), with a persistent profile, and launched again when the
//! user closed it. Before each call the tab list is brought up to date: tabs the user
//! closed are dropped, tabs the page opened are adopted and made active.

use crate::BrowserError;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chromiumoxide::browser::BrowserConfig;
use chromiumoxide::cdp::browser_protocol::target::{
    CloseTargetParams, CreateTargetParams, TargetId,
};
use chromiumoxide::handler::viewport::Viewport;
use futures::StreamExt;
use tokio::sync::Mutex;

use crate::tab::Tab;

/// How long a running browser may take to answer before it counts as gone.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// The viewport every tab gets, in CSS pixels.
pub const VIEWPORT: (u32, u32) = (1280, 800);

/// How the browser starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserOptions {
    /// The Chromium or Chrome program.
    pub executable: PathBuf,
    /// Without a window (the default).
    pub headless: bool,
    /// The profile directory, kept between runs.
    pub profile_dir: PathBuf,
    /// Environment variables set for the browser besides Larik's own (e.g. `DISPLAY` for a
    /// window on another screen).
    pub env: Vec<(String, String)>,
}

/// The process's browser, started on first use.
pub struct Browser {
    options: BrowserOptions,
    state: Mutex<Option<Running>>,
    /// The hosts the calling session allows on the local network; every tab's requests
    /// are checked against them.
    allowed: Arc<std::sync::RwLock<Vec<String>>>,
}

struct Running {
    browser: chromiumoxide::Browser,
    /// Set when the connection to the browser ended (the user closed it, or it died).
    gone: Arc<AtomicBool>,
    handler: tokio::task::JoinHandle<()>,
    tabs: Vec<Arc<Tab>>,
    active: usize,
    /// Tabs Larik closed, never adopted again while Chromium is still closing them.
    closed: Vec<TargetId>,
}

/// One row of the tab list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabInfo {
    /// Its place in the list, from 0.
    pub index: usize,
    /// Its title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// Whether the tools act on it.
    pub active: bool,
}

impl Browser {
    /// A browser that starts with `options` on first use.
    pub fn new(options: BrowserOptions) -> Self {
        Browser {
            options,
            state: Mutex::new(None),
            allowed: Arc::default(),
        }
    }

    /// Sets the hosts the calling session allows on the local network, for the requests
    /// its call makes the browser send.
    pub fn allow_hosts(&self, hosts: &[String]) {
        let mut allowed = larik_protocol::sync::write_locked(&self.allowed);
        if allowed.as_slice() != hosts {
            *allowed = hosts.to_vec();
        }
    }

    /// How it starts.
    pub fn options(&self) -> &BrowserOptions {
        &self.options
    }

    /// The active tab, starting the browser (again) if needed.
    pub async fn active_tab(&self) -> Result<Arc<Tab>, BrowserError> {
        let mut state = self.state.lock().await;
        let running = self.running(&mut state).await?;
        Ok(Arc::clone(&running.tabs[running.active]))
    }

    /// Every tab, in order.
    pub async fn tabs(&self) -> Result<Vec<TabInfo>, BrowserError> {
        let mut state = self.state.lock().await;
        let running = self.running(&mut state).await?;
        let mut rows = Vec::with_capacity(running.tabs.len());
        for (index, tab) in running.tabs.iter().enumerate() {
            let (title, url) = tab.title_and_url().await;
            rows.push(TabInfo {
                index,
                title,
                url,
                active: index == running.active,
            });
        }
        Ok(rows)
    }

    /// Makes tab `index` the active one.
    pub async fn select_tab(&self, index: usize) -> Result<(), BrowserError> {
        let mut state = self.state.lock().await;
        let running = self.running(&mut state).await?;
        let tab = running.tabs.get(index).ok_or_else(|| {
            format!(
                "there is no tab {index}; the tabs are 0 to {}",
                running.tabs.len() - 1
            )
        })?;
        tab.bring_to_front().await;
        running.active = index;
        Ok(())
    }

    /// Closes tab `index`; closing the last one opens a blank tab in its place.
    pub async fn close_tab(&self, index: usize) -> Result<(), BrowserError> {
        let allowed = &self.allowed;
        let mut state = self.state.lock().await;
        let running = self.running(&mut state).await?;
        if index >= running.tabs.len() {
            return Err(format!(
                "there is no tab {index}; the tabs are 0 to {}",
                running.tabs.len() - 1
            )
            .into());
        }
        let tab = running.tabs.remove(index);
        let target = tab.page.target_id().clone();
        running.closed.push(target.clone());
        let _ = running
            .browser
            .execute(CloseTargetParams::new(target))
            .await;
        if running.tabs.is_empty() {
            let page = running
                .browser
                .new_page(CreateTargetParams::new("about:blank"))
                .await
                .map_err(|error| format!("cannot open a tab: {error}"))?;
            running
                .tabs
                .push(Arc::new(Tab::watch(page, Arc::clone(allowed)).await));
        }
        if running.active >= index && running.active > 0 {
            running.active -= 1;
        }
        running.active = running.active.min(running.tabs.len() - 1);
        Ok(())
    }

    /// Closes the browser, if it runs.
    pub async fn shut_down(&self) {
        let mut state = self.state.lock().await;
        if let Some(mut running) = state.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), running.browser.close()).await;
            let _ = running.browser.kill().await;
            running.handler.abort();
        }
    }

    /// The running browser with its tabs brought up to date, started if it is not running.
    async fn running<'a>(
        &self,
        state: &'a mut Option<Running>,
    ) -> Result<&'a mut Running, BrowserError> {
        let alive = match state.as_mut() {
            // A browser being killed can still look alive for a moment (its threads
            // ending, its connection not yet closed), so it must also answer.
            Some(running) => {
                !running.tabs.is_empty()
                    && !running.gone.load(Ordering::SeqCst)
                    && matches!(running.browser.try_wait(), Ok(None))
                    && matches!(
                        tokio::time::timeout(ANSWER_WITHIN, running.browser.version()).await,
                        Ok(Ok(_))
                    )
            }
            None => false,
        };
        if !alive {
            if let Some(mut old) = state.take() {
                let _ = old.browser.kill().await;
                old.handler.abort();
            }
            *state = Some(self.launch().await?);
        }
        let running = state.as_mut().ok_or("the browser did not start")?;
        sync_tabs(running, &self.allowed).await;
        if running.tabs.is_empty() {
            return Err("the browser has no tab and could not open one".into());
        }
        Ok(running)
    }

    async fn launch(&self) -> Result<Running, BrowserError> {
        let allowed = &self.allowed;
        std::fs::create_dir_all(&self.options.profile_dir).map_err(|error| {
            format!(
                "cannot create the browser profile {}: {error}",
                self.options.profile_dir.display()
            )
        })?;
        let (width, height) = VIEWPORT;
        let mut builder = BrowserConfig::builder()
            .chrome_executable(&self.options.executable)
            .user_data_dir(&self.options.profile_dir)
            .respect_https_errors()
            .window_size(width, height)
            .viewport(Viewport {
                width,
                height,
                ..Viewport::default()
            })
            .launch_timeout(Duration::from_secs(30))
            .request_timeout(Duration::from_secs(30))
            .args([
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--disable-dev-shm-usage",
            ]);
        builder = builder.envs(self.options.env.iter().cloned());
        builder = if self.options.headless {
            builder.new_headless_mode()
        } else {
            builder.with_head()
        };
        // Chromium refuses to start its own sandbox as root.
        if is_root() {
            builder = builder.no_sandbox();
        }
        let config = builder.build()?;
        let (browser, mut handler) = chromiumoxide::Browser::launch(config)
            .await
            .map_err(|error| {
                format!(
                    "cannot start the browser {}: {error} (is another browser using the profile {}?)",
                    self.options.executable.display(),
                    self.options.profile_dir.display()
                )
            })?;
        let gone = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&gone);
        let handler = tokio::spawn(async move {
            while handler.next().await.is_some() {}
            flag.store(true, Ordering::SeqCst);
        });
        let page = browser
            .new_page(CreateTargetParams::new("about:blank"))
            .await
            .map_err(|error| format!("cannot open a tab: {error}"))?;
        let first = Arc::new(Tab::watch(page, Arc::clone(allowed)).await);
        Ok(Running {
            browser,
            gone,
            handler,
            tabs: vec![first],
            active: 0,
            closed: Vec::new(),
        })
    }
}

/// Drops tabs that are gone and adopts tabs a page opened, making the newest one active.
async fn sync_tabs(running: &mut Running, allowed: &Arc<std::sync::RwLock<Vec<String>>>) {
    let Ok(pages) = running.browser.pages().await else {
        return;
    };
    let open: Vec<&TargetId> = pages.iter().map(|page| page.target_id()).collect();
    let active_id = running.tabs[running.active].page.target_id().clone();
    running
        .tabs
        .retain(|tab| open.contains(&tab.page.target_id()));
    let mut adopted = None;
    for page in pages {
        let known = running
            .tabs
            .iter()
            .any(|tab| tab.page.target_id() == page.target_id());
        if known || running.closed.contains(page.target_id()) {
            continue;
        }
        // Only tabs a page opened are adopted: Chromium's own first tab is not Larik's.
        if page.opener_id().is_none() {
            continue;
        }
        let tab = Tab::watch(page, Arc::clone(allowed)).await;
        tab.wait_for_opened_page().await;
        // The tab's first page loaded before Larik watched it: a refused one closes it.
        let (_, url) = tab.title_and_url().await;
        let hosts = larik_protocol::sync::read_locked(allowed).clone();
        if crate::actions::check_request(&url, &hosts).await.is_err() {
            running.closed.push(tab.page.target_id().clone());
            let _ = running
                .browser
                .execute(CloseTargetParams::new(tab.page.target_id().clone()))
                .await;
            continue;
        }
        running.tabs.push(Arc::new(tab));
        adopted = Some(running.tabs.len() - 1);
    }
    if running.tabs.is_empty() {
        if let Ok(page) = running
            .browser
            .new_page(CreateTargetParams::new("about:blank"))
            .await
        {
            running
                .tabs
                .push(Arc::new(Tab::watch(page, Arc::clone(allowed)).await));
        }
        running.active = 0;
        return;
    }
    running.active = adopted
        .or_else(|| {
            running
                .tabs
                .iter()
                .position(|tab| tab.page.target_id() == &active_id)
        })
        .unwrap_or(running.tabs.len() - 1);
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    unsafe {
        libc::geteuid() == 0
    }
}
