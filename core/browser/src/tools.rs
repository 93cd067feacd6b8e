//! The `browser_*` tools, one [`BrowserTool`] per action over the process's [`Browser`].
//! Navigation (`browser_navigate`, `browser_back`, `browser_forward`) reaches the network,
//! so the permission step asks about it (`browser_navigate` by host, for `domain:` rules);
//! input (`browser_click`, `browser_type`, `browser_press_key`, `browser_select`) and
//! `browser_tabs` change what the page does and ask too; `browser_snapshot`,
//! `browser_screenshot` and `browser_console` only look, and run without asking.

use crate::BrowserError;
use std::sync::Arc;

use larik_protocol::ToolKind;
use larik_protocol::sync::locked;
use larik_protocol::transcript::ResultPart;
use larik_tools::{CallTarget, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};

use crate::actions::{check_url, ref_name};
use crate::session::Browser;
use crate::shot::{Area, FULL_PAGE_MOST};
use crate::tab::{LastSnapshot, Tab};

/// The most characters a snapshot gives.
pub const SNAPSHOT_MOST: usize = 20_000;

/// What a browser tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `browser_navigate`.
    Navigate,
    /// `browser_back`.
    Back,
    /// `browser_forward`.
    Forward,
    /// `browser_tabs`.
    Tabs,
    /// `browser_snapshot`.
    Snapshot,
    /// `browser_click`.
    Click,
    /// `browser_type`.
    Type,
    /// `browser_press_key`.
    PressKey,
    /// `browser_select`.
    Select,
    /// `browser_console`.
    Console,
    /// `browser_screenshot`.
    Screenshot,
}

impl Action {
    /// Every action, in the order the tools are offered.
    pub const ALL: [Action; 11] = [
        Action::Navigate,
        Action::Back,
        Action::Forward,
        Action::Tabs,
        Action::Snapshot,
        Action::Click,
        Action::Type,
        Action::PressKey,
        Action::Select,
        Action::Console,
        Action::Screenshot,
    ];

    fn name(self) -> &'static str {
        match self {
            Action::Navigate => "browser_navigate",
            Action::Back => "browser_back",
            Action::Forward => "browser_forward",
            Action::Tabs => "browser_tabs",
            Action::Snapshot => "browser_snapshot",
            Action::Click => "browser_click",
            Action::Type => "browser_type",
            Action::PressKey => "browser_press_key",
            Action::Select => "browser_select",
            Action::Console => "browser_console",
            Action::Screenshot => "browser_screenshot",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Action::Navigate => {
                "Open a URL in the browser's active tab and wait for it to load. Then use browser_snapshot to see the page."
            }
            Action::Back => "Go back one page in the active tab's history.",
            Action::Forward => "Go forward one page in the active tab's history.",
            Action::Tabs => {
                "List the browser's tabs, or select or close one by index. Tabs a page opens become active by themselves."
            }
            Action::Snapshot => {
                "Outline the active tab's visible page: headings, text and interactive elements, each with a ref (e.g. [ref=e7]) for browser_click, browser_type and browser_select. Refs stay the same across snapshots of one page. `ref` outlines only that element; `since_last` gives only what changed since the last snapshot."
            }
            Action::Click => {
                "Click an element by its ref from browser_snapshot (scrolled into view, real mouse events at its centre)."
            }
            Action::Type => {
                "Type text into a field by its ref: the field is cleared first; `submit` presses Enter after."
            }
            Action::PressKey => {
                "Press a key in the active tab, e.g. Enter, Escape, Tab, ArrowDown, or a combination like Control+a."
            }
            Action::Select => {
                "Choose options of a select element by ref, by their values or labels."
            }
            Action::Console => {
                "The active tab's console messages, uncaught errors and dialogs (alerts are accepted, confirms and prompts dismissed), last 200 lines."
            }
            Action::Screenshot => {
                "A JPEG screenshot of the active tab: the viewport, the full page (`full_page`, cut at 5000 px) or one element (`ref`). `labels` draws each ref on the page."
            }
        }
    }

    fn schema(self) -> Value {
        let reference = json!({"type": "string", "description": "The element's ref from browser_snapshot, e.g. e7."});
        let (properties, required): (Value, Vec<&str>) = match self {
            Action::Navigate => (
                json!({"url": {"type": "string", "description": "The http or https URL."}}),
                vec!["url"],
            ),
            Action::Back | Action::Forward => (json!({}), vec![]),
            Action::Tabs => (
                json!({
                    "action": {"type": "string", "enum": ["list", "select", "close"], "description": "Default list."},
                    "index": {"type": "integer", "minimum": 0, "description": "The tab, for select and close."}
                }),
                vec![],
            ),
            Action::Snapshot => (
                json!({
                    "ref": {"type": "string", "description": "Outline only this element."},
                    "since_last": {"type": "boolean", "description": "Only what changed since the last snapshot of this page."}
                }),
                vec![],
            ),
            Action::Click => (json!({"ref": reference}), vec!["ref"]),
            Action::Type => (
                json!({
                    "ref": reference,
                    "text": {"type": "string"},
                    "submit": {"type": "boolean", "description": "Press Enter after typing."}
                }),
                vec!["ref", "text"],
            ),
            Action::PressKey => (json!({"key": {"type": "string"}}), vec!["key"]),
            Action::Select => (
                json!({
                    "ref": reference,
                    "values": {"type": "array", "items": {"type": "string"}, "description": "Option values or labels."}
                }),
                vec!["ref", "values"],
            ),
            Action::Console => (
                json!({"clear": {"type": "boolean", "description": "Empty the buffer after reading it."}}),
                vec![],
            ),
            Action::Screenshot => (
                json!({
                    "full_page": {"type": "boolean"},
                    "ref": {"type": "string", "description": "Only this element."},
                    "labels": {"type": "boolean", "description": "Draw each ref on the page."}
                }),
                vec![],
            ),
        };
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        })
    }

    /// Whether the action only looks at the page.
    fn looks_only(self) -> bool {
        matches!(
            self,
            Action::Snapshot | Action::Console | Action::Screenshot
        )
    }
}

