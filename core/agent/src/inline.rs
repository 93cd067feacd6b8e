//! A custom command's or skill's prompt made ready to send: each `` !`command` `` in it is
//! replaced by the command's output, and each `@path` naming a file gets the file's
//! contents attached — but only where the permission rules and the mode allow the call
//! (`bash` with the command, `read` of the file) without asking, and no hook blocks it. The
//! rest is left out with a note for the model and a notice for the user; nobody is asked,
//! since the user ran a command, not a call. The calls run through the same tools as the
//! model's (in the sandbox, with the same limits), but are not shown as tool calls.

use larik_permissions::Decision;
use larik_protocol::transcript::result_text;
use larik_protocol::{Event, UserContent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::hooks::{HookDecision, ToolCallPoint};
use crate::runner::Runner;

/// The `` !`…` `` spans of `text` (not right after a backtick): (start, end, command)
/// with `end` past the closing backtick.
fn inline_commands(text: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("!`") {
        let start = from + at;
        let body = start + 2;
        // "`!`" is code that shows an exclamation mark, not a command.
        if text[..start].ends_with('`') {
            from = body;
            continue;
        }
        let Some(length) = text[body..].find('`') else {
            break;
        };
        let command = text[body..body + length].trim().to_string();
        let end = body + length + 1;
        if !command.is_empty() {
            found.push((start, end, command));
        }
        from = end;
    }
    found
}

/// The `@path` words of `text` (at the start or after a space), without trailing
/// punctuation, in order, each once.
fn mentioned_paths(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
        if !path.is_empty() && !paths.iter().any(|known| known == path) {
            paths.push(path.to_string());
        }
    }
    paths
}

impl Runner {
    /// `text` with its inline commands run and its mentioned files attached, as the
    /// content of a prompt.
    pub(crate) async fn expand_command_text(
        &mut self,
        text: &str,
        cancel: &CancellationToken,
    ) -> Vec<UserContent> {
        let mut left_out = Vec::new();
        // Files the text names itself; what a command prints attaches nothing.
        let mentioned = mentioned_paths(text);
        let mut expanded = String::with_capacity(text.len());
        let mut last = 0;
        for (start, end, command) in inline_commands(text) {
            expanded.push_str(&text[last..start]);
            last = end;
            match self
                .run_quietly("bash", json!({ "command": command }), cancel)
                .await
            {
                Ok(output) => expanded.push_str(output.trim_end()),
                Err(why) => left_out.push(format!("`{command}` was not run: {why}")),
            }
        }
        expanded.push_str(&text[last..]);

        let mut content = vec![UserContent::Text {
            text: expanded.clone(),
        }];
        for path in mentioned {
            let file = self.config.cwd.join(&path);
            if !file.is_file() {
                continue;
            }
            let input = json!({ "file_path": file.display().to_string() });
            match self.run_quietly("read", input, cancel).await {
                Ok(output) => content.push(UserContent::Text {
                    text: format!("<file path=\"{path}\">\n{output}\n</file>"),
                }),
                Err(why) => left_out.push(format!("@{path} was not attached: {why}")),
            }
        }
        for note in &left_out {
            self.events.emit(Event::Notice {
                message: format!("command text: {note}"),
            });
        }
        if !left_out.is_empty() {
            content.push(UserContent::Text {
                text: format!(
                    "<note from=\"larik\">Parts of this command were left out: {}</note>",
                    left_out.join("; ")
                ),
            });
        }
        content
    }

    /// Runs `tool` with `input` when hooks, rules and mode allow it without asking;
    /// returns its output, or why it did not run.
    async fn run_quietly(
        &mut self,
        tool_name: &str,
        input: Value,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let tool = self
            .config
            .tools
            .get(tool_name)
            .cloned()
            .ok_or_else(|| format!("this session has no `{tool_name}` tool"))?;
        let ctx = self.tool_context(cancel);
        let mut hook = None;
        let mut input = input;
        if !self.hooks.is_empty() {
            let point = ToolCallPoint {
                call_id: String::new(),
                tool: tool_name.to_string(),
                input: input.clone(),
            };
            let verdict = self
                .hooks
                .before_tool(&self.loop_context(), &point, &self.events)
                .await;
            if let Some(HookDecision::Deny(reason)) = &verdict.decision {
                return Err(format!("blocked by hook {}: {reason}", verdict.decided_by));
            }
            if let Some(changed) = verdict.input.filter(Value::is_object) {
                input = changed;
            }
            hook = verdict.decision;
        }
        match self.judge(tool_name, &tool, &input, &ctx, hook) {
            Decision::Allow => {}
            Decision::Deny { reason } => return Err(format!("denied: {reason}")),
            Decision::Ask { .. } => return Err("it needs approval".to_string()),
        }
        let output = tool.run(input, &ctx).await;
        Ok(result_text(&output.content))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_commands_and_mentions_are_found() {
        let text = "Status: !`git status --short` and !`` then !`date`. See @src/main.rs, @a @a.";
        let commands: Vec<String> = inline_commands(text)
            .into_iter()
            .map(|(_, _, command)| command)
            .collect();
        assert_eq!(commands, ["git status --short", "date"]);
        assert_eq!(mentioned_paths(text), ["src/main.rs", "a"]);
        assert!(inline_commands("no `!` here, !`unclosed").is_empty());
    }
}
