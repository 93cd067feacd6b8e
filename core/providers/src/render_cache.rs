//! What a client rendered of its previous request's conversation, reused by the next
//! request of the same [`Lineage`], so a long session renders only its new messages.
//!
//! A provider renders the conversation as a list of wire items. Those appending to the
//! conversation cannot change are *settled* (with Anthropic, all but the last message,
//! which may still merge with a following message of the same role and carries the
//! prompt-cache breakpoint; with OpenAI's Responses, all). The cache keeps the settled
//! items' JSON and how many conversation messages they cover; a later request of the same
//! lineage, longer than that, starts its list with those bytes and renders from there. One
//! conversation is kept at a time: a request of another lineage renders in full and takes
//! the cache over.
//!
//! Late in a session each body is hundreds of kilobytes, more than the allocator keeps in
//! its heaps: a fresh buffer would be mapped, faulted in page by page and unmapped again
//! for every request. So the buffer of such a body, once nobody holds it any more (sent,
//! and no longer the cache's), is kept as the spare for the next one, made with room for a
//! few more turns. Smaller bodies come from the allocator's heaps as before.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use larik_protocol::sync::locked;
use serde::Serialize;

use crate::{Conversation, Lineage};

/// The settled part of one conversation's rendering.
struct Settled {
    lineage: Lineage,
    /// Conversation messages the JSON covers.
    messages: usize,
    /// The settled items, joined by commas: a slice of the body that carried them.
    json: Bytes,
}

/// A client's cache of its latest conversation's settled wire messages, and the spare
/// body buffer; clones share both.
#[derive(Clone, Default)]
pub(crate) struct RenderCache(Arc<Mutex<Option<Settled>>>, Spare);

/// The buffer of the last large body whose bytes were all dropped, emptied, for the next
/// body.
#[derive(Clone, Default)]
struct Spare(Arc<Mutex<Option<Vec<u8>>>>);

/// Buffers from this size on are kept as the spare: glibc maps blocks this large on their
/// own (Larik fixes its threshold here) instead of reusing its heaps' memory.
const SPARE_FROM: usize = 128 * 1024;

impl Spare {
    /// An empty buffer of at least `needed` bytes: the spare when it is large enough, or a
    /// new one with a quarter more room, so later, longer bodies fit in it too.
    fn take(&self, needed: usize) -> Vec<u8> {
        match locked(&self.0).take() {
            Some(buffer) if buffer.capacity() >= needed => buffer,
            _ => Vec::with_capacity(needed + needed / 4),
        }
    }
}

/// A body's bytes, whose buffer becomes the spare once every `Bytes` of it is dropped.
struct SpareOnDrop {
    buffer: Vec<u8>,
    spare: Spare,
}

impl AsRef<[u8]> for SpareOnDrop {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for SpareOnDrop {
    fn drop(&mut self) {
        let mut buffer = std::mem::take(&mut self.buffer);
        if buffer.capacity() < SPARE_FROM {
            return;
        }
        buffer.clear();
        let mut spare = locked(&self.spare.0);
        // Keep the larger of the two: bodies only grow within a conversation.
        if spare
            .as_ref()
            .is_none_or(|kept| kept.capacity() < buffer.capacity())
        {
            *spare = Some(buffer);
        }
    }
}

impl RenderCache {
    /// What a request of `conversation` can reuse: its first messages already rendered,
    /// when the cache holds a rendering of its lineage it is longer than.
    pub(crate) fn reuse(&self, conversation: &Conversation) -> Reuse {
        match &*locked(&self.0) {
            Some(settled)
                if settled.lineage == conversation.lineage()
                    && settled.messages < conversation.len() =>
            {
                Reuse {
                    start: settled.messages,
                    settled: settled.json.clone(),
                }
            }
            _ => Reuse::nothing(),
        }
    }

