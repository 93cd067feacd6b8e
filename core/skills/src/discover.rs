//! Finding skills and custom commands, and which one of a name counts.
//!
//! Commands are `commands/**/*.md` (a subfolder gives `dir:name`) under `~/.claude`, Larik's
//! configuration directory, then `.claude` and `.larik` in every directory from the
//! repository root down to the working directory. Skills are `skills/<folder>/SKILL.md` under
//! `~/.claude`, the configuration directory, then `.agents`, `.claude` and `.larik` from the
//! repository root down to the working directory. All command folders come before all skill
//! folders, and a later file overrides an earlier one of the same name — so a skill
//! overrides a command, and a folder nearer the working directory overrides one above it.
//! A file that cannot be used is skipped with the reason, never an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::frontmatter;

/// The most bytes a skill or command file may have.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// How many levels of subfolders of a commands folder are searched.
const MAX_COMMAND_DEPTH: usize = 5;

/// The most files one folder may give, so a huge tree cannot stall a session's start.
const MAX_FILES_PER_ROOT: usize = 2_000;

/// Where to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoots {
    /// The user's home directory (`~/.claude/...`).
    pub home: Option<PathBuf>,
    /// Larik's personal configuration directory.
    pub config_dir: Option<PathBuf>,
    /// The repository root (the project).
    pub repo_root: PathBuf,
    /// The working directory, at or below the repository root.
    pub cwd: PathBuf,
}

/// Whether an entry is a skill or a custom command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A folder with a `SKILL.md`.
    Skill,
    /// A `commands/<name>.md` file.
    Command,
}

impl Kind {
    /// `skill` or `command`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Skill => "skill",
            Kind::Command => "command",
        }
    }
}

/// A skill or command that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name: `/name` runs it.
    pub name: String,
    /// What it is for, in a line (for a command without one: its first line).
    pub description: String,
    /// A skill or a command.
    pub kind: Kind,
    /// The file it was read from.
    pub file: PathBuf,
    /// Its folder: a skill's own, the folder a command file is in.
    pub dir: PathBuf,
    /// The text after the frontmatter.
    pub body: String,
    /// `argument-hint`, as written.
    pub argument_hint: Option<String>,
    /// Whether it is in the model's index and the `skill` tool loads it.
    pub model_invocable: bool,
    /// Whether the user runs it as `/name`.
    pub user_invocable: bool,
}

/// An entry a later one of the same name overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overridden {
    /// The entry that no longer counts.
    pub entry: Entry,
    /// The file of the one that counts.
    pub by: PathBuf,
}

/// A file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file (or folder).
    pub file: PathBuf,
    /// Why, as a predicate: "has no `description`".
    pub reason: String,
}

/// What discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// The entries that count, by name.
    pub entries: Vec<Entry>,
    /// Entries overridden by a later one of the same name, in the order found.
    pub overridden: Vec<Overridden>,
    /// Files skipped, with the reason.
    pub skipped: Vec<Skipped>,
}

impl Discovered {
    /// The entry called `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|entry| entry.name == name)
    }
}

/// The folders searched, in order, with what each holds.
pub fn search_roots(roots: &SkillRoots) -> Vec<(PathBuf, Kind)> {
    let mut folders: Vec<(PathBuf, Kind)> = Vec::new();
    let between = directories_between(&roots.repo_root, &roots.cwd);
    let personal = |kind: &'static str| -> Vec<PathBuf> {
        roots
            .home
            .iter()
            .map(|home| home.join(".claude").join(kind))
            .chain(roots.config_dir.iter().map(|dir| dir.join(kind)))
            .collect()
    };
    folders.extend(
        personal("commands")
            .into_iter()
            .map(|dir| (dir, Kind::Command)),
    );
    for dir in &between {
        for base in [".claude", ".larik"] {
            folders.push((dir.join(base).join("commands"), Kind::Command));
        }
    }
    folders.extend(personal("skills").into_iter().map(|dir| (dir, Kind::Skill)));
    for dir in &between {
        for base in [".agents", ".claude", ".larik"] {
            folders.push((dir.join(base).join("skills"), Kind::Skill));
        }
    }
    // A project in the home directory would list `~/.claude` twice: once is enough.
    let mut seen = std::collections::HashSet::new();
    folders.retain(|(folder, _)| seen.insert(folder.clone()));
    folders
}

/// The directories from `top` down to `bottom` (just `bottom` when it is not below `top`).
fn directories_between(top: &Path, bottom: &Path) -> Vec<PathBuf> {
    let Ok(below) = bottom.strip_prefix(top) else {
        return vec![bottom.to_path_buf()];
    };
    let mut dirs = vec![top.to_path_buf()];
    let mut current = top.to_path_buf();
    for part in below.components() {
        current.push(part);
        dirs.push(current.clone());
    }
    dirs
}

