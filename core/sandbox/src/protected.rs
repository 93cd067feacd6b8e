//! The paths inside the project that no sandboxed command may create, change, rename or
//! delete, and what stands at each of them right now.
//!
//! `git` runs hooks and reads its configuration (which may name programs, or point at other
//! configuration) outside any sandbox, and the settings files (and the skills, commands
//! and agents under `.larik`, `.claude` and `.agents`) decide what Larik and other agents
//! may do, so writing any of them would reach outside the sandbox later. They are
//! protected whether they exist or not: a command must not plant a `.claude/settings.json`
//! or a `.git/hooks/pre-commit` where there was none. When `.git` is missing, `.git` itself
//! is the protected entry (a command cannot start a repository whose hooks would run later);
//! when it is a file (a worktree or submodule pointing at its repository) the file is; when
//! it is a directory, the directory must stay one and the entries beneath it are protected.

use std::path::{Path, PathBuf};

/// The protected paths, relative to the project root (see the module documentation for
/// how `.git` itself is treated).
pub const PROTECTED_PATHS: [&str; 10] = [
    ".git/hooks",
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/info",
    ".git/modules",
    ".larik",
    ".claude",
    ".agents",
    ".mcp.json",
];

/// What a protected path is when it exists in a normal project: a missing one is held by a
/// placeholder of this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A directory (`.git/hooks`, `.larik`, …).
    Dir,
    /// A file (`.git/config`, `.mcp.json`, …).
    File,
}

/// What stands at a protected path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Nothing, or only a placeholder (see `placeholder`), perhaps one a crash left.
    Absent,
    /// A directory or a file (or another kind of entry that is not a link).
    Present,
    /// A symbolic link, which a mount cannot pin (a mount lands on its target).
    Link,
}

/// One protected path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Protected {
    /// The absolute path.
    pub path: PathBuf,
    /// The path relative to the project root, for messages.
    pub relative: PathBuf,
    /// What it normally is.
    pub kind: Kind,
    /// What stands there now.
    pub standing: Standing,
}

/// The protected paths of a project at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtectedSet {
    /// `.git` when it is a real directory: it must stay that directory (renaming it away
    /// would make room for a new one with other hooks); its entries are in `paths`.
    pub git_dir: Option<PathBuf>,
    /// Every protected path, parents before children.
    pub paths: Vec<Protected>,
}

const GIT_ENTRIES: [(&str, Kind); 6] = [
    ("hooks", Kind::Dir),
    ("config", Kind::File),
    ("config.worktree", Kind::File),
    ("commondir", Kind::File),
    ("info", Kind::Dir),
    ("modules", Kind::Dir),
];

const AGENT_ENTRIES: [(&str, Kind); 4] = [
    (".larik", Kind::Dir),
    (".claude", Kind::Dir),
    (".agents", Kind::Dir),
    (".mcp.json", Kind::File),
];

/// The protected paths of the project at `root` as they stand now. Asked per command: a
/// repository may be created or a settings directory added between two commands.
pub(crate) fn protected_set(root: &Path) -> ProtectedSet {
    let mut paths = Vec::new();
    let entry = |relative: PathBuf, kind: Kind| {
        let path = root.join(&relative);
        let standing = standing(&path, kind);
        Protected {
            path,
            relative,
            kind,
            standing,
        }
    };
    let git = root.join(".git");
    let git_is_dir = git
        .symlink_metadata()
        .is_ok_and(|meta| meta.file_type().is_dir());
    if git_is_dir {
        for (name, kind) in GIT_ENTRIES {
            paths.push(entry(Path::new(".git").join(name), kind));
        }
    } else {
        // Missing: nothing beneath it may be created. A file or a link: it says where the
        // repository is, so it may not change.
        let kind = if git.symlink_metadata().is_ok() {
            Kind::File
        } else {
            Kind::Dir
        };
        paths.push(entry(PathBuf::from(".git"), kind));
    }
    for (name, kind) in AGENT_ENTRIES {
        paths.push(entry(PathBuf::from(name), kind));
    }
    ProtectedSet {
        git_dir: git_is_dir.then_some(git),
        paths,
    }
}

fn standing(path: &Path, kind: Kind) -> Standing {
    match path.symlink_metadata() {
        Err(_) => Standing::Absent,
        Ok(meta) if meta.file_type().is_symlink() => Standing::Link,
        Ok(meta) if crate::placeholder::is_placeholder(path, &meta, kind) => Standing::Absent,
        Ok(_) => Standing::Present,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relatives(set: &ProtectedSet) -> Vec<(String, Kind, Standing)> {
        set.paths
            .iter()
            .map(|p| (p.relative.display().to_string(), p.kind, p.standing))
            .collect()
    }

    #[test]
    fn every_protected_path_is_listed_whether_it_exists_or_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        // No repository: `.git` itself is protected, as a directory to come.
        let set = protected_set(root);
        assert_eq!(set.git_dir, None);
        assert_eq!(
            relatives(&set),
            [
                (".git".into(), Kind::Dir, Standing::Absent),
                (".larik".into(), Kind::Dir, Standing::Absent),
                (".claude".into(), Kind::Dir, Standing::Absent),
                (".agents".into(), Kind::Dir, Standing::Absent),
                (".mcp.json".into(), Kind::File, Standing::Absent),
            ]
        );

        // A repository: its entries, present or not.
        std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        std::fs::write(root.join(".git/config"), "").expect("write");
        std::fs::write(root.join(".mcp.json"), "{}").expect("write");
        std::os::unix::fs::symlink("/elsewhere", root.join(".claude")).expect("symlink");
        let set = protected_set(root);
        assert_eq!(set.git_dir, Some(root.join(".git")));
        let listed = relatives(&set);
        assert_eq!(listed.len(), 10);
        for relative in PROTECTED_PATHS {
            assert!(
                listed.iter().any(|(path, _, _)| path == relative),
                "{relative} is listed"
            );
        }
        assert!(listed.contains(&(".git/hooks".into(), Kind::Dir, Standing::Present)));
        assert!(listed.contains(&(".git/commondir".into(), Kind::File, Standing::Absent)));
        assert!(listed.contains(&(".claude".into(), Kind::Dir, Standing::Link)));
        assert!(listed.contains(&(".mcp.json".into(), Kind::File, Standing::Present)));

        // A worktree's `.git` file is protected itself.
        let worktree = tempfile::tempdir().expect("temp dir");
        std::fs::write(worktree.path().join(".git"), "gitdir: /x\n").expect("write");
        let set = protected_set(worktree.path());
        assert_eq!(
            relatives(&set)[0],
            (".git".into(), Kind::File, Standing::Present)
        );
    }
}
