//! The `read` tool: a text file as numbered lines, or an image.
//!
//! Output looks like `cat -n`, so the model can cite line numbers and pick an `offset` to
//! read on. Guards keep the model from pulling in directories, binaries and huge files
//! whole, and the output stops at the character limit; each guard's message says what to
//! do instead. The text comes from the context's [`crate::FileAccess`] (an editor may
//! serve its unsaved buffer); whether the file exists, its size and image bytes come from
//! the disk. A successful read is recorded in the [`crate::ReadTracker`], which lets the
//! edit tools change the file.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use larik_protocol::{FileLocation, ResultPart, ToolKind};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::input::{self, str_field};
use crate::output::cut_line;
use crate::{CallTarget, Tool, ToolContext, ToolLimits, ToolOutput, paths};

/// Reads a file as numbered lines, or an image as an image.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

#[derive(Debug, Deserialize)]
struct ReadInput {
    file_path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

/// Bytes inspected for a NUL to decide a file is binary.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[async_trait::async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        "Reads a file from the local file system. Text comes back in `cat -n` format: each \
         line prefixed by its 1-based number. By default reads up to 2000 lines from the \
         start; pass `offset` (1-based line) and `limit` (number of lines) to read a part of \
         a long file. Lines longer than 2000 characters are cut, and output stops at the \
         size limit with a note giving the offset to read on. PNG, JPEG, GIF and WebP files \
         come back as images. Directories cannot be read: use `glob` to list files. Read a \
         file before changing it with `edit`, `multi_edit` or `write`."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file, absolute or relative to the working directory"},
                "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start reading at"},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read"}
            },
            "required": ["file_path"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn read_only(&self) -> bool {
        true
    }

    fn title(&self, input: &Value, ctx: &ToolContext) -> String {
        match str_field(input, "file_path") {
            Some(path) => format!(
                "Read {}",
                paths::display(&ctx.cwd, &paths::resolve(&ctx.cwd, path))
            ),
            None => "Read".to_string(),
        }
    }

    fn locations(&self, input: &Value, ctx: &ToolContext) -> Vec<FileLocation> {
        let Some(path) = str_field(input, "file_path") else {
            return Vec::new();
        };
        let line = input
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|offset| u32::try_from(offset.max(1)).ok());
        vec![FileLocation {
            path: paths::resolve(&ctx.cwd, path).display().to_string(),
            line,
        }]
    }

    fn target(&self, input: &Value, ctx: &ToolContext) -> CallTarget {
        match str_field(input, "file_path") {
            Some(path) => CallTarget::Path(paths::real_path(&paths::resolve(&ctx.cwd, path))),
            None => CallTarget::None,
        }
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: ReadInput = match input::parse(self.name(), input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let path = paths::resolve(&ctx.cwd, &input.file_path);
        let shown = paths::display(&ctx.cwd, &path);
        let window = Window {
            offset: input.offset,
            limit: input.limit,
        };
        let ctx = ctx.clone();
        input::guarded(async move { read(path, shown, window, &ctx).await }).await
    }
}

/// The lines a call asks for.
#[derive(Debug, Clone, Copy)]
struct Window {
    offset: Option<u64>,
    limit: Option<u64>,
}

async fn read(path: PathBuf, shown: String, window: Window, ctx: &ToolContext) -> ToolOutput {
    // Taken before reading: if the file changes meanwhile, the next edit sees a stale
    // stamp and asks for a fresh read rather than trusting a mixed view.
    let meta = match tokio::fs::metadata(&path).await {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => return not_found(&shown),
        Err(error) => return ToolOutput::error(format!("Could not read {shown}: {error}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a directory, not a file. Use glob (e.g. pattern \"*\" with path \"{shown}\") to list its files."
        ));
    }
    if window.limit == Some(0) {
        return ToolOutput::error("limit must be at least 1.");
    }
    let (limits, size) = (ctx.limits, meta.len());
    let output = if let Some(media_type) = image_media_type(&path) {
        let path = path.clone();
        input::blocking(move || read_image(&path, &shown, media_type, size, limits)).await
    } else {
        read_text(&path, shown, window, size, ctx).await
    };
    if !output.is_error {
        ctx.reads.record(&path, &meta);
        if let Some(feedback) = &ctx.feedback {
            // What is read is often edited next: let its checker start meanwhile.
            feedback.warm(&path);
        }
    }
    output
}

fn not_found(shown: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "File does not exist: {shown}. Check the path, or use glob to find the file."
    ))
}

