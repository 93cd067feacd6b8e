//! The configuration as `/config` and `larik config` show it: every setting of every file,
//! with the file and layer it comes from and whether it counts; and changing one setting of
//! the personal `config.json`.
//!
//! What counts is decided by the merge ([`crate::load`]) alone; this module reads its
//! verdicts back: a setting the merge ignored has a notice naming its key (or a key above
//! it), a loosening one waits for approval, a single value a later file sets again is
//! overridden (lists and hooks add up instead), and a key the merge does not read belongs
//! to another tool.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::layers::{Trust, layer_files, read_layer};
use crate::settings::{ConfigContext, LoadedConfig};
use crate::update::{UpdateError, child_object, update_json};

/// The top-level keys Larik reads.
pub const KNOWN_KEYS: [&str; 19] = [
    "model",
    "debug",
    "permissions",
    "sandbox",
    "lsp",
    "mcpServers",
    "mcp_search_share",
    "mcp_search_count",
    "subagents",
    "checkpoint_retention_days",
    "models",
    "aliases",
    "roles",
    "max_budget_usd",
    "auto_compact_share",
    "approvals",
    "hooks",
    "disableAllHooks",
    "web",
];

/// Whether a setting counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingStatus {
    /// It counts.
    Counts,
    /// A later file sets the same single value.
    Overridden {
        /// That file.
        by: PathBuf,
    },
    /// The merge ignored it; the notice says why.
    Ignored {
        /// Why, as the notice says it.
        why: String,
    },
    /// A shared file's loosening setting that counts once approved.
    AwaitingApproval {
        /// The key `larik approve` takes.
        approval_key: String,
        /// Why it needs approval.
        why: String,
    },
    /// Not a setting Larik reads (another tool's, or a later version's).
    NotRead,
}

/// One setting of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingEntry {
    /// Its dotted key, e.g. `permissions.allow` or `lsp.pyright.disabled`.
    pub key: String,
    /// Its value as the file holds it.
    pub value: Value,
    /// The file.
    pub file: PathBuf,
    /// The file's layer.
    pub trust: Trust,
    /// Whether it counts.
    pub status: SettingStatus,
}

/// The configuration of a project, setting by setting.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigReport {
    /// The files in merge order, with their layer and whether each exists.
    pub files: Vec<(PathBuf, Trust, bool)>,
    /// Every setting of every file, in merge order.
    pub entries: Vec<SettingEntry>,
    /// Files that exist but could not be used, and why.
    pub unusable: Vec<(PathBuf, String)>,
}

/// The key a merge notice is about, when it says one was ignored (`` `key` ignored: … ``).
fn ignored_key(message: &str) -> Option<&str> {
    let rest = message.strip_prefix('`')?;
    let (key, after) = rest.split_once('`')?;
    after.starts_with(" ignored").then_some(key)
}

/// Whether `key` is `prefix` or lies under it.
fn under(key: &str, prefix: &str) -> bool {
    key == prefix
        || key
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Every leaf of `object` (a value that is not a non-empty object) with its dotted key.
fn leaves(object: &Map<String, Value>, prefix: &str, into: &mut Vec<(String, Value)>) {
    for (key, value) in object {
        let dotted = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            // An MCP server's entry is one setting: it is approved as a whole. One hook
            // event's list is shown whole too: the hooks crate reads what is inside.
            Value::Object(child)
                if !child.is_empty()
                    && !dotted.starts_with("mcpServers.")
                    && !dotted.starts_with("hooks.") =>
            {
                leaves(child, &dotted, into);
            }
            other => into.push((dotted, other.clone())),
        }
    }
}

