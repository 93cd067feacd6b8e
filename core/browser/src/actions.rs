//! What the tools do to a tab: navigation behind the address guard, history through
//! `Page.navigateToHistoryEntry` (back/forward-cached pages never fire a load event, so
//! nothing waits for one), and real input — clicks as mouse events at the element's
//! centre after scrolling it into view, typing as key events after clearing the field
//! through its native value setter. After an input action the page gets 300 ms to start a
//! navigation, and then until `document.readyState` is `complete`.

use crate::BrowserError;
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    MouseButton,
};
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameStartedLoading, GetNavigationHistoryParams, NavigateParams,
    NavigateToHistoryEntryParams,
};
use futures::StreamExt;
use serde_json::Value;
use url::Url;

use crate::tab::Tab;

/// How long an input action waits for a navigation to start.
const NAVIGATION_START: Duration = Duration::from_millis(300);
/// How long a page may take to finish loading.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Why `url` may not be opened, if it may not: only http and https (and `about:blank`),
/// and only hosts on the public internet unless `allowed` names them.
pub async fn check_url(url: &str, allowed: &[String]) -> Result<Url, BrowserError> {
    let parsed =
        Url::parse(url.trim()).map_err(|error| format!("`{url}` is not a URL: {error}"))?;
    match parsed.scheme() {
        "http" | "https" => {}
        "about" if parsed.as_str() == "about:blank" => return Ok(parsed),
        other => {
            return Err(
                format!("only http and https pages can be opened, not `{other}:` URLs").into(),
            );
        }
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("`{url}` names no host"))?;
    let port = parsed.port_or_known_default().unwrap_or(443);
    larik_web::checked_address(host, port, allowed)
        .await
        .map_err(|error| match error {
            larik_web::FetchError::Refused(reason) => format!("refused: {reason}"),
            other => other.to_string(),
        })?;
    Ok(parsed)
}

/// Why the page may not make a request to `url`, if it may not: its own schemes
/// (`data:`, `blob:`, `about:`) may; anything else only as [`check_url`] allows.
pub async fn check_request(url: &str, allowed: &[String]) -> Result<(), BrowserError> {
    if ["data:", "blob:", "about:"]
        .iter()
        .any(|scheme| url.starts_with(scheme))
    {
        return Ok(());
    }
    check_url(url, allowed).await.map(|_| ())
}

/// An element's ref as the model gave it (`e12`, `[ref=e12]` or `ref=e12`).
pub fn ref_name(input: &str) -> String {
    input
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_start_matches("ref=")
        .to_string()
}

impl Tab {
    /// Opens `url` (already checked) and waits for it to load; then checks where it ended
    /// up, leaving a page that redirected to a refused host.
    pub async fn navigate(&self, url: &Url, allowed: &[String]) -> Result<(), BrowserError> {
        let reply = self
            .page
            .execute(NavigateParams::new(url.as_str()))
            .await
            .map_err(|error| format!("cannot open {url}: {error}"))?;
        if let Some(problem) = &reply.result.error_text {
            return Err(format!("cannot open {url}: {problem}").into());
        }
        self.wait_for_load().await;
        let (_, now) = self.title_and_url().await;
        if now != url.as_str()
            && let Err(reason) = check_url(&now, allowed).await
        {
            let _ = self.page.execute(NavigateParams::new("about:blank")).await;
            return Err(format!("{url} led to {now}, which is {reason}").into());
        }
        Ok(())
    }

    /// Goes `step` entries through the history (-1 back, 1 forward).
    pub async fn go_through_history(&self, step: i64) -> Result<(), BrowserError> {
        let history = self
            .page
            .execute(GetNavigationHistoryParams::default())
            .await
            .map_err(|error| format!("cannot read the history: {error}"))?;
        let target = history.result.current_index + step;
        let entry = usize::try_from(target)
            .ok()
            .and_then(|index| history.result.entries.get(index))
            .ok_or_else(|| {
                if step < 0 {
                    "there is no earlier page in this tab".to_string()
                } else {
                    "there is no later page in this tab".to_string()
                }
            })?;
        self.page
            .execute(NavigateToHistoryEntryParams::new(entry.id))
            .await
            .map_err(|error| format!("cannot go to {}: {error}", entry.url))?;
        self.wait_for_load().await;
        Ok(())
    }

