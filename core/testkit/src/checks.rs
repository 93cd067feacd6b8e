//! Protocol checks run on every request: each tool result answers an earlier tool call,
//! each tool call gets its result in time, no call id is empty or repeated, and (for the
//! Anthropic format) user and assistant messages alternate. Each problem is one readable
//! line; the caller prefixes the request number.

use std::collections::HashSet;

use serde_json::Value;

/// Problems in an Anthropic Messages request body.
pub(crate) fn anthropic(body: &Value) -> Vec<String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return vec!["no `messages` array".to_string()];
    };
    let mut problems = Vec::new();
    let mut calls: HashSet<&str> = HashSet::new();
    let mut results: HashSet<&str> = HashSet::new();
    // Tool calls of the previous assistant message, still waiting for their results.
    let mut pending: Vec<(usize, &str)> = Vec::new();
    let mut previous_role: Option<&str> = None;

    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        match (previous_role, role) {
            (None, "user") | (Some("user"), "assistant") | (Some("assistant"), "user") => {}
            (None, other) => problems.push(format!(
                "messages[0] has role `{other}`; the conversation must start with `user`"
            )),
            (Some(before), now) if before == now => problems.push(format!(
                "messages[{}] and messages[{index}] are both `{now}`; roles must alternate",
                index - 1
            )),
            (Some(_), other) => {
                problems.push(format!("messages[{index}] has unexpected role `{other}`"))
            }
        }
        previous_role = Some(role);

        let blocks = message
            .get("content")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let of_type = |kind: &'static str| {
            blocks
                .iter()
                .filter(move |block| block.get("type").and_then(Value::as_str) == Some(kind))
        };

        if role == "user" {
            let mut answered_here: HashSet<&str> = HashSet::new();
            for result in of_type("tool_result") {
                let id = result
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if id.is_empty() {
                    problems.push(format!(
                        "messages[{index}]: tool_result with an empty tool_use_id"
                    ));
                    continue;
                }
                if !results.insert(id) {
                    problems.push(format!(
                        "messages[{index}]: tool_result for `{id}` appears more than once"
                    ));
                }
                if !calls.contains(id) {
                    problems.push(format!(
                        "messages[{index}]: tool_result for `{id}` answers no tool_use in an earlier assistant message"
                    ));
                }
                answered_here.insert(id);
            }
            for (call_index, id) in pending.drain(..) {
                if !answered_here.contains(id) {
                    problems.push(format!(
                        "messages[{call_index}]: tool_use `{id}` is not answered by a tool_result in the next user message"
                    ));
                }
            }
        } else {
            for (call_index, id) in pending.drain(..) {
                problems.push(format!(
                    "messages[{call_index}]: tool_use `{id}` is not answered by a tool_result in the next user message"
                ));
            }
            for call in of_type("tool_use") {
                let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                if id.is_empty() {
                    problems.push(format!("messages[{index}]: tool_use with an empty id"));
                    continue;
                }
                if !calls.insert(id) {
                    problems.push(format!(
                        "messages[{index}]: tool_use id `{id}` appears more than once"
                    ));
                }
                pending.push((index, id));
            }
        }
    }
    for (call_index, id) in pending {
        problems.push(format!(
            "messages[{call_index}]: tool_use `{id}` is not answered; the conversation ends after it"
        ));
    }
    problems
}

