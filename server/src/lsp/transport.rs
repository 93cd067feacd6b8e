//! The pipes between the editor and the LSP service. Every incoming message is checked to
//! be a JSON-RPC message the service can decode before the service sees it: the service's
//! reader ends the connection at the first body it cannot decode, so a malformed message
//! is answered here, with a parse error (`-32700`) when it is not JSON and an invalid
//! request (`-32600`) when it is JSON but no message (an array, a number, another version
//! of JSON-RPC), id `null` as JSON-RPC has it; and the connection goes on. Outgoing messages
//! are whole frames, so those answers never land inside one of the service's.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The most bytes one message may have; a larger one cannot be a real editor message.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A message as the service decodes it (its own type is private to it): a response, or a
/// request or notification.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum ServiceMessage {
    /// A response to one of the server's requests.
    #[allow(dead_code, reason = "only whether it decodes matters")]
    Response(tower_lsp_server::jsonrpc::Response),
    /// A request or a notification.
    #[allow(dead_code, reason = "only whether it decodes matters")]
    Request(tower_lsp_server::jsonrpc::Request),
}

/// One frame's body, or why the stream cannot go on.
enum Frame {
    Body(Vec<u8>),
    End,
}

/// Reads one `Content-Length` frame.
async fn read_frame<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> std::io::Result<Frame> {
    let mut length: Option<usize> = None;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        if reader.read_until(b'\n', &mut bytes).await? == 0 {
            return Ok(Frame::End);
        }
        // A header line that is not UTF-8 is no header Larik knows, not the end of the
        // connection.
        let line = String::from_utf8_lossy(&bytes);
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
        let refusal = if serde_json::from_slice::<ServiceMessage>(&body).is_ok() {
            None
        } else if serde_json::from_slice::<serde_json::Value>(&body).is_ok() {
            Some((
                -32600,
                "Invalid request: the message is not a JSON-RPC 2.0 message",
            ))
        } else {
            Some((-32700, "Parse error: the message is not JSON"))
        };
        match refusal {
            None => {
                if service_input.write_all(&frame(&body)).await.is_err() {
                    return;
                }
            }
            Some((code, message)) => {
                let answer = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {"code": code, "message": message},
                });
                let _ = errors.send(frame(answer.to_string().as_bytes()));
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the screen passes to the service and what it answers itself, for `input`.
    async fn screened(input: &[u8]) -> (Vec<u8>, Vec<serde_json::Value>) {
        let (service_input, mut service_side) = tokio::io::duplex(1 << 16);
        let (errors, mut answers) = mpsc::unbounded_channel();
        screen_input(input, service_input, errors).await;
        let mut passed = Vec::new();
        service_side
            .read_to_end(&mut passed)
            .await
            .expect("the service side reads");
        let mut refused = Vec::new();
        while let Ok(answer) = answers.try_recv() {
            let body = answer
                .split(|&byte| byte == b'\n')
                .next_back()
                .expect("a frame has a body");
            refused.push(serde_json::from_slice(body).expect("an answer is JSON"));
        }
        (passed, refused)
    }

    #[tokio::test]
    async fn a_json_body_that_is_no_message_is_answered_and_the_connection_goes_on() {
        let request = br#"{"jsonrpc":"2.0","id":2,"method":"larik/commands","params":{}}"#;
        let mut input = Vec::new();
        for body in [
            b"[]".as_slice(),
            b"5",
            br#"{"jsonrpc":"1.0","id":3,"method":"larik/sessions"}"#,
            b"{not json",
            request,
        ] {
            input.extend(frame(body));
        }
        let (passed, refused) = screened(&input).await;
        assert_eq!(
            passed,
            frame(request),
            "only the request reaches the service"
        );
        let codes: Vec<&serde_json::Value> = refused
            .iter()
            .map(|answer| &answer["error"]["code"])
            .collect();
        assert_eq!(codes, [-32600, -32600, -32600, -32700]);
        assert!(refused.iter().all(|answer| answer["id"].is_null()));
    }

    #[tokio::test]
    async fn a_header_line_that_is_not_utf8_does_not_end_the_connection() {
        let request = br#"{"jsonrpc":"2.0","id":7,"method":"larik/sessions"}"#;
        let mut input = b"Conten\xc0-Length: 3\r\n\r\n".to_vec();
        input.extend(frame(request));
        let (passed, refused) = screened(&input).await;
        assert_eq!(passed, frame(request));
        assert!(refused.is_empty(), "{refused:?}");
    }
}