    /// Clicks the element `reference` with real mouse events at its centre.
    pub async fn click(&self, reference: &str) -> Result<(), BrowserError> {
        let point = self
            .eval(&format!("__larik.centre({})", quoted(reference)))
            .await?;
        let (x, y) = coordinates(&point)?;
        self.after_input(async {
            for kind in [
                DispatchMouseEventType::MouseMoved,
                DispatchMouseEventType::MousePressed,
                DispatchMouseEventType::MouseReleased,
            ] {
                let mut event = DispatchMouseEventParams::new(kind.clone(), x, y);
                if kind != DispatchMouseEventType::MouseMoved {
                    event.button = Some(MouseButton::Left);
                    event.click_count = Some(1);
                    event.buttons = Some(i64::from(kind == DispatchMouseEventType::MousePressed));
                }
                self.page
                    .execute(event)
                    .await
                    .map_err(|error| format!("the click did not reach the page: {error}"))?;
            }
            Ok(())
        })
        .await
    }

    /// Clears the field `reference` and types `text` into it with key events; `submit`
    /// presses Enter after.
    pub async fn type_text(
        &self,
        reference: &str,
        text: &str,
        submit: bool,
    ) -> Result<(), BrowserError> {
        let reply = self
            .eval(&format!("__larik.focusAndClear({})", quoted(reference)))
            .await?;
        if let Some(error) = reply.get("error").and_then(Value::as_str) {
            return Err(error.to_string().into());
        }
        if reply.get("focused") == Some(&Value::Bool(false)) {
            return Err(format!("the field {} did not take the focus", ref_name(reference)).into());
        }
        self.after_input(async {
            for c in text.chars() {
                if c == '\n' {
                    self.key(&Key::named("Enter").ok_or("no Enter key")?, 0)
                        .await?;
                } else {
                    self.key(&Key::character(c), 0).await?;
                }
            }
            if submit {
                self.key(&Key::named("Enter").ok_or("no Enter key")?, 0)
                    .await?;
            }
            Ok(())
        })
        .await
    }

    /// Presses `combination`, e.g. `Enter`, `Escape`, `ArrowDown`, `Control+a`.
    pub async fn press(&self, combination: &str) -> Result<(), BrowserError> {
        let (modifiers, key) = parse_combination(combination)?;
        self.after_input(self.key(&key, modifiers)).await
    }

