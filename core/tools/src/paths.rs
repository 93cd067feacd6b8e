//! Turning the paths a model writes into absolute paths, and back into short ones to show.
//!
//! Models write relative paths, absolute paths, `./x` and `../x`. Every tool resolves them
//! the same way here: against the call's cwd, with `.` and `..` folded lexically so a title
//! and a permission rule see the same path the tool touches. Showing a path prefers the form
//! relative to the cwd when the path lies inside it. Permission checks use
//! [`real_path`], which follows symlinks the way a write does.

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

/// The file a write through the absolute, normalized `path` really changes: the longest
/// prefix of `path` that exists, with every symlink in it followed, joined with the rest
/// (the part that does not exist yet). A symlink inside the project that points outside
/// yields a path outside the project, which is what permission rules must see.
pub fn real_path(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut missing = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            out.extend(missing.iter().rev());
            return out;
        }
        // Any failure (missing, dangling link, no permission) moves one level up; the
        // root always canonicalizes, so the loop ends.
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
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

    #[test]
    fn real_path_follows_symlinks_in_the_existing_prefix() {
        let project = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(project.path()).expect("canonical project");
        let away = std::fs::canonicalize(outside.path()).expect("canonical outside");
        std::fs::write(away.join("secret.txt"), "x").expect("write");
        std::os::unix::fs::symlink(&away, root.join("out")).expect("dir symlink");
        std::os::unix::fs::symlink(away.join("secret.txt"), root.join("link.txt"))
            .expect("file symlink");

        assert_eq!(real_path(&root.join("link.txt")), away.join("secret.txt"));
        assert_eq!(
            real_path(&root.join("out/secret.txt")),
            away.join("secret.txt")
        );
        assert_eq!(
            real_path(&root.join("out/new/deeper.txt")),
            away.join("new/deeper.txt")
        );
        assert_eq!(
            real_path(&root.join("src/missing.rs")),
            root.join("src/missing.rs")
        );
    }

    #[test]
    fn a_dangling_symlink_is_its_own_target() {
        let project = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(project.path()).expect("canonical project");
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).expect("symlink");
        // A write replaces a dangling link itself (see `PlannedChange::commit`).
        assert_eq!(real_path(&root.join("dangling")), root.join("dangling"));
    }
}
