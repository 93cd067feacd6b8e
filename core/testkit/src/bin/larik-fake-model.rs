//! `larik-fake-model`: the fake model server as a standalone process, for benchmarks and
//! end-to-end tests that drive the built `larik` binary.
//!
//! Usage: `larik-fake-model --script FILE [--record FILE]`. FILE holds a JSON array of
//! replies. The Anthropic base URL is printed on the first stdout line; the server runs
//! until stdin reaches end of file or the process is killed. With `--record`, each request
//! is appended to the record file as one JSON line `{"path": .., "body": ..}`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use larik_testkit::{FakeModelServer, Reply};

const USAGE: &str = "usage: larik-fake-model --script FILE [--record FILE]";

/// Parsed command line.
struct Args {
    script: PathBuf,
    record: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut script = None;
    let mut record = None;
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{name} needs a file\n{USAGE}"))
        };
        match arg.to_str() {
            Some("--script") => script = Some(value("--script")?),
            Some("--record") => record = Some(value("--record")?),
            Some("--help" | "-h") => return Err(USAGE.to_string()),
            _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
        }
    }
    Ok(Args {
        script: script.ok_or_else(|| format!("--script is required\n{USAGE}"))?,
        record,
    })
}

fn main() {
    if let Err(message) = try_main() {
        eprintln!("larik-fake-model: {message}");
        std::process::exit(2);
    }
}

fn try_main() -> Result<(), String> {
    let args = parse_args()?;
    let text = std::fs::read_to_string(&args.script)
        .map_err(|error| format!("reading {}: {error}", args.script.display()))?;
    let replies: Vec<Reply> = serde_json::from_str(&text)
        .map_err(|error| format!("parsing {}: {error}", args.script.display()))?;
    let record = match &args.record {
        Some(path) => Some(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|error| format!("opening {}: {error}", path.display()))?,
        ),
        None => None,
    };
    // One thread is plenty for a scripted server and starts quickest.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("starting the runtime: {error}"))?;
    runtime.block_on(serve(replies, record))
}

async fn serve(replies: Vec<Reply>, record: Option<std::fs::File>) -> Result<(), String> {
    let server = FakeModelServer::start().await;
    for reply in replies {
        server.enqueue(reply);
    }
    if let Some(file) = record {
        let file = Mutex::new(file);
        server.on_request(move |request| {
            let line = serde_json::json!({"path": request.path, "body": request.body});
            let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            // A failed write cannot be reported to the client; say so on stderr instead.
            if let Err(error) = writeln!(file, "{line}").and_then(|()| file.flush()) {
                eprintln!("larik-fake-model: writing the record file: {error}");
            }
        });
    }
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", server.anthropic_base_url())
            .and_then(|()| stdout.flush())
            .map_err(|error| format!("writing the base URL: {error}"))?;
    }
    // A plain thread watches stdin, so the runtime needs no stdin support of its own.
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        // A read error counts as closed.
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = closed_tx.send(());
    });
    let _ = closed_rx.await;
    server.shutdown().await;
    Ok(())
}
