//! Changing a personal settings file without losing anything: the file is edited as generic
//! JSON (keys Larik does not know survive), under an exclusive lock on a private sidecar
//! `<file>.lock` so two Larik processes never lose each other's writes, and replaced in one
//! rename so a crash leaves either the old file or the new one. A file the user broke is
//! never overwritten. "Always allow" answers ([`persist_allow_rule`]) are written this way.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::layers::{LayerError, json_kind, personal_project_file, read_layer};

/// Why a settings file could not be changed. The file is left as it was in every case.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    /// The directory, the lock file or the temporary file could not be made, or the lock
    /// not taken.
    #[error("cannot prepare to change {path}: {source}")]
    Prepare {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file exists but is not usable JSON; it is not overwritten so nothing of the
    /// user's is lost.
    #[error("{path} not changed: the file {reason}; fix it first")]
    Unusable {
        /// The file.
        path: PathBuf,
        /// Why, in a few words (as [`crate::read_layer`] says it).
        reason: LayerError,
    },
    /// A key on the way to the value to change holds something of another type.
    #[error("{path} not changed: `{key}` should be {expected} but holds {found}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// The dotted key path.
        key: String,
        /// What it should hold.
        expected: &'static str,
        /// What it holds.
        found: &'static str,
    },
    /// Writing the new contents or putting them in place failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Changes the JSON object in `path` with `edit`, holding an exclusive lock on
/// `<path>.lock` (created private, `0600`) from reading to replacing. A missing or empty file
/// starts as `{}`; a file that is not a JSON object is left alone and reported. When `edit`
/// returns an error or leaves the object as it was, nothing is written. Otherwise the object
/// is written pretty-printed (keeping the file's indentation) to a private temporary file in
/// the same directory, synced, and renamed over the file. Parent directories are created
/// (`0700`). A symbolic link at `path` is followed and its target replaced, so the link stays.
/// Key order may change where serde_json sorts keys.
pub fn update_json<T>(
    path: &Path,
    edit: impl FnOnce(&mut Map<String, Value>) -> Result<T, UpdateError>,
) -> Result<T, UpdateError> {
    let prepare = |path: &Path| {
        let path = path.to_path_buf();
        move |source| UpdateError::Prepare { path, source }
    };
    if let Some(parent) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        private_dir_builder()
            .create(parent)
            .map_err(prepare(parent))?;
    }
    let lock_path = sidecar(path, ".lock");
    let lock = private_options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(prepare(&lock_path))?;
    // Advisory lock per open file description: every writer opens the sidecar itself, so
    // threads contend exactly like processes do.
    lock.lock().map_err(prepare(&lock_path))?;

    let target = resolve_link(path).map_err(prepare(path))?;
    let original = fs::read_to_string(&target).ok();
    let mut object = read_layer(&target)
        .map_err(|reason| UpdateError::Unusable {
            path: path.to_path_buf(),
            reason,
        })?
        .unwrap_or_default();
    let before = object.clone();
    let result = edit(&mut object)?;
    if object != before {
        let indent = original.as_deref().and_then(indentation).unwrap_or("  ");
        write_replacing(&target, &Value::Object(object), indent)?;
    }
    // Closing the sidecar releases the lock.
    drop(lock);
    Ok(result)
}

/// Adds `rule` to `permissions.allow` of the project's personal file, unless it is there
/// already; `Ok(true)` when it was added. An "always allow" answer calls this.
pub fn persist_allow_rule(
    config_dir: &Path,
    project_root: &Path,
    rule: &str,
) -> Result<bool, UpdateError> {
    persist_rule(config_dir, project_root, "allow", rule)
}

/// Adds `rule` to `permissions.deny` of the project's personal file, unless it is there
/// already; `Ok(true)` when it was added. An "always deny" answer calls this.
pub fn persist_deny_rule(
    config_dir: &Path,
    project_root: &Path,
    rule: &str,
) -> Result<bool, UpdateError> {
    persist_rule(config_dir, project_root, "deny", rule)
}

fn persist_rule(
    config_dir: &Path,
    project_root: &Path,
    list: &str,
    rule: &str,
) -> Result<bool, UpdateError> {
    let path = personal_project_file(config_dir, project_root);
    update_json(&path, |object| {
        let permissions = child_object(&path, object, "permissions", "permissions")?;
        let key = format!("permissions.{list}");
        let rules = match permissions
            .entry(list)
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            Value::Array(rules) => rules,
            other => return Err(shape(&path, &key, "a list of rules", other)),
        };
        if rules.iter().any(|existing| existing.as_str() == Some(rule)) {
            return Ok(false);
        }
        rules.push(Value::String(rule.to_string()));
        Ok(true)
    })
}

