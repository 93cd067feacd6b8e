//! MCP prompts as slash commands: `/mcp__<server>__<prompt> [arguments]`. The arguments
//! are given in the order the prompt lists them, separated by spaces, the last taking the
//! rest of the text; a required argument left out is an error naming it. The server's
//! answer becomes the text of the prompt sent to the model: each message's text (and the
//! text of embedded resources), in order; other content is named in a line.

use std::sync::Arc;

use rmcp::model::GetPromptRequestParams;
use serde_json::{Map, Value};

use crate::naming::{sanitize, server_prefix};
use crate::servers::Server;

/// A prompt a server offers, as a slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCommand {
    /// `mcp__<server>__<prompt>`.
    pub name: String,
    /// The prompt's description.
    pub description: String,
    /// Its arguments' names, in order, for the command's hint.
    pub arguments: Vec<String>,
}

/// The slash commands of the prompts the ready servers among `servers` listed (as they
/// stand: a changed list is read again when a prompt runs).
pub fn prompt_commands(servers: &[Arc<Server>]) -> Vec<PromptCommand> {
    let mut commands = Vec::new();
    for server in servers {
        let Some(connection) = server.connection() else {
            continue;
        };
        let Ok(prompts) = connection.prompts.try_lock().map(|prompts| prompts.clone()) else {
            continue;
        };
        commands.extend(
            prompts
                .iter()
                .filter_map(|prompt| prompt_command(server.name(), prompt)),
        );
    }
    commands
}

/// The slash command of one prompt (as the server listed it) of the server `server`;
/// `None` when it has no name.
pub(crate) fn prompt_command(server: &str, prompt: &Value) -> Option<PromptCommand> {
    let name = prompt.get("name").and_then(Value::as_str)?;
    let description = prompt
        .get("description")
        .or_else(|| prompt.get("title"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some(PromptCommand {
        name: format!("{}{}", server_prefix(server), sanitize(name)),
        description,
        arguments: arguments(prompt)
            .into_iter()
            .map(|(name, _)| name)
            .collect(),
    })
}

/// The prompt's arguments: each name, and whether it is required.
pub(crate) fn arguments(prompt: &Value) -> Vec<(String, bool)> {
    prompt
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|argument| {
            let name = argument.get("name")?.as_str()?.to_string();
            let required = argument.get("required").and_then(Value::as_bool) == Some(true);
            Some((name, required))
        })
        .collect()
}

/// The text of the prompt `/command argument` names among `servers`' prompts, or why
/// there is none. A server still connecting (or idle) is waited for within its startup
/// timeout; the request is bounded by its tool timeout.
pub async fn expand_prompt(
    servers: &[Arc<Server>],
    command: &str,
    argument: Option<&str>,
) -> Result<String, String> {
    let mut matching = servers
        .iter()
        .filter_map(|server| {
            let rest = command.strip_prefix(&server_prefix(server.name()))?;
            Some((server, rest))
        })
        .collect::<Vec<_>>();
    // The longest server name wins (`a` and `a__b` could both be prefixes).
    matching.sort_by_key(|(server, _)| std::cmp::Reverse(server.name().len()));
    let Some((server, wanted)) = matching.into_iter().next() else {
        return Err(format!(
            "`/{command}`: no MCP server of this session has that name"
        ));
    };
    let Some(connection) = server.started().await else {
        return Err(format!(
            "`/{command}`: the MCP server `{}` is not connected ({})",
            server.name(),
            server.status()
        ));
    };
    let prompts = connection.current_prompts().await?;
    let Some(prompt) = prompts.iter().find(|prompt| {
        prompt
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| sanitize(name) == wanted)
    }) else {
        return Err(format!(
            "`/{command}`: the MCP server `{}` has no prompt `{wanted}`",
            server.name()
        ));
    };
    let name = prompt
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let given = fill_arguments(&arguments(prompt), argument.unwrap_or_default())
        .map_err(|missing| format!("`/{command}` needs {missing}"))?;
    let mut params = GetPromptRequestParams::new(name);
    if !given.is_empty() {
        params = params.with_arguments(given);
    }
    let within = server.spec().tool_timeout;
    let result = tokio::time::timeout(within, connection.service.get_prompt(params))
        .await
        .map_err(|_| {
            format!(
                "`/{command}`: the MCP server `{}` did not answer within {} s",
                server.name(),
                within.as_secs_f64()
            )
        })?
        .map_err(|error| {
            format!(
                "`/{command}`: the MCP server `{}` failed: {error}",
                server.name()
            )
        })?;
    let result = serde_json::to_value(&result).map_err(|error| error.to_string())?;
    Ok(prompt_text(&result))
}

/// The arguments `text` gives, in order, the last taking the rest; the names of required
/// ones left out, as the error.
pub(crate) fn fill_arguments(
    arguments: &[(String, bool)],
    text: &str,
) -> Result<Map<String, Value>, String> {
    let mut given = Map::new();
    let mut rest = text.trim();
    for (index, (name, _)) in arguments.iter().enumerate() {
        if rest.is_empty() {
            break;
        }
        let value = if index + 1 == arguments.len() {
            std::mem::take(&mut rest)
        } else {
            let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = after.trim_start();
            word
        };
        given.insert(name.clone(), Value::String(value.to_string()));
    }
    let missing: Vec<&str> = arguments
        .iter()
        .filter(|(name, required)| *required && !given.contains_key(name))
        .map(|(name, _)| name.as_str())
        .collect();
    if missing.is_empty() {
        Ok(given)
    } else {
        Err(missing.join(", "))
    }
}

/// The text of a `prompts/get` result.
pub(crate) fn prompt_text(result: &Value) -> String {
    let mut parts = Vec::new();
    for message in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let content = &message["content"];
        match content.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(content["text"].as_str().unwrap_or_default().to_string()),
            Some("resource") => {
                let resource = &content["resource"];
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(text.to_string()),
                    None => parts.push(format!(
                        "[resource {} not included: binary data]",
                        resource["uri"].as_str().unwrap_or_default()
                    )),
                }
            }
            Some(other) => parts.push(format!("[{other} content of the prompt not included]")),
            None => {}
        }
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_go_in_order_and_the_last_takes_the_rest() {
        let args = vec![("city".to_string(), true), ("state".to_string(), false)];
        let given = fill_arguments(&args, "Portland  Oregon Coast").expect("filled");
        assert_eq!(given["city"], "Portland");
        assert_eq!(given["state"], "Oregon Coast");
        let given = fill_arguments(&args, "Portland").expect("filled");
        assert!(!given.contains_key("state"));
        assert_eq!(fill_arguments(&args, "  "), Err("city".to_string()));
        assert!(fill_arguments(&[], "ignored").expect("none").is_empty());
    }
}
