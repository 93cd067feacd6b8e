//! Which language server serves which files: the built-in server specs, the language ids
//! the protocol expects per file extension, and finding a command on a caller-given PATH.

use std::path::{Path, PathBuf};

/// How to start one kind of language server and which files it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// A short name, used for the log file (`lsp-<name>.log`), notices, and configuration.
    pub name: String,
    /// The program: a bare name looked up on the PATH, or a path.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// File extensions it serves, without the dot.
    pub extensions: Vec<String>,
    /// Files or directories whose presence marks a project root for it.
    pub root_markers: Vec<String>,
    /// Its compiler errors come from a check it runs after each save (rust-analyzer runs
    /// `cargo check`): diagnostics after a change wait for that work to end.
    pub checks_on_save: bool,
}

impl ServerSpec {
    /// A spec from string slices.
    pub fn new(
        name: &str,
        command: &str,
        args: &[&str],
        extensions: &[&str],
        root_markers: &[&str],
    ) -> Self {
        let owned = |items: &[&str]| items.iter().map(|item| item.to_string()).collect();
        Self {
            name: name.into(),
            command: command.into(),
            args: owned(args),
            extensions: owned(extensions),
            root_markers: owned(root_markers),
            checks_on_save: false,
        }
    }

    /// The same spec for a server that checks on save (see [`ServerSpec::checks_on_save`]).
    pub fn checking_on_save(mut self) -> Self {
        self.checks_on_save = true;
        self
    }

    /// The built-in servers: rust-analyzer, pyright, typescript-language-server, gopls and
    /// clangd. Each is used only when its command is found.
    pub fn defaults() -> Vec<Self> {
        vec![
            Self::new(
                "rust-analyzer",
                "rust-analyzer",
                &[],
                &["rs"],
                &["Cargo.toml", "rust-project.json"],
            )
            .checking_on_save(),
            Self::new(
                "pyright",
                "pyright-langserver",
                &["--stdio"],
                &["py", "pyi"],
                &[
                    "pyrightconfig.json",
                    "pyproject.toml",
                    "setup.py",
                    "setup.cfg",
                ],
            ),
            Self::new(
                "typescript-language-server",
                "typescript-language-server",
                &["--stdio"],
                &["ts", "tsx", "js", "jsx", "mts", "cts", "mjs", "cjs"],
                &["tsconfig.json", "jsconfig.json", "package.json"],
            ),
            Self::new("gopls", "gopls", &[], &["go"], &["go.work", "go.mod"]),
            Self::new(
                "clangd",
                "clangd",
                &[],
                &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"],
                &["compile_commands.json", "compile_flags.txt", ".clangd"],
            ),
        ]
    }

    /// Whether this spec serves `path`, by extension.
    pub fn serves(&self, path: &Path) -> bool {
        path.extension()
            .and_then(|extension| extension.to_str())
            .is_some_and(|extension| self.extensions.iter().any(|own| own == extension))
    }
}

/// The protocol's language id for a file, from its extension.
pub fn language_id(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .unwrap_or("");
    match extension {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        "json" => "json",
        "md" => "markdown",
        _ => "plaintext",
    }
}

/// Finds `command` the way a shell would: a command with a `/` is taken as a path (relative
/// ones against `cwd`), a bare name is looked up in `path_dirs`. Only executable files count.
pub fn find_command(command: &str, path_dirs: &[PathBuf], cwd: &Path) -> Option<PathBuf> {
    if command.contains('/') {
        let path = cwd.join(command);
        return is_executable(&path).then_some(path);
    }
    path_dirs
        .iter()
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// The project root for `file`: the nearest ancestor directory holding one of `markers`,
/// looking no higher than `project_root` when the file is inside it; else `project_root`.
pub fn find_root(file: &Path, markers: &[String], project_root: &Path) -> PathBuf {
    let inside = file.starts_with(project_root);
    for dir in file.ancestors().skip(1) {
        if inside && !dir.starts_with(project_root) {
            break;
        }
        if markers.iter().any(|marker| dir.join(marker).exists()) {
            return dir.to_path_buf();
        }
    }
    project_root.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_commands_and_language_ids() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("project");
        let nested = project.join("web/src");
        std::fs::create_dir_all(&nested).expect("mkdir");
        std::fs::write(project.join("web/package.json"), "{}").expect("write");
        std::fs::write(dir.path().join("go.mod"), "module x").expect("write");
        let markers = |items: &[&str]| {
            items
                .iter()
                .map(|item| item.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            find_root(&nested.join("a.ts"), &markers(&["package.json"]), &project),
            project.join("web")
        );
        // The go.mod above the project root is not used for a file inside the project.
        assert_eq!(
            find_root(&nested.join("a.go"), &markers(&["go.mod"]), &project),
            project
        );

        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::fs::write(bin.join("plain"), "").expect("write");
        std::fs::write(bin.join("tool"), "#!/bin/sh\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("tool"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let dirs = [dir.path().join("missing"), bin.clone()];
        assert_eq!(
            find_command("tool", &dirs, &project),
            Some(bin.join("tool"))
        );
        assert_eq!(find_command("plain", &dirs, &project), None);
        assert_eq!(
            find_command("../bin/tool", &dirs, &project),
            Some(project.join("../bin/tool"))
        );

        assert_eq!(language_id(Path::new("/a/b.tsx")), "typescriptreact");
        assert!(ServerSpec::defaults()[4].serves(Path::new("/x/y.cpp")));
    }
}