/// Problems in an OpenAI Responses request body.
pub(crate) fn openai(body: &Value) -> Vec<String> {
    let items = match body.get("input") {
        Some(Value::Array(items)) => items,
        // A plain string input has no tool traffic to check.
        Some(Value::String(_)) => return Vec::new(),
        _ => return vec!["no `input` array or string".to_string()],
    };
    // With `previous_response_id` the calls being answered live on the server side.
    let continues_response = body
        .get("previous_response_id")
        .is_some_and(|id| id.as_str().is_some_and(|id| !id.is_empty()));
    let mut problems = Vec::new();
    let mut calls: HashSet<&str> = HashSet::new();
    let mut outputs: HashSet<&str> = HashSet::new();
    let mut pending: Vec<(usize, &str)> = Vec::new();

    for (index, item) in items.iter().enumerate() {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_else(|| {
            // The short message form has a role and no type.
            if item.get("role").is_some() {
                "message"
            } else {
                ""
            }
        });
        let call_id = || item.get("call_id").and_then(Value::as_str).unwrap_or("");
        match kind {
            "function_call" => {
                let id = call_id();
                if id.is_empty() {
                    problems.push(format!(
                        "input[{index}]: function_call with an empty call_id"
                    ));
                    continue;
                }
                if !calls.insert(id) {
                    problems.push(format!(
                        "input[{index}]: function_call call_id `{id}` appears more than once"
                    ));
                }
                pending.push((index, id));
            }
            "function_call_output" => {
                let id = call_id();
                if id.is_empty() {
                    problems.push(format!(
                        "input[{index}]: function_call_output with an empty call_id"
                    ));
                    continue;
                }
                if !outputs.insert(id) {
                    problems.push(format!(
                        "input[{index}]: function_call_output for `{id}` appears more than once"
                    ));
                }
                if !calls.contains(id) && !continues_response {
                    problems.push(format!(
                        "input[{index}]: function_call_output for `{id}` answers no earlier function_call"
                    ));
                }
                pending.retain(|(_, waiting)| *waiting != id);
            }
            "message" if item.get("role").and_then(Value::as_str) == Some("user") => {
                for (call_index, id) in pending.drain(..) {
                    problems.push(format!(
                        "input[{call_index}]: function_call `{id}` has no function_call_output before the user message input[{index}]"
                    ));
                }
            }
            _ => {}
        }
    }
    for (call_index, id) in pending {
        problems.push(format!(
            "input[{call_index}]: function_call `{id}` has no function_call_output before the input ends"
        ));
    }
    problems
}

