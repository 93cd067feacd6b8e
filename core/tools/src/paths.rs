//! Turning the paths a model writes into absolute paths, and back into short ones to show.
//!
//! Models write relative paths, absolute paths, `./x` and `../x`. Every tool resolves them
//! the same way here: against the call's cwd, with `.` and `..` folded lexically so a title
//! and a permission rule see the same path the tool touches. Showing a path prefers the form
//! relative to the cwd when the path lies inside it.

use std::path::{Component, Path, PathBuf};

/// `path` as an absolute path: relative paths join `cwd`; `.` and `..` are folded without
/// touching the file system (a missing file still resolves).
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    normalize(&joined)
}

/// Folds `.` and `..` components; `..` at the root stays at the root.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // Popping past the root is a no-op, as the kernel does for `/..`.
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `path` for display: relative to `cwd` when inside it (`.` for the cwd itself),
/// absolute otherwise.
pub fn display(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_string(),
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_join_the_cwd_and_fold_dots() {
        let cwd = Path::new("/project/app");
        assert_eq!(
            resolve(cwd, "src/lib.rs"),
            Path::new("/project/app/src/lib.rs")
        );
        assert_eq!(
            resolve(cwd, "./a/../b.txt"),
            Path::new("/project/app/b.txt")
        );
        assert_eq!(resolve(cwd, "../other"), Path::new("/project/other"));
        assert_eq!(resolve(cwd, "/etc/hosts"), Path::new("/etc/hosts"));
        assert_eq!(resolve(cwd, "/../x"), Path::new("/x"));
    }

    #[test]
    fn display_is_relative_inside_the_cwd_only() {
        let cwd = Path::new("/project/app");
        assert_eq!(display(cwd, Path::new("/project/app/src/a.rs")), "src/a.rs");
        assert_eq!(display(cwd, Path::new("/project/app")), ".");
        assert_eq!(
            display(cwd, Path::new("/project/application")),
            "/project/application"
        );
        assert_eq!(display(cwd, Path::new("/tmp/x")), "/tmp/x");
    }
}
