//! Questions a server puts to the user in the middle of a call (MCP elicitation, form
//! mode). A session hands its tools an [`Asker`] (the front end, which shows the question
//! and returns the user's answer); while a call of the session waits on a server, that
//! asker is the one the server's questions go to (the latest call's, when several
//! sessions share the server). A question that comes when no call waits, or that no one
//! can answer (`larik -p`), is turned down with a message saying why; URL-mode questions
//! are declined.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use larik_protocol::sync::locked;
use serde_json::{Map, Value};

/// A server's question.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// The server asking.
    pub server: String,
    /// What it asks, for the user.
    pub message: String,
    /// The answer's shape: a JSON Schema object of flat properties (strings, numbers,
    /// booleans, enums).
    pub schema: Value,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Answered with these values.
    Accept(Map<String, Value>),
    /// Said no.
    Decline,
    /// Dismissed the question (or the turn was interrupted).
    Cancel,
}

impl Answer {
    /// The answer in the shape MCP and ACP results give it, `{action, content?}`: an
    /// `accept` with its values (an object; anything else counts as none), `decline`, and
    /// anything else as dismissed.
    pub fn from_result(result: &Value) -> Answer {
        match result["action"].as_str() {
            Some("accept") => {
                Answer::Accept(result["content"].as_object().cloned().unwrap_or_default())
            }
            Some("decline") => Answer::Decline,
            _ => Answer::Cancel,
        }
    }
}

/// Who answers a session's questions.
#[async_trait::async_trait]
pub trait Asker: Send + Sync {
    /// Puts `question` to the user; `Err` says why no one can answer.
    async fn ask(&self, question: Question) -> Result<Answer, String>;
}

/// The asker of a session that has no one to answer.
pub(crate) struct NoOneToAsk;

#[async_trait::async_trait]
impl Asker for NoOneToAsk {
    async fn ask(&self, _question: Question) -> Result<Answer, String> {
        Err("Larik cannot put questions to the user in this session".to_string())
    }
}

/// The askers of the calls waiting on one server, the latest last.
#[derive(Default)]
pub(crate) struct Askers {
    waiting: Mutex<Vec<(u64, Arc<dyn Asker>)>>,
    next: AtomicU64,
}

/// Keeps an asker in place while its call waits.
pub(crate) struct Waiting {
    askers: Arc<Askers>,
    number: u64,
}

impl Askers {
    /// Puts `asker` first in line until the returned guard is dropped.
    pub(crate) fn waiting(self: &Arc<Self>, asker: Arc<dyn Asker>) -> Waiting {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        locked(&self.waiting).push((number, asker));
        Waiting {
            askers: Arc::clone(self),
            number,
        }
    }

    /// The asker of the latest call waiting.
    pub(crate) fn current(&self) -> Option<Arc<dyn Asker>> {
        locked(&self.waiting)
            .last()
            .map(|(_, asker)| Arc::clone(asker))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        locked(&self.askers.waiting).retain(|(number, _)| *number != self.number);
    }
}

/// What a front end's answer becomes for the server: the accepted values must be an
/// object of the schema's properties (others are dropped); anything else is a refusal.
pub(crate) fn checked(answer: Answer, schema: &Value) -> Answer {
    let Answer::Accept(values) = answer else {
        return answer;
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    let kept: Map<String, Value> = values
        .into_iter()
        .filter(|(name, _)| properties.is_some_and(|properties| properties.contains_key(name)))
        .collect();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    if required.iter().all(|name| kept.contains_key(*name)) {
        Answer::Accept(kept)
    } else {
        Answer::Decline
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Fixed(&'static str);

    #[async_trait::async_trait]
    impl Asker for Fixed {
        async fn ask(&self, _question: Question) -> Result<Answer, String> {
            Err(self.0.to_string())
        }
    }

    #[tokio::test]
    async fn the_latest_waiting_call_is_asked_and_leaves_when_done() {
        let askers = Arc::new(Askers::default());
        assert!(askers.current().is_none());
        let first = askers.waiting(Arc::new(Fixed("first")));
        let second = askers.waiting(Arc::new(Fixed("second")));
        let question = Question {
            server: "s".into(),
            message: "m".into(),
            schema: json!({}),
        };
        let asked = askers.current().expect("an asker");
        assert_eq!(asked.ask(question.clone()).await, Err("second".to_string()));
        drop(second);
        let asked = askers.current().expect("an asker");
        assert_eq!(asked.ask(question).await, Err("first".to_string()));
        drop(first);
        assert!(askers.current().is_none());
    }

    #[test]
    fn a_result_reads_as_the_users_answer() {
        assert_eq!(
            Answer::from_result(&json!({"action": "accept", "content": {"name": "Ada"}})),
            Answer::Accept(
                json!({"name": "Ada"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            )
        );
        assert_eq!(
            Answer::from_result(&json!({"action": "decline"})),
            Answer::Decline
        );
        assert_eq!(
            Answer::from_result(&json!({"action": "cancel"})),
            Answer::Cancel
        );
        assert_eq!(
            Answer::from_result(&json!({"action": "sideways"})),
            Answer::Cancel
        );
    }

    #[test]
    fn an_answer_keeps_only_the_schemas_properties_and_needs_the_required_ones() {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]});
        let values = |value: Value| value.as_object().cloned().expect("an object");
        assert_eq!(
            checked(
                Answer::Accept(values(json!({"name": "Ada", "extra": 1}))),
                &schema
            ),
            Answer::Accept(values(json!({"name": "Ada"})))
        );
        assert_eq!(
            checked(Answer::Accept(values(json!({"age": 3}))), &schema),
            Answer::Decline
        );
        assert_eq!(checked(Answer::Cancel, &schema), Answer::Cancel);
    }
}
