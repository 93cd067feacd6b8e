//! One user turn: request, stream, run tools, repeat until the model stops.

use std::sync::Arc;

use futures::StreamExt;
use larik_protocol::event::ErrorKind;
use larik_protocol::{Block, Event, Message, Role, StopReason, Usage, UserContent};
use larik_providers::{
    Conversation, ModelRequest, ModelResponse, ModelStop, ProviderError, StreamEvent,
    stream_with_retry,
};
use tokio_util::sync::CancellationToken;

use crate::compact::{Cause, Summarised};
use crate::guard::LoopGuard;
use crate::hooks::{MAX_STOP_CONTINUATIONS, PromptPoint, StopPoint, SubagentStartPoint};
use crate::runner::Runner;
use crate::window::Measured;

/// How one model request ended.
pub(crate) enum RequestOutcome {
    Done(ModelResponse),
    Cancelled,
    Failed(ProviderError),
}

/// Whether a request's text and reasoning are streamed to the front end as they arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deltas {
    /// As `MessageDelta` and `ThoughtDelta` events.
    Emit,
    /// Not at all; the caller reports the finished answer its own way.
    Hide,
}

impl Runner {
    /// A turn with the user's `content`.
    pub(crate) async fn run_turn(&mut self, content: Vec<UserContent>, cancel: CancellationToken) {
        self.run_turn_of(content, false, cancel).await;
    }

    /// A turn with a custom command's or skill's `text` (and `more` after it): the prompt
    /// hooks see the text as the user ran it, and only a prompt they let through has its
    /// inline commands run and its files attached.
    pub(crate) async fn run_command_turn(
        &mut self,
        text: String,
        more: Vec<UserContent>,
        cancel: CancellationToken,
    ) {
        let mut content = vec![UserContent::Text { text }];
        content.extend(more);
        self.run_turn_of(content, true, cancel).await;
    }

