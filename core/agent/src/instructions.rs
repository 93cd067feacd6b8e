//! Instruction files: the user's standing instructions (`AGENTS.md`, or `CLAUDE.md` where a
//! directory has no `AGENTS.md`), found when a context starts and put into its system
//! prompt.
//!
//! Which files, in the order they appear (most general first, so the most specific comes
//! last and reads as the one that wins):
//! 1. the personal file, `AGENTS.md` in Larik's user config directory (no `CLAUDE.md`
//!    fallback there: that directory is Larik's own);
//! 2. for each directory from the git root down to the working directory, its `AGENTS.md`,
//!    or its `CLAUDE.md` when it has no `AGENTS.md`. The git root is the nearest ancestor of
//!    the working directory (itself included) holding a `.git` entry, a directory or a file
//!    (worktrees and submodules have a file); without one, only the working directory is
//!    searched.
//!
//! `AGENTS.md` counts as present when it resolves (following symlinks) to a regular file; a
//! present but empty or unreadable `AGENTS.md` is skipped without falling back to
//! `CLAUDE.md`, so an empty one is a way to ignore a `CLAUDE.md` meant for another tool.
//!
//! Each file is rendered as `<instructions source="PATH">…</instructions>`, where `PATH` is
//! where the file was found: the configured directory (or the working directory's ancestor)
//! joined with the file name, absolute whenever the working directory is, symlinks left
//! unresolved. Files are decoded as strict UTF-8 (a BOM is dropped): one that is not
//! UTF-8 is not instructions and is skipped, as are unreadable and empty files. A file
//! longer than [`MAX_FILE_BYTES`] is cut at that size, on a character boundary, and its
//! rendering says so. The text is put in verbatim; a file is the user's own and is not
//! escaped.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes taken from one file, so a huge file cannot fill the context.
pub(crate) const MAX_FILE_BYTES: usize = 64 * 1024;

/// The file each directory is searched for first.
const AGENTS: &str = "AGENTS.md";
/// The file used where a directory has no [`AGENTS`].
const CLAUDE: &str = "CLAUDE.md";

/// One instruction file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstructionFile {
    /// Where the file was found.
    pub(crate) path: PathBuf,
    /// Its text, cut to [`MAX_FILE_BYTES`].
    pub(crate) text: String,
    /// Whether the text was cut.
    pub(crate) truncated: bool,
}

/// The instruction files for a context working in `cwd`, most general first: the personal
/// file from `user_config_dir`, then one file per directory from the git root to `cwd`.
pub(crate) fn load(user_config_dir: Option<&Path>, cwd: &Path) -> Vec<InstructionFile> {
    let mut files = Vec::new();
    let personal = user_config_dir.map(|dir| dir.join(AGENTS));
    if let Some(file) = personal.as_deref().and_then(read) {
        files.push(file);
    }
    for dir in project_dirs(cwd) {
        let Some(path) = pick(&dir) else {
            continue;
        };
        // The config directory may lie inside the project; its file is loaded once.
        if personal.as_deref() == Some(path.as_path()) {
            continue;
        }
        files.extend(read(&path));
    }
    files
}

/// The system-prompt section for `files`: a short preface, then each file in its tags.
/// Empty when there are no files, so a project without any leaves the prompt unchanged.
#[cfg(test)]
pub(crate) fn render(files: &[InstructionFile]) -> String {
    rendered_parts(files).concat()
}

/// [`render`] in pieces, one per file: the first also holds the preface, and each after
/// it the blank line that separates it. Empty without files.
pub(crate) fn rendered_parts(files: &[InstructionFile]) -> Vec<String> {
    let mut parts = Vec::with_capacity(files.len());
    for (index, file) in files.iter().enumerate() {
        let mut out = if index == 0 {
            String::from(
                "# Instructions from the user's files\n\
                 The user keeps standing instructions in these files, from the most general to \
                 the most specific (the working directory's last). Follow them; where they \
                 disagree, the later file wins.\n",
            )
        } else {
            String::new()
        };
        out.push('\n');
        out.push_str("<instructions source=\"");
        out.push_str(&escape_attribute(&file.path.to_string_lossy()));
        out.push_str("\">\n");
        out.push_str(&file.text);
        if !file.text.ends_with('\n') {
            out.push('\n');
        }
        if file.truncated {
            out.push_str(&format!(
                "[This file is longer than {} KiB and was cut here; the rest was not \
                 loaded.]\n",
                MAX_FILE_BYTES / 1024
            ));
        }
        out.push_str("</instructions>\n");
        parts.push(out);
    }
    parts
}

/// The directories searched in the project, from the git root (or `cwd` alone when there
/// is none) down to `cwd`.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let Some(root_depth) = cwd
        .ancestors()
        .position(|dir| dir.join(".git").symlink_metadata().is_ok())
    else {
        return vec![cwd.to_path_buf()];
    };
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take(root_depth + 1)
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

/// The instruction file of `dir`: its `AGENTS.md` when present, else its `CLAUDE.md`.
fn pick(dir: &Path) -> Option<PathBuf> {
    [AGENTS, CLAUDE]
        .into_iter()
        .map(|name| dir.join(name))
        .find(|path| is_regular_file(path))
}

