//! The conversation a request carries: shared, append-only between replacements, and
//! marked with a [`Lineage`] so a provider can reuse what it rendered for an earlier
//! request of the same conversation.
//!
//! The guarantee a lineage gives: two conversations with the same lineage agree on every
//! message the shorter one has. It holds because every conversation of one lineage shares
//! one allocation, only [`Conversation::push`] keeps the lineage, and it keeps it only when
//! no other conversation shares that allocation; any other change, a push to a shared
//! conversation, and every new conversation take a lineage never used before.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use larik_protocol::Message;

/// The identity of one append-only history of messages (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lineage(u64);

impl Lineage {
    /// A lineage no conversation of this process had before.
    fn fresh() -> Lineage {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Lineage(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// Messages shared between the agent and its requests; cloning is cheap.
#[derive(Clone)]
pub struct Conversation {
    messages: Arc<Vec<Message>>,
    lineage: Lineage,
}

impl Conversation {
    /// A conversation of `messages`, with a lineage of its own.
    pub fn new(messages: Vec<Message>) -> Conversation {
        Conversation {
            messages: Arc::new(messages),
            lineage: Lineage::fresh(),
        }
    }

    /// The history this conversation belongs to.
    pub fn lineage(&self) -> Lineage {
        self.lineage
    }

    /// The messages.
    pub fn as_slice(&self) -> &[Message] {
        &self.messages
    }

    /// Appends `message`. A conversation nothing else shares grows in place and keeps its
    /// lineage; a shared one is copied first and takes a new lineage, so the others sharing
    /// the old one never see a message they do not have.
    pub fn push(&mut self, message: Message) {
        match Arc::get_mut(&mut self.messages) {
            Some(messages) => messages.push(message),
            None => {
                let mut messages = Vec::with_capacity(self.messages.len() + 1);
                messages.extend(self.messages.iter().cloned());
                messages.push(message);
                *self = Conversation::new(messages);
            }
        }
    }

    /// Keeps the messages before `at` and returns the rest; the conversation takes a new
    /// lineage.
    pub fn split_off(&mut self, at: usize) -> Vec<Message> {
        let mut messages = Arc::unwrap_or_clone(std::mem::take(&mut self.messages));
        let rest = messages.split_off(at.min(messages.len()));
        *self = Conversation::new(messages);
        rest
    }
}

impl Default for Conversation {
    fn default() -> Conversation {
        Conversation::new(Vec::new())
    }
}

impl From<Vec<Message>> for Conversation {
    fn from(messages: Vec<Message>) -> Conversation {
        Conversation::new(messages)
    }
}

impl Deref for Conversation {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

/// Two conversations are equal when their messages are; the lineage is bookkeeping.
impl PartialEq for Conversation {
    fn eq(&self, other: &Conversation) -> bool {
        self.messages == other.messages
    }
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_list()
            .entries(self.messages.iter())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unshared_conversation_keeps_its_lineage_as_it_grows() {
        let mut conversation = Conversation::new(vec![Message::user_text("one")]);
        let lineage = conversation.lineage();
        conversation.push(Message::user_text("two"));
        assert_eq!(conversation.lineage(), lineage);
        assert_eq!(conversation.len(), 2);
    }

    #[test]
    fn a_push_to_a_shared_conversation_moves_the_pusher_to_a_new_lineage() {
        let mut first = Conversation::new(vec![Message::user_text("one")]);
        let mut second = first.clone();
        assert_eq!(first.lineage(), second.lineage());
        first.push(Message::user_text("two"));
        assert_ne!(first.lineage(), second.lineage());
        // The other is alone in the old lineage now and may grow in it.
        let old = second.lineage();
        second.push(Message::user_text("three"));
        assert_eq!(second.lineage(), old);
        assert_eq!(first[1], Message::user_text("two"));
        assert_eq!(second[1], Message::user_text("three"));
    }

    #[test]
    fn splitting_and_new_conversations_take_new_lineages() {
        let mut conversation =
            Conversation::new(vec![Message::user_text("one"), Message::user_text("two")]);
        let lineage = conversation.lineage();
        let rest = conversation.split_off(1);
        assert_eq!(rest, vec![Message::user_text("two")]);
        assert_ne!(conversation.lineage(), lineage);
        assert_ne!(
            Conversation::default().lineage(),
            Conversation::default().lineage()
        );
    }
}