    async fn run_turn_of(
        &mut self,
        content: Vec<UserContent>,
        command: bool,
        cancel: CancellationToken,
    ) {
        self.turn_number += 1;
        let for_tasks = std::mem::take(&mut self.delivering_tasks);
        self.events.emit(Event::TurnStarted {
            turn: self.turn_number,
            for_tasks,
        });
        // A turn the agent starts itself to deliver reports holds no prompt of the user's.
        let prompted = if for_tasks {
            Some(content)
        } else {
            self.prompt_hooks(content).await
        };
        let Some(mut content) = prompted else {
            // Blocked: the prompt never reaches the model or the session file.
            self.turn_number -= 1;
            self.events.emit(Event::TurnComplete {
                stop_reason: StopReason::EndTurn,
                num_requests: 0,
                last_message: String::new(),
                usage: Usage::default(),
            });
            return;
        };
        self.checkpoint = self.turn_checkpoint();
        if command && let Some(UserContent::Text { text }) = content.first().cloned() {
            let expanded = self.expand_command_text(&text, &cancel).await;
            content.splice(0..1, expanded);
        }
        let notes = std::mem::take(&mut self.notes_for_model)
            .into_iter()
            .map(|note| Block::Text {
                text: format!("<note from=\"larik\">{note}</note>"),
            });
        let hook_context = std::mem::take(&mut self.hook_context)
            .into_iter()
            .map(|text| Block::Text { text });
        let reports = self.task_notifications();
        self.record(Message {
            role: Role::User,
            content: notes
                .chain(hook_context)
                .chain(reports)
                .chain(content.into_iter().map(user_block))
                .collect(),
            model: None,
        });

        let mut turn_usage = self.take_child_usage();
        let mut requests = 0u32;
        let mut answers = 0u32;
        let mut guard = LoopGuard::default();
        let mut last_message = String::new();
        // One compaction per overflow, and never two in a row without a request between.
        let mut overflow_handled = false;
        let mut just_compacted = false;
        // Times in a row hooks made the turn go on instead of stopping.
        let mut continued = 0u32;
        let stop_reason = loop {
            if cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if requests >= self.config.max_requests_per_turn {
                self.events.emit(Event::Notice {
                    message: format!(
                        "stopped after {requests} model requests, the cap for one turn"
                    ),
                });
                break StopReason::MaxTurns;
            }
            if let Some(notice) = self.budget_notice() {
                self.events.emit(Event::Notice { message: notice });
                break StopReason::BudgetExceeded;
            }
            if !self.learn_model_info(&cancel).await {
                break StopReason::Cancelled;
            }
            // Before the turn's first answer the prompt stays out of the summary, verbatim.
            let keep_last = usize::from(answers == 0);
            let request = self.model_request();
            if !just_compacted && let Some(notice) = self.threshold_notice(&request, keep_last) {
                self.events.emit(Event::Notice { message: notice });
                requests += 1;
                just_compacted = true;
                match self
                    .summarise(None, keep_last, Cause::Threshold, &cancel)
                    .await
                {
                    Summarised::Done { usage, .. } | Summarised::Failed(usage) => {
                        turn_usage.add(&usage);
                        continue;
                    }
                    Summarised::Cancelled => break StopReason::Cancelled,
                }
            }
            just_compacted = false;
            requests += 1;
            let response = match self.request_once(request, &cancel, Deltas::Emit).await {
                RequestOutcome::Done(response) => response,
                RequestOutcome::Cancelled => break StopReason::Cancelled,
                RequestOutcome::Failed(error @ ProviderError::ContextTooLong { .. })
                    if !overflow_handled && self.transcript.len() > keep_last =>
                {
                    overflow_handled = true;
                    self.events.emit(Event::Notice {
                        message: format!(
                            "{error}; compacting the conversation and trying once more"
                        ),
                    });
                    just_compacted = true;
                    requests += 1;
                    match self
                        .summarise(None, keep_last, Cause::Overflow, &cancel)
                        .await
                    {
                        Summarised::Done { usage, .. } => {
                            turn_usage.add(&usage);
                            continue;
                        }
                        Summarised::Failed(usage) => {
                            turn_usage.add(&usage);
                            break StopReason::Error;
                        }
                        Summarised::Cancelled => break StopReason::Cancelled,
                    }
                }
                RequestOutcome::Failed(error) => {
                    self.events.emit(Event::Error {
                        kind: error_kind(&error),
                        message: error.to_string(),
                    });
                    break StopReason::Error;
                }
            };
            answers += 1;
            self.model_info.answered = true;

            turn_usage.add(&self.account_usage(&response.usage));

            let message = Message::assistant(response.content, self.model_name.clone());
            last_message = message.text();
            self.events.emit(Event::MessageComplete {
                text: last_message.clone(),
            });
            let calls: Vec<_> = message
                .tool_calls()
                .map(|(id, name, input)| (id.to_string(), name.to_string(), input.clone()))
                .collect();
            self.record(message);
            self.measured = Measured::from_usage(&response.usage, self.transcript.len());

            if calls.is_empty() {
                let stop = match response.stop {
                    ModelStop::EndTurn | ModelStop::ToolUse => StopReason::EndTurn,
                    ModelStop::MaxTokens => StopReason::MaxTokens,
                    ModelStop::Refusal => StopReason::Refusal,
                };
                if stop == StopReason::EndTurn
                    && let Some(reason) = self.stop_hooks(&last_message, continued).await
                {
                    continued += 1;
                    self.record(Message::user_text(reason));
                    continue;
                }
                break stop;
            }
            continued = 0;

            let mut results = self.run_calls(&calls, &cancel).await;
            turn_usage.add(&self.take_child_usage());
            results.extend(self.task_notifications());
            let repeated = guard.observe(&calls, &results);
            self.record(Message {
                role: Role::User,
                content: results,
                model: None,
            });
            if cancel.is_cancelled() {
                break StopReason::Cancelled;
            }
            if repeated {
                self.events.emit(Event::Notice {
                    message: "stopped: the same tool calls returned the same results 4 times \
                              in the last 8 requests"
                        .into(),
                });
                break StopReason::MaxTurns;
            }
        };

        // What hooks' models spent while the turn stopped.
        turn_usage.add(&self.take_child_usage());
        self.complete_turn(stop_reason, requests, last_message, turn_usage);
    }