    /// The body `{head…, "key": [reused items…, rendered items…], tail…}`, and the cache
    /// now holding its settled items for the next request of `conversation`. `head` and
    /// `tail` serialise as JSON objects.
    pub(crate) fn body<I: Serialize>(
        &self,
        conversation: &Conversation,
        reuse: Reuse,
        head: &impl Serialize,
        key: &str,
        rendered: Rendered<'_, I>,
        tail: &impl Serialize,
    ) -> Bytes {
        let head = to_json(head);
        let tail = to_json(tail);
        let key = to_json(&key);
        // The new items, joined by commas, and where the settled ones among them end.
        let mut fresh = Vec::new();
        let mut fresh_settled = 0;
        for (index, item) in rendered.items.iter().enumerate() {
            if index > 0 {
                fresh.push(b',');
            }
            serde_json::to_writer(&mut fresh, item)
                .expect("string keys and JSON values always serialize");
            if index + 1 == rendered.settled_items {
                fresh_settled = fresh.len();
            }
        }
        // Taken at its size once: growing it would copy a long conversation again.
        let mut body = self
            .1
            .take(head.len() + key.len() + reuse.settled.len() + fresh.len() + tail.len() + 4);
        // `{head…}` loses its `}`, `{tail…}` its `{`, and the list goes between them.
        body.extend_from_slice(&head[..head.len() - 1]);
        if body.len() > 1 {
            body.push(b',');
        }
        body.extend_from_slice(&key);
        body.extend_from_slice(b":[");
        let list_at = body.len();
        body.extend_from_slice(&reuse.settled);
        if !reuse.settled.is_empty() && !fresh.is_empty() {
            body.push(b',');
        }
        let settled_end = if rendered.settled_items > 0 {
            body.len() + fresh_settled
        } else {
            list_at + reuse.settled.len()
        };
        body.extend_from_slice(&fresh);
        body.push(b']');
        if tail.len() > 2 {
            body.push(b',');
        }
        body.extend_from_slice(&tail[1..]);
        let body = Bytes::from_owner(SpareOnDrop {
            buffer: body,
            spare: self.1.clone(),
        });
        *locked(&self.0) = Some(Settled {
            lineage: conversation.lineage(),
            messages: reuse.start + rendered.settled_messages,
            json: body.slice(list_at..settled_end),
        });
        body
    }
}

/// The part of a conversation's rendering a request starts from.
pub(crate) struct Reuse {
    /// Messages already rendered.
    start: usize,
    /// Their settled items, joined by commas.
    settled: Bytes,
}

impl Reuse {
    /// Nothing: the whole conversation is rendered.
    fn nothing() -> Reuse {
        Reuse {
            start: 0,
            settled: Bytes::new(),
        }
    }

    /// How many of the conversation's messages are already rendered; the request renders
    /// the rest.
    pub(crate) fn start(&self) -> usize {
        self.start
    }
}

/// The items a request rendered from the messages after the reused ones.
pub(crate) struct Rendered<'a, I> {
    pub(crate) items: &'a [I],
    /// How many of `items`, from the first, no later message can change.
    pub(crate) settled_items: usize,
    /// How many of the rendered messages those settled items are made of.
    pub(crate) settled_messages: usize,
}

fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("string keys and JSON values always serialize")
}

impl std::fmt::Debug for RenderCache {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let covered = locked(&self.0)
            .as_ref()
            .map_or(0, |settled| settled.messages);
        formatter
            .debug_struct("RenderCache")
            .field("settled_messages", &covered)
            .finish()
    }
}

