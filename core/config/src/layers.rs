//! The configuration files Larik reads, in the order they are merged, and who may write
//! each: personal files only the user writes (trusted), shared files that arrive with the
//! repository (anyone with commit access writes them, so they are not trusted).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Who can write a configuration file, which decides what of it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Written only by the user: everything in it counts.
    Personal,
    /// Comes with the repository: it may only tighten what the agent may do.
    Shared,
}

/// One configuration file in the merge order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerFile {
    /// Where it is (it need not exist).
    pub path: PathBuf,
    /// Who writes it.
    pub trust: Trust,
}

/// The directory name for a path: the absolute path with every character that is not
/// alphanumeric, `.`, `_` or `-` replaced by `-` (`/home/a/proj` → `-home-a-proj`). Names
/// a project's session directory and its personal settings file.
pub fn path_slug(path: &Path) -> String {
    path.to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The project a working directory belongs to: the nearest ancestor (itself included) that
/// holds a `.git` entry, else the directory itself. Its shared files apply even when Larik
/// starts in a subdirectory.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The personal settings file of a project: `<config dir>/projects/<project slug>.json`.
/// "Always allow" answers and approvals are written there.
pub fn personal_project_file(config_dir: &Path, project_root: &Path) -> PathBuf {
    config_dir
        .join("projects")
        .join(format!("{}.json", path_slug(project_root)))
}

/// Claude Code's shared settings file, relative to the project root.
pub const CLAUDE_SETTINGS: &str = ".claude/settings.json";

/// The files merged for a project, in order (later ones win for single values):
/// `<config dir>/config.json` (personal), the project's `.mcp.json`,
/// `.claude/settings.json` and `.larik/settings.json` (shared), then the project's personal
/// file. Without a config directory only the shared files are read.
/// `.larik/settings.local.json` and `.claude/settings.local.json` are never read.
pub fn layer_files(config_dir: Option<&Path>, project_root: &Path) -> Vec<LayerFile> {
    let mut files = Vec::new();
    if let Some(dir) = config_dir {
        files.push(LayerFile {
            path: dir.join("config.json"),
            trust: Trust::Personal,
        });
    }
    for shared in [".mcp.json", CLAUDE_SETTINGS, ".larik/settings.json"] {
        files.push(LayerFile {
            path: project_root.join(shared),
            trust: Trust::Shared,
        });
    }
    if let Some(dir) = config_dir {
        files.push(LayerFile {
            path: personal_project_file(dir, project_root),
            trust: Trust::Personal,
        });
    }
    files
}

/// Why a configuration file cannot be used. The message is a predicate for the file
/// ("the file is not valid JSON: …"), one line.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// It exists but could not be read.
    #[error("cannot be read: {0}")]
    Read(std::io::Error),
    /// Its text is not JSON.
    #[error("is not valid JSON: {0}")]
    Json(serde_json::Error),
    /// It holds JSON other than an object.
    #[error("is not a JSON object (it holds {found})")]
    NotAnObject {
        /// What it holds instead, as "an array".
        found: &'static str,
    },
}

/// Reads one layer: `Ok(None)` when the file does not exist, its top-level object when it
/// is valid JSON, or why it cannot be used.
pub fn read_layer(path: &Path) -> Result<Option<Map<String, Value>>, LayerError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(LayerError::Read(error)),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Some(Map::new()));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        Ok(other) => Err(LayerError::NotAnObject {
            found: json_kind(&other),
        }),
        Err(error) => Err(LayerError::Json(error)),
    }
}

/// What kind of JSON value this is, for messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_in_merge_order_with_their_trust() {
        let files = layer_files(Some(Path::new("/c/larik")), Path::new("/w/proj"));
        let listed: Vec<(&str, Trust)> = files
            .iter()
            .map(|file| (file.path.to_str().expect("utf-8"), file.trust))
            .collect();
        assert_eq!(
            listed,
            [
                ("/c/larik/config.json", Trust::Personal),
                ("/w/proj/.mcp.json", Trust::Shared),
                ("/w/proj/.claude/settings.json", Trust::Shared),
                ("/w/proj/.larik/settings.json", Trust::Shared),
                ("/c/larik/projects/-w-proj.json", Trust::Personal),
            ]
        );
        assert_eq!(layer_files(None, Path::new("/w/proj")).len(), 3);
    }

    #[test]
    fn the_project_is_the_git_root_above_the_working_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
        std::fs::create_dir_all(repo.join("a/b")).expect("mkdir");
        assert_eq!(project_root(&repo.join("a/b")), repo);
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).expect("mkdir");
        assert_eq!(project_root(&plain), plain);
    }

    #[test]
    fn reading_tells_missing_empty_broken_and_wrong_files_apart() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("settings.json");
        let read = |path: &Path| read_layer(path).map_err(|error| error.to_string());
        assert_eq!(read(&path), Ok(None));
        std::fs::write(&path, " \n").expect("write");
        assert_eq!(read(&path), Ok(Some(Map::new())));
        std::fs::write(&path, "{\"model\": ").expect("write");
        let error = read(&path).expect_err("truncated");
        assert!(error.starts_with("is not valid JSON: "), "{error}");
        std::fs::write(&path, "[1]").expect("write");
        assert_eq!(
            read(&path),
            Err("is not a JSON object (it holds an array)".into())
        );
        std::fs::write(&path, "{\"model\": \"x/y\"}").expect("write");
        let object = read_layer(&path).expect("valid").expect("exists");
        assert_eq!(object["model"], "x/y");
    }
}
