//! The `larik-fake-model` binary: serves a script file, prints its base URL first, records
//! requests as JSON lines, and exits when its stdin closes.

#[path = "support/http.rs"]
mod http;

use std::process::Stdio;

use http::{PATIENCE, post};
use larik_testkit::{Reply, turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn serves_the_script_records_requests_and_exits_on_stdin_eof() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let script = dir.path().join("script.json");
    let record = dir.path().join("record.jsonl");
    let replies: Vec<Reply> = vec![
        turn().text("from the script").usage(5, 6).reply(),
        larik_testkit::error_status(429, "rate_limit_error", "slow"),
    ];
    std::fs::write(
        &script,
        serde_json::to_string(&replies).expect("replies serialize"),
    )
    .expect("write the script");

    let mut child = Command::new(env!("CARGO_BIN_EXE_larik-fake-model"))
        .arg("--script")
        .arg(&script)
        .arg("--record")
        .arg(&record)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the binary");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut first_line = String::new();
    tokio::time::timeout(PATIENCE, BufReader::new(stdout).read_line(&mut first_line))
        .await
        .expect("the base URL arrives")
        .expect("read stdout");
    let base = first_line.trim().to_string();
    let host: std::net::Ipv4Addr = base
        .strip_prefix("http://")
        .and_then(|rest| rest.split(':').next())
        .and_then(|host| host.parse().ok())
        .unwrap_or_else(|| panic!("not an http://IPv4:port URL: {base}"));
    assert!(host.is_loopback(), "{base}");

    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let reply = post(&base, "/v1/messages", &body.to_string()).await;
    assert_eq!(reply.status, 200);
    let text: String = reply
        .events()
        .iter()
        .filter_map(|(_, data)| data["delta"]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(text, "from the script");
    let limited = post(&base, "/v1/messages", &body.to_string()).await;
    assert_eq!(limited.status, 429);

    let lines: Vec<Value> = std::fs::read_to_string(&record)
        .expect("the record file")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each record line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], json!({"path": "/v1/messages", "body": body}));

    drop(child.stdin.take());
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the binary exits once stdin closes")
        .expect("wait for the binary");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_missing_script_is_a_clear_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_larik-fake-model"))
        .arg("--script")
        .arg("/nonexistent/larik/script.json")
        .output()
        .await
        .expect("run the binary");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("reading /nonexistent/larik/script.json"),
        "{stderr}"
    );
}
