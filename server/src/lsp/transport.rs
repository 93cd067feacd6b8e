//! The pipes between the editor and the LSP service. Every incoming message is checked to
//! be JSON before the service sees it: the service's reader ends the connection at the
//! first body it cannot parse, so a malformed message is answered here with a parse error
//! (`-32700`, id `null`) and the connection goes on. Outgoing messages are whole frames, so
//! those answers never land inside one of the service's.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The most bytes one message may have; a larger one cannot be a real editor message.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One frame's body, or why the stream cannot go on.
enum Frame {
    Body(Vec<u8>),
    End,
}

/// Reads one `Content-Length` frame.
async fn read_frame<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> std::io::Result<Frame> {
    let mut length: Option<usize> = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(Frame::End);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            // Blank lines between frames are tolerated.
            continue;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.unwrap_or(0);
    if length > MAX_BODY {
        return Ok(Frame::End);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    Ok(Frame::Body(body))
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    framed.extend_from_slice(body);
    framed
}

/// Passes JSON messages from `input` to `service_input`; answers the others on `errors`.
pub async fn screen_input<R, W>(
    input: R,
    mut service_input: W,
    errors: mpsc::UnboundedSender<Vec<u8>>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    while let Ok(Frame::Body(body)) = read_frame(&mut reader).await {
        if serde_json::from_slice::<serde_json::Value>(&body).is_ok() {
            if service_input.write_all(&frame(&body)).await.is_err() {
                return;
            }
        } else {
            let answer = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32700, "message": "Parse error: the message is not JSON"},
            });
            let _ = errors.send(frame(answer.to_string().as_bytes()));
        }
    }
    // The editor closed its end: so does the service's input.
    let _ = service_input.shutdown().await;
}

/// Copies the service's frames from `service_output` to `output`, with the answers from
/// `errors` put between frames. Frames are read on their own task, so waiting for either
/// source never cuts a frame in two.
pub async fn merge_output<R, W>(
    service_output: R,
    mut output: W,
    mut errors: mpsc::UnboundedReceiver<Vec<u8>>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let (frames, mut service_frames) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut reader = BufReader::new(service_output);
        while let Ok(Frame::Body(body)) = read_frame(&mut reader).await {
            if frames.send(frame(&body)).is_err() {
                return;
            }
        }
    });
    loop {
        let framed = tokio::select! {
            framed = service_frames.recv() => match framed {
                Some(framed) => framed,
                None => break,
            },
            Some(error) = errors.recv() => error,
        };
        if output.write_all(&framed).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}
