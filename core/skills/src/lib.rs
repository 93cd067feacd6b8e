//! Agent Skills and custom commands, the way Claude Code lays them out, with progressive
//! disclosure: only each skill's `name: description` line goes into the system prompt
//! ([`index`]); the model loads a skill's full text with the read-only `skill` tool
//! ([`SkillTool`]) and reads its bundled files with the ordinary tools; the user runs one
//! as `/name arguments` ([`expand`]). Custom commands (`commands/<name>.md`) join the same
//! set, and a skill overrides a command of the same name ([`discover`]).
//!
//! `allowed-tools` in a skill or command file is never read: a repository's file must not
//! grant itself permissions.

pub mod discover;
pub mod expand;
pub mod frontmatter;
pub mod tool;

pub use discover::{
    Discovered, Entry, Kind, Overridden, SkillRoots, Skipped, discover, search_roots,
};
pub use expand::{expand, expand_arguments, with_folder};
pub use tool::SkillTool;

/// The system prompt's section listing the skills the model may load; `None` when there
/// are none.
pub fn index(entries: &[Entry]) -> Option<String> {
    let lines: Vec<String> = entries
        .iter()
        .filter(|entry| entry.model_invocable)
        .map(|entry| {
            let description: Vec<&str> = entry.description.split_whitespace().collect();
            format!("- {}: {}", entry.name, description.join(" "))
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    Some(format!(
        "# Skills\n\nSkills hold instructions for particular tasks. When a task matches one of \
         these, load it with the `skill` tool before you start, and follow it.\n\n{}",
        lines.join("\n")
    ))
}