    /// Chooses `values` (option values or labels) in the select `reference`.
    pub async fn select(
        &self,
        reference: &str,
        values: &[String],
    ) -> Result<Vec<String>, BrowserError> {
        let wanted = serde_json::to_string(values).map_err(|error| error.to_string())?;
        let reply = self
            .eval(&format!("__larik.select({}, {wanted})", quoted(reference)))
            .await?;
        if let Some(error) = reply.get("error").and_then(Value::as_str) {
            return Err(error.to_string().into());
        }
        self.after_input(async { Ok(()) }).await?;
        Ok(reply
            .get("selected")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn key(&self, key: &Key, modifiers: i64) -> Result<(), BrowserError> {
        let down = if key.text.is_some() && modifiers & !SHIFT == 0 {
            DispatchKeyEventType::KeyDown
        } else {
            DispatchKeyEventType::RawKeyDown
        };
        for kind in [down, DispatchKeyEventType::KeyUp] {
            let mut event = DispatchKeyEventParams::new(kind.clone());
            event.key = Some(key.key.clone());
            event.code = Some(key.code.clone());
            event.windows_virtual_key_code = Some(key.key_code);
            event.native_virtual_key_code = Some(key.key_code);
            event.modifiers = Some(modifiers);
            if kind == DispatchKeyEventType::KeyDown {
                event.text = key.text.clone();
                event.unmodified_text = key.text.clone();
            }
            self.page
                .execute(event)
                .await
                .map_err(|error| format!("the key press did not reach the page: {error}"))?;
        }
        Ok(())
    }

    /// Runs `action`, then gives the page [`NAVIGATION_START`] to start a navigation and,
    /// if it did, waits for the new document to load.
    async fn after_input(
        &self,
        action: impl std::future::Future<Output = Result<(), BrowserError>>,
    ) -> Result<(), BrowserError> {
        let mut starts = self
            .page
            .event_listener::<EventFrameStartedLoading>()
            .await
            .ok();
        action.await?;
        if let Some(starts) = starts.as_mut()
            && tokio::time::timeout(NAVIGATION_START, starts.next())
                .await
                .is_ok()
        {
            self.wait_for_load().await;
        }
        Ok(())
    }

    /// Waits until the document's `readyState` is `complete`, trying again while an old
    /// document is torn down; `false` when it gave up after [`LOAD_TIMEOUT`].
    pub async fn wait_for_load(&self) -> bool {
        let script = "new Promise((done) => { if (document.readyState === 'complete') done(true); \
                      else addEventListener('load', () => done(true), { once: true }); })";
        tokio::time::timeout(LOAD_TIMEOUT, async {
            loop {
                if self.eval(script).await.is_ok() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .is_ok()
    }
}

fn quoted(text: &str) -> String {
    serde_json::to_string(&ref_name(text)).unwrap_or_else(|_| "\"\"".to_string())
}

fn coordinates(point: &Value) -> Result<(f64, f64), BrowserError> {
    if let Some(error) = point.get("error").and_then(Value::as_str) {
        return Err(error.to_string().into());
    }
    match (
        point.get("x").and_then(Value::as_f64),
        point.get("y").and_then(Value::as_f64),
    ) {
        (Some(x), Some(y)) => Ok((x, y)),
        _ => Err("the page did not say where the element is"
            .to_string()
            .into()),
    }
}

const ALT: i64 = 1;
const CONTROL: i64 = 2;
const META: i64 = 4;
const SHIFT: i64 = 8;

/// A key as the DevTools protocol names it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    key: String,
    code: String,
    key_code: i64,
    text: Option<String>,
}

impl Key {
    fn named(name: &str) -> Option<Key> {
        let (key, code, key_code, text): (&str, &str, i64, Option<&str>) = match name {
            "Enter" | "Return" => ("Enter", "Enter", 13, Some("\r")),
            "Tab" => ("Tab", "Tab", 9, None),
            "Escape" | "Esc" => ("Escape", "Escape", 27, None),
            "Backspace" => ("Backspace", "Backspace", 8, None),
            "Delete" => ("Delete", "Delete", 46, None),
            "Space" => (" ", "Space", 32, Some(" ")),
            "ArrowUp" | "Up" => ("ArrowUp", "ArrowUp", 38, None),
            "ArrowDown" | "Down" => ("ArrowDown", "ArrowDown", 40, None),
            "ArrowLeft" | "Left" => ("ArrowLeft", "ArrowLeft", 37, None),
            "ArrowRight" | "Right" => ("ArrowRight", "ArrowRight", 39, None),
            "Home" => ("Home", "Home", 36, None),
            "End" => ("End", "End", 35, None),
            "PageUp" => ("PageUp", "PageUp", 33, None),
            "PageDown" => ("PageDown", "PageDown", 34, None),
            _ => return None,
        };
        Some(Key {
            key: key.to_string(),
            code: code.to_string(),
            key_code,
            text: text.map(str::to_string),
        })
    }

    fn character(c: char) -> Key {
        let upper = c.to_ascii_uppercase();
        let (code, key_code) = if c.is_ascii_alphabetic() {
            (format!("Key{upper}"), i64::from(u32::from(upper)))
        } else if c.is_ascii_digit() {
            (format!("Digit{c}"), i64::from(u32::from(c)))
        } else {
            (String::new(), 0)
        };
        Key {
            key: c.to_string(),
            code,
            key_code,
            text: Some(c.to_string()),
        }
    }
}

/// `Control+Shift+a` as modifier bits and a key.
fn parse_combination(combination: &str) -> Result<(i64, Key), BrowserError> {
    let parts: Vec<&str> = combination.split('+').map(str::trim).collect();
    let (last, modifiers) = match parts.split_last() {
        Some((last, modifiers)) if !last.is_empty() => (*last, modifiers),
        // `+` alone, or `Shift++`.
        _ if combination.ends_with('+') => ("+", &parts[..parts.len().saturating_sub(2)]),
        _ => return Err("`key` is empty".to_string().into()),
    };
    let mut bits = 0;
    for modifier in modifiers {
        bits |= match modifier.to_ascii_lowercase().as_str() {
            "alt" | "option" => ALT,
            "control" | "ctrl" => CONTROL,
            "meta" | "cmd" | "command" => META,
            "shift" => SHIFT,
            other => {
                return Err(
                    format!("`{other}` is not a modifier (Alt, Control, Meta, Shift)").into(),
                );
            }
        };
    }
    let key = match Key::named(last) {
        Some(key) => key,
        None => {
            let mut chars = last.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Key::character(c),
                _ => {
                    return Err(format!(
                        "`{last}` is not a key: use one character or Enter, Tab, Escape, \
                         Backspace, Delete, Space, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, \
                         Home, End, PageUp or PageDown"
                    )
                    .into());
                }
            }
        }
    };
    Ok((bits, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_read_modifiers_and_keys() {
        let (bits, key) = parse_combination("Control+Shift+a").expect("valid");
        assert_eq!(bits, CONTROL | SHIFT);
        assert_eq!(key.code, "KeyA");
        let (bits, key) = parse_combination("Enter").expect("valid");
        assert_eq!((bits, key.key_code), (0, 13));
        assert_eq!(parse_combination("+").expect("valid").1.key, "+");
        assert!(parse_combination("Hyper+x").is_err());
        assert!(parse_combination("F13x").is_err());
    }

    #[test]
    fn refs_are_read_in_every_way_the_model_writes_them() {
        for written in ["e12", "[ref=e12]", "ref=e12", " e12 "] {
            assert_eq!(ref_name(written), "e12");
        }
    }
}
