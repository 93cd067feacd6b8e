//! What Ollama says about a model: `POST /api/show` (capabilities and the trained context
//! length) and `GET /api/ps` (the context window a loaded model actually runs with), and the
//! choice of the context window to ask for.
//!
//! Ollama loads a model with whatever `num_ctx` the request asks for, and with a small
//! default (often 4096 tokens, or 2048 on older servers) when it asks for nothing, which
//! silently cuts an agent's long prompts. So every request asks explicitly: the configured
//! length, else the model's trained length capped at [`DEFAULT_CONTEXT_CAP`].

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;
use serde_json::Value;

use crate::ProviderError;
use crate::trace::Http;

use super::{PROVIDER, reach_error, response_error};

/// The largest context window asked for when none is configured. The KV cache grows with
/// the window, and a model trained for 128k tokens asked for all of them needs many
/// gigabytes beyond its weights (often more than a workstation's GPU has, which makes
/// Ollama spill to the CPU or fail to load); 32k tokens fits an agent's working context on
/// common hardware. A configured length overrides it.
pub const DEFAULT_CONTEXT_CAP: u64 = 32_768;

/// Room for the prompt left beside the output limit when the window is chosen
/// automatically, so a small trained length never leaves no room for the answer.
const MIN_PROMPT_ROOM: u64 = 4_096;

/// What `/api/show` said about the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Shown {
    /// The model's capabilities, e.g. `completion`, `tools`, `thinking`; `None` from
    /// servers too old to list them.
    pub(super) capabilities: Option<Vec<String>>,
    /// The context length the model was trained with.
    pub(super) trained_context: Option<u64>,
}

impl Shown {
    /// Whether the server lists `capability`; `None` when it lists nothing.
    pub(super) fn has(&self, capability: &str) -> Option<bool> {
        self.capabilities
            .as_ref()
            .map(|all| all.iter().any(|one| one == capability))
    }
}

#[derive(Deserialize)]
struct ShowBody {
    #[serde(default)]
    capabilities: Option<Vec<String>>,
    #[serde(default)]
    model_info: Option<serde_json::Map<String, Value>>,
}

#[derive(Deserialize)]
struct PsBody {
    #[serde(default)]
    models: Vec<Running>,
}

#[derive(Deserialize)]
struct Running {
    #[serde(default)]
    name: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    context_length: Option<u64>,
}

/// Why `/api/show` gave nothing usable.
#[derive(Debug)]
pub(super) enum ShowFailure {
    /// The server could not be reached; worth asking again next time.
    Unreachable,
    /// The server does not have the model (yet); worth asking again after a pull.
    NotFound,
    /// The server answered with something else unusable; asking again will not help.
    Answered(ProviderError),
}

/// The context window to ask for: the configured length, else the trained length capped at
/// [`DEFAULT_CONTEXT_CAP`] (the cap alone when the trained length is unknown), raised to
/// leave room for `max_output_tokens` beside a prompt (but never above the trained length).
pub(super) fn context_to_ask(
    configured: Option<u64>,
    trained: Option<u64>,
    max_output_tokens: u64,
) -> u64 {
    if let Some(configured) = configured.filter(|length| *length > 0) {
        return configured;
    }
    let chosen = trained
        .unwrap_or(DEFAULT_CONTEXT_CAP)
        .min(DEFAULT_CONTEXT_CAP);
    let needed = max_output_tokens.saturating_add(MIN_PROMPT_ROOM);
    chosen.max(needed.min(trained.unwrap_or(u64::MAX))).max(1)
}

/// The trained context length from `/api/show`'s `model_info`: the
/// `<architecture>.context_length` entry.
fn trained_context(info: &serde_json::Map<String, Value>) -> Option<u64> {
    let architecture = info.get("general.architecture")?.as_str()?;
    info.get(&format!("{architecture}.context_length"))?
        .as_u64()
}

