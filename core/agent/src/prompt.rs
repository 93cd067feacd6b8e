//! The system prompt, built once per context so the prompt prefix stays byte-identical
//! between requests and the provider's cache keeps working.

use std::path::Path;

use crate::AgentConfig;

/// The system prompt for a new context: Larik's own (or the configured replacement), then
/// whatever the configuration appends.
pub(crate) fn build(config: &AgentConfig) -> String {
    let mut prompt = match &config.system_prompt {
        Some(replacement) => replacement.clone(),
        None => system_prompt(
            &config.cwd,
            &larik_session::utc_date(std::time::SystemTime::now()),
        ),
    };
    if let Some(extra) = &config.append_system_prompt {
        if !prompt.ends_with('\n') {
            prompt.push('\n');
        }
        prompt.push('\n');
        prompt.push_str(extra);
    }
    prompt
}

/// The system prompt for an agent working in `cwd` on `date` (`YYYY-MM-DD`).
fn system_prompt(cwd: &Path, date: &str) -> String {
    let in_git = cwd.ancestors().any(|dir| dir.join(".git").exists());
    format!(
        "You are Larik, a coding agent working in the user's project. You read code, edit \
files, and run commands with the tools you are given, and you finish the task the user \
asked for.\n\
\n\
# How to work\n\
- Read the relevant files before changing them; prefer `edit` and `multi_edit` over \
rewriting whole files with `write`.\n\
- Use `grep` and `glob` to find code instead of guessing paths.\n\
- Run the project's tests or build with `bash` to check your changes when that is possible.\n\
- Keep changes minimal and in the style of the surrounding code.\n\
- When a tool call is refused, do not retry it unchanged; adapt or ask the user.\n\
- Finish with a short summary of what you did and anything left open.\n\
\n\
# Environment\n\
Working directory: {cwd}\n\
Platform: {os}\n\
Git repository: {git}\n\
Today's date: {date}\n",
        cwd = cwd.display(),
        os = std::env::consts::OS,
        git = if in_git { "yes" } else { "no" },
    )
}
