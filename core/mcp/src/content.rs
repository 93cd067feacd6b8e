//! A server's tool result as the model reads it. Text passes through; images the providers
//! take (PNG, JPEG, GIF, WebP, at most 5 MB and 4 per call) go along as images; anything
//! else (other images, audio, binary resources) is summarised in a line; structured
//! content stands in when there is no other content. Text past the server's token cap is
//! cut, with a note saying so and how to get the rest.

use larik_protocol::ResultPart;
use larik_tools::ToolOutput;
use serde_json::Value;

/// Image types every provider accepts.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// The largest image passed on, decoded.
const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;
/// Most images passed on from one call.
const MAX_IMAGES: usize = 4;
/// Characters per token, for the cap.
const CHARS_PER_TOKEN: usize = 4;

/// The model's view of `result` (a `tools/call` result's JSON), with at most
/// `output_tokens` tokens of text.
pub(crate) fn tool_output(result: &Value, output_tokens: usize) -> ToolOutput {
    let mut parts = Parts::default();
    let content = result.get("content").and_then(Value::as_array);
    for item in content.into_iter().flatten() {
        parts.add(item);
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.text(&serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let mut output = ToolOutput {
        content: parts.finish(output_tokens),
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
        ..ToolOutput::default()
    };
    if output.content.is_empty() {
        output
            .content
            .push(ResultPart::text("(the tool returned no content)"));
    }
    output
}

/// The text of a resource read (`resources/read` result's JSON), cut the same way.
pub(crate) fn resource_output(result: &Value, output_tokens: usize) -> ToolOutput {
    let mut parts = Parts::default();
    let contents = result.get("contents").and_then(Value::as_array);
    for item in contents.into_iter().flatten() {
        parts.resource(item);
    }
    let mut output = ToolOutput {
        content: parts.finish(output_tokens),
        ..ToolOutput::default()
    };
    if output.content.is_empty() {
        output
            .content
            .push(ResultPart::text("(the resource is empty)"));
    }
    output
}

/// Result parts being collected: text runs joined, images kept apart.
#[derive(Default)]
struct Parts {
    parts: Vec<ResultPart>,
    images: usize,
}

impl Parts {
    fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    fn text(&mut self, text: &str) {
        if let Some(ResultPart::Text { text: last }) = self.parts.last_mut() {
            if !last.ends_with('\n') {
                last.push('\n');
            }
            last.push_str(text);
        } else {
            self.parts.push(ResultPart::text(text));
        }
    }

    /// One content item of a tool result.
    fn add(&mut self, item: &Value) {
        let field = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or_default();
        match field("type") {
            "text" => self.text(field("text")),
            "image" => self.image(field("mimeType"), field("data")),
            "audio" => self.text(&format!(
                "[audio ({}, {}) not passed to the model]",
                or_unknown(field("mimeType")),
                size(decoded_len(field("data")))
            )),
            "resource" => match item.get("resource") {
                Some(resource) => self.resource(resource),
                None => self.text("[a resource without contents]"),
            },
            "resource_link" => self.text(&format!(
                "[resource link: {}{}{}]",
                field("uri"),
                labelled(" — ", field("name")),
                labelled(": ", field("description")),
            )),
            other => self.text(&format!(
                "[content of type `{}` not passed to the model]",
                or_unknown(other)
            )),
        }
    }

    /// One resource's contents: text passes through, binary data is summarised.
    fn resource(&mut self, resource: &Value) {
        let field = |name: &str| resource.get(name).and_then(Value::as_str);
        let uri = field("uri").unwrap_or_default();
        match (field("text"), field("blob")) {
            (Some(text), _) => self.text(&format!("[resource {uri}]\n{text}")),
            (None, Some(blob)) => {
                let mime = field("mimeType").unwrap_or_default();
                if IMAGE_TYPES.contains(&mime) {
                    self.image(mime, blob);
                } else {
                    self.text(&format!(
                        "[resource {uri}: {} of binary data ({}) not passed to the model]",
                        size(decoded_len(blob)),
                        or_unknown(mime)
                    ));
                }
            }
            (None, None) => self.text(&format!("[resource {uri} without contents]")),
        }
    }

    fn image(&mut self, mime: &str, data: &str) {
        let bytes = decoded_len(data);
        let why_not = if !IMAGE_TYPES.contains(&mime) {
            Some("a type models do not take")
        } else if bytes > MAX_IMAGE_BYTES {
            Some("larger than 5 MB")
        } else if !is_base64(data) {
            Some("not valid base64")
        } else if self.images >= MAX_IMAGES {
            Some("more than 4 images in one result")
        } else {
            None
        };
        match why_not {
            Some(why) => self.text(&format!(
                "[image ({}, {}) not passed to the model: {why}]",
                or_unknown(mime),
                size(bytes)
            )),
            None => {
                self.images += 1;
                self.parts.push(ResultPart::Image {
                    media_type: mime.to_string(),
                    data: data.to_string(),
                });
            }
        }
    }

    /// The parts, text cut to `output_tokens` tokens in all.
    fn finish(self, output_tokens: usize) -> Vec<ResultPart> {
        let cap = output_tokens.saturating_mul(CHARS_PER_TOKEN);
        let total: usize = self
            .parts
            .iter()
            .map(|part| match part {
                ResultPart::Text { text } => text.chars().count(),
                ResultPart::Image { .. } => 0,
            })
            .sum();
        if total <= cap {
            return self.parts;
        }
        let mut left = cap;
        let mut parts = Vec::new();
        for part in self.parts {
            match part {
                ResultPart::Text { text } => {
                    if left == 0 {
                        continue;
                    }
                    let kept: String = text.chars().take(left).collect();
                    left -= kept.chars().count();
                    parts.push(ResultPart::text(kept));
                }
                image => parts.push(image),
            }
        }
        parts.push(ResultPart::text(format!(
            "\n[output cut: {cap} of {total} characters shown (the cap is {output_tokens} tokens). \
             Ask the tool for less at a time (a narrower query, a page, an offset or a range) \
             to see the rest.]"
        )));
        parts
    }
}

fn or_unknown(text: &str) -> &str {
    if text.is_empty() {
        "unknown type"
    } else {
        text
    }
}

fn labelled(label: &str, text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("{label}{text}")
    }
}

/// The decoded length of base64 `data`.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

fn is_base64(data: &str) -> bool {
    !data.is_empty()
        && data.len().is_multiple_of(4)
        && data
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'='))
}