/// One browser tool.
pub struct BrowserTool {
    browser: Arc<Browser>,
    action: Action,
    /// Hosts the session's navigation may reach though they are local or private.
    allowed_hosts: Arc<Vec<String>>,
}

/// Every browser tool over `browser`, navigating to local or private hosts only where
/// `allowed_hosts` names them.
pub fn browser_tools(browser: &Arc<Browser>, allowed_hosts: Vec<String>) -> Vec<Arc<dyn Tool>> {
    let allowed_hosts = Arc::new(allowed_hosts);
    Action::ALL
        .into_iter()
        .map(|action| {
            Arc::new(BrowserTool {
                browser: Arc::clone(browser),
                action,
                allowed_hosts: Arc::clone(&allowed_hosts),
            }) as Arc<dyn Tool>
        })
        .collect()
}

fn text_field<'a>(input: &'a Value, field: &str) -> Result<&'a str, BrowserError> {
    input
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{field}` is required").into())
}

fn flag(input: &Value, field: &str) -> bool {
    input.get(field).and_then(Value::as_bool).unwrap_or(false)
}

#[async_trait::async_trait]
impl Tool for BrowserTool {
    fn name(&self) -> &str {
        self.action.name()
    }

    fn description(&self) -> &str {
        self.action.description()
    }

    fn input_schema(&self) -> Value {
        self.action.schema()
    }

    fn kind(&self) -> ToolKind {
        match self.action {
            Action::Navigate | Action::Back | Action::Forward => ToolKind::Fetch,
            action if action.looks_only() => ToolKind::Read,
            _ => ToolKind::Other,
        }
    }

    fn read_only(&self) -> bool {
        self.action.looks_only()
    }

    fn title(&self, input: &Value, _ctx: &ToolContext) -> String {
        let field = |name: &str| input.get(name).and_then(Value::as_str).unwrap_or("");
        match self.action {
            Action::Navigate => format!("Open {}", field("url")),
            Action::Back => "Go back".to_string(),
            Action::Forward => "Go forward".to_string(),
            Action::Tabs => format!(
                "Tabs: {}",
                input
                    .get("action")
                    .and_then(Value::as_str)
                    .unwrap_or("list")
            ),
            Action::Snapshot => "Snapshot the page".to_string(),
            Action::Click => format!("Click {}", field("ref")),
            Action::Type => format!("Type into {}", field("ref")),
            Action::PressKey => format!("Press {}", field("key")),
            Action::Select => format!("Select in {}", field("ref")),
            Action::Console => "Read the console".to_string(),
            Action::Screenshot => "Screenshot the page".to_string(),
        }
    }

    fn target(&self, input: &Value, _ctx: &ToolContext) -> CallTarget {
        if self.action != Action::Navigate {
            return CallTarget::None;
        }
        input
            .get("url")
            .and_then(Value::as_str)
            .and_then(larik_web::tools::url_host)
            .map_or(CallTarget::None, CallTarget::Domain)
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let work = self.act(&input);
        tokio::select! {
            output = work => output.unwrap_or_else(|error| ToolOutput::error(capitalised(&error.0))),
            () = ctx.cancel.cancelled() => ToolOutput::error("Cancelled."),
        }
    }
}

fn capitalised(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => format!(
            "{}{}.",
            first.to_uppercase(),
            chars.as_str().trim_end_matches('.')
        ),
        None => String::new(),
    }
}

impl BrowserTool {
    async fn act(&self, input: &Value) -> Result<ToolOutput, BrowserError> {
        let allowed = self.allowed_hosts.as_slice();
        self.browser.allow_hosts(allowed);
        match self.action {
            Action::Navigate => {
                let url = check_url(text_field(input, "url")?, allowed).await?;
                let tab = self.browser.active_tab().await?;
                tab.navigate(&url, allowed).await?;
                page_line(&tab, "Opened").await
            }
            Action::Back | Action::Forward => {
                let tab = self.browser.active_tab().await?;
                let step = if self.action == Action::Back { -1 } else { 1 };
                tab.go_through_history(step).await?;
                page_line(&tab, "Now at").await
            }
            Action::Tabs => self.tabs(input).await,
            Action::Snapshot => {
                let tab = self.browser.active_tab().await?;
                snapshot(
                    &tab,
                    input.get("ref").and_then(Value::as_str).map(ref_name),
                    flag(input, "since_last"),
                )
                .await
            }
            Action::Click => {
                let reference = ref_name(text_field(input, "ref")?);
                let tab = self.browser.active_tab().await?;
                tab.click(&reference).await?;
                self.after_input(&format!("Clicked {reference}")).await
            }
            Action::Type => {
                let reference = ref_name(text_field(input, "ref")?);
                let text = text_field(input, "text")?;
                let tab = self.browser.active_tab().await?;
                tab.type_text(&reference, text, flag(input, "submit"))
                    .await?;
                self.after_input(&format!("Typed into {reference}")).await
            }
            Action::PressKey => {
                let key = text_field(input, "key")?;
                let tab = self.browser.active_tab().await?;
                tab.press(key).await?;
                self.after_input(&format!("Pressed {key}")).await
            }
            Action::Select => {
                let reference = ref_name(text_field(input, "ref")?);
                let values: Vec<String> = input
                    .get("values")
                    .and_then(Value::as_array)
                    .ok_or("`values` is required: a list of option values or labels")?
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                let tab = self.browser.active_tab().await?;
                let chosen = tab.select(&reference, &values).await?;
                self.after_input(&format!("Selected {} in {reference}", chosen.join(", ")))
                    .await
            }
            Action::Console => {
                let tab = self.browser.active_tab().await?;
                let lines = tab.log_lines();
                if flag(input, "clear") {
                    tab.clear_log();
                }
                Ok(ToolOutput::text(if lines.is_empty() {
                    "The console is empty.".to_string()
                } else {
                    lines.join("\n")
                }))
            }
            Action::Screenshot => {
                let area = match (
                    input.get("ref").and_then(Value::as_str),
                    flag(input, "full_page"),
                ) {
                    (Some(reference), _) => Area::Element(ref_name(reference)),
                    (None, true) => Area::FullPage,
                    (None, false) => Area::Viewport,
                };
                let tab = self.browser.active_tab().await?;
                let shot = tab.screenshot(&area, flag(input, "labels")).await?;
                let (_, url) = tab.title_and_url().await;
                let what = match &area {
                    Area::Viewport => "the viewport".to_string(),
                    Area::FullPage if shot.cut => {
                        format!("the full page, cut at {FULL_PAGE_MOST} px")
                    }
                    Area::FullPage => "the full page".to_string(),
                    Area::Element(reference) if shot.cut => {
                        format!("element {reference}, cut at {FULL_PAGE_MOST} px")
                    }
                    Area::Element(reference) => format!("element {reference}"),
                };
                Ok(ToolOutput {
                    content: vec![
                        ResultPart::text(format!(
                            "Screenshot of {what} of {url}: {}×{} px, JPEG.",
                            shot.width, shot.height
                        )),
                        ResultPart::Image {
                            media_type: "image/jpeg".to_string(),
                            data: shot.jpeg_base64,
                        },
                    ],
                    ..ToolOutput::default()
                })
            }
        }
    }

    async fn tabs(&self, input: &Value) -> Result<ToolOutput, BrowserError> {
        let index = || {
            input
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|index| usize::try_from(index).ok())
                .ok_or("`index` is required: the tab's number from the list")
        };
        match input
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or("list")
        {
            "list" => {}
            "select" => self.browser.select_tab(index()?).await?,
            "close" => self.browser.close_tab(index()?).await?,
            other => {
                return Err(
                    format!("`action` must be list, select or close, not `{other}`").into(),
                );
            }
        }
        let rows = self.browser.tabs().await?;
        let lines: Vec<String> = rows
            .iter()
            .map(|row| {
                format!(
                    "{}{}: {} ({})",
                    if row.active { "* " } else { "  " },
                    row.index,
                    if row.title.is_empty() {
                        "untitled"
                    } else {
                        &row.title
                    },
                    row.url
                )
            })
            .collect();
        Ok(ToolOutput::text(format!(
            "Tabs (* is active):\n{}",
            lines.join("\n")
        )))
    }

    /// The result of an input action: what was done and the page the active tab shows now
    /// (a tab the page opened has become active).
    async fn after_input(&self, done: &str) -> Result<ToolOutput, BrowserError> {
        let tab = self.browser.active_tab().await?;
        page_line(&tab, done).await
    }
}

async fn page_line(tab: &Tab, done: &str) -> Result<ToolOutput, BrowserError> {
    let (title, url) = tab.title_and_url().await;
    let title = if title.is_empty() { "untitled" } else { &title };
    Ok(ToolOutput::text(format!(
        "{done}. The tab shows \"{title}\" ({url}). Take a snapshot to see it."
    )))
}

/// The outline of `tab` (or of the element `root`), or what changed since the last one.
async fn snapshot(
    tab: &Tab,
    root: Option<String>,
    since_last: bool,
) -> Result<ToolOutput, BrowserError> {
    let loaded = tab.wait_for_load().await;
    let root_arg = serde_json::to_string(&root).map_err(|error| error.to_string())?;
    let reply = tab
        .eval(&format!("__larik.snapshot({root_arg}, {SNAPSHOT_MOST})"))
        .await?;
    if let Some(error) = reply.get("error").and_then(Value::as_str) {
        return Err(error.to_string().into());
    }
    let field = |name: &str| {
        reply
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (title, url, text) = (field("title"), field("url"), field("text"));
    let title: String = title.chars().take(300).collect();
    let cut = reply.get("cut").and_then(Value::as_bool).unwrap_or(false);
    let current = LastSnapshot {
        url: url.clone(),
        root: root.clone(),
        text: text.clone(),
    };
    let previous = locked(&tab.last).replace(current);
    let mut out = format!("Page: {title}\nURL: {url}\n");
    if !loaded {
        out.push_str("(The page was still loading after 30 s: this is what it shows so far.)\n");
    }
    if let Some(root) = &root {
        out.push_str(&format!("Element: {root}\n"));
    }
    match previous.filter(|previous| previous.url == url && previous.root == root) {
        Some(previous) if since_last => out.push_str(&changes(&previous.text, &text)),
        _ => {
            if since_last {
                out.push_str("(No earlier snapshot of this page: all of it follows.)\n");
            }
            out.push('\n');
            out.push_str(if text.is_empty() {
                "(nothing visible)"
            } else {
                &text
            });
        }
    }
    if cut {
        out.push_str(&format!(
            "\n[The snapshot stops at {SNAPSHOT_MOST} characters: snapshot a part with `ref`.]"
        ));
    }
    Ok(ToolOutput::text(out))
}

/// The lines added and removed between two snapshots.
fn changes(before: &str, after: &str) -> String {
    let diff = similar::TextDiff::from_lines(before, after);
    let mut added = 0;
    let mut removed = 0;
    let mut lines = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Equal => continue,
            similar::ChangeTag::Delete => {
                removed += 1;
                '-'
            }
            similar::ChangeTag::Insert => {
                added += 1;
                '+'
            }
        };
        lines.push(sign);
        lines.push(' ');
        lines.push_str(change.value().trim_end_matches('\n'));
        lines.push('\n');
    }
    if added + removed == 0 {
        return "\nNothing changed since the last snapshot.".to_string();
    }
    format!("\nSince the last snapshot: {added} lines added (+), {removed} removed (-).\n{lines}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_list_only_what_differs() {
        let before = "# Title\nbutton \"Save\" [ref=e1]\ntext\n";
        let after = "# Title\nbutton \"Save\" disabled [ref=e1]\ntext\nSaved.\n";
        assert_eq!(
            changes(before, after),
            "\nSince the last snapshot: 2 lines added (+), 1 removed (-).\n\
             - button \"Save\" [ref=e1]\n+ button \"Save\" disabled [ref=e1]\n+ Saved.\n"
        );
        assert_eq!(
            changes(before, before),
            "\nNothing changed since the last snapshot."
        );
    }
}
