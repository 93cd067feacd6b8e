//! Lexical path handling: normalising, containment and rule-friendly relative forms.
//!
//! Nothing here touches the filesystem; `..` is resolved by text so that a path such as
//! `/proj/../etc/passwd` cannot pass for one inside `/proj`.

use std::path::{Component, Path, PathBuf};

/// `path` with `.` removed and `..` applied to the preceding component.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // Going above the root stays at the root, as the OS does.
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `path` is `dir` or lies below it.
pub(crate) fn is_inside(path: &Path, dir: &Path) -> bool {
    normalize(path).starts_with(normalize(dir))
}

/// The pattern text naming exactly `path`, for a suggested rule: relative to `cwd` when
/// inside it (with `./` so a bare file name does not match at every depth), `//absolute`
/// otherwise. Glob and parenthesis characters are escaped.
pub(crate) fn rule_path(path: &Path, cwd: &Path) -> String {
    let path = normalize(path);
    let cwd = normalize(cwd);
    match path.strip_prefix(&cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => "./**".to_owned(),
        Ok(rel) => {
            let rel = escape(&rel.to_string_lossy());
            if rel.contains('/') {
                rel
            } else {
                format!("./{rel}")
            }
        }
        Err(_) => format!("/{}", escape(&path.to_string_lossy())),
    }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '(' | ')') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