/// Finds every skill and command `roots` lead to.
pub fn discover(roots: &SkillRoots) -> Discovered {
    let mut found = Discovered::default();
    let mut by_name: BTreeMap<String, Entry> = BTreeMap::new();
    for (folder, kind) in search_roots(roots) {
        if !folder.is_dir() {
            continue;
        }
        let files = match kind {
            Kind::Command => command_files(&folder, &mut found.skipped),
            Kind::Skill => skill_files(&folder, &mut found.skipped),
        };
        for (file, stem) in files {
            match read_entry(&file, &stem, kind) {
                Ok(entry) => {
                    if let Some(earlier) = by_name.insert(entry.name.clone(), entry.clone()) {
                        found.overridden.push(Overridden {
                            entry: earlier,
                            by: entry.file.clone(),
                        });
                    }
                }
                Err(reason) => found.skipped.push(Skipped { file, reason }),
            }
        }
    }
    found.entries = by_name.into_values().collect();
    found
}

/// The `.md` files of a commands folder and its subfolders, with their command names.
fn command_files(folder: &Path, skipped: &mut Vec<Skipped>) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut pending = vec![(folder.to_path_buf(), Vec::<String>::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            skipped.push(Skipped {
                file: dir,
                reason: "cannot be read".into(),
            });
            continue;
        };
        let mut children: Vec<PathBuf> = read.filter_map(|item| Some(item.ok()?.path())).collect();
        children.sort();
        for path in children {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                if prefix.len() < MAX_COMMAND_DEPTH {
                    let mut deeper = prefix.clone();
                    deeper.push(name);
                    pending.push((path, deeper));
                } else {
                    skipped.push(Skipped {
                        file: path,
                        reason: format!(
                            "is deeper than the {MAX_COMMAND_DEPTH} levels of subfolders read"
                        ),
                    });
                }
            } else if let Some(stem) = name.strip_suffix(".md") {
                if files.len() >= MAX_FILES_PER_ROOT {
                    skipped.push(Skipped {
                        file: path,
                        reason: format!(
                            "is past the {MAX_FILES_PER_ROOT} files read from one folder"
                        ),
                    });
                    continue;
                }
                let mut parts = prefix.clone();
                parts.push(stem.to_string());
                files.push((path, parts.join(":")));
            }
        }
    }
    files.sort();
    files
}

/// The `SKILL.md` of each folder of a skills folder, with the folder's name.
fn skill_files(folder: &Path, skipped: &mut Vec<Skipped>) -> Vec<(PathBuf, String)> {
    let Ok(read) = std::fs::read_dir(folder) else {
        skipped.push(Skipped {
            file: folder.to_path_buf(),
            reason: "cannot be read".into(),
        });
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = read
        .filter_map(|item| Some(item.ok()?.path()))
        .filter(|path| path.is_dir())
        .filter(|path| {
            !path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with('.'))
        })
        .collect();
    dirs.sort();
    let mut files = Vec::new();
    for dir in dirs {
        let name = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        if files.len() >= MAX_FILES_PER_ROOT {
            skipped.push(Skipped {
                file: dir,
                reason: format!("is past the {MAX_FILES_PER_ROOT} skills read from one folder"),
            });
            continue;
        }
        let file = dir.join("SKILL.md");
        if file.is_file() {
            files.push((file, name));
        } else {
            skipped.push(Skipped {
                file: dir,
                reason: "has no SKILL.md".into(),
            });
        }
    }
    files
}

/// Reads one skill or command.
fn read_entry(file: &Path, stem: &str, kind: Kind) -> Result<Entry, String> {
    let size = std::fs::metadata(file)
        .map_err(|error| format!("cannot be read: {error}"))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(format!("is larger than {MAX_FILE_BYTES} bytes"));
    }
    let text = std::fs::read_to_string(file).map_err(|error| format!("cannot be read: {error}"))?;
    let (front, body) = frontmatter::read(&text)?;
    let name = match kind {
        Kind::Skill => front.name.clone().unwrap_or_else(|| stem.to_string()),
        // A command is named by its path; its frontmatter cannot rename it.
        Kind::Command => stem.to_string(),
    };
    if name.is_empty() || name.contains(char::is_whitespace) || name.starts_with('/') {
        return Err(format!(
            "`{name}` cannot name a skill or command (use a word, no spaces)"
        ));
    }
    let has_description = front.description.is_some();
    let description = match (front.description, kind) {
        (Some(description), _) => description,
        (None, Kind::Skill) => return Err("has no `description`".into()),
        (None, Kind::Command) => first_line(&body),
    };
    let dir = match kind {
        Kind::Skill => file.parent().unwrap_or(file).to_path_buf(),
        Kind::Command => file.parent().unwrap_or(file).to_path_buf(),
    };
    Ok(Entry {
        name,
        description,
        kind,
        file: file.to_path_buf(),
        dir,
        body,
        argument_hint: front.argument_hint,
        model_invocable: has_description && !front.disable_model_invocation,
        user_invocable: front.user_invocable,
    })
}

/// A body's first line with text, cut to a readable length.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|line| line.trim().trim_start_matches('#').trim())
        .find(|line| !line.is_empty())
        .unwrap_or("");
    let mut short: String = line.chars().take(100).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}
