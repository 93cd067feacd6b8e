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

use larik_protocol::ContextPartKind;

use crate::{AgentConfig, instructions};

/// A context's system prompt, and how many of its bytes each part takes (for `/context`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SystemPrompt {
    /// The text sent with every request of the context.
    pub(crate) text: String,
    /// Its parts in order; their bytes add up to the text's length.
    pub(crate) parts: Vec<PromptPart>,
}

/// One part of a system prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PromptPart {
    /// What it is: Larik's own prompt with the appended text, an instruction file, or an
    /// extension's section.
    pub(crate) kind: ContextPartKind,
    /// The file's path or the extension's name; empty for Larik's own.
    pub(crate) name: String,
    /// Its bytes, separators included.
    pub(crate) bytes: usize,
}

/// The system prompt for a new context: Larik's own (or the configured replacement), then
/// the instruction files, then the extensions' sections, then whatever the configuration
/// appends.
pub(crate) fn build(config: &AgentConfig) -> SystemPrompt {
    let mut prompt = match &config.system_prompt {
        Some(replacement) => replacement.clone(),
        None => system_prompt(
            &config.cwd,
            &larik_session::utc_date(std::time::SystemTime::now()),
        ),
    };
    let mut parts = vec![PromptPart {
        kind: ContextPartKind::SystemPrompt,
        name: String::new(),
        bytes: prompt.len(),
    }];
    let files = instructions::load(config.user_config_dir.as_deref(), &config.cwd);
    let pieces = instructions::rendered_parts(&files);
    let before = prompt.len();
    append_part(&mut prompt, &pieces.concat());
    // The separator before the section counts with its first file.
    let mut separator =
        (prompt.len() - before).saturating_sub(pieces.iter().map(String::len).sum());
    for (file, piece) in files.iter().zip(&pieces) {
        parts.push(PromptPart {
            kind: ContextPartKind::Instructions,
            name: file.path.display().to_string(),
            bytes: piece.len() + std::mem::take(&mut separator),
        });
    }
    for section in &config.prompt_sections {
        let before = prompt.len();
        append_part(&mut prompt, &section.text);
        if prompt.len() > before {
            parts.push(PromptPart {
                kind: ContextPartKind::PromptSection,
                name: section.source.clone(),
                bytes: prompt.len() - before,
            });
        }
    }
    if let Some(extra) = &config.append_system_prompt {
        let before = prompt.len();
        append_part(&mut prompt, extra);
        parts[0].bytes += prompt.len() - before;
    }
    SystemPrompt {
        text: prompt,
        parts,
    }
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
{environment}",
        environment = environment(cwd, date),
    )
}

/// The environment section of a system prompt for `cwd` on `date` (`YYYY-MM-DD`), which
/// subagents' prompts share.
pub(crate) fn environment(cwd: &Path, date: &str) -> String {
    let in_git = cwd.ancestors().any(|dir| dir.join(".git").exists());
    format!(
        "# Environment\n\
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

        let built = build(&config);
        let sizes: usize = built.parts.iter().map(|part| part.bytes).sum();
        assert_eq!(sizes, built.text.len(), "{:?}", built.parts);
        assert_eq!(built.parts.len(), 2);
        assert_eq!(
            built.parts[1].name,
            cwd.join("AGENTS.md").display().to_string()
        );
        let prompt = built.text;
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
        assert_eq!(build(&config).text, "Replaced.");
        config.append_system_prompt = Some("Appended.".into());
        assert_eq!(build(&config).text, "Replaced.\n\nAppended.");
        config.prompt_sections = vec![
            crate::PromptSection::new("tests", "Section."),
            crate::PromptSection::new("empty", ""),
        ];
        let built = build(&config);
        assert_eq!(built.text, "Replaced.\n\nSection.\n\nAppended.");
        let parts: Vec<(&str, usize)> = built
            .parts
            .iter()
            .map(|part| (part.name.as_str(), part.bytes))
            .collect();
        assert_eq!(parts, [("", 20), ("tests", 10)]);
    }
}