/// Whether `path` resolves, following symlinks, to a regular file.
fn is_regular_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file())
}

/// Reads one file, or `None` when it is missing, not a regular file, unreadable, not
/// UTF-8, or holds only whitespace.
fn read(path: &Path) -> Option<InstructionFile> {
    if !is_regular_file(path) {
        return None;
    }
    let mut bytes = Vec::new();
    // One byte past the cap tells a file of exactly the cap from a longer one.
    File::open(path)
        .ok()?
        .take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let truncated = bytes.len() > MAX_FILE_BYTES;
    bytes.truncate(MAX_FILE_BYTES);
    let text = decode(bytes, truncated)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
    if text.trim().is_empty() {
        return None;
    }
    Some(InstructionFile {
        path: path.to_path_buf(),
        text,
        truncated,
    })
}

/// Strict UTF-8, except that a cut file may end in the middle of a character, which is
/// dropped.
fn decode(mut bytes: Vec<u8>, truncated: bool) -> Option<String> {
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        // `error_len` is `None` only when the input ends inside a character.
        Err(error) if truncated && error.error_len().is_none() => {
            bytes.truncate(error.valid_up_to());
        }
        Err(_) => return None,
    }
    String::from_utf8(bytes).ok()
}

/// `value` made safe inside a double-quoted attribute.
fn escape_attribute(value: &str) -> String {
    value
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

#[cfg(test)]
mod tests {
    use std::fs;

    use tempfile::TempDir;

    use super::*;

    /// A temp tree: `repo/` (a git root when asked) with `repo/a/b` inside, and a separate
    /// `config/` directory.
    struct Tree {
        _dir: TempDir,
        config: PathBuf,
        repo: PathBuf,
    }

    impl Tree {
        fn new(git: bool) -> Tree {
            let dir = tempfile::tempdir().expect("temp dir");
            let base = dir.path().canonicalize().expect("canonical temp dir");
            let config = base.join("config");
            let repo = base.join("repo");
            fs::create_dir_all(&config).expect("config dir");
            fs::create_dir_all(repo.join("a/b")).expect("repo dirs");
            if git {
                fs::create_dir(repo.join(".git")).expect(".git");
            }
            Tree {
                _dir: dir,
                config,
                repo,
            }
        }

        fn write(&self, path: &Path, text: impl AsRef<[u8]>) -> PathBuf {
            fs::write(path, text).expect("write file");
            path.to_path_buf()
        }

        fn load(&self, cwd: &Path) -> Vec<InstructionFile> {
            load(Some(&self.config), cwd)
        }
    }

    fn paths(files: &[InstructionFile]) -> Vec<PathBuf> {
        files.iter().map(|file| file.path.clone()).collect()
    }

    #[test]
    fn personal_file_comes_first_then_root_down_to_cwd() {
        let tree = Tree::new(true);
        let cwd = tree.repo.join("a/b");
        let personal = tree.write(&tree.config.join(AGENTS), "personal");
        let root = tree.write(&tree.repo.join(AGENTS), "root");
        let middle = tree.write(&tree.repo.join("a").join(AGENTS), "middle");
        let leaf = tree.write(&cwd.join(AGENTS), "leaf");

        let files = tree.load(&cwd);
        assert_eq!(paths(&files), [personal, root, middle, leaf]);
        let texts: Vec<&str> = files.iter().map(|file| file.text.as_str()).collect();
        assert_eq!(texts, ["personal", "root", "middle", "leaf"]);
    }

    #[test]
    fn claude_md_is_used_only_where_agents_md_is_absent() {
        let tree = Tree::new(true);
        let cwd = tree.repo.join("a/b");
        let root = tree.write(&tree.repo.join(AGENTS), "root agents");
        tree.write(&tree.repo.join(CLAUDE), "root claude");
        let middle = tree.write(&tree.repo.join("a").join(CLAUDE), "middle claude");
        // An empty AGENTS.md is present: it hides the CLAUDE.md beside it.
        tree.write(&cwd.join(AGENTS), "");
        tree.write(&cwd.join(CLAUDE), "leaf claude");

        let files = tree.load(&cwd);
        assert_eq!(paths(&files), [root, middle]);
    }

    #[test]
    fn agents_md_that_is_a_directory_counts_as_absent() {
        let tree = Tree::new(true);
        fs::create_dir(tree.repo.join(AGENTS)).expect("a directory named AGENTS.md");
        let claude = tree.write(&tree.repo.join(CLAUDE), "claude");

        assert_eq!(paths(&tree.load(&tree.repo)), [claude]);
    }

    #[test]
    fn personal_dir_has_no_claude_md_fallback() {
        let tree = Tree::new(false);
        tree.write(&tree.config.join(CLAUDE), "not for Larik");
        assert!(tree.load(&tree.repo).is_empty());
    }

    #[test]
    fn without_a_git_root_only_the_cwd_is_searched() {
        let tree = Tree::new(false);
        let cwd = tree.repo.join("a/b");
        tree.write(&tree.repo.join(AGENTS), "root");
        tree.write(&tree.repo.join("a").join(AGENTS), "middle");
        let leaf = tree.write(&cwd.join(CLAUDE), "leaf");

        assert_eq!(paths(&load(None, &cwd)), [leaf]);
    }

    #[test]
    fn a_git_file_marks_the_root_too() {
        let tree = Tree::new(false);
        let cwd = tree.repo.join("a/b");
        tree.write(&tree.repo.join(".git"), "gitdir: elsewhere\n");
        let root = tree.write(&tree.repo.join(AGENTS), "root");

        assert_eq!(paths(&load(None, &cwd)), [root]);
    }

    #[test]
    fn the_nearest_git_root_bounds_the_search() {
        let tree = Tree::new(true);
        let inner = tree.repo.join("a");
        fs::create_dir(inner.join(".git")).expect("inner .git");
        tree.write(&tree.repo.join(AGENTS), "outer repo");
        let inner_file = tree.write(&inner.join(AGENTS), "inner repo");

        assert_eq!(paths(&load(None, &inner.join("b"))), [inner_file]);
    }

    #[test]
    fn empty_blank_missing_and_non_utf8_files_are_skipped() {
        let tree = Tree::new(true);
        let cwd = tree.repo.join("a/b");
        tree.write(&tree.config.join(AGENTS), " \n\t\n");
        tree.write(&tree.repo.join(AGENTS), [0xff, 0xfe, b'x']);
        let kept = tree.write(&cwd.join(AGENTS), "\u{feff}kept");

        let files = tree.load(&cwd);
        assert_eq!(paths(&files), [kept]);
        assert_eq!(files[0].text, "kept", "the BOM is dropped");
    }

    #[test]
    fn no_config_dir_and_no_files_load_nothing() {
        let tree = Tree::new(true);
        assert!(load(None, &tree.repo.join("a/b")).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_to_regular_files_only() {
        let tree = Tree::new(true);
        let target = tree.write(&tree.config.join("shared.md"), "shared rules");
        std::os::unix::fs::symlink(&target, tree.repo.join(AGENTS)).expect("file symlink");
        // A dangling AGENTS.md is absent, so the CLAUDE.md beside it is used.
        let middle = tree.repo.join("a");
        std::os::unix::fs::symlink(middle.join("gone"), middle.join(AGENTS)).expect("dangling");
        let claude = tree.write(&middle.join(CLAUDE), "claude");

        let files = load(None, &middle);
        assert_eq!(paths(&files), [tree.repo.join(AGENTS), claude]);
        assert_eq!(files[0].text, "shared rules");
    }

    #[test]
    fn the_personal_file_is_not_loaded_twice_when_inside_the_project() {
        let tree = Tree::new(true);
        let config = tree.repo.join("a");
        let file = tree.write(&config.join(AGENTS), "personal");

        assert_eq!(paths(&load(Some(&config), &config)), [file]);
    }

    #[test]
    fn a_long_file_is_cut_at_the_cap_on_a_character_boundary() {
        let tree = Tree::new(true);
        // A two-byte character straddles the cap.
        let mut text = "a".repeat(MAX_FILE_BYTES - 1);
        text.push('é');
        text.push_str(&"b".repeat(1000));
        tree.write(&tree.repo.join(AGENTS), &text);

        let files = load(None, &tree.repo);
        assert_eq!(files.len(), 1);
        assert!(files[0].truncated);
        assert_eq!(files[0].text, "a".repeat(MAX_FILE_BYTES - 1));
        let rendered = render(&files);
        assert!(rendered.contains("was cut here"), "{rendered:.200}");
        assert!(!rendered.contains('b'.to_string().repeat(10).as_str()));
    }

    #[test]
    fn a_file_of_exactly_the_cap_is_whole() {
        let tree = Tree::new(true);
        tree.write(&tree.repo.join(AGENTS), "x".repeat(MAX_FILE_BYTES));

        let files = load(None, &tree.repo);
        assert!(!files[0].truncated);
        assert_eq!(files[0].text.len(), MAX_FILE_BYTES);
        assert!(!render(&files).contains("was cut here"));
    }

    #[test]
    fn render_tags_each_file_with_its_source_in_order() {
        let files = [
            InstructionFile {
                path: PathBuf::from("/home/u/.config/larik/AGENTS.md"),
                text: "Be brief.".into(),
                truncated: false,
            },
            InstructionFile {
                path: PathBuf::from("/p/\"odd\"&<dir>/CLAUDE.md"),
                text: "Use tabs.\n".into(),
                truncated: false,
            },
        ];
        let rendered = render(&files);
        let first = "<instructions source=\"/home/u/.config/larik/AGENTS.md\">\nBe brief.\n\
                     </instructions>\n";
        let second = "<instructions source=\"/p/&quot;odd&quot;&amp;&lt;dir>/CLAUDE.md\">\n\
                      Use tabs.\n</instructions>\n";
        let at_first = rendered.find(first).expect("first file rendered");
        let at_second = rendered.find(second).expect("second file rendered");
        assert!(at_first < at_second);
        assert!(rendered.ends_with(second));
        assert_eq!(render(&[]), "");
    }
}
