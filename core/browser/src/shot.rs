//! Screenshots: the viewport, the full page (cut at [`FULL_PAGE_MOST`] CSS pixels each way,
//! past which models shrink text beyond reading) or one element padded by
//! [`ELEMENT_PADDING`] (cut the same way),
//! as JPEG. The clip is in document coordinates with `scale = 1 / devicePixelRatio`, so the
//! image has one pixel per CSS pixel on any screen. With labels, each element with a ref
//! in view gets a dashed outline and a tag with its ref while the picture is taken.

use crate::BrowserError;
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, CaptureScreenshotParams, Viewport,
};
use serde_json::Value;

use crate::actions::ref_name;
use crate::tab::Tab;

/// The most CSS pixels of height a full-page screenshot takes.
pub const FULL_PAGE_MOST: f64 = 5000.0;
/// The margin around an element's screenshot, in CSS pixels.
pub const ELEMENT_PADDING: f64 = 8.0;
/// JPEG quality.
const QUALITY: i64 = 80;

/// What to take a picture of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Area {
    /// What the window shows.
    Viewport,
    /// The whole page, down to [`FULL_PAGE_MOST`].
    FullPage,
    /// One element, by ref.
    Element(String),
}

/// A screenshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Shot {
    /// The JPEG, base64-encoded.
    pub jpeg_base64: String,
    /// Its width in pixels (CSS pixels).
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// Whether the picture was cut at [`FULL_PAGE_MOST`].
    pub cut: bool,
}

fn number(value: &Value, field: &str) -> Result<f64, BrowserError> {
    value
        .get(field)
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("the page did not give its {field}").into())
}

impl Tab {
    /// Takes a screenshot of `area`, with ref labels drawn when `labels` is set.
    pub async fn screenshot(&self, area: &Area, labels: bool) -> Result<Shot, BrowserError> {
        if labels {
            // A snapshot gives every interactive element its ref first.
            self.eval("__larik.snapshot(null, 1e9) && __larik.label()")
                .await?;
        }
        let shot = self.capture(area).await;
        if labels {
            let _ = self.eval("__larik.unlabel()").await;
        }
        shot
    }

    async fn capture(&self, area: &Area) -> Result<Shot, BrowserError> {
        let metrics = self
            .eval(
                "({ ratio: devicePixelRatio, x: scrollX, y: scrollY, \
                 width: document.documentElement.clientWidth || innerWidth, \
                 height: document.documentElement.clientHeight || innerHeight, \
                 fullWidth: Math.max(document.documentElement.scrollWidth, document.body ? document.body.scrollWidth : 0), \
                 fullHeight: Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0) })",
            )
            .await?;
        let ratio = number(&metrics, "ratio")?.max(0.1);
        let mut cut = false;
        let (x, y, width, height) = match area {
            Area::Viewport => (
                number(&metrics, "x")?,
                number(&metrics, "y")?,
                number(&metrics, "width")?,
                number(&metrics, "height")?,
            ),
            Area::FullPage => {
                let full = number(&metrics, "fullHeight")?;
                cut = full > FULL_PAGE_MOST || number(&metrics, "fullWidth")? > FULL_PAGE_MOST;
                (
                    0.0,
                    0.0,
                    number(&metrics, "fullWidth")?.min(FULL_PAGE_MOST),
                    full.min(FULL_PAGE_MOST),
                )
            }
            Area::Element(reference) => {
                let quoted = serde_json::to_string(&ref_name(reference))
                    .map_err(|error| error.to_string())?;
                let rect = self.eval(&format!("__larik.box({quoted})")).await?;
                if let Some(error) = rect.get("error").and_then(Value::as_str) {
                    return Err(error.to_string().into());
                }
                let left = (number(&rect, "x")? - ELEMENT_PADDING).max(0.0);
                let top = (number(&rect, "y")? - ELEMENT_PADDING).max(0.0);
                let right = number(&rect, "x")? + number(&rect, "width")? + ELEMENT_PADDING;
                let bottom = number(&rect, "y")? + number(&rect, "height")? + ELEMENT_PADDING;
                cut = right - left > FULL_PAGE_MOST || bottom - top > FULL_PAGE_MOST;
                (
                    left,
                    top,
                    (right - left).min(FULL_PAGE_MOST),
                    (bottom - top).min(FULL_PAGE_MOST),
                )
            }
        };
        let (width, height) = (width.round().max(1.0), height.round().max(1.0));
        let params = CaptureScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Jpeg)
            .quality(QUALITY)
            .clip(Viewport {
                x: x.round(),
                y: y.round(),
                width,
                height,
                scale: 1.0 / ratio,
            })
            .capture_beyond_viewport(*area != Area::Viewport)
            .build();
        let reply = self
            .page
            .execute(params)
            .await
            .map_err(|error| format!("the screenshot failed: {error}"))?;
        let data: &str = reply.result.data.as_ref();
        Ok(Shot {
            jpeg_base64: data.to_string(),
            width: width as u32,
            height: height as u32,
            cut,
        })
    }
}
