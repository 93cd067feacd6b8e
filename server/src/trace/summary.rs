//! `larik trace ID`: a debug trace summed up — each provider request with its time, status,
//! duration and size; the tokens the requests used, by model; the retries and the errors.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use larik_protocol::{Event, Usage};
use serde_json::Value;

/// Prints the summary of the trace of session `id` (looked for in this directory's
/// sessions first, then in every project's).
pub fn run(id: &str) -> anyhow::Result<ExitCode> {
    let env = crate::assembly::environment();
    let cwd = std::env::current_dir()?;
    let store = larik_session::SessionStore::new(env.data_dir()?);
    let file = match store.find(&cwd, id) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("larik: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let dir = super::trace_dir(&file);
    if !dir.is_dir() {
        eprintln!(
            "larik: session `{id}` has no debug trace ({} does not exist); run with --debug, \
             LARIK_DEBUG=1 or \"debug\": true in your personal config.json to write one",
            dir.display()
        );
        return Ok(ExitCode::from(2));
    }
    let text = summary(id, &dir);
    writeln!(std::io::stdout().lock(), "{text}")?;
    Ok(ExitCode::SUCCESS)
}

/// One request as its files record it.
struct Request {
    number: String,
    request: Value,
    response: Value,
}

/// The summary of the trace in `dir`.
pub fn summary(id: &str, dir: &Path) -> String {
    let requests = requests(&dir.join("http"));
    let events = events(&dir.join("events.jsonl"));
    let mut text = format!("Debug trace of session `{id}` ({})\n\n", dir.display());

    let failed = requests
        .iter()
        .filter(|request| {
            request.response.get("error").is_some()
                || request.response["status"]
                    .as_u64()
                    .is_none_or(|status| !(200..300).contains(&status))
        })
        .count();
    text.push_str(&format!(
        "{} provider request(s), {failed} without a successful answer.\n\n",
        requests.len()
    ));
    if !requests.is_empty() {
        text.push_str(
            "| # | time | request | status | ms | bytes |\n|---|---|---|---|---:|---:|\n",
        );
        for request in &requests {
            let status = match (&request.response["status"], &request.response["error"]) {
                (_, Value::String(error)) => format!("error: {error}"),
                (Value::Number(status), _) => status.to_string(),
                _ => "no answer".to_string(),
            };
            text.push_str(&format!(
                "| {} | {} | {} {} | {} | {} | {} |\n",
                request.number,
                request.request["time"].as_str().unwrap_or("?"),
                request.request["method"].as_str().unwrap_or("?"),
                request.request["url"].as_str().unwrap_or("?"),
                status.replace('|', "\\|"),
                request.response["elapsed_ms"],
                request.response["bytes"],
            ));
        }
        text.push('\n');
    }

    let mut by_model: BTreeMap<String, Usage> = BTreeMap::new();
    let (mut retries, mut errors, mut turns) = (Vec::new(), Vec::new(), 0);
    for event in &events {
        match event {
            Event::Usage { model, request, .. } => {
                by_model.entry(model.clone()).or_default().add(request);
            }
            Event::Retrying {
                attempt, reason, ..
            } => retries.push(format!("attempt {attempt}: {reason}")),
            Event::Error { message, .. } => errors.push(message.clone()),
            Event::TurnComplete { .. } => turns += 1,
            _ => {}
        }
    }
    text.push_str(&format!("{} event(s), {turns} turn(s).\n", events.len()));
    for (model, usage) in &by_model {
        text.push_str(&format!(
            "Tokens of `{model}`: {} input ({} read from cache, {} written to cache), {} output, \
             cost {}.\n",
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.output_tokens,
            usage.cost_text()
        ));
    }
    text.push_str(&format!("Retries: {}.\n", retries.len()));
    for retry in &retries {
        text.push_str(&format!("- {retry}\n"));
    }
    text.push_str(&format!("Errors: {}.\n", errors.len()));
    for error in &errors {
        text.push_str(&format!("- {error}\n"));
    }
    text
}

/// The requests of the trace's `http` directory, in order.
fn requests(dir: &Path) -> Vec<Request> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut numbers: Vec<String> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            name.strip_suffix("-request.json").map(str::to_string)
        })
        .collect();
    numbers.sort();
    let read = |path: std::path::PathBuf| -> Value {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or(Value::Null)
    };
    numbers
        .into_iter()
        .map(|number| Request {
            request: read(dir.join(format!("{number}-request.json"))),
            response: read(dir.join(format!("{number}-response.json"))),
            number,
        })
        .collect()
}

/// The events of `events.jsonl`; lines that are not an event are skipped.
fn events(path: &Path) -> Vec<Event> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|line| serde_json::from_value(line["event"].clone()).ok())
        .collect()
}