/// Describes the configuration `loaded` (the merge of `context`'s files) setting by
/// setting.
pub fn describe(context: &ConfigContext, loaded: &LoadedConfig) -> ConfigReport {
    let mut report = ConfigReport {
        files: Vec::new(),
        entries: Vec::new(),
        unusable: Vec::new(),
    };
    for layer in layer_files(context.config_dir.as_deref(), &context.project_root) {
        let object = match read_layer(&layer.path) {
            Ok(Some(object)) => object,
            Ok(None) => {
                report.files.push((layer.path, layer.trust, false));
                continue;
            }
            Err(reason) => {
                report
                    .unusable
                    .push((layer.path.clone(), reason.to_string()));
                report.files.push((layer.path, layer.trust, true));
                continue;
            }
        };
        report.files.push((layer.path.clone(), layer.trust, true));
        for (top, value) in &object {
            let mut found = Vec::new();
            match value {
                Value::Object(child) if !child.is_empty() => leaves(child, top, &mut found),
                other => found.push((top.clone(), other.clone())),
            }
            for (key, value) in found {
                // The file's own top-level key decides whether Larik reads it, not the
                // dotted key's first part: a key written `permissions.allow` is not read.
                let status = status_of(loaded, &layer.path, top, &key);
                report.entries.push(SettingEntry {
                    key,
                    value,
                    file: layer.path.clone(),
                    trust: layer.trust,
                    status,
                });
            }
        }
    }
    mark_overridden(&mut report.entries);
    report
}

/// What the merge made of `key` in `file`, under the file's top-level key `top`.
fn status_of(loaded: &LoadedConfig, file: &Path, top: &str, key: &str) -> SettingStatus {
    if !KNOWN_KEYS.contains(&top) {
        return SettingStatus::NotRead;
    }
    if let Some(pending) = loaded
        .pending_approvals
        .iter()
        .find(|pending| pending.file == file && under(key, &pending.key))
    {
        let why = loaded
            .notices
            .iter()
            .filter(|notice| notice.file == file)
            .find(|notice| ignored_key(&notice.message) == Some(pending.key.as_str()))
            .map(|notice| notice.message.clone())
            .unwrap_or_default();
        return SettingStatus::AwaitingApproval {
            approval_key: pending.approval_key(),
            why,
        };
    }
    let ignored = loaded
        .notices
        .iter()
        .filter(|notice| notice.file == file)
        .find(|notice| ignored_key(&notice.message).is_some_and(|ignored| under(key, ignored)));
    match ignored {
        Some(notice) => SettingStatus::Ignored {
            why: notice.message.clone(),
        },
        None => SettingStatus::Counts,
    }
}

/// Marks a single value that a later file sets again, and counts there, as overridden.
/// Lists and every file's hooks add up across files and are never overridden;
/// `disableAllHooks` is overridden only by a file of the same layer (a shared file's `true`
/// and a personal file's value set different things).
fn mark_overridden(entries: &mut [SettingEntry]) {
    for index in 0..entries.len() {
        let entry = &entries[index];
        if entry.status != SettingStatus::Counts
            || entry.value.is_array()
            || under(&entry.key, "hooks")
        {
            continue;
        }
        let later = entries[index + 1..].iter().rev().find(|later| {
            later.key == entry.key
                && later.file != entry.file
                && later.status == SettingStatus::Counts
                && (entry.key != "disableAllHooks" || later.trust == entry.trust)
        });
        if let Some(later) = later {
            let by = later.file.clone();
            entries[index].status = SettingStatus::Overridden { by };
        }
    }
}

/// A value typed on a command line: JSON when it parses as JSON, else the text as a string
/// (`/config set model openai/gpt-5.1`).
pub fn typed_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// Sets the dotted `key` of the personal `config.json` in `config_dir` to `value` (under
/// its lock, replaced atomically, other keys kept); returns the file changed.
pub fn set_personal(config_dir: &Path, key: &str, value: Value) -> Result<PathBuf, UpdateError> {
    let path = config_dir.join("config.json");
    let parts: Vec<&str> = key.split('.').collect();
    update_json(&path, |object| {
        let Some((last, parents)) = parts.split_last() else {
            return Ok(());
        };
        let mut current = object;
        for (depth, part) in parents.iter().enumerate() {
            let dotted = parts[..=depth].join(".");
            current = child_object(&path, current, part, &dotted)?;
        }
        current.insert((*last).to_string(), value);
        Ok(())
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_name_the_key_they_ignore() {
        assert_eq!(
            ignored_key("`permissions.allow` ignored: a file shared with the repository"),
            Some("permissions.allow")
        );
        assert_eq!(ignored_key("not used: the file is not valid JSON"), None);
        assert_eq!(ignored_key("`model` is fine"), None);
        assert!(under("models.a/b.prices", "models"));
        assert!(!under("modelsx", "models"));
    }
}
