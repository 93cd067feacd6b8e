//! Which paths a checkpoint may touch: confinement to the project root (lexically and
//! after resolving the parent directory's symlinks), the protected patterns, and the
//! resolution of a path to a real parent directory plus a final name that is never
//! followed if it is a link.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::CheckpointError;

/// The protected patterns used unless [`crate::CheckpointStore::with_protected`] replaces
/// them: every `.git` directory at any depth, and the project's own `.larik/`, `.claude/`
/// and `.mcp.json`.
pub const DEFAULT_PROTECTED: &[&str] = &["**/.git/", ".larik/", ".claude/", ".mcp.json"];

/// One protected pattern, relative to the project root.
///
/// A leading `**/` lets it match at any depth; a trailing `/` makes it a directory pattern
/// that covers the entry itself and everything under it. There are no other wildcards.
#[derive(Debug, Clone)]
struct Pattern {
    anywhere: bool,
    directory: bool,
    parts: Vec<OsString>,
}

impl Pattern {
    fn parse(text: &str) -> Option<Pattern> {
        let (anywhere, rest) = match text.strip_prefix("**/") {
            Some(rest) => (true, rest),
            None => (false, text.trim_start_matches('/')),
        };
        let directory = rest.ends_with('/');
        let parts: Vec<OsString> = rest
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .map(OsString::from)
            .collect();
        (!parts.is_empty()).then_some(Pattern {
            anywhere,
            directory,
            parts,
        })
    }

    fn matches(&self, rel: &Path) -> bool {
        let parts: Vec<&OsStr> = rel.components().map(Component::as_os_str).collect();
        let width = self.parts.len();
        if parts.len() < width {
            return false;
        }
        let last_start = if self.anywhere {
            parts.len() - width
        } else {
            0
        };
        (0..=last_start).any(|start| {
            let window = &parts[start..start + width];
            window
                .iter()
                .zip(&self.parts)
                .all(|(a, b)| *a == b.as_os_str())
                && (self.directory || start + width == parts.len())
        })
    }
}

/// A path resolved against the project: a real (symlink-free) parent directory, possibly
/// with directories still to create under it, and the final name, which is not resolved.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The path relative to the real project root, with the parent's symlinks resolved.
    pub rel: PathBuf,
    /// The deepest ancestor that exists, canonical and inside the project.
    pub existing: PathBuf,
    /// Directory names between `existing` and the parent that do not exist yet.
    pub missing: Vec<OsString>,
    /// The final component.
    pub name: OsString,
}

impl Resolved {
    /// The parent directory once the missing directories exist.
    pub fn parent(&self) -> PathBuf {
        let mut parent = self.existing.clone();
        parent.extend(&self.missing);
        parent
    }

    /// The entry this path names; its last component is a name, never followed here.
    pub fn target(&self) -> PathBuf {
        self.parent().join(&self.name)
    }

    /// Creates the missing parent directories one at a time, refusing anything that
    /// appeared in their place meanwhile (such as a symlink).
    pub fn create_parents(&self) -> Result<(), CheckpointError> {
        let mut dir = self.existing.clone();
        for name in &self.missing {
            dir.push(name);
            match fs::create_dir(&dir) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    let meta = fs::symlink_metadata(&dir)
                        .map_err(|source| CheckpointError::io(&dir, source))?;
                    if meta.file_type().is_symlink() {
                        return Err(CheckpointError::Symlink { path: dir });
                    }
                    if !meta.is_dir() {
                        return Err(CheckpointError::io(
                            &dir,
                            io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
                        ));
                    }
                }
                Err(error) => return Err(CheckpointError::io(&dir, error)),
            }
        }
        Ok(())
    }
}

/// The project root and the rules for paths under it.
#[derive(Debug, Clone)]
pub(crate) struct Project {
    /// The root as given, lexically normalised.
    root: PathBuf,
    /// The root with every symlink resolved.
    real_root: PathBuf,
    protected: Vec<Pattern>,
}

impl Project {
    /// A project rooted at `root`, which must be an absolute path to a directory.
    pub fn new(root: &Path) -> Result<Project, CheckpointError> {
        if !root.is_absolute() {
            return Err(CheckpointError::InvalidPath {
                path: root.to_path_buf(),
                reason: "the project root must be an absolute path",
            });
        }
        let real_root =
            fs::canonicalize(root).map_err(|source| CheckpointError::io(root, source))?;
        Ok(Project {
            root: normalize(root),
            real_root,
            protected: DEFAULT_PROTECTED
                .iter()
                .filter_map(|p| Pattern::parse(p))
                .collect(),
        })
    }

