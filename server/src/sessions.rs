//! `larik sessions`: the sessions of the current directory, newest first.

use std::io::Write;
use std::process::ExitCode;

use larik_config::Environment;
use larik_session::SessionStore;
use serde_json::json;

/// Prints the sessions of the current directory as a table or JSON lines.
pub fn list(json_lines: bool) -> anyhow::Result<ExitCode> {
    let env = crate::assembly::environment();
    let cwd = std::env::current_dir()?;
    let store = SessionStore::new(Environment::data_dir(&env)?);
    let sessions = store.list(&cwd)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if json_lines {
        for session in &sessions {
            let line = json!({
                "session_id": session.id,
                "path": session.path.display().to_string(),
                "first_prompt": session.first_prompt,
            });
            writeln!(out, "{line}")?;
        }
    } else if sessions.is_empty() {
        writeln!(out, "No sessions in {} yet.", cwd.display())?;
    } else {
        for session in &sessions {
            let prompt = session.first_prompt.as_deref().unwrap_or("(no prompt)");
            writeln!(out, "{}  {prompt}", session.id)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
