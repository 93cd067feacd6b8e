//! Models and spending through `larik -p`: aliases on the command line and from the
//! configuration, the `default` role, Gemini reached through `GEMINI_API_KEY` and
//! `GEMINI_BASE_URL`, Ollama through `OLLAMA_HOST` with the configured window asked for,
//! and `--max-budget-usd` (or the configuration's `max_budget_usd`) ending a run with its own
//! stop reason.

use larik_testkit::{OllamaModelInfo, turn};
use serde_json::json;

use super::{Harness, last_json_line, stderr};

#[tokio::test(flavor = "multi_thread")]
async fn an_alias_on_the_command_line_names_its_model() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().text("hi"));
    let output = harness.run(&["-p", "hello", "--model", "haiku"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let requests = harness.server.requests();
    assert_eq!(requests[0].body["model"], "claude-haiku-4-5");

    let output = harness.run(&["-p", "hello", "--model", "nonsense"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("neither provider/model"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_aliases_and_the_default_role_choose_the_model() {
    let harness = Harness::new().await;
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"aliases": {"quick": "anthropic/claude-haiku-4-5"}, "roles": {"default": "opus"}}"#,
    );
    harness.server.enqueue(turn().text("one"));
    harness.server.enqueue(turn().text("two"));
    let output = harness.run(&["-p", "hello"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let output = harness.run(&["-p", "hello", "--model", "quick"]).await;
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    let requests = harness.server.requests();
    assert_eq!(
        requests[0].body["model"], "claude-opus-4-5",
        "the default role"
    );
    assert_eq!(requests[1].body["model"], "claude-haiku-4-5", "the alias");
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_is_reached_with_its_key_and_base_url() {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().text("Gemini here.").usage(1_000, 10));
    let output = harness
        .larik()
        .env("GEMINI_API_KEY", "gemini-key")
        .env("GEMINI_BASE_URL", harness.server.gemini_base_url())
        .args([
            "-p",
            "hello",
            "--model",
            "gemini",
            "--output-format",
            "json",
        ])
        .output()
        .await
        .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    harness.server.assert_no_violations();
    let requests = harness.server.requests();
    let (described, chats): (Vec<_>, Vec<_>) =
        requests.iter().partition(|request| request.is_model_info());
    assert_eq!(described[0].path, "/v1beta/models/gemini-2.5-pro");
    assert_eq!(described[0].header("x-goog-api-key"), Some("gemini-key"));
    let request = chats[0];
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    );
    assert_eq!(request.header("x-goog-api-key"), Some("gemini-key"));
    let result = last_json_line(&output);
    assert_eq!(result["result"], "Gemini here.");
    assert!(
        result["total_cost_usd"]
            .as_f64()
            .is_some_and(|cost| cost > 0.0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ollama_is_found_through_ollama_host_and_asked_for_the_configured_window() {
    let harness = Harness::new().await;
    harness
        .server
        .set_ollama_model(OllamaModelInfo::new("qwen3-coder:30b", 262_144));
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"models": {"ollama/qwen3-coder:30b": {"context_window": 65536}}}"#,
    );
    harness.server.enqueue(turn().text("local answer"));
    let host = ollama_host(&harness);
    let output = harness
        .larik()
        .env("OLLAMA_HOST", host)
        .args(["-p", "hello", "--model", "ollama/qwen3-coder:30b"])
        .output()
        .await
        .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    harness.server.assert_no_violations();
    let chat = harness
        .server
        .requests()
        .into_iter()
        .find(|request| request.path == "/api/chat")
        .expect("a chat request");
    assert_eq!(chat.body["options"]["num_ctx"], 65_536);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "local answer"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_budget_ends_the_run_with_its_own_stop_reason() {
    let harness = Harness::new().await;
    // 100 000 input tokens of Sonnet cost $0.30, more than the cap.
    harness.server.enqueue(
        turn()
            .tool_call("r1", "read", json!({"file_path": "README.md"}))
            .usage(100_000, 0),
    );
    let output = harness
        .run(&[
            "-p",
            "read it",
            "--max-budget-usd",
            "0.25",
            "--output-format",
            "json",
        ])
        .await;
    assert!(!output.status.success());
    let errors = stderr(&output);
    assert!(errors.contains("budget"), "{errors}");
    let result = last_json_line(&output);
    assert_eq!(result["subtype"], "error_max_budget_usd");
    assert_eq!(result["stop_reason"], "budget_exceeded");
    assert_eq!(harness.server.requests().len(), 1, "no second request");

    // The configuration's cap works the same way, and a continued session counts what it
    // spent before.
    harness.write_config(
        harness.config_dir().join("config.json"),
        r#"{"max_budget_usd": 0.25}"#,
    );
    let output = harness
        .run(&["-c", "-p", "go on", "--output-format", "json"])
        .await;
    assert!(!output.status.success());
    assert_eq!(last_json_line(&output)["stop_reason"], "budget_exceeded");
    assert_eq!(harness.server.requests().len(), 1);

    let output = harness.run(&["-p", "x", "--max-budget-usd", "0"]).await;
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--max-budget-usd"),
        "{}",
        stderr(&output)
    );
}

/// A model without a known price (a local Ollama model here): the result says how many
/// requests went unpriced instead of passing $0 off as the cost, and a budget says at the
/// start that it cannot count them.
#[tokio::test(flavor = "multi_thread")]
async fn an_unpriced_model_has_an_unknown_cost_and_the_budget_says_so() {
    let harness = Harness::new().await;
    harness
        .server
        .set_ollama_model(OllamaModelInfo::new("qwen3-coder:30b", 32_768));
    harness
        .server
        .enqueue(turn().text("local answer").usage(100_000, 10));
    let host = ollama_host(&harness);
    let output = harness
        .larik()
        .env("OLLAMA_HOST", host)
        .args([
            "-p",
            "hello",
            "--model",
            "ollama/qwen3-coder:30b",
            "--max-budget-usd",
            "0.01",
            "--output-format",
            "json",
        ])
        .output()
        .await
        .expect("larik runs");
    assert!(output.status.success(), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "no price is known for ollama/qwen3-coder:30b, so its requests do not count toward the $0.01 budget"
        ),
        "{}",
        stderr(&output)
    );
    let result = last_json_line(&output);
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["unpriced_requests"], 1);
    assert_eq!(result["total_cost_usd"], 0.0);
    assert_eq!(result["usage"]["output_tokens"], 10);
}

/// The fake server's address in the form `OLLAMA_HOST` takes (`host:port`, no scheme).
fn ollama_host(harness: &Harness) -> String {
    harness
        .server
        .ollama_base_url()
        .trim_start_matches("http://")
        .to_string()
}
