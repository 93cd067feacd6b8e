//! `/skills` and `larik skills`: the skills and custom commands a session of a directory
//! finds, each with where it comes from and how it may be used, the ones a later file
//! overrides, and every file skipped with the reason.

use std::fmt::Write as _;
use std::path::Path;

use larik_config::Environment;
use larik_skills::{Discovered, Entry, SkillRoots, discover};

/// Where a session in `cwd` looks for skills and commands.
pub fn skill_roots(env: &Environment, cwd: &Path) -> SkillRoots {
    SkillRoots {
        home: env.home(),
        config_dir: env.config_dir(),
        repo_root: larik_config::project_root(cwd),
        cwd: cwd.to_path_buf(),
    }
}

/// The report for `cwd`.
pub fn skills_text(env: &Environment, cwd: &Path) -> String {
    report(&discover(&skill_roots(env, cwd)))
}

/// Who may use `entry`; `builtins` are the names of Larik's own commands.
fn uses(entry: &Entry, builtins: &[&str]) -> String {
    let builtin = builtins.contains(&entry.name.as_str());
    let mut uses = Vec::new();
    if entry.user_invocable && builtin {
        uses.push(format!(
            "not /{} (Larik's own command has that name)",
            entry.name
        ));
    } else if entry.user_invocable {
        uses.push(format!("/{}", entry.name));
    }
    if entry.model_invocable {
        uses.push("the model".to_string());
    }
    if uses.is_empty() {
        "nobody (hidden from / and from the model)".to_string()
    } else {
        uses.join(", ")
    }
}

/// The report of what discovery found.
fn report(found: &Discovered) -> String {
    let mut text = String::new();
    let commands = crate::commands::SlashCommands::default();
    let builtins: Vec<&str> = commands
        .advertised()
        .iter()
        .map(|spec| spec.name.as_str())
        .collect();
    if found.entries.is_empty() {
        text.push_str("No skills or custom commands found.\n");
    } else {
        text.push_str("Skills and custom commands:\n");
        for entry in &found.entries {
            let hint = entry
                .argument_hint
                .as_deref()
                .map(|hint| format!(" {hint}"))
                .unwrap_or_default();
            let _ = writeln!(
                text,
                "- `{}`{hint} ({}): {} — {}; used by {}",
                entry.name,
                entry.kind.as_str(),
                entry.description,
                entry.file.display(),
                uses(entry, &builtins)
            );
        }
    }
    if !found.overridden.is_empty() {
        text.push_str("\nOverridden:\n");
        for overridden in &found.overridden {
            let _ = writeln!(
                text,
                "- `{}` ({}) in {}, by {}",
                overridden.entry.name,
                overridden.entry.kind.as_str(),
                overridden.entry.file.display(),
                overridden.by.display()
            );
        }
    }
    if !found.skipped.is_empty() {
        text.push_str("\nSkipped:\n");
        for skipped in &found.skipped {
            let _ = writeln!(text, "- {}: {}", skipped.file.display(), skipped.reason);
        }
    }
    text.trim_end().to_string()
}
