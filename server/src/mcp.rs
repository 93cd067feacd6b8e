//! `larik mcp`: the MCP servers of the current directory's project. `list` starts each
//! configured server, waits for it to connect or fail, and lists them as `/mcp` does;
//! `get` shows one entry with its source and state; `add` and `remove` change the personal
//! `config.json` (a repository's `.mcp.json` is the team's to edit); `login` logs in to a
//! remote server that asks for OAuth and `logout` forgets that login.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::assembly::McpExtension;
use crate::cli::McpAction;

/// Runs one `larik mcp` action.
pub async fn run(action: McpAction) -> anyhow::Result<ExitCode> {
    let env = crate::assembly::environment();
    let cwd = std::env::current_dir()?;
    let context = env.config_context(&cwd);
    let mut out = std::io::stdout().lock();
    match action {
        McpAction::List => {
            let mcp = McpExtension::new(&env.data_dir()?);
            let text = mcp.check(&env, &cwd).await;
            mcp.shutdown().await;
            writeln!(out, "{text}")?;
        }
        McpAction::Get { name } => {
            let loaded = larik_config::load(&context);
            let Some(server) = loaded.settings.mcp_servers.get(&name) else {
                let waiting = loaded
                    .pending_approvals
                    .iter()
                    .find(|pending| pending.key == format!("mcpServers.{name}"));
                match waiting {
                    Some(pending) => writeln!(
                        out,
                        "{name} ({}): unapproved; approve with `larik approve {}`\n{}",
                        pending.file.display(),
                        pending.approval_key(),
                        serde_json::to_string_pretty(&pending.value)?
                    )?,
                    None => bail!("no MCP server `{name}` is configured here"),
                }
                return Ok(ExitCode::SUCCESS);
            };
            let mcp = McpExtension::new(&env.data_dir()?);
            let line = mcp.check_one(&env, &cwd, &name).await;
            mcp.shutdown().await;
            let line = line.unwrap_or_else(|| format!("- **{name}**: not started"));
            writeln!(out, "{line}")?;
            writeln!(out, "from {}", server.file.display())?;
        }
        McpAction::Add {
            transport,
            env: variables,
            headers,
            client_id,
            callback_port,
            name,
            command_or_url,
            args,
        } => {
            let mut entry = entry(&transport, &variables, &headers, &command_or_url, &args)?;
            if client_id.is_some() || callback_port.is_some() {
                if transport == "stdio" {
                    bail!("--client-id and --callback-port are for http and sse servers");
                }
                let mut oauth = serde_json::Map::new();
                if let Some(client_id) = client_id {
                    oauth.insert("client_id".into(), json!(client_id));
                }
                if let Some(port) = callback_port {
                    oauth.insert("callback_port".into(), json!(port));
                }
                entry["oauth"] = Value::Object(oauth);
            }
            let config_dir = context
                .config_dir
                .clone()
                .context("no personal config directory: set XDG_CONFIG_HOME or HOME")?;
            let path = larik_config::set_personal_mcp_server(&config_dir, &name, entry.clone())?;
            writeln!(
                out,
                "Added the MCP server `{name}` to {}:\n{}\nIt starts with the next session \
                 or fresh context (`/clear`).",
                path.display(),
                serde_json::to_string_pretty(&entry)?
            )?;
        }
        McpAction::Remove { name } => {
            let config_dir = context
                .config_dir
                .clone()
                .context("no personal config directory: set XDG_CONFIG_HOME or HOME")?;
            if !larik_config::remove_personal_mcp_server(&config_dir, &name)? {
                bail!(
                    "no MCP server `{name}` in {} (a repository's servers are in its .mcp.json)",
                    config_dir.join("config.json").display()
                );
            }
            writeln!(out, "Removed the MCP server `{name}`.")?;
        }
        McpAction::Login { name } => {
            let mcp = McpExtension::new(&env.data_dir()?);
            let outcome = mcp
                .login_and_wait(&env, &cwd, &name, |url, opened| {
                    let how = match opened {
                        Some(program) => format!("Opened {program} on the authorization page of `{name}`. If it does not show, open:"),
                        None => format!("To log in to `{name}`, open:"),
                    };
                    eprintln!("{how}\n\n  {url}\n\nWaiting for you to authorize Larik…");
                })
                .await;
            mcp.shutdown().await;
            match outcome {
                Ok(status) => writeln!(out, "Logged in to `{name}`: {status}.")?,
                Err(why) => bail!(why),
            }
        }
        McpAction::Logout { name } => {
            let mcp = McpExtension::new(&env.data_dir()?);
            let text = mcp.logout(&env, &cwd, &name).map_err(anyhow::Error::msg)?;
            writeln!(out, "{text}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `mcpServers` entry `larik mcp add` writes.
fn entry(
    transport: &str,
    variables: &[String],
    headers: &[String],
    command_or_url: &str,
    args: &[String],
) -> anyhow::Result<Value> {
    match transport {
        "stdio" => {
            if !headers.is_empty() {
                bail!("--header is for http and sse servers");
            }
            let mut env = BTreeMap::new();
            for variable in variables {
                let (key, value) = variable
                    .split_once('=')
                    .with_context(|| format!("--env {variable}: use KEY=VALUE"))?;
                env.insert(key.to_string(), value.to_string());
            }
            let mut entry = json!({"command": command_or_url, "args": args});
            if !env.is_empty() {
                entry["env"] = json!(env);
            }
            Ok(entry)
        }
        "http" | "sse" => {
            if !variables.is_empty() || !args.is_empty() {
                bail!("--env and program arguments are for stdio servers");
            }
            let mut map = BTreeMap::new();
            for header in headers {
                let (key, value) = header
                    .split_once(':')
                    .with_context(|| format!("--header {header}: use \"Name: value\""))?;
                map.insert(key.trim().to_string(), value.trim().to_string());
            }
            let mut entry = json!({"type": transport, "url": command_or_url});
            if !map.is_empty() {
                entry["headers"] = json!(map);
            }
            Ok(entry)
        }
        other => bail!("--transport {other}: use stdio, http or sse"),
    }
}