    /// Replaces the protected patterns.
    pub fn set_protected(&mut self, patterns: &[String]) {
        self.protected = patterns.iter().filter_map(|p| Pattern::parse(p)).collect();
    }

    /// The project root with every symlink resolved.
    pub fn real_root(&self) -> &Path {
        &self.real_root
    }

    /// Resolves `path` (absolute, or relative to the project root) and checks that it is
    /// inside the project and not protected. The final component is not looked at.
    pub fn resolve(&self, path: &Path) -> Result<Resolved, CheckpointError> {
        let outside = || CheckpointError::OutsideProject {
            path: path.to_path_buf(),
        };
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let lexical = normalize(&absolute);
        let lexical_rel = lexical
            .strip_prefix(&self.root)
            .or_else(|_| lexical.strip_prefix(&self.real_root))
            .map_err(|_| outside())?;
        if lexical_rel.as_os_str().is_empty() {
            return Err(CheckpointError::InvalidPath {
                path: path.to_path_buf(),
                reason: "it is the project root",
            });
        }
        self.check_protected(lexical_rel, path)?;
        let (Some(name), Some(parent)) = (absolute.file_name(), absolute.parent()) else {
            return Err(CheckpointError::InvalidPath {
                path: path.to_path_buf(),
                reason: "it does not end in a file name",
            });
        };
        let (existing, missing) = deepest_existing(parent, path)?;
        // Resolving the parent is what catches a directory that became a symlink to
        // somewhere else: the real path is checked, not the spelling.
        if !existing.starts_with(&self.real_root) {
            return Err(outside());
        }
        if let Some(first) = missing.first() {
            // Something exists where canonicalize saw nothing: a dangling symlink.
            let blocked = existing.join(first);
            if fs::symlink_metadata(&blocked).is_ok() {
                return Err(CheckpointError::Symlink { path: blocked });
            }
        }
        let resolved = Resolved {
            rel: PathBuf::new(),
            existing,
            missing,
            name: name.to_os_string(),
        };
        let rel = resolved
            .target()
            .strip_prefix(&self.real_root)
            .map_err(|_| outside())?
            .to_path_buf();
        self.check_protected(&rel, path)?;
        Ok(Resolved { rel, ..resolved })
    }

    fn check_protected(&self, rel: &Path, original: &Path) -> Result<(), CheckpointError> {
        if self.protected.iter().any(|pattern| pattern.matches(rel)) {
            return Err(CheckpointError::Protected {
                path: original.to_path_buf(),
            });
        }
        Ok(())
    }
}

/// Splits `parent` into its deepest existing ancestor (canonicalized) and the names below
/// it that do not exist yet.
fn deepest_existing(
    parent: &Path,
    original: &Path,
) -> Result<(PathBuf, Vec<OsString>), CheckpointError> {
    let mut missing = Vec::new();
    let mut current = parent;
    loop {
        match fs::canonicalize(current) {
            Ok(real) => {
                missing.reverse();
                return Ok((real, missing));
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let (Some(name), Some(up)) = (current.file_name(), current.parent()) else {
                    return Err(CheckpointError::InvalidPath {
                        path: original.to_path_buf(),
                        reason: "a missing directory is named `..`",
                    });
                };
                missing.push(name.to_os_string());
                current = up;
            }
            Err(error) => return Err(CheckpointError::io(current, error)),
        }
    }
}

/// Removes `.` and resolves `..` textually, as the lexical confinement check needs.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protected(patterns: &[&str], path: &str) -> bool {
        patterns
            .iter()
            .filter_map(|p| Pattern::parse(p))
            .any(|p| p.matches(Path::new(path)))
    }

    #[test]
    fn default_patterns_cover_git_anywhere_and_project_files_at_the_root() {
        let defaults = DEFAULT_PROTECTED;
        assert!(protected(defaults, ".git/config"));
        assert!(protected(defaults, "vendor/lib/.git/HEAD"));
        assert!(protected(defaults, "vendor/lib/.git"));
        assert!(protected(defaults, ".larik/settings.json"));
        assert!(protected(defaults, ".claude/settings.json"));
        assert!(protected(defaults, ".mcp.json"));
        assert!(!protected(defaults, "src/.mcp.json"));
        assert!(!protected(defaults, "docs/.larik/notes.md"));
        assert!(!protected(defaults, ".gitignore"));
        assert!(!protected(defaults, "src/main.rs"));
    }

    #[test]
    fn normalize_resolves_dots_textually() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/a/../../x")), PathBuf::from("/x"));
    }
}
