//! The `larik lsp` side of a session (see [`crate::session_core`]): every event goes to
//! the editor as `larik/event`, a prompt's work-done token gets `$/progress` (begin, a
//! report per tool call, end), Larik's own text is a `message_complete` event, and
//! permission questions go out as `larik/requestPermission` or
//! `window/showMessageRequest`, MCP servers' questions as `larik/elicit` or choices.

use larik_protocol::{Event, PermissionDecision, PermissionOption};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::{
    MessageActionItem, MessageType, ProgressToken, ShowMessageRequestParams, WorkDoneProgress,
    WorkDoneProgressBegin, WorkDoneProgressEnd, WorkDoneProgressReport,
};

use super::protocol::{LarikEvent, RequestPermission, history, progress};
use crate::session_core::{Answerer, Outcome, Question as CoreQuestion, State, Switched, Wire};

/// Where a prompt's answer goes, and its work-done token.
pub struct LspReply {
    /// The editor's work-done token, for `$/progress`.
    pub token: Option<ProgressToken>,
    /// Where the outcome goes.
    pub reply: oneshot::Sender<Outcome>,
}

/// A session's messages to an LSP editor.
pub struct LspWire {
    session_id: String,
    client: Client,
    ask_with_larik_requests: bool,
    /// Whether the editor answers `larik/elicit` (MCP servers' questions).
    elicit_with_larik_requests: bool,
    /// The running prompt's work-done token.
    token: Option<ProgressToken>,
}

impl LspWire {
    /// The wire of session `session_id`; permission questions go out as
    /// `larik/requestPermission` when the editor declared it (`ask_with_larik_requests`),
    /// MCP servers' questions as `larik/elicit` when it declared that
    /// (`elicit_with_larik_requests`).
    pub fn new(
        session_id: String,
        client: Client,
        ask_with_larik_requests: bool,
        elicit_with_larik_requests: bool,
    ) -> Self {
        LspWire {
            session_id,
            client,
            ask_with_larik_requests,
            elicit_with_larik_requests,
            token: None,
        }
    }

    async fn send_event(&self, event: &Event) {
        let json = serde_json::to_value(event).unwrap_or(Value::Null);
        self.client
            .send_notification::<LarikEvent>(json!({"sessionId": self.session_id, "event": json}))
            .await;
    }

    async fn progress(&self, token: &ProgressToken, value: WorkDoneProgress) {
        self.client
            .send_notification::<progress::Progress>(progress::params(token, value))
            .await;
    }
}

#[async_trait::async_trait]
impl Wire for LspWire {
    type Reply = LspReply;
    /// Every command of this front end is one the core knows.
    type Command = std::convert::Infallible;

    async fn started(&mut self, reply: &LspReply) {
        self.token = reply.token.clone();
        if let Some(token) = &reply.token {
            let begin = WorkDoneProgress::Begin(WorkDoneProgressBegin {
                title: "Larik".into(),
                cancellable: Some(true),
                message: Some("Thinking…".into()),
                percentage: None,
            });
            self.progress(token, begin).await;
        }
    }

    async fn answer(&mut self, reply: LspReply, outcome: Outcome) {
        // Only the running prompt began reporting progress; a waiting one ends silently.
        if let Some(token) = &reply.token
            && reply.token == self.token
        {
            self.token = None;
            let message = match &outcome {
                Ok(stop) => stop.as_str().to_string(),
                Err(failed) => failed.message.clone(),
            };
            let end = WorkDoneProgress::End(WorkDoneProgressEnd {
                message: Some(message),
            });
            self.progress(token, end).await;
        }
        let _ = reply.reply.send(outcome);
    }

    async fn say(&mut self, text: String) {
        self.send_event(&Event::MessageComplete { text }).await;
    }

    async fn notice(&mut self, message: String) {
        self.send_event(&Event::Notice { message }).await;
    }

    async fn event(&mut self, event: &Event, _state: &State) {
        self.send_event(event).await;
        if let Event::ToolCallBegin { title, .. } = event
            && let Some(token) = &self.token
        {
            let report = WorkDoneProgress::Report(WorkDoneProgressReport {
                cancellable: Some(true),
                message: Some(title.clone()),
                percentage: None,
            });
            self.progress(token, report).await;
        }
    }

