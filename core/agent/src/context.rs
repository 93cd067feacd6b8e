//! `/context`: what the next request of the current context would hold, part by part.
//!
//! The parts are measured the way the window check measures a request (four bytes per
//! token of the JSON each part travels as: the system prompt's text as a string, each
//! tool's name, description and schema, each message), so they add up to the estimate the
//! agent compacts by; the provider's own count of the last request is reported beside them.

use std::collections::BTreeMap;

use larik_protocol::{ContextPart, ContextPartKind, ContextReport, Event, Message};

use crate::runner::Runner;
use crate::window::{self, BYTES_PER_TOKEN, tool_bytes};

/// Estimated tokens of `bytes` bytes.
fn tokens_of(bytes: usize) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN) as u64
}

impl Runner {
    /// Emits [`Event::Context`] for the next request of the current context.
    pub(crate) fn describe_context(&mut self) {
        let report = self.context_report();
        self.events.emit(Event::Context { report });
    }

    fn context_report(&self) -> ContextReport {
        // Each part of the system prompt as the share of the JSON string it travels in
        // (the quotes count with the first).
        let text = &self.system_prompt.text;
        let mut offset = 0;
        let mut quotes = 2;
        let mut parts: Vec<ContextPart> = Vec::new();
        for part in &self.system_prompt.parts {
            let span = text.get(offset..offset + part.bytes).unwrap_or_default();
            offset += part.bytes;
            let bytes = window::text_bytes(span) - 2 + std::mem::take(&mut quotes);
            parts.push(ContextPart {
                kind: part.kind,
                name: part.name.clone(),
                items: 1,
                tokens: tokens_of(bytes),
            });
        }

        // Tools by source, in the order of their first tool (the request's order).
        let mut by_source: BTreeMap<&str, (u32, usize)> = BTreeMap::new();
        let mut order: Vec<&str> = Vec::new();
        for tool in self.tool_specs.iter() {
            let source = self.config.tools.source_of(&tool.name);
            let entry = by_source.entry(source).or_insert_with(|| {
                order.push(source);
                (0, 0)
            });
            entry.0 += 1;
            entry.1 += tool_bytes(tool);
        }
        for source in order {
            let (count, bytes) = by_source[source];
            parts.push(ContextPart {
                kind: ContextPartKind::Tools,
                name: source.to_string(),
                items: count,
                tokens: tokens_of(bytes),
            });
        }

        let (summary, conversation) = match self.transcript.split_first() {
            Some((first, rest)) if self.starts_with_summary => (Some(first), rest),
            _ => (None, self.transcript.as_slice()),
        };
        if let Some(summary) = summary {
            parts.push(ContextPart {
                kind: ContextPartKind::Summary,
                name: String::new(),
                items: 1,
                tokens: window::estimate_messages(std::slice::from_ref(summary)),
            });
        }
        parts.push(ContextPart {
            kind: ContextPartKind::Conversation,
            name: String::new(),
            items: u32::try_from(conversation.len()).unwrap_or(u32::MAX),
            tokens: window::estimate_messages(conversation),
        });
        if !self.notes_for_model.is_empty() {
            let notes = Message::user_text(self.notes_for_model.join("\n"));
            parts.push(ContextPart {
                kind: ContextPartKind::Notes,
                name: String::new(),
                items: u32::try_from(self.notes_for_model.len()).unwrap_or(u32::MAX),
                tokens: window::estimate_messages(std::slice::from_ref(&notes)),
            });
        }

        let request = self.request_with(self.transcript.clone());
        let measured_tokens = self
            .measured
            .map(|_| window::next_request_tokens(self.measured, &request));
        ContextReport {
            model: self.model_name.clone(),
            context_window: self.context_window,
            total_tokens: parts.iter().map(|part| part.tokens).sum(),
            parts,
            measured_tokens,
            auto_compact_share: self.config.auto_compact_share,
            compactable_messages: u32::try_from(self.transcript.len()).unwrap_or(u32::MAX),
            compactable_tokens: window::estimate_messages(&self.transcript),
        }
    }
}
