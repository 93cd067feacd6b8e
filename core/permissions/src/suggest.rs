//! The rule an "always allow" answer would remember for a call.
//!
//! A suggestion must do two things: parse back with [`Rule::parse`](crate::Rule::parse) and,
//! once remembered, allow the very call it was made for. For shell commands it should also
//! not remember more than the user meant: a prefix such as `Bash(git status:*)` is offered
//! only for a single plain command whose program is harmless; chained commands, commands
//! with substitutions or file redirections, and risky programs (deleting, moving, fetching,
//! running other code, publishing) get the exact command instead.

use crate::command::{CommandPart, split_command};
use crate::paths::rule_path;
use crate::rule::{canonical_name, escape_command};
use crate::{PermissionQuery, ToolCategory};

/// Programs for which a prefix rule would allow too much: they delete, overwrite, change
/// ownership, reach the network, or run arbitrary other code.
const RISKY_PROGRAMS: &[&str] = &[
    "rm", "rmdir", "sudo", "su", "doas", "chmod", "chown", "chgrp", "dd", "mkfs", "shred", "mv",
    "cp", "ln", "kill", "pkill", "killall", "curl", "wget", "ssh", "scp", "rsync", "docker",
    "eval", "exec", "bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "python", "node",
    "perl", "ruby", "env", "xargs", "source", ".",
    // These run the command that follows them, so their prefix says nothing.
    "command", "builtin", "nohup", "time", "nice", "timeout", "setsid", "stdbuf",
];

/// Subcommands that push, publish or throw work away, by program.
const RISKY_SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "push", "reset", "clean", "checkout", "restore", "rm", "rebase",
        ],
    ),
    ("npm", &["publish", "unpublish"]),
    ("yarn", &["publish"]),
    ("pnpm", &["publish"]),
    ("cargo", &["publish"]),
];

/// `find` actions that run commands, delete, or write files.
const RISKY_FIND_ACTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// The rule "always allow" would add for this call.
pub fn suggest_rule(query: &PermissionQuery) -> String {
    let category_rule = |name: &str| match query.path {
        Some(path) => format!("{name}({})", rule_path(path, query.cwd)),
        None => name.to_owned(),
    };
    match query.category {
        ToolCategory::Read => category_rule("Read"),
        ToolCategory::Edit => category_rule("Edit"),
        ToolCategory::Other => canonical_name(query.tool),
        ToolCategory::Network => match query.domain {
            Some(host) => format!("{}(domain:{host})", canonical_name(query.tool)),
            None => canonical_name(query.tool),
        },
        ToolCategory::Execute => {
            let tool = canonical_name(query.tool);
            match query.command {
                Some(command) => command_rule(&tool, command),
                None => tool,
            }
        }
    }
}

/// `Tool(<first words>:*)` for a single plain harmless command, `Tool(<command>)` for any
/// other, and the bare tool for an empty one.
fn command_rule(tool: &str, command: &str) -> String {
    let parts = split_command(command, false);
    let exact = || format!("{tool}({})", escape_command(command.trim()));
    match parts.as_slice() {
        [] => tool.to_owned(),
        // A prefix rule never vouches for a side channel, so only the exact command would
        // allow this call again.
        [part] if !part.has_side_channel && !is_risky(part) => {
            let prefix = prefix_words(&part.words);
            if prefix.is_empty() {
                exact()
            } else {
                format!("{tool}({}:*)", escape_command(&prefix.join(" ")))
            }
        }
        _ => exact(),
    }
}

/// Up to two leading words, stopping before a redirection so that `ls > /dev/null` gives
/// `ls` rather than `ls >`, and before a word ending in an escaped space, which the rule's
/// trimming would cut off.
fn prefix_words(words: &[String]) -> Vec<String> {
    let mut prefix = Vec::new();
    for (index, word) in words.iter().take(2).enumerate() {
        let next_redirects = words
            .get(index + 1)
            .is_some_and(|next| next.starts_with(['<', '>']));
        let fd_or_background = word == "&" || word.chars().all(|c| c.is_ascii_digit());
        if word.contains(['<', '>'])
            || word.ends_with(char::is_whitespace)
            || (next_redirects && fd_or_background)
        {
            break;
        }
        prefix.push(word.clone());
    }
    prefix
}

/// Whether remembering a prefix of this command would allow something dangerous.
fn is_risky(part: &CommandPart) -> bool {
    // Leading `NAME=value` assignments do not change which program runs.
    let mut words = part
        .words
        .iter()
        .map(|word| unquote(word))
        .skip_while(|word| is_assignment(word));
    let Some(first) = words.next() else {
        return false;
    };
    let program = first.rsplit('/').next().unwrap_or(&first);
    // `python3.12`, `mkfs.ext4`: the family decides.
    let family = program
        .split('.')
        .next()
        .unwrap_or(program)
        .trim_end_matches(|c: char| c.is_ascii_digit());
    if RISKY_PROGRAMS.contains(&program) || RISKY_PROGRAMS.contains(&family) {
        return true;
    }
    let rest: Vec<String> = words.collect();
    if program == "find" {
        return rest
            .iter()
            .any(|word| RISKY_FIND_ACTIONS.contains(&word.as_str()));
    }
    let Some((_, subcommands)) = RISKY_SUBCOMMANDS.iter().find(|(name, _)| *name == program) else {
        return false;
    };
    match rest.first() {
        // Global options come before the subcommand (`git -C dir push`), and a prefix
        // made of them would cover every subcommand.
        Some(second) if second.starts_with(['-', '+']) => true,
        Some(second) => subcommands.contains(&second.as_str()),
        None => false,
    }
}

/// A word with its quotes and backslashes dropped, which is how the shell reads a program
/// name such as `"rm"` or `\rm`.
fn unquote(word: &str) -> String {
    word.chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect()
}

/// Whether `word` is a `NAME=value` assignment rather than a program.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}