/// A byte count for people.
fn size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(output: &ToolOutput) -> String {
        output
            .content
            .iter()
            .filter_map(|part| match part {
                ResultPart::Text { text } => Some(text.as_str()),
                ResultPart::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn images_pass_within_limits_and_the_rest_is_summarised() {
        let png = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
        let mut content = vec![png.clone(); 5];
        content.push(json!({"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="}));
        content.push(json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}));
        content.push(json!({"type": "resource", "resource": {"uri": "x:/b", "mimeType": "application/zip", "blob": "UEsDBA=="}}));
        content.push(json!({"type": "image", "mimeType": "image/png", "data": "not base64!"}));
        let output = tool_output(&json!({"content": content, "isError": false}), 1000);
        let images = output
            .content
            .iter()
            .filter(|part| matches!(part, ResultPart::Image { .. }))
            .count();
        assert_eq!(images, 4);
        let text = texts(&output);
        assert!(text.contains("more than 4 images"), "{text}");
        assert!(text.contains("image/svg+xml"), "{text}");
        assert!(text.contains("audio (audio/wav, 4 bytes)"), "{text}");
        assert!(
            text.contains("x:/b: 4 bytes of binary data (application/zip)"),
            "{text}"
        );
        assert!(text.contains("not valid base64"), "{text}");
        assert!(!output.is_error);
    }

    #[test]
    fn long_text_is_cut_with_a_note_and_structured_content_stands_in() {
        let long = "a".repeat(1000);
        let output = tool_output(
            &json!({"content": [{"type": "text", "text": long}], "isError": true}),
            10,
        );
        let text = texts(&output);
        assert!(text.starts_with(&"a".repeat(40)));
        assert!(!text.starts_with(&"a".repeat(41)));
        assert!(text.contains("40 of 1000 characters shown"), "{text}");
        assert!(output.is_error);
        let output = tool_output(&json!({"content": [], "structuredContent": {"n": 3}}), 100);
        assert!(texts(&output).contains("\"n\": 3"));
        let output = tool_output(&json!({"content": "garbage"}), 100);
        assert_eq!(texts(&output), "(the tool returned no content)");
    }
}
