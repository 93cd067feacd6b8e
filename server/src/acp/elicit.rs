//! MCP servers' questions as ACP elicitations: a form-mode `elicitation/create` scoped to
//! the session, when the editor declared form elicitation in `initialize`; the editor's
//! answer comes back as the user's. An editor without it, or a form ACP cannot carry, gets
//! no request: the server hears why.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{CreateElicitationRequest, SessionId};
use larik_mcp::{Answer, Question};
use serde_json::json;

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
    Ok(Answer::from_result(&response))
}