/// The numbered lines of a text file; its text comes from the context's
/// [`crate::FileAccess`], so an editor's unsaved buffer is what the model sees.
async fn read_text(
    path: &Path,
    shown: String,
    window: Window,
    size: u64,
    ctx: &ToolContext,
) -> ToolOutput {
    let limits = ctx.limits;
    if size > limits.read_max_bytes {
        if window.offset.is_none() && window.limit.is_none() {
            return ToolOutput::error(format!(
                "{shown} is {size} bytes, more than the {} bytes read returns at once. Pass offset and limit to read a part of it, or use grep to find the lines you need.",
                limits.read_max_bytes
            ));
        }
        // Only a window is wanted: stream it from disk rather than load all of a file this
        // big through the seam.
        let path = path.to_path_buf();
        return input::blocking(move || {
            let lines = File::open(&path)
                .and_then(|file| numbered(BufReader::new(file), &shown, window, limits));
            lines.unwrap_or_else(|error| {
                ToolOutput::error(format!("Could not read {shown}: {error}"))
            })
        })
        .await;
    }
    let bytes = match ctx.files.read_text(path).await {
        Ok(text) => text.into_bytes(),
        // Not UTF-8: a seam that speaks text cannot hand over the bytes, so they come from
        // the disk and show with replacement characters.
        Err(error) if error.kind() == ErrorKind::InvalidData => match tokio::fs::read(path).await {
            Ok(bytes) => bytes,
            Err(error) => return ToolOutput::error(format!("Could not read {shown}: {error}")),
        },
        Err(error) if error.kind() == ErrorKind::NotFound => return not_found(&shown),
        Err(error) => return ToolOutput::error(format!("Could not read {shown}: {error}")),
    };
    input::blocking(move || {
        numbered(bytes.as_slice(), &shown, window, limits)
            .unwrap_or_else(|error| ToolOutput::error(format!("Could not read {shown}: {error}")))
    })
    .await
}

/// Formats the lines of `reader` that `window` asks for, `cat -n` style.
fn numbered(
    mut reader: impl BufRead,
    shown: &str,
    window: Window,
    limits: ToolLimits,
) -> std::io::Result<ToolOutput> {
    let sniff = reader.fill_buf()?;
    if sniff[..sniff.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Ok(ToolOutput::error(format!(
            "{shown} looks like a binary file (it contains NUL bytes); read shows text only. Use bash (e.g. `xxd` or `file`) to inspect it."
        )));
    }
    if sniff.is_empty() {
        return Ok(ToolOutput::text(format!(
            "(The file {shown} exists but is empty.)"
        )));
    }
    let first = window.offset.unwrap_or(1).max(1);
    let wanted = window.limit.unwrap_or(limits.read_default_lines as u64);
    let mut out = String::new();
    let mut out_chars = 0;
    let mut budget_spent = false;
    let mut line_number: u64 = 0;
    let mut shown_lines: u64 = 0;
    let mut remaining: u64 = 0;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if reader.read_until(b'\n', &mut buffer)? == 0 {
            break;
        }
        line_number += 1;
        if line_number < first {
            continue;
        }
        if shown_lines >= wanted || budget_spent {
            remaining += 1;
            continue;
        }
        let text = String::from_utf8_lossy(&buffer);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let line = format!("{line_number:>6}\t{}\n", cut_line(text));
        let line_chars = line.chars().count();
        // The first line always goes in, so reading on with the offset makes progress.
        if shown_lines > 0 && out_chars + line_chars > limits.output_chars {
            budget_spent = true;
            remaining += 1;
            continue;
        }
        out.push_str(&line);
        out_chars += line_chars;
        shown_lines += 1;
    }
    if shown_lines == 0 {
        return Ok(ToolOutput::text(format!(
            "(offset {first} is past the end: {shown} has {line_number} lines.)"
        )));
    }
    if budget_spent {
        out.push_str(&format!(
            "… output limit of {} characters reached; {remaining} more lines; use offset to read on (offset={}).\n",
            limits.output_chars,
            first + shown_lines
        ));
    } else if remaining > 0 {
        out.push_str(&format!(
            "… {remaining} more lines; use offset to read on (offset={}).\n",
            first + shown_lines
        ));
    }
    Ok(ToolOutput::text(out))
}

fn image_media_type(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

fn read_image(
    path: &Path,
    shown: &str,
    media_type: &str,
    size: u64,
    limits: ToolLimits,
) -> ToolOutput {
    if size > limits.read_max_bytes {
        return ToolOutput::error(format!(
            "{shown} is {size} bytes, more than the {} bytes read returns; images cannot be read in parts.",
            limits.read_max_bytes
        ));
    }
    let mut bytes = Vec::new();
    if let Err(error) = File::open(path).and_then(|mut file| file.read_to_end(&mut bytes)) {
        return ToolOutput::error(format!("Could not read {shown}: {error}"));
    }
    ToolOutput {
        content: vec![
            ResultPart::text(format!(
                "Image {shown} ({media_type}, {} bytes)",
                bytes.len()
            )),
            ResultPart::Image {
                media_type: media_type.to_string(),
                data: base64_encode(&bytes),
            },
        ],
        ..ToolOutput::default()
    }
}

/// Standard base64 with padding; ten lines do not justify a dependency.
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_examples() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64_encode(plain.as_bytes()), encoded);
        }
    }
}
