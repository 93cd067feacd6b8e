//! Prompt-cache stability: every request of a context must be a byte-exact extension of
//! the context's previous request, or the provider's prompt cache cannot serve it.
//!
//! A context is named by the endpoint, the model and the first conversation message: a
//! compaction starts a new one (its first message is the summary), and so does a request
//! that carries a single message (a new session, even with the same first prompt). Within a
//! context each request must keep the system prompt and the tools exactly, and its message
//! list must begin with every message of the previous request, each serialised identically.
//! Anthropic `cache_control` markers are left out of the comparison: they mark where the
//! cache is written and move forward on purpose; the cached content itself is what must not
//! change.
//!
//! A request may also go back to an earlier point of its context: after a rewind, or after
//! a summary request (the conversation plus one instruction) that failed or was
//! interrupted. Such a request repeats a prefix of the previous one and ends with a new user
//! message where the previous one went on; it counts as a branch, not as an extension.
//! Changing any message before the last is still a violation.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

/// How the requests seen so far relate to the ones before them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PrefixStats {
    /// Requests that continued a context and were compared with its previous request.
    pub compared: usize,
    /// Of those, the ones that extended it byte-exactly.
    pub extended: usize,
    /// Requests that went back to an earlier point of their context with a new user
    /// message: a rewind, or the conversation carrying on after a summary request that
    /// failed or was interrupted. They read the shorter prefix from the cache.
    pub branches: usize,
    /// Requests that began a context (a first prompt or the first request after a
    /// compaction).
    pub contexts: usize,
}

impl PrefixStats {
    /// The share of compared requests that extended the previous one, 1.0 when none was
    /// compared.
    pub fn share_extended(&self) -> f64 {
        if self.compared == 0 {
            1.0
        } else {
            self.extended as f64 / self.compared as f64
        }
    }
}

/// The parts of a request the prompt cache reads, in a form compared byte by byte.
struct Prefix {
    /// System prompt and tools (and anything else sent before the messages).
    head: String,
    /// Each message serialised on its own.
    messages: Vec<String>,
}

/// What a context remembers of its latest request.
struct Latest {
    request: usize,
    prefix: Prefix,
}

/// Follows the contexts the requests belong to.
#[derive(Default)]
pub(crate) struct Tracker {
    contexts: HashMap<String, Latest>,
    stats: PrefixStats,
}

impl Tracker {
    /// The counts so far.
    pub(crate) fn stats(&self) -> PrefixStats {
        self.stats
    }

    /// Takes request number `number` to `path` and says what is wrong with it, if anything.
    pub(crate) fn observe(&mut self, number: usize, path: &str, body: &Value) -> Option<String> {
        let prefix = extract(path, body)?;
        let model = body.get("model").and_then(Value::as_str).unwrap_or("");
        let first = prefix.messages.first()?;
        let key = format!("{path}\n{model}\n{first}");
        let continues = prefix.messages.len() > 1;
        let Some(latest) = self.contexts.get(&key).filter(|_| continues) else {
            self.stats.contexts += 1;
            self.contexts.insert(
                key,
                Latest {
                    request: number,
                    prefix,
                },
            );
            return None;
        };
        let difference = difference(&latest.prefix, &prefix);
        if difference.is_some() && branches_off(&latest.prefix, &prefix) {
            self.stats.branches += 1;
            self.contexts.insert(
                key,
                Latest {
                    request: number,
                    prefix,
                },
            );
            return None;
        }
        self.stats.compared += 1;
        let problem = difference.map(|what| {
            format!(
                "does not extend request {} byte-exactly, so the prompt cache misses: {what}",
                latest.request
            )
        });
        if problem.is_none() {
            self.stats.extended += 1;
        }
        self.contexts.insert(
            key,
            Latest {
                request: number,
                prefix,
            },
        );
        problem
    }
}

