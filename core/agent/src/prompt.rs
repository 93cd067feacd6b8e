//! The system prompt, built once per context so the prompt prefix stays byte-identical
//! between requests and the provider's cache keeps working.
//!
//! Its parts are separated by blank lines: the base (Larik's own prompt, or the
//! `--system-prompt` replacement), the user's instruction files (see
//! [`crate::instructions`]; kept even when the base is replaced, since they are the user's
//! own), the sections extensions add, and last whatever `--append-system-prompt` adds. The instruction files are read
//! here, so they are read once per context: a file edited mid-session takes effect in the
//! next one, and compaction, which keeps the prompt for the cache, does not re-read them.

use std::path::Path;

use crate::{AgentConfig, instructions};

/// The system prompt for a new context: Larik's own (or the configured replacement), then
/// the instruction files, then whatever the configuration appends.
pub(crate) fn build(config: &AgentConfig) -> String {
    let mut prompt = match &config.system_prompt {
        Some(replacement) => replacement.clone(),
        None => system_prompt(
            &config.cwd,
            &larik_session::utc_date(std::time::SystemTime::now()),
        ),
    };
    let files = instructions::load(config.user_config_dir.as_deref(), &config.cwd);
    append_part(&mut prompt, &instructions::render(&files));
    for section in &config.prompt_sections {
        append_part(&mut prompt, section);
    }
    if let Some(extra) = &config.append_system_prompt {
        append_part(&mut prompt, extra);
    }
    prompt
}

/// Adds `part` after a blank line; an empty part adds nothing, so the prompt of a project
/// without instruction files is what it was before they existed.
fn append_part(prompt: &mut String, part: &str) {
    if part.is_empty() {
        return;
    }
    if !prompt.is_empty() {
        if !prompt.ends_with('\n') {
            prompt.push('\n');
        }
        prompt.push('\n');
    }
    prompt.push_str(part);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_sit_between_the_replacement_and_the_appended_text() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cwd = dir.path().canonicalize().expect("canonical temp dir");
        std::fs::write(cwd.join("AGENTS.md"), "Project rule.\n").expect("AGENTS.md");
        let mut config = AgentConfig::new(cwd.clone(), "anthropic/claude-sonnet-4-5");
        config.system_prompt = Some("Replaced.".into());
        config.append_system_prompt = Some("Appended.".into());

        let prompt = build(&config);
        let tag = format!(
            "<instructions source=\"{}\">\nProject rule.\n</instructions>\n",
            cwd.join("AGENTS.md").display()
        );
        assert!(
            prompt.starts_with("Replaced.\n\n# Instructions"),
            "{prompt}"
        );
        assert!(prompt.ends_with(&format!("{tag}\nAppended.")), "{prompt}");
    }

    #[test]
    fn without_instruction_files_the_prompt_is_the_base_and_the_appended_text() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = AgentConfig::new(dir.path().to_path_buf(), "anthropic/claude-sonnet-4-5");
        config.system_prompt = Some("Replaced.".into());
        assert_eq!(build(&config), "Replaced.");
        config.append_system_prompt = Some("Appended.".into());
        assert_eq!(build(&config), "Replaced.\n\nAppended.");
        config.prompt_sections = vec!["Section.".into(), String::new()];
        assert_eq!(build(&config), "Replaced.\n\nSection.\n\nAppended.");
    }
}
