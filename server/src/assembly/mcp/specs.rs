//! Server definitions from configuration and from the editor, as the MCP client takes
//! them: `${VAR}` and `${VAR:-default}` expanded (in the command, arguments, environment,
//! URL and headers, as Claude Code's `.mcp.json` allows, and in the OAuth client id and
//! secret), the transport decided, the
//! timeouts from the entry, else from `MCP_TIMEOUT` / `MCP_TOOL_TIMEOUT` (milliseconds)
//! and `MAX_MCP_OUTPUT_TOKENS`, else Larik's defaults.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use larik_config::{Environment, McpServerSettings};
use larik_mcp::{ServerSpec, TransportSpec};

use crate::assembly::EditorMcpServer;

/// The spec of the configured server `name`, or why it cannot be used.
pub fn from_settings(
    name: &str,
    server: &McpServerSettings,
    cwd: &Path,
    env: &Environment,
) -> Result<ServerSpec, String> {
    larik_mcp::naming::check_server_name(name)?;
    let expand = |text: &str| expand(text, env);
    let expand_map = |map: &BTreeMap<String, String>| {
        map.iter()
            .map(|(key, value)| Ok((key.clone(), expand(value)?)))
            .collect::<Result<BTreeMap<_, _>, String>>()
    };
    let kind = server
        .transport
        .as_deref()
        .unwrap_or(if server.command.is_some() {
            "stdio"
        } else {
            "http"
        });
    let transport = match (kind, &server.command, &server.url) {
        ("stdio", Some(command), _) => TransportSpec::Stdio {
            command: expand(command)?,
            args: server
                .args
                .iter()
                .map(|arg| expand(arg))
                .collect::<Result<_, _>>()?,
            env: expand_map(&server.env)?,
            cwd: cwd.to_path_buf(),
        },
        ("http" | "streamable-http", _, Some(url)) => TransportSpec::Http {
            url: expand(url)?,
            headers: expand_map(&server.headers)?,
        },
        ("sse", _, Some(url)) => TransportSpec::Sse {
            url: expand(url)?,
            headers: expand_map(&server.headers)?,
        },
        ("stdio", None, _) => return Err("a stdio server needs a `command`".into()),
        ("http" | "streamable-http" | "sse", _, None) => {
            return Err(format!("an `{kind}` server needs a `url`"));
        }
        (other, _, _) => {
            return Err(format!(
                "`type` `{other}` is not a transport (use `stdio`, `http` or `sse`)"
            ));
        }
    };
    let mut spec = with_env_defaults(ServerSpec::new(name, transport), env);
    if let Some(timeout) = server.startup_timeout {
        spec.startup_timeout = timeout;
    }
    if let Some(wait) = server.connect_timeout {
        spec.connect_wait = wait;
    }
    if let Some(timeout) = server.tool_timeout {
        spec.tool_timeout = timeout;
    }
    if let Some(tokens) = server.max_output_tokens {
        spec.output_tokens = usize::try_from(tokens).unwrap_or(usize::MAX);
    }
    let oauth = &server.oauth;
    let expand_option = |text: &Option<String>| text.as_deref().map(expand).transpose();
    spec.oauth = larik_mcp::OAuthSpec {
        client_id: expand_option(&oauth.client_id)?,
        client_secret: expand_option(&oauth.client_secret)?,
        callback_port: oauth.callback_port,
        scopes: oauth.scopes.clone(),
    };
    // Only a program Larik starts can wait for its first use.
    spec.lazy = server.lazy && matches!(spec.transport, TransportSpec::Stdio { .. });
    Ok(spec)
}

/// The spec of a server the editor gave, or why it cannot be used.
pub fn from_editor(
    server: &EditorMcpServer,
    cwd: &Path,
    env: &Environment,
) -> Result<ServerSpec, String> {
    larik_mcp::naming::check_server_name(server.name())?;
    let transport = match server {
        EditorMcpServer::Stdio {
            command, args, env, ..
        } => TransportSpec::Stdio {
            command: command.clone(),
            args: args.clone(),
            env: env.iter().cloned().collect(),
            cwd: cwd.to_path_buf(),
        },
        EditorMcpServer::Http { url, headers, .. } => TransportSpec::Http {
            url: url.clone(),
            headers: headers.iter().cloned().collect(),
        },
        EditorMcpServer::Sse { url, headers, .. } => TransportSpec::Sse {
            url: url.clone(),
            headers: headers.iter().cloned().collect(),
        },
    };
    Ok(with_env_defaults(
        ServerSpec::new(server.name(), transport),
        env,
    ))
}

/// `spec` with the timeouts and the output cap the environment sets.
fn with_env_defaults(mut spec: ServerSpec, env: &Environment) -> ServerSpec {
    let number = |name: &str| {
        env.get(name)
            .and_then(|value| value.trim().parse::<u64>().ok())
    };
    if let Some(ms) = number("MCP_TIMEOUT").filter(|ms| *ms > 0) {
        spec.startup_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = number("MCP_TOOL_TIMEOUT").filter(|ms| *ms > 0) {
        spec.tool_timeout = Duration::from_millis(ms);
    }
    if let Some(tokens) = number("MAX_MCP_OUTPUT_TOKENS").filter(|tokens| *tokens > 0) {
        spec.output_tokens = usize::try_from(tokens).unwrap_or(usize::MAX);
    }
    spec
}

/// `text` with each `${VAR}` replaced by the variable's value and each `${VAR:-default}`
/// by the value or, when unset, the default; an unset variable without a default is an
/// error naming it.
pub fn expand(text: &str, env: &Environment) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inside = &after[..end];
        let (name, default) = match inside.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inside, None),
        };
        match (env.get(name), default) {
            (Some(value), _) => out.push_str(value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("the variable `{name}` is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment::from_pairs([("TOKEN", "abc"), ("EMPTY", "")])
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        let env = env();
        assert_eq!(expand("Bearer ${TOKEN}", &env).as_deref(), Ok("Bearer abc"));
        assert_eq!(expand("${NOPE:-x}/${TOKEN}", &env).as_deref(), Ok("x/abc"));
        assert_eq!(
            expand("${EMPTY:-fallback}", &env).as_deref(),
            Ok("fallback")
        );
        assert_eq!(expand("no ${ end", &env).as_deref(), Ok("no ${ end"));
        assert_eq!(
            expand("${NOPE}", &env),
            Err("the variable `NOPE` is not set".to_string())
        );
    }
}