/// Whether `next` goes back to an earlier point of `previous`: everything but its last
/// message is a prefix of `previous`, and its last message is a user message that differs
/// from the one `previous` had there.
fn branches_off(previous: &Prefix, next: &Prefix) -> bool {
    let Some((last, kept)) = next.messages.split_last() else {
        return false;
    };
    let last_is_user = serde_json::from_str::<Value>(last)
        .ok()
        .and_then(|message| {
            message
                .get("role")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .is_some_and(|role| role == "user");
    last_is_user
        && previous.head == next.head
        && kept.len() < previous.messages.len()
        && previous.messages.starts_with(kept)
        && previous.messages[kept.len()] != *last
}

/// Why `next` does not extend `previous`, or `None` when it does.
fn difference(previous: &Prefix, next: &Prefix) -> Option<String> {
    if previous.head != next.head {
        return Some("the system prompt or the tools changed".into());
    }
    if next.messages.len() < previous.messages.len() {
        return Some(format!(
            "it has {} messages, the previous request had {}",
            next.messages.len(),
            previous.messages.len()
        ));
    }
    let last = previous.messages.len().saturating_sub(1);
    previous
        .messages
        .iter()
        .zip(&next.messages)
        .enumerate()
        .position(|(index, (before, now))| {
            before != now && !(index == last && grows_at_the_end(before, now))
        })
        .map(|index| {
            format!(
                "message {index} changed from {} to {}",
                excerpt(&previous.messages[index]),
                excerpt(&next.messages[index])
            )
        })
}

/// Whether message `now` is message `before` with more content blocks after its own: a
/// renderer that merges consecutive messages of one role (Anthropic's user turns) extends
/// the previous request's last message this way, and the cached prefix, which ends with
/// that message's last block, still matches.
fn grows_at_the_end(before: &str, now: &str) -> bool {
    let parse = |text: &str| serde_json::from_str::<Value>(text).ok();
    let (Some(Value::Object(before)), Some(Value::Object(now))) = (parse(before), parse(now))
    else {
        return false;
    };
    let content_key = ["content", "parts"]
        .into_iter()
        .find(|key| before.contains_key(*key));
    let Some(key) = content_key else {
        return false;
    };
    let others_equal = before.len() == now.len()
        && before
            .iter()
            .all(|(name, value)| name == key || now.get(name) == Some(value));
    let (Some(Value::Array(old)), Some(Value::Array(new))) = (before.get(key), now.get(key)) else {
        return false;
    };
    others_equal && new.len() > old.len() && new.starts_with(old)
}

fn excerpt(text: &str) -> String {
    const MAX: usize = 300;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The cached parts of a request in the wire format `path` speaks; `None` for endpoints
/// that carry no conversation.
fn extract(path: &str, body: &Value) -> Option<Prefix> {
    let field = |name: &str| body.get(name).cloned().unwrap_or(Value::Null);
    let (head, messages): (Vec<Value>, Value) = if path == "/v1/messages" {
        (vec![field("system"), field("tools")], field("messages"))
    } else if path == "/v1/responses" {
        (vec![field("instructions"), field("tools")], field("input"))
    } else if path == "/v1/chat/completions" || path == "/api/chat" {
        // The system prompt travels as the first message; it is part of the head.
        let all = body.get("messages")?.as_array()?;
        let system: Vec<Value> = all
            .iter()
            .take_while(|message| message.get("role").and_then(Value::as_str) == Some("system"))
            .cloned()
            .collect();
        let rest = all[system.len()..].to_vec();
        (
            vec![Value::Array(system), field("tools")],
            Value::Array(rest),
        )
    } else if path.starts_with("/v1beta/models/") {
        (
            vec![field("systemInstruction"), field("tools")],
            field("contents"),
        )
    } else {
        return None;
    };
    let messages = messages.as_array()?;
    Some(Prefix {
        head: serialise(&Value::Array(head)),
        messages: messages.iter().map(serialise).collect(),
    })
}

/// Serialises `value` with every `cache_control` member left out.
fn serialise(value: &Value) -> String {
    fn strip(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(key, _)| key.as_str() != "cache_control")
                    .map(|(key, value)| (key.clone(), strip(value)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    strip(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn anthropic(messages: Value) -> Value {
        json!({"model": "m", "system": [{"type": "text", "text": "sys"}], "tools": [], "messages": messages})
    }

    #[test]
    fn growing_requests_extend_and_moved_cache_markers_do_not_matter() {
        let mut tracker = Tracker::default();
        let first = anthropic(json!([{"role": "user", "content": "hi"}]));
        let second = anthropic(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "yo", "cache_control": {"type": "ephemeral"}}]},
        ]));
        let third = anthropic(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
            {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}]},
        ]));
        for (number, body) in [first, second, third].iter().enumerate() {
            assert_eq!(tracker.observe(number + 1, "/v1/messages", body), None);
        }
        assert_eq!(
            tracker.stats(),
            PrefixStats {
                compared: 2,
                extended: 2,
                branches: 0,
                contexts: 1
            }
        );
    }

    #[test]
    fn a_changed_earlier_message_or_system_prompt_is_reported() {
        let mut tracker = Tracker::default();
        let two = |reply: &str| {
            anthropic(json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": reply},
            ]))
        };
        assert_eq!(tracker.observe(1, "/v1/messages", &two("a")), None);
        let problem = tracker
            .observe(2, "/v1/messages", &two("b"))
            .expect("changed message");
        assert!(problem.contains("message 1 changed"), "{problem}");
        let mut other_system = two("b");
        other_system["system"] = json!("changed");
        let problem = tracker
            .observe(3, "/v1/messages", &other_system)
            .expect("changed system");
        assert!(problem.contains("system prompt"), "{problem}");
        assert_eq!(tracker.stats().compared, 2);
        assert_eq!(tracker.stats().extended, 0);
        assert!(tracker.stats().share_extended() < 0.01);
    }

    #[test]
    fn going_back_with_a_new_user_message_is_a_branch_not_a_violation() {
        let mut tracker = Tracker::default();
        let base = json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
        ]);
        let with = |extra: Value| {
            let mut messages = base.as_array().expect("array").clone();
            messages.push(extra);
            anthropic(Value::Array(messages))
        };
        assert_eq!(
            tracker.observe(1, "/v1/messages", &anthropic(base.clone())),
            None
        );
        let summary = with(json!({"role": "user", "content": "summarise"}));
        assert_eq!(tracker.observe(2, "/v1/messages", &summary), None);
        let next = with(json!({"role": "user", "content": "next question"}));
        assert_eq!(tracker.observe(3, "/v1/messages", &next), None);
        assert_eq!(tracker.stats().branches, 1);
        assert_eq!(tracker.stats().compared, 1);
        // A rewind to the first answer, with a new question.
        let rewind = anthropic(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
            {"role": "user", "content": "rewound"},
        ]));
        assert_eq!(tracker.observe(4, "/v1/messages", &rewind), None);
        assert_eq!(tracker.stats().branches, 2);
        // Replacing an assistant message before the last is a change.
        let mut changed_reply = with(json!({"role": "user", "content": "other"}));
        changed_reply["messages"][1]["content"] = json!("changed");
        assert!(tracker.observe(5, "/v1/messages", &changed_reply).is_some());
    }

    #[test]
    fn blocks_appended_to_the_last_message_extend_it_but_not_to_an_earlier_one() {
        let mut tracker = Tracker::default();
        let result = json!({"type": "tool_result", "tool_use_id": "c", "content": "ok"});
        let instruction = json!({"type": "text", "text": "summarise"});
        let first = anthropic(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c"}]},
            {"role": "user", "content": [result]},
        ]));
        let merged = anthropic(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c"}]},
            {"role": "user", "content": [result, instruction]},
        ]));
        assert_eq!(tracker.observe(1, "/v1/messages", &first), None);
        assert_eq!(tracker.observe(2, "/v1/messages", &merged), None);
        assert_eq!(tracker.stats().extended, 1);
        let mut grown_earlier = merged.clone();
        grown_earlier["messages"][1]["content"]
            .as_array_mut()
            .expect("blocks")
            .push(json!({"type": "text", "text": "late"}));
        assert!(tracker.observe(3, "/v1/messages", &grown_earlier).is_some());
    }

    #[test]
    fn single_message_requests_and_new_first_messages_start_contexts() {
        let mut tracker = Tracker::default();
        let chat = |messages: Value| json!({"model": "m", "messages": messages});
        let long = chat(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "x"},
        ]));
        let restart =
            chat(json!([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]));
        let summary = chat(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "summary"},
            {"role": "assistant", "content": "ok"},
        ]));
        assert_eq!(tracker.observe(1, "/v1/chat/completions", &long), None);
        assert_eq!(tracker.observe(2, "/v1/chat/completions", &restart), None);
        assert_eq!(tracker.observe(3, "/v1/chat/completions", &summary), None);
        assert_eq!(tracker.stats().contexts, 3);
        assert_eq!(tracker.stats().compared, 0);
    }
}