/// Sets the MCP server `name` of the personal `config.json` in `config_dir` to `entry`
/// (replacing one of that name); returns the file changed.
pub fn set_personal_mcp_server(
    config_dir: &Path,
    name: &str,
    entry: Value,
) -> Result<PathBuf, UpdateError> {
    let path = config_dir.join("config.json");
    update_json(&path, |object| {
        child_object(&path, object, "mcpServers", "mcpServers")?.insert(name.to_string(), entry);
        Ok(())
    })?;
    Ok(path)
}

/// Removes the MCP server `name` from the personal `config.json` in `config_dir`; whether
/// it was there.
pub fn remove_personal_mcp_server(config_dir: &Path, name: &str) -> Result<bool, UpdateError> {
    let path = config_dir.join("config.json");
    if !path.exists() {
        return Ok(false);
    }
    update_json(&path, |object| {
        Ok(match object.get_mut("mcpServers") {
            Some(Value::Object(servers)) => servers.remove(name).is_some(),
            _ => false,
        })
    })
}

/// The object under `key` in `object`, created when missing; an error naming `dotted` when
/// it holds something else.
pub(crate) fn child_object<'a>(
    path: &Path,
    object: &'a mut Map<String, Value>,
    key: &str,
    dotted: &str,
) -> Result<&'a mut Map<String, Value>, UpdateError> {
    match object
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
    {
        Value::Object(child) => Ok(child),
        other => Err(shape(path, dotted, "an object", other)),
    }
}

fn shape(path: &Path, key: &str, expected: &'static str, found: &Value) -> UpdateError {
    UpdateError::Shape {
        path: path.to_path_buf(),
        key: key.to_string(),
        expected,
        found: json_kind(found),
    }
}

/// `path` with `suffix` appended to its file name.
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// The file a symbolic link points to, so replacing it keeps the user's link (dotfile
/// managers link these files); any other path as it is.
fn resolve_link(path: &Path) -> std::io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

/// The indentation unit of a pretty-printed JSON text: the leading whitespace of its first
/// indented line.
fn indentation(text: &str) -> Option<&str> {
    text.lines().find_map(|line| {
        let trimmed = line.trim_start_matches([' ', '\t']);
        let indent = &line[..line.len() - trimmed.len()];
        (!indent.is_empty() && !trimmed.is_empty()).then_some(indent)
    })
}

/// Writes `value` to a private temporary file beside `target`, syncs it, renames it over
/// `target` and syncs the directory so the rename survives a crash.
fn write_replacing(target: &Path, value: &Value, indent: &str) -> Result<(), UpdateError> {
    let temp = sidecar(target, ".tmp");
    let write_error = |source| UpdateError::Write {
        path: target.to_path_buf(),
        source,
    };
    let mut text = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut text, formatter);
    serde::Serialize::serialize(value, &mut serializer)
        .map_err(|error| write_error(std::io::Error::other(error)))?;
    text.push(b'\n');

    // Only a writer holding the lock gets here, so a leftover temporary file is from a
    // crashed writer and can go.
    match fs::remove_file(&temp) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            return Err(write_error(error));
        }
        _ => {}
    }
    let written = (|| {
        let mut file = private_options().write(true).create_new(true).open(&temp)?;
        file.write_all(&text)?;
        file.sync_all()?;
        fs::rename(&temp, target)
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(write_error(error));
    }
    if let Some(parent) = target.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        File::open(parent)
            .and_then(|dir| dir.sync_all())
            .map_err(write_error)?;
    }
    Ok(())
}

fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

fn private_dir_builder() -> fs::DirBuilder {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indentation_is_the_first_indented_line() {
        assert_eq!(indentation("{\n    \"a\": 1\n}"), Some("    "));
        assert_eq!(indentation("{\n\t\"a\": {\n\t\t\"b\": 1}\n}"), Some("\t"));
        assert_eq!(indentation("{\"a\": 1}"), None);
        assert_eq!(indentation("{\n  \n}"), None, "blank lines say nothing");
    }

    #[test]
    fn sidecars_sit_beside_the_file() {
        assert_eq!(
            sidecar(Path::new("/c/projects/-w.json"), ".lock"),
            Path::new("/c/projects/-w.json.lock")
        );
    }
}