    fn ask(&mut self, question: CoreQuestion, answerer: Answerer<Self>) -> JoinHandle<()> {
        let question = Question {
            session_id: self.session_id.clone(),
            call_id: question.call_id,
            tool: question.tool,
            title: question.title,
            input: question.input,
            options: question.options,
        };
        let (client, larik) = (self.client.clone(), self.ask_with_larik_requests);
        // Asked on its own task: the answer may take the user a while, and events (and a
        // cancel) must keep flowing meanwhile.
        tokio::spawn(async move {
            answerer.answer(question.ask(&client, larik).await);
        })
    }

    fn elicit(
        &mut self,
        question: larik_mcp::Question,
        reply: oneshot::Sender<Result<larik_mcp::Answer, String>>,
    ) -> JoinHandle<()> {
        let (client, session_id, larik) = (
            self.client.clone(),
            self.session_id.clone(),
            self.elicit_with_larik_requests,
        );
        tokio::spawn(async move {
            let answer = super::elicit::ask(&client, &session_id, larik, question).await;
            let _ = reply.send(answer);
        })
    }

    async fn command(&mut self, command: Self::Command, _state: &mut State) {
        match command {}
    }

    /// Says the switch's text, then sends `session_switched` under the id the editor used
    /// so far; later events carry the new id, which the editor should prompt with from now
    /// on (the old one still reaches this session).
    async fn switched(&mut self, switched: &Switched, state: &State) {
        self.say(switched.text.clone()).await;
        let mut event = json!({
            "type": "session_switched",
            "reason": switched.kind.as_str(),
            "session_id": switched.session_id,
            "from": switched.from,
            "model": state.model,
            "mode": state.mode,
        });
        if let Some(fork_at) = switched.fork_at {
            event["fork_at"] = json!(fork_at);
        }
        if let Some(prompt) = &switched.prompt {
            event["prompt"] = json!(prompt);
        }
        if let Some(resumed) = &switched.resumed {
            event["history"] = json!(history(resumed));
        }
        self.client
            .send_notification::<LarikEvent>(json!({"sessionId": self.session_id, "event": event}))
            .await;
        self.session_id = switched.session_id.clone();
    }
}

/// A permission question to put to the editor.
struct Question {
    session_id: String,
    call_id: String,
    tool: String,
    title: String,
    input: Value,
    options: Vec<PermissionOption>,
}

impl Question {
    /// Asks with `larik/requestPermission` when the editor declared it, else with
    /// `window/showMessageRequest`; anything but a clear answer refuses the call.
    async fn ask(&self, client: &Client, larik: bool) -> PermissionDecision {
        if larik {
            let options: Vec<Value> = self
                .options
                .iter()
                .map(|option| {
                    let id = option.decision.as_str();
                    json!({"optionId": id, "name": option.label, "kind": id})
                })
                .collect();
            let params = json!({
                "sessionId": self.session_id,
                "toolCall": {"callId": self.call_id, "tool": self.tool, "title": self.title, "input": self.input},
                "options": options,
            });
            return match client.send_request::<RequestPermission>(params).await {
                Ok(answer) if answer["cancelled"] == true => PermissionDecision::Cancelled,
                Ok(answer) => answer["optionId"]
                    .as_str()
                    .and_then(|id| {
                        self.options
                            .iter()
                            .map(|option| option.decision)
                            .find(|decision| decision.as_str() == id)
                    })
                    .unwrap_or(PermissionDecision::RejectOnce),
                Err(_) => PermissionDecision::RejectOnce,
            };
        }
        let actions = ["Allow", "Always allow", "Deny"];
        let params = ShowMessageRequestParams {
            typ: MessageType::INFO,
            message: format!("Larik wants to run: {}", self.title),
            actions: Some(
                actions
                    .iter()
                    .map(|title| MessageActionItem {
                        title: (*title).to_string(),
                        properties: Default::default(),
                    })
                    .collect(),
            ),
        };
        let answer = client
            .send_request::<tower_lsp_server::ls_types::request::ShowMessageRequest>(params)
            .await;
        match answer.ok().flatten().map(|item| item.title) {
            Some(title) if title == "Allow" => PermissionDecision::AllowOnce,
            Some(title) if title == "Always allow" => PermissionDecision::AllowAlways,
            _ => PermissionDecision::RejectOnce,
        }
    }
}
