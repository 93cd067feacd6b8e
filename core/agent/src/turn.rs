//! One user turn: request, stream, run tools, repeat until the model stops.

use std::sync::Arc;

use futures::StreamExt;
use larik_protocol::event::ErrorKind;
use larik_protocol::{Block, Event, Message, Role, StopReason, Usage, UserContent};
use larik_providers::{
    ModelRequest, ModelResponse, ModelStop, ProviderError, StreamEvent, stream_with_retry,
};
use tokio_util::sync::CancellationToken;

use crate::guard::LoopGuard;
use crate::runner::Runner;

/// How one model request ended.
enum RequestOutcome {
    Done(ModelResponse),
    Cancelled,
    Failed(ProviderError),
}

impl Runner {
    pub(crate) async fn run_turn(&mut self, content: Vec<UserContent>, cancel: CancellationToken) {
        self.turn_number += 1;
        self.events.emit(Event::TurnStarted {
            turn: self.turn_number,
        });
        self.record(Message {
            role: Role::User,
            content: content.into_iter().map(user_block).collect(),
            model: None,
        });

        let mut turn_usage = Usage::default();
        let mut requests = 0u32;
        let mut guard = LoopGuard::default();
        let mut last_message = String::new();
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
            requests += 1;
            let response = match self.request_once(&cancel).await {
                RequestOutcome::Done(response) => response,
                RequestOutcome::Cancelled => break StopReason::Cancelled,
                RequestOutcome::Failed(error) => {
                    self.events.emit(Event::Error {
                        kind: error_kind(&error),
                        message: error.to_string(),
                    });
                    break StopReason::Error;
                }
            };

            turn_usage.add(&response.usage);
            self.usage.add(&response.usage);
            self.record_usage(&response.usage);
            self.events.emit(Event::Usage {
                model: self.model_name.clone(),
                request: response.usage,
                total: self.usage,
            });

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

            if calls.is_empty() {
                break match response.stop {
                    ModelStop::EndTurn | ModelStop::ToolUse => StopReason::EndTurn,
                    ModelStop::MaxTokens => StopReason::MaxTokens,
                    ModelStop::Refusal => StopReason::Refusal,
                };
            }

            let results = self.run_calls(&calls, &cancel).await;
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

        self.events.emit(Event::TurnComplete {
            stop_reason,
            num_requests: requests,
            last_message,
            usage: turn_usage,
        });
    }

    async fn request_once(&mut self, cancel: &CancellationToken) -> RequestOutcome {
        let request = Arc::new(ModelRequest {
            system: self.system_prompt.clone(),
            messages: self.transcript.clone(),
            tools: self.tool_specs.clone(),
            max_output_tokens: self.config.max_output_tokens,
            reasoning: self.config.reasoning,
        });
        let mut stream = stream_with_retry(Arc::clone(&self.client), request, self.config.retry);
        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => return RequestOutcome::Cancelled,
                item = stream.next() => item,
            };
            match item {
                Some(Ok(StreamEvent::TextDelta(text))) => {
                    self.events.emit(Event::MessageDelta { text });
                }
                Some(Ok(StreamEvent::ThinkingDelta(text))) => {
                    self.events.emit(Event::ThoughtDelta { text });
                }
                Some(Ok(StreamEvent::ToolCallStarted { .. })) => {}
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

fn error_kind(error: &ProviderError) -> ErrorKind {
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
