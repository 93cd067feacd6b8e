//! One question to a model, for hooks that decide with one (prompt hooks): the prompt as
//! the only message, no tools, no system prompt, the answer's text back. The request goes
//! through the same model registry, endpoints, retries and debug trace as the agent's own;
//! its spend is queued like a subagent's (labelled `hooks`), so it joins the agent's totals,
//! its session file and its parent's, and is charged to the budget at once.

use std::sync::Arc;

use futures::StreamExt;
use larik_protocol::Message;
use larik_protocol::sync::locked;
use larik_providers::{ModelRequest, StreamEvent, stream_with_retry};

use crate::AgentConfig;
use crate::children::ChildUsage;
use crate::hooks::Evaluator;
use crate::runner::{Shared, connect_model};

/// The label a hook model's usage is reported under.
pub const HOOKS_USAGE_LABEL: &str = "hooks";

/// The most output tokens one evaluation may take.
const MAX_ANSWER_TOKENS: u32 = 4_096;

/// An agent's way to ask a model one question.
pub(crate) struct ModelEvaluator {
    pub(crate) config: Arc<AgentConfig>,
    /// The agent's current model, for questions that name none.
    pub(crate) current_model: String,
    pub(crate) shared: Arc<Shared>,
}

#[async_trait::async_trait]
impl Evaluator for ModelEvaluator {
    async fn evaluate(&self, model: Option<&str>, prompt: &str) -> Result<String, String> {
        let wanted = model.unwrap_or(&self.current_model);
        let (client, model) = connect_model(&self.config, wanted)
            .map_err(|error| format!("cannot reach model `{wanted}`: {error}"))?;
        let max_output_tokens = self
            .config
            .models
            .max_output_tokens(&model)
            .map_or(MAX_ANSWER_TOKENS, |limit| limit.min(MAX_ANSWER_TOKENS));
        let request = Arc::new(ModelRequest {
            system: String::new(),
            messages: vec![Message::user_text(prompt)].into(),
            tools: Arc::default(),
            max_output_tokens,
            reasoning: None,
        });
        let mut stream = stream_with_retry(client, request, self.config.retry);
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::Completed(response)) => {
                    let mut usage = response.usage;
                    match self.config.models.cost_usd(&model, &usage) {
                        Some(cost) => usage.cost_usd = cost,
                        None => usage.unpriced_requests = 1,
                    }
                    if let Some(budget) = &self.config.budget {
                        budget.charge(usage.cost_usd);
                    }
                    locked(&self.shared.child_usage).push(ChildUsage::new(
                        HOOKS_USAGE_LABEL,
                        &model,
                        usage,
                    ));
                    return Ok(Message::assistant(response.content, model).text());
                }
                Ok(_) => {}
                Err(error) => return Err(format!("model `{model}` failed: {error}")),
            }
        }
        Err(format!(
            "model `{model}` ended its answer without completing it"
        ))
    }
}
