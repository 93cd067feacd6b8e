//! MCP servers' questions in an LSP editor: `larik/elicit` when the editor declared
//! `experimental.larik.elicitation` (it shows the form and answers like an ACP
//! elicitation: `{action, content}`); otherwise `window/showMessageRequest`, which can
//! carry only choices: a question with no fields (Accept / Decline), one yes-or-no field
//! (Yes / No / Decline) or one field of listed values (each value, Decline). A question
//! that needs a form such an editor cannot show is turned down with why.

use larik_mcp::{Answer, Question};
use serde_json::{Map, Value, json};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::request::ShowMessageRequest;
use tower_lsp_server::ls_types::{MessageActionItem, MessageType, ShowMessageRequestParams};

use super::protocol::Elicit;

/// The button that turns a question down.
const DECLINE: &str = "Decline";

/// Asks the editor `question` for session `session_id`; `larik` when it answers
/// `larik/elicit`.
pub async fn ask(
    client: &Client,
    session_id: &str,
    larik: bool,
    question: Question,
) -> Result<Answer, String> {
    if larik {
        let params = json!({
            "sessionId": session_id,
            "server": question.server,
            "message": question.message,
            "requestedSchema": question.schema,
        });
        let answer = client
            .send_request::<Elicit>(params)
            .await
            .map_err(|error| format!("the editor did not answer the question: {error}"))?;
        return Ok(Answer::from_result(&answer));
    }
    let Some(choices) = Choices::of(&question.schema) else {
        return Err(format!(
            "the editor can show only choices, and this question needs a form, so Larik \
             cannot ask the user: {}",
            question.message
        ));
    };
    let params = ShowMessageRequestParams {
        typ: MessageType::INFO,
        message: format!(
            "The MCP server `{}` asks: {}",
            question.server, question.message
        ),
        actions: Some(
            choices
                .titles()
                .into_iter()
                .map(|title| MessageActionItem {
                    title,
                    properties: Default::default(),
                })
                .collect(),
        ),
    };
    let chosen = client
        .send_request::<ShowMessageRequest>(params)
        .await
        .ok()
        .flatten()
        .map(|item| item.title);
    Ok(match chosen {
        Some(title) => choices.answer(&title),
        None => Answer::Cancel,
    })
}

/// A question that buttons can answer.
#[derive(Debug, PartialEq)]
enum Choices {
    /// No fields: accept or decline.
    Confirm,
    /// One yes-or-no field.
    YesNo(String),
    /// One field of listed values.
    OneOf(String, Vec<String>),
}

impl Choices {
    fn of(schema: &Value) -> Option<Choices> {
        let properties = match schema.get("properties") {
            None | Some(Value::Null) => return Some(Choices::Confirm),
            Some(Value::Object(properties)) => properties,
            Some(_) => return None,
        };
        let mut fields = properties.iter();
        let Some((name, field)) = fields.next() else {
            return Some(Choices::Confirm);
        };
        if fields.next().is_some() {
            return None;
        }
        if field["type"] == "boolean" {
            return Some(Choices::YesNo(name.clone()));
        }
        let values: Vec<String> = field["enum"]
            .as_array()?
            .iter()
            .filter_map(|value| value.as_str().map(str::to_string))
            .filter(|value| value != DECLINE)
            .collect();
        (!values.is_empty()).then(|| Choices::OneOf(name.clone(), values))
    }

    fn titles(&self) -> Vec<String> {
        let mut titles = match self {
            Choices::Confirm => vec!["Accept".to_string()],
            Choices::YesNo(_) => vec!["Yes".to_string(), "No".to_string()],
            Choices::OneOf(_, values) => values.clone(),
        };
        titles.push(DECLINE.to_string());
        titles
    }

    fn answer(&self, title: &str) -> Answer {
        if title == DECLINE {
            return Answer::Decline;
        }
        let mut values = Map::new();
        match self {
            Choices::Confirm => {}
            Choices::YesNo(name) => {
                values.insert(name.clone(), Value::Bool(title == "Yes"));
            }
            Choices::OneOf(name, options) => {
                if !options.iter().any(|option| option == title) {
                    return Answer::Cancel;
                }
                values.insert(name.clone(), Value::String(title.to_string()));
            }
        }
        Answer::Accept(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_questions_buttons_can_answer_become_choices() {
        let confirm = Choices::of(&json!({"type": "object", "properties": {}}));
        assert_eq!(confirm, Some(Choices::Confirm));
        let yes_no =
            Choices::of(&json!({"properties": {"ok": {"type": "boolean"}}})).expect("choices");
        assert_eq!(yes_no.titles(), ["Yes", "No", "Decline"]);
        assert_eq!(
            yes_no.answer("No"),
            Answer::Accept(
                json!({"ok": false})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            )
        );
        let pick =
            Choices::of(&json!({"properties": {"size": {"type": "string", "enum": ["S", "L"]}}}))
                .expect("choices");
        assert_eq!(pick.titles(), ["S", "L", "Decline"]);
        assert_eq!(pick.answer("Decline"), Answer::Decline);
        assert_eq!(pick.answer("XL"), Answer::Cancel);
        assert_eq!(
            Choices::of(&json!({"properties": {"name": {"type": "string"}}})),
            None
        );
        assert_eq!(
            Choices::of(
                &json!({"properties": {"a": {"type": "boolean"}, "b": {"type": "boolean"}}})
            ),
            None
        );
    }
}
