//! Benchmark of MCP servers in `larik -p`: the release binary against the fake model server,
//! in the default configuration (the command sandbox on), with generated stdio MCP servers
//! (`tests/mcp/servers/generated_server.py`, three tools each, run by the Python of
//! `tests/mcp/.venv`, which `tests/mcp/setup` installs).
//!
//! Measures, as whole processes answering one prompt with one model request:
//! - spawn → the first model request with 0, 5 and 50 configured `lazy` servers whose tool
//!   lists are kept from an earlier run (the configuration for many servers: nothing starts
//!   until a tool is called), and with 5 servers started with the session (that request
//!   waits for them to connect, as designed, within their connect timeout);
//! - the size of the first request's tool list with 0 and with 50 servers (with 50, the 150
//!   MCP tools are reached through `mcp_search` and `mcp_call`);
//! - the first call of a lazily started server: the gap between the model request that
//!   asks for the call (through `mcp_call`) and the next one, which carries its result.
//!
//! Run with `cargo bench -p larik-server --bench mcp`; results go to stdout in the table
//! format of docs/benchmarks.md, then one line per target.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use larik_testkit::bench::{Samples, at_most, ms, within};
use larik_testkit::{FakeModelServer, turn};
use serde_json::{Value, json};

const RUNS: usize = 30;
const LAZY_CALL_RUNS: usize = 20;

/// The repository's `tests/mcp`, set up.
fn mcp_dir() -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
    let status = Command::new(dir.join("setup"))
        .status()
        .expect("tests/mcp/setup runs");
    assert!(status.success(), "tests/mcp/setup failed");
    dir
}

/// A personal configuration with `count` generated servers.
fn configure(home: &Path, count: usize, lazy: bool) {
    let dir = mcp_dir();
    let servers: serde_json::Map<String, Value> = (0..count)
        .map(|index| {
            (
                format!("s{index}"),
                json!({
                    "command": dir.join(".venv/bin/python"),
                    "args": [dir.join("servers/generated_server.py"), index.to_string()],
                    "lazy": lazy,
                    "connect_timeout": 60,
                }),
            )
        })
        .collect();
    let config = home.join(".config/larik");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("config.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .expect("config");
}

/// One `larik -p` run; returns its start and the requests it made.
fn run(
    server: &FakeModelServer,
    project: &Path,
    home: &Path,
    prompt: &str,
) -> (Instant, Vec<larik_testkit::RecordedRequest>) {
    let seen = server.requests().len();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_larik"))
        .args(["-p", prompt])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("share"))
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .current_dir(project)
        .stdin(Stdio::null())
        .output()
        .expect("larik runs");
    assert!(
        output.status.success(),
        "larik failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (started, server.requests()[seen..].to_vec())
}

/// Spawn → first request over `RUNS` one-request runs with the current configuration.
fn first_requests(server: &FakeModelServer, project: &Path, home: &Path) -> (Samples, usize) {
    let mut samples = Samples::new();
    let mut tools_bytes = 0;
    for _ in 0..RUNS {
        server.enqueue(turn().text("done"));
        let (started, requests) = run(server, project, home, "hello");
        samples.push(requests[0].received - started);
        tools_bytes = requests[0].body["tools"].to_string().len();
    }
    (samples, tools_bytes)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(FakeModelServer::start());
    let project = tempfile::tempdir().expect("project");
    let home = tempfile::tempdir().expect("home");
    std::fs::write(project.path().join("README.md"), "# Bench\n").expect("README");
    let (project, home) = (project.path(), home.path());

    let (none, none_bytes) = first_requests(&server, project, home);

    // Lazy servers: one run starts them all and keeps their tool lists, then none starts.
    configure(home, 50, true);
    server.enqueue(turn().text("done"));
    run(&server, project, home, "warm up");
    configure(home, 5, true);
    let (lazy5, _) = first_requests(&server, project, home);
    configure(home, 50, true);
    let (lazy50, lazy50_bytes) = first_requests(&server, project, home);

    // Five servers started with each session.
    configure(home, 5, false);
    let (eager5, _) = first_requests(&server, project, home);

    // The first call of a lazily started server, through mcp_call.
    configure(home, 50, true);
    let mut first_call = Samples::new();
    for run_index in 0..LAZY_CALL_RUNS {
        let index = run_index % 50;
        let name = lookup_tool(home, index);
        server.enqueue(turn().tool_call(
            "call",
            "mcp_call",
            json!({"name": name, "arguments": {"id": "1"}}),
        ));
        server.enqueue(turn().text("done"));
        let (_, requests) = run(&server, project, home, "call it");
        assert_eq!(requests.len(), 2);
        assert!(
            requests[1].body["messages"]
                .to_string()
                .contains(&format!("on server {index}")),
            "the call's result reached the model"
        );
        first_call.push(requests[1].received - requests[0].received);
    }
    server.assert_no_violations();

    println!("| measurement | runs | median | mean | p95 |");
    println!("|---|---|---|---|---|");
    for (name, samples) in [
        ("spawn → first model request, no MCP servers", &none),
        ("spawn → first model request, 5 lazy servers", &lazy5),
        ("spawn → first model request, 50 lazy servers", &lazy50),
        (
            "spawn → first model request, 5 servers started with the session",
            &eager5,
        ),
        (
            "first call of a lazily started server (request → next request)",
            &first_call,
        ),
    ] {
        println!(
            "| {name} | {} | {} | {} | {} |",
            samples.len(),
            ms(samples.median()),
            ms(samples.mean()),
            ms(samples.p95())
        );
    }
    println!("| tool list of the first request, no servers | | | {none_bytes} bytes | |");
    println!("| tool list of the first request, 50 servers | | | {lazy50_bytes} bytes | |");
    let slower = |samples: &Samples| samples.median().saturating_sub(none.median());
    within(
        "5 lazy servers: first request later than with none by",
        slower(&lazy5),
        2.0,
    );
    within(
        "50 lazy servers: first request later than with none by",
        slower(&lazy50),
        2.0,
    );
    at_most(
        "tool list with 50 servers larger than with none by",
        (lazy50_bytes.saturating_sub(none_bytes)) as f64 / 1024.0,
        2.0,
        "KB",
    );
}

/// The name of server `index`'s `…_lookup` tool, from the tool list kept for it.
fn lookup_tool(home: &Path, index: usize) -> String {
    let kept = home.join("share/larik/mcp-tools.json");
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(kept).expect("kept tool lists"))
            .expect("JSON");
    let prefix = format!("s{index}-");
    let (_, entry) = kept
        .as_object()
        .expect("entries by server")
        .iter()
        .find(|(key, _)| key.starts_with(&prefix))
        .expect("the server's kept tool list");
    let own = entry["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .find(|name| name.ends_with("_lookup"))
        .expect("a lookup tool");
    format!("mcp__s{index}__{own}")
}