/// A message of each shape the formats render differently, picked by `seed`: user text,
/// empty text, text beside a tool result, assistant text with and without a tool call,
/// signed and unsigned thinking, a stored raw block, another model's message. Made for
/// `provider` and `model`, so its reasoning is replayed to them.
#[cfg(test)]
pub(crate) fn sample_message(seed: usize, provider: &str, model: &str) -> larik_protocol::Message {
    use larik_protocol::{Block, Message, ResultPart, Role};
    use serde_json::json;

    let assistant = |content| Message::assistant(content, format!("{provider}/{model}"));
    match seed % 9 {
        0 => Message::user_text(format!("prompt {seed} with \"quotes\" and \\ slashes")),
        1 => Message::user_text(""),
        2 => Message {
            role: Role::User,
            content: vec![
                Block::Text {
                    text: format!("note {seed}"),
                },
                Block::ToolResult {
                    call_id: format!("call-{seed}"),
                    content: vec![ResultPart::text(format!("output {seed}\n"))],
                    is_error: seed.is_multiple_of(2),
                },
            ],
            model: None,
        },
        3 => assistant(vec![Block::Text {
            text: format!("answer {seed}"),
        }]),
        4 => assistant(vec![
            Block::Text {
                text: "Reading.".into(),
            },
            Block::ToolCall {
                id: format!("call-{seed}"),
                name: "read".into(),
                input: json!({"path": format!("src/{seed}.rs")}),
            },
        ]),
        5 => assistant(vec![Block::Thinking {
            text: format!("thought {seed}"),
            signature: Some(format!("sig-{seed}")),
            provider: provider.into(),
        }]),
        6 => assistant(vec![Block::Thinking {
            text: "unsigned".into(),
            signature: None,
            provider: provider.into(),
        }]),
        7 => assistant(vec![Block::Opaque {
            provider: provider.into(),
            raw: format!(
                r#"{{"type":"reasoning","id":"rs_{seed}","encrypted_content":"e{seed}"}}"#
            ),
        }]),
        _ => Message::assistant(
            vec![Block::Text {
                text: format!("from elsewhere {seed}"),
            }],
            "other/elsewhere",
        ),
    }
}

/// Grows `request`'s conversation by 200 messages of every kind (a sequence that visits
/// every pair of kinds, so every merge and settle case occurs), rendering it after each
/// with `render` through one cache and through a fresh one, and checks the bodies are the
/// same bytes and that the cache served most of them.
#[cfg(test)]
pub(crate) fn check_growing_conversation(
    mut request: crate::ModelRequest,
    provider: &str,
    model: &str,
    render: impl Fn(&crate::ModelRequest, &RenderCache) -> Bytes,
) {
    let cache = RenderCache::default();
    let mut reused = 0;
    for step in 0..200 {
        let kind = (step * 7 + step / 9) % 9;
        request
            .messages
            .push(sample_message(kind + 9 * step, provider, model));
        if cache.reuse(&request.messages).start() > 0 {
            reused += 1;
        }
        let cached = render(&request, &cache);
        let fresh = render(&request, &RenderCache::default());
        assert_eq!(
            String::from_utf8(cached.to_vec()).expect("UTF-8"),
            String::from_utf8(fresh.to_vec()).expect("UTF-8"),
            "after message {step}"
        );
    }
    assert!(
        reused > 150,
        "the cache was used for {reused} of 200 requests"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(spare: &Spare, text: &[u8]) -> Bytes {
        let mut buffer = spare.take(text.len());
        buffer.extend_from_slice(text);
        Bytes::from_owner(SpareOnDrop {
            buffer,
            spare: spare.clone(),
        })
    }

    #[test]
    fn a_large_bodys_buffer_is_the_next_ones_once_every_slice_is_dropped() {
        let spare = Spare::default();
        let first_text = vec![b'a'; 200 * 1024];
        let first = body_of(&spare, &first_text);
        let kept = first.slice(10..20);
        let address = first.as_ptr();
        drop(first);
        assert!(locked(&spare.0).is_none(), "a slice still holds the body");
        drop(kept);
        let buffer = locked(&spare.0).take().expect("kept as the spare");
        assert_eq!(buffer.as_ptr(), address);
        assert!(buffer.is_empty() && buffer.capacity() >= 250 * 1024);
        *locked(&spare.0) = Some(buffer);

        // The next body, a little longer, is written into the same buffer, whole.
        let second_text = vec![b'b'; 210 * 1024];
        let second = body_of(&spare, &second_text);
        assert_eq!(second.as_ptr(), address);
        assert_eq!(&second[..], &second_text[..]);
        // One too long for it gets a buffer of its own, with room to grow.
        let third_text = vec![b'c'; 400 * 1024];
        drop(second);
        let third = body_of(&spare, &third_text);
        assert_ne!(third.as_ptr(), address);
        assert_eq!(&third[..], &third_text[..]);
    }

    #[test]
    fn small_bodies_leave_no_spare() {
        let spare = Spare::default();
        drop(body_of(&spare, b"{\"messages\":[]}"));
        assert!(locked(&spare.0).is_none());
    }
}
