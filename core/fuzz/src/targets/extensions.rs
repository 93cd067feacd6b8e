//! Targets for settings files and what extensions hand back: a settings file read as each
//! layer and changed ([`settings`]), a hook's output and the hooks section of a settings
//! file ([`hooks`]), skill, command and agent files with their frontmatter
//! ([`frontmatter`]), and web pages as `web_fetch` renders and pages them ([`web`]).

mod frontmatter;
mod hooks;
mod settings;
mod web;

use crate::Target;

/// A temporary folder for one case's files, in memory where the system has a tmpfs at
/// `/dev/shm`: changing a settings file syncs it to disk, which on a disk takes
/// milliseconds a case cannot spend.
fn scratch() -> tempfile::TempDir {
    let memory = std::path::Path::new("/dev/shm");
    let made = if memory.is_dir() {
        tempfile::tempdir_in(memory).or_else(|_| tempfile::tempdir())
    } else {
        tempfile::tempdir()
    };
    match made {
        Ok(dir) => dir,
        Err(error) => panic!("no temporary folder: {error}"),
    }
}

/// The extension targets.
pub const TARGETS: &[Target] = &[
    Target {
        name: "settings_file",
        run: settings::run,
        tokens: settings::TOKENS,
    },
    Target {
        name: "hook_output",
        run: hooks::run,
        tokens: hooks::TOKENS,
    },
    Target {
        name: "skill_file",
        run: frontmatter::skill_file,
        tokens: frontmatter::TOKENS,
    },
    Target {
        name: "command_file",
        run: frontmatter::command_file,
        tokens: frontmatter::TOKENS,
    },
    Target {
        name: "agent_file",
        run: frontmatter::agent_file,
        tokens: frontmatter::TOKENS,
    },
    Target {
        name: "web_page",
        run: web::run,
        tokens: web::TOKENS,
    },
];
