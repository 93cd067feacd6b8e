//! MCP servers' questions as ACP elicitations: a form-mode `elicitation/create` scoped to
//! the session, when the editor declared form elicitation in `initialize`; the editor's
//! answer comes back as the user's. An editor without it, or a form ACP cannot carry, gets
//! no request: the server hears why.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{CreateElicitationRequest, SessionId};
use larik_mcp::{Answer, Question};
use serde_json::{Value, json};

/// Asks the editor `question` for session `session_id`.
pub async fn ask(
    connection: &ConnectionTo<Client>,
    session_id: &SessionId,
    question: Question,
) -> Result<Answer, String> {
    let message = format!(
        "The MCP server `{}` asks: {}",
        question.server, question.message
    );
    let request: CreateElicitationRequest = serde_json::from_value(json!({
        "mode": "form",
        "sessionId": session_id,
        "message": message,
        "requestedSchema": question.schema,
    }))
    .map_err(|error| format!("the editor cannot show this question's form ({error})"))?;
    let response = connection
        .send_request(request)
        .block_task()
        .await
        .map_err(|error| format!("the editor did not answer the question: {error}"))?;
    let response = serde_json::to_value(response).unwrap_or_default();
    Ok(answer_of(&response))
}

/// The user's answer in an editor's `elicitation/create` response.
fn answer_of(response: &Value) -> Answer {
    match response["action"].as_str() {
        Some("accept") => {
            Answer::Accept(response["content"].as_object().cloned().unwrap_or_default())
        }
        Some("decline") => Answer::Decline,
        _ => Answer::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editors_answer_reads_as_the_users() {
        assert_eq!(
            answer_of(&json!({"action": "accept", "content": {"name": "Ada"}})),
            Answer::Accept(
                json!({"name": "Ada"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            )
        );
        assert_eq!(answer_of(&json!({"action": "decline"})), Answer::Decline);
        assert_eq!(answer_of(&json!({"action": "cancel"})), Answer::Cancel);
        assert_eq!(answer_of(&json!({"action": "sideways"})), Answer::Cancel);
    }
}