/// Problems in a Chat Completions request body: system messages only at the start, user
/// first after them, no two user or two assistant messages in a row, every tool call id
/// non-empty and unique, and every `tool` message answering a call of the assistant message
/// just before its run, each call answered before the conversation moves on.
pub(crate) fn openai_chat(body: &Value) -> Vec<String> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return vec!["no `messages` array".to_string()];
    };
    let mut problems = Vec::new();
    let mut calls: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    // Calls of the last assistant message still waiting for a `tool` message.
    let mut pending: Vec<(usize, &str)> = Vec::new();
    let mut previous: Option<&str> = None;
    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "tool" {
            for (call_index, id) in pending.drain(..) {
                problems.push(format!(
                    "messages[{call_index}]: tool call `{id}` is not answered by a tool message before messages[{index}]"
                ));
            }
        }
        match (previous, role) {
            (None | Some("system"), "system") => {}
            (_, "system") => problems.push(format!(
                "messages[{index}]: a system message after the conversation started"
            )),
            (None | Some("system"), "user") => {}
            (None | Some("system"), other) => problems.push(format!(
                "messages[{index}] has role `{other}`; the conversation must start with `user`"
            )),
            (Some(before), now) if before == now && now != "tool" => problems.push(format!(
                "messages[{}] and messages[{index}] are both `{now}`; roles must alternate",
                index - 1
            )),
            (Some("user"), "tool") => problems.push(format!(
                "messages[{index}]: a tool message after a user message"
            )),
            (_, "user" | "assistant" | "tool") => {}
            (_, other) => problems.push(format!("messages[{index}] has unexpected role `{other}`")),
        }
        previous = Some(role);
        match role {
            "assistant" => {
                let tool_calls = message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                for call in tool_calls {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    if id.is_empty() {
                        problems.push(format!("messages[{index}]: tool call with an empty id"));
                        continue;
                    }
                    if !calls.insert(id) {
                        problems.push(format!(
                            "messages[{index}]: tool call id `{id}` appears more than once"
                        ));
                    }
                    pending.push((index, id));
                }
            }
            "tool" => {
                let id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if id.is_empty() {
                    problems.push(format!(
                        "messages[{index}]: tool message with an empty tool_call_id"
                    ));
                    continue;
                }
                if !answered.insert(id) {
                    problems.push(format!(
                        "messages[{index}]: tool message for `{id}` appears more than once"
                    ));
                }
                match pending.iter().position(|(_, call)| *call == id) {
                    Some(position) => {
                        pending.remove(position);
                    }
                    None if calls.contains(id) => problems.push(format!(
                        "messages[{index}]: tool message for `{id}` does not follow the assistant message that called it"
                    )),
                    None => problems.push(format!(
                        "messages[{index}]: tool message for `{id}` answers no earlier tool call"
                    )),
                }
            }
            _ => {}
        }
    }
    for (call_index, id) in pending {
        problems.push(format!(
            "messages[{call_index}]: tool call `{id}` is not answered; the conversation ends after it"
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{anthropic, openai, openai_chat};

    #[test]
    fn a_well_formed_anthropic_tool_round_trip_passes() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "let me look"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "b"},
            ]},
        ]});
        assert_eq!(anthropic(&body), Vec::<String>::new());
    }

    #[test]
    fn anthropic_problems_are_each_reported() {
        let body = json!({"messages": [
            {"role": "assistant", "content": "prefill first"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost"}]},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "", "name": "x", "input": {}},
                {"type": "tool_use", "id": "t9", "name": "x", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t9"},
                {"type": "tool_result", "tool_use_id": "t9"},
            ]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t10", "name": "x", "input": {}}]},
        ]});
        let problems = anthropic(&body);
        let expected = [
            "must start with `user`",
            "`ghost` answers no tool_use",
            "messages[1] and messages[2] are both `user`",
            "tool_use with an empty id",
            "`t9` appears more than once",
            "`t10` is not answered",
        ];
        for needle in expected {
            assert!(
                problems.iter().any(|problem| problem.contains(needle)),
                "missing {needle:?} in {problems:#?}"
            );
        }
        assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    }

    #[test]
    fn anthropic_tool_use_must_be_answered_in_the_very_next_user_message() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
            {"role": "user", "content": "never mind"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        ]});
        let problems = anthropic(&body);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("messages[1]: tool_use `t1` is not answered"));
    }

    #[test]
    fn openai_checks_pairing_ids_and_order() {
        let good = json!({"input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "x", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "message", "role": "user", "content": "next"},
        ]});
        assert_eq!(openai(&good), Vec::<String>::new());

        let bad = json!({"input": [
            {"type": "function_call_output", "call_id": "orphan", "output": "?"},
            {"type": "function_call", "call_id": "", "name": "x", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "x", "arguments": "{}"},
            {"role": "user", "content": "interrupt"},
            {"type": "function_call_output", "call_id": "c2", "output": "late"},
            {"type": "function_call_output", "call_id": "c2", "output": "again"},
            {"type": "function_call", "call_id": "c3", "name": "x", "arguments": "{}"},
        ]});
        let problems = openai(&bad);
        let expected = [
            "`orphan` answers no earlier function_call",
            "function_call with an empty call_id",
            "`c2` has no function_call_output before the user message input[3]",
            "output for `c2` appears more than once",
            "`c3` has no function_call_output before the input ends",
        ];
        for needle in expected {
            assert!(
                problems.iter().any(|problem| problem.contains(needle)),
                "missing {needle:?} in {problems:#?}"
            );
        }
        assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    }

    #[test]
    fn openai_outputs_may_answer_a_previous_response() {
        let body = json!({"previous_response_id": "resp_1", "input": [
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ]});
        assert_eq!(openai(&body), Vec::<String>::new());
    }

    #[test]
    fn a_well_formed_chat_tool_round_trip_passes() {
        let body = json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "b", "content": "y"},
            {"role": "user", "content": "more"},
        ]});
        assert_eq!(openai_chat(&body), Vec::<String>::new());
    }

    #[test]
    fn chat_problems_are_each_reported() {
        let body = json!({"messages": [
            {"role": "assistant", "content": "first"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function"}, {"id": "", "type": "function"},
                {"id": "a", "type": "function"}]},
            {"role": "tool", "tool_call_id": "zzz", "content": "x"},
            {"role": "user", "content": "more"},
            {"role": "user", "content": "again"},
            {"role": "system", "content": "late"},
        ]});
        let problems = openai_chat(&body);
        let expect = [
            "must start with `user`",
            "empty id",
            "`a` appears more than once",
            "answers no earlier tool call",
            "tool call `a` is not answered",
            "both `user`",
            "system message after",
        ];
        for wanted in expect {
            assert!(
                problems.iter().any(|problem| problem.contains(wanted)),
                "missing {wanted:?} in {problems:#?}"
            );
        }
        assert_eq!(openai_chat(&json!({})), ["no `messages` array"]);
    }
}