    /// Background tasks' reports not yet delivered, as text for the next request.
    fn task_notifications(&self) -> impl Iterator<Item = Block> + use<> {
        self.background
            .take_notifications()
            .into_iter()
            .map(|text| Block::Text { text })
    }

    /// Runs the hooks before a prompt; `None` when one blocks it (and says why), else the
    /// content to send, with the hooks' text replaced or added. A subagent's task prompt
    /// runs its start hooks instead, which can only add context.
    async fn prompt_hooks(&mut self, mut content: Vec<UserContent>) -> Option<Vec<UserContent>> {
        if self.hooks.is_empty() {
            return Some(content);
        }
        let text = content
            .iter()
            .filter_map(|part| match part {
                UserContent::Text { text } => Some(text.as_str()),
                UserContent::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        if self.lineage.subagent.is_some() {
            if self.turn_number == 1 {
                let point = SubagentStartPoint { prompt: text };
                let context = self
                    .hooks
                    .on_start(&self.loop_context(), Err(&point), &self.events)
                    .await;
                content.extend(context.into_iter().map(|text| UserContent::Text { text }));
            }
            return Some(content);
        }
        let point = PromptPoint {
            turn: self.turn_number,
            text,
        };
        let (block, replace, context) = self
            .hooks
            .before_prompt(&self.loop_context(), &point, &self.events)
            .await;
        if let Some((source, reason)) = block {
            self.events.emit(Event::Notice {
                message: format!("hook {source} blocked the prompt: {reason}"),
            });
            return None;
        }
        if let Some(text) = replace {
            content.retain(|part| matches!(part, UserContent::Image { .. }));
            content.insert(0, UserContent::Text { text });
        }
        content.extend(context.into_iter().map(|text| UserContent::Text { text }));
        Some(content)
    }

    /// Runs the hooks before a turn stops; what the model is told when they ask it to go
    /// on. After [`MAX_STOP_CONTINUATIONS`] in a row the turn stops anyway, with a notice.
    async fn stop_hooks(&mut self, last_message: &str, continued: u32) -> Option<String> {
        if self.hooks.is_empty() {
            return None;
        }
        let point = StopPoint {
            last_message: last_message.to_string(),
            continued,
        };
        let reason = self
            .hooks
            .before_stop(&self.loop_context(), &point, &self.events)
            .await?;
        if continued >= MAX_STOP_CONTINUATIONS {
            self.events.emit(Event::Notice {
                message: format!(
                    "hooks asked the turn to go on {continued} times in a row; it stops here"
                ),
            });
            return None;
        }
        Some(reason)
    }

    /// Ends a turn (or a `/compact`): records its stop reason, requests and usage in the
    /// session file and says so.
    pub(crate) fn complete_turn(
        &mut self,
        stop_reason: StopReason,
        num_requests: u32,
        last_message: String,
        usage: Usage,
    ) {
        self.record_turn(stop_reason, num_requests, &usage);
        self.events.emit(Event::TurnComplete {
            stop_reason,
            num_requests,
            last_message,
            usage,
        });
    }

    /// The request for the conversation so far.
    pub(crate) fn model_request(&self) -> Arc<ModelRequest> {
        self.request_with(self.transcript.clone())
    }

    /// The output limit of a request: the configured one, capped by the model's own (asking
    /// for more is an error).
    pub(crate) fn max_output_tokens(&self) -> u32 {
        self.config
            .models
            .max_output_tokens(&self.model_name)
            .map_or(self.config.max_output_tokens, |limit| {
                limit.min(self.config.max_output_tokens)
            })
    }

    /// The request for `messages` with this context's system prompt and tools. Every
    /// request of a context is built here so the system prompt and tools, the prompt-cache
    /// prefix, are always the same.
    pub(crate) fn request_with(&self, messages: Conversation) -> Arc<ModelRequest> {
        Arc::new(ModelRequest {
            system: self.system_prompt.text.clone(),
            messages,
            tools: Arc::clone(&self.tool_specs),
            max_output_tokens: self.max_output_tokens(),
            reasoning: self.config.reasoning,
        })
    }

    /// Prices one request's usage with the registry's prices when it has them (configured
    /// prices win over the provider's table; without any, the request counts as unpriced),
    /// adds it to the session total, charges the budget, records and reports it, and
    /// returns it priced.
    pub(crate) fn account_usage(&mut self, usage: &Usage) -> Usage {
        let mut usage = *usage;
        match self.config.models.cost_usd(&self.model_name, &usage) {
            Some(cost) => usage.cost_usd = cost,
            None => {
                usage.cost_usd = 0.0;
                usage.unpriced_requests = 1;
            }
        }
        let usage = &usage;
        self.usage.add(usage);
        if let Some(budget) = &self.config.budget {
            budget.charge(usage.cost_usd);
        }
        self.record_usage(usage);
        self.report_usage_to_parent(usage);
        self.events.emit(Event::Usage {
            model: self.model_name.clone(),
            request: *usage,
            total: self.usage,
            context_window: self.context_window,
            subagent: None,
        });
        *usage
    }

    /// Sends `request` (retrying as configured) and streams the answer until it completes,
    /// fails, or `cancel` fires.
    pub(crate) async fn request_once(
        &mut self,
        request: Arc<ModelRequest>,
        cancel: &CancellationToken,
        deltas: Deltas,
    ) -> RequestOutcome {
        let mut stream = stream_with_retry(Arc::clone(&self.client), request, self.config.retry);
        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => return RequestOutcome::Cancelled,
                item = stream.next() => item,
            };
            match item {
                Some(Ok(StreamEvent::TextDelta(text))) => {
                    if deltas == Deltas::Emit {
                        self.events.emit(Event::MessageDelta { text });
                    }
                }
                Some(Ok(StreamEvent::ThinkingDelta(text))) => {
                    if deltas == Deltas::Emit {
                        self.events.emit(Event::ThoughtDelta { text });
                    }
                }
                Some(Ok(StreamEvent::ToolCallStarted { .. })) => {}
                Some(Ok(StreamEvent::Notice(message))) => {
                    self.events.emit(Event::Notice { message });
                }
                Some(Ok(StreamEvent::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                })) => self.events.emit(Event::Retrying {
                    attempt,
                    delay_ms,
                    reason,
                }),
                Some(Ok(StreamEvent::Completed(response))) => {
                    return RequestOutcome::Done(response);
                }
                Some(Err(error)) => return RequestOutcome::Failed(error),
                None => {
                    return RequestOutcome::Failed(ProviderError::Connection {
                        provider: self.client.provider().to_string(),
                        message: "the response ended without completing".into(),
                    });
                }
            }
        }
    }
}

fn user_block(content: UserContent) -> Block {
    match content {
        UserContent::Text { text } => Block::Text { text },
        UserContent::Image { media_type, data } => Block::Image { media_type, data },
    }
}

pub(crate) fn error_kind(error: &ProviderError) -> ErrorKind {
    match error {
        ProviderError::MissingKey { .. } | ProviderError::Unauthorized { .. } => ErrorKind::Auth,
        ProviderError::BadRequest { .. } => ErrorKind::BadRequest,
        ProviderError::ContextTooLong { .. } => ErrorKind::ContextTooLong,
        ProviderError::Unavailable { .. }
        | ProviderError::Connection { .. }
        | ProviderError::RetriesExhausted { .. } => ErrorKind::Unavailable,
        ProviderError::Protocol { .. } => ErrorKind::Protocol,
        ProviderError::BadModelName { .. }
        | ProviderError::UnknownProvider { .. }
        | ProviderError::BadEndpoint { .. } => ErrorKind::Other,
    }
}
