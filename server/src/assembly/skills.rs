//! The skills extension: the skills and custom commands found for the session's directory
//! (read again for every session, so a new or changed one counts after `/clear`), as the
//! system prompt's index of the ones the model may load, the `skill` tool that loads them,
//! and a slash command for each the user may run. A file that cannot be used is one notice.

use std::sync::Arc;

use larik_skills::{SkillTool, discover, index, with_folder};

use super::error::{Notice, SetupError};
use super::extension::{Contributions, Extension, Scope};
use crate::commands::CommandSpec;
use crate::control::skill_roots;

/// Skills and custom commands.
#[derive(Default)]
pub struct SkillExtension;

impl Extension for SkillExtension {
    fn name(&self) -> &'static str {
        "skills"
    }

    fn contribute(&self, scope: &Scope<'_>, into: &mut Contributions) -> Result<(), SetupError> {
        let found = discover(&skill_roots(scope.env, scope.cwd));
        into.notices.extend(found.skipped.iter().map(|skipped| {
            Notice::configuration(format!(
                "skill or command {} skipped ({})",
                skipped.file.display(),
                skipped.reason
            ))
        }));
        into.prompt_sections.extend(index(&found.entries));
        let tool = SkillTool::new(&found.entries);
        if !tool.is_empty() {
            into.tools.push(Arc::new(tool));
        }
        into.commands.extend(
            found
                .entries
                .iter()
                .filter(|entry| entry.user_invocable)
                .map(|entry| {
                    CommandSpec::prompt(
                        &entry.name,
                        &entry.description,
                        entry.argument_hint.as_deref(),
                        &with_folder(entry),
                    )
                }),
        );
        Ok(())
    }
}