/// Asks `POST {base}/api/show` about `model`.
pub(super) async fn show(
    http: &Http,
    base: &str,
    authorization: Option<&HeaderValue>,
    model: &str,
) -> Result<Shown, ShowFailure> {
    let mut request = http
        .post(format!("{base}/api/show"))
        .header(CONTENT_TYPE, "application/json")
        .body(serde_json::json!({ "model": model }).to_string());
    if let Some(authorization) = authorization {
        request = request.header(AUTHORIZATION, authorization.clone());
    }
    let response = http
        .send(request)
        .await
        .map_err(|_| ShowFailure::Unreachable)?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|_| ShowFailure::Unreachable)?;
    if status == 404 {
        return Err(ShowFailure::NotFound);
    }
    if !(200..300).contains(&status) {
        return Err(ShowFailure::Answered(response_error(
            model, status, None, &text,
        )));
    }
    let body: ShowBody = serde_json::from_str(&text).map_err(|err| {
        ShowFailure::Answered(ProviderError::Protocol {
            provider: PROVIDER.to_string(),
            message: format!("`/api/show` answered with something that is not its JSON: {err}"),
        })
    })?;
    Ok(Shown {
        capabilities: body.capabilities,
        trained_context: body.model_info.as_ref().and_then(trained_context),
    })
}

/// Asks `GET {base}/api/ps` for the context window `model` is loaded with; `None` when it
/// is not loaded or the server does not say.
pub(super) async fn loaded_context(
    http: &Http,
    base: &str,
    authorization: Option<&HeaderValue>,
    model: &str,
) -> Result<Option<u64>, ProviderError> {
    let mut request = http.get(format!("{base}/api/ps"));
    if let Some(authorization) = authorization {
        request = request.header(AUTHORIZATION, authorization.clone());
    }
    let response = http
        .send(request)
        .await
        .map_err(|err| reach_error(base, &err, http.timeouts()))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|err| reach_error(base, &err, http.timeouts()))?;
    if !(200..300).contains(&status) {
        return Err(response_error(model, status, None, &text));
    }
    let body: PsBody = serde_json::from_str(&text).map_err(|err| ProviderError::Protocol {
        provider: PROVIDER.to_string(),
        message: format!("`/api/ps` answered with something that is not its JSON: {err}"),
    })?;
    Ok(body
        .models
        .iter()
        .find(|running| same_model(&running.name, model) || same_model(&running.model, model))
        .and_then(|running| running.context_length))
}

/// Whether two model names mean the same model: a name without a tag means `:latest`.
pub(super) fn same_model(a: &str, b: &str) -> bool {
    fn tagged(name: &str) -> String {
        let last = name.rsplit('/').next().unwrap_or(name);
        if last.contains(':') {
            name.to_string()
        } else {
            format!("{name}:latest")
        }
    }
    !a.is_empty() && tagged(a) == tagged(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_configured_length_wins_else_the_trained_one_capped() {
        assert_eq!(context_to_ask(Some(65_536), Some(8_192), 4_096), 65_536);
        assert_eq!(
            context_to_ask(None, Some(131_072), 4_096),
            DEFAULT_CONTEXT_CAP
        );
        assert_eq!(context_to_ask(None, Some(16_384), 4_096), 16_384);
        assert_eq!(context_to_ask(None, None, 4_096), DEFAULT_CONTEXT_CAP);
        assert_eq!(context_to_ask(Some(0), Some(16_384), 1_024), 16_384);
    }

    #[test]
    fn the_automatic_length_leaves_room_for_the_answer_within_the_trained_length() {
        assert_eq!(context_to_ask(None, Some(4_096), 2_048), 4_096);
        assert_eq!(context_to_ask(None, Some(131_072), 64_000), 68_096);
        assert_eq!(context_to_ask(None, Some(40_000), 64_000), 40_000);
    }

    #[test]
    fn the_trained_length_is_found_under_the_architecture() {
        let info = json!({"general.architecture": "qwen3", "qwen3.context_length": 40960, "llama.context_length": 1});
        let info = info.as_object().expect("object");
        assert_eq!(trained_context(info), Some(40_960));
        let missing = json!({"general.architecture": "gemma3"});
        assert_eq!(trained_context(missing.as_object().expect("object")), None);
    }

    #[test]
    fn untagged_names_mean_latest() {
        assert!(same_model("llama3.2", "llama3.2:latest"));
        assert!(same_model("qwen3:8b", "qwen3:8b"));
        assert!(!same_model("qwen3:8b", "qwen3"));
        assert!(same_model("hf.co/org/model", "hf.co/org/model:latest"));
        assert!(!same_model("", ":latest"));
    }
}
