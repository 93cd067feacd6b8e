//! What a client rendered of its previous request's conversation, reused by the next
//! request of the same [`Lineage`], so a long session renders only its new messages.
//!
//! A provider renders the conversation as a list of wire messages. All but the last are
//! *settled*: appending to the conversation cannot change them (the last may still merge
//! with a following message of the same role, and it carries the prompt-cache
//! breakpoint). The cache keeps the settled messages' JSON and how many conversation
//! messages they cover; a later request of the same lineage, longer than that, starts its
//! list with those bytes and renders from there. One conversation is kept at a time: a
//! request of another lineage renders in full and takes the cache over.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use larik_protocol::sync::locked;

use crate::{Conversation, Lineage};

/// The settled part of one conversation's rendering.
struct Settled {
    lineage: Lineage,
    /// Conversation messages the JSON covers.
    messages: usize,
    /// The settled wire messages, each followed by a comma.
    json: Bytes,
}

/// A client's cache of its latest conversation's settled wire messages; clones share it.
#[derive(Clone, Default)]
pub(crate) struct RenderCache(Arc<Mutex<Option<Settled>>>);

impl RenderCache {
    /// What can be reused for `conversation`: how many of its first messages are already
    /// rendered, and their wire messages' JSON, each followed by a comma. `(0, empty)` when
    /// nothing can.
    pub(crate) fn settled_for(&self, conversation: &Conversation) -> (usize, Bytes) {
        match &*locked(&self.0) {
            Some(settled)
                if settled.lineage == conversation.lineage()
                    && settled.messages < conversation.len() =>
            {
                (settled.messages, settled.json.clone())
            }
            _ => (0, Bytes::new()),
        }
    }

    /// Remembers that `json` (wire messages, each followed by a comma; usually a slice of
    /// the body just sent, shared rather than copied) is the settled rendering of
    /// `conversation`'s first `messages` messages.
    pub(crate) fn keep(&self, conversation: &Conversation, messages: usize, json: Bytes) {
        *locked(&self.0) = Some(Settled {
            lineage: conversation.lineage(),
            messages,
            json,
        });
    }
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
