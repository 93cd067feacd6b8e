//! Approvals of loosening settings from shared files, pinned to the value approved. A shared
//! file's loosening setting (an allow rule, the sandbox off, a language-server command)
//! counts once the user approves it, and only while it still holds the value they saw: the
//! approval stores a hash of that value, so a later commit that changes it needs a new one.
//! Approvals live in the project's personal file, which only the user writes:
//!
//! ```json
//! {"approvals": {".larik/settings.json#permissions.allow": "sha256:3f1a…"}}
//! ```
//!
//! The key is the shared file relative to the project root, `#`, and the dotted key path of
//! the setting; the hash is SHA-256 over the value's canonical JSON (object keys sorted, no
//! whitespace), so reordering or reformatting the shared file does not matter.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::layers::personal_project_file;
use crate::update::{UpdateError, child_object, update_json};

/// The key of the personal project file that holds approvals.
pub const APPROVALS_KEY: &str = "approvals";

/// A loosening setting of a shared file that counts only once the user approves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingApproval {
    /// The shared file (absolute).
    pub file: PathBuf,
    /// The shared file relative to the project root, as approvals name it.
    pub file_relative: String,
    /// The dotted key path of the setting, e.g. `permissions.allow` or `lsp.zls.command`.
    pub key: String,
    /// The value the file holds now.
    pub value: Value,
    /// [`content_hash`] of that value: what an approval of it stores.
    pub hash: String,
    /// Whether an approval exists for an earlier value (the file changed since).
    pub stale: bool,
}

impl PendingApproval {
    /// The key its approval is stored under (see [`approval_key`]).
    pub fn approval_key(&self) -> String {
        approval_key(&self.file_relative, &self.key)
    }
}

/// How an approval stands for the value a shared file holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApprovalState {
    /// Never approved.
    Missing,
    /// Approved with this very value.
    Matches,
    /// Approved, but with another value.
    Stale,
}

/// The approvals of one project, as read from its personal file.
#[derive(Debug, Clone, Default)]
pub(crate) struct Approvals {
    hashes: BTreeMap<String, String>,
}

impl Approvals {
    /// The approvals in a personal project file's object; entries that are not strings are
    /// skipped (the file's own merge reports them).
    pub(crate) fn from_object(object: &Map<String, Value>) -> Self {
        let hashes = match object.get(APPROVALS_KEY) {
            Some(Value::Object(entries)) => entries
                .iter()
                .filter_map(|(key, hash)| Some((key.clone(), hash.as_str()?.to_string())))
                .collect(),
            _ => BTreeMap::new(),
        };
        Self { hashes }
    }

    /// How the approval of `key` in `file_relative` stands for `value`.
    pub(crate) fn check(&self, file_relative: &str, key: &str, value: &Value) -> ApprovalState {
        match self.hashes.get(&approval_key(file_relative, key)) {
            None => ApprovalState::Missing,
            Some(hash) if *hash == content_hash(value) => ApprovalState::Matches,
            Some(_) => ApprovalState::Stale,
        }
    }
}

/// The key an approval is stored under: `<shared file relative to the project>#<dotted
/// key>`, e.g. `.larik/settings.json#permissions.allow`, or for a server of `.mcp.json`
/// `.mcp.json#mcpServers.docs`.
pub fn approval_key(shared_file_relative: &str, key: &str) -> String {
    format!("{shared_file_relative}#{key}")
}

/// `sha256:<lowercase hex>` of the value's canonical JSON ([`canonical_json`]).
pub fn content_hash(value: &Value) -> String {
    let digest = Sha256::digest(canonical_json(value).as_bytes());
    let mut hash = String::with_capacity(7 + 2 * digest.len());
    hash.push_str("sha256:");
    for byte in digest {
        write!(hash, "{byte:02x}").expect("writing to a String cannot fail");
    }
    hash
}

/// The value as compact JSON with every object's keys in sorted (byte) order, whatever order
/// the value's maps keep: the same value always gives the same text.
pub fn canonical_json(value: &Value) -> String {
    let mut text = String::new();
    write_canonical(value, &mut text);
    text
}

fn write_canonical(value: &Value, text: &mut String) {
    match value {
        Value::Array(items) => {
            text.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    text.push(',');
                }
                write_canonical(item, text);
            }
            text.push(']');
        }
        Value::Object(object) => {
            let mut entries: Vec<(&String, &Value)> = object.iter().collect();
            entries.sort_by_key(|(key, _)| *key);
            text.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    text.push(',');
                }
                text.push_str(&Value::String(key.clone()).to_string());
                text.push(':');
                write_canonical(item, text);
            }
            text.push('}');
        }
        scalar => text.push_str(&scalar.to_string()),
    }
}

/// Approves `value` for `key` of a shared file: stores its [`content_hash`] under
/// [`approval_key`] in the project's personal file, replacing an earlier approval of the key.
/// Pass the value the user was shown, not one read again: if the file changed meanwhile,
/// the approval does not match and the new value is asked about again.
pub fn approve(
    config_dir: &Path,
    project_root: &Path,
    shared_file_relative: &str,
    key: &str,
    value: &Value,
) -> Result<(), UpdateError> {
    let path = personal_project_file(config_dir, project_root);
    let entry = approval_key(shared_file_relative, key);
    let hash = content_hash(value);
    update_json(&path, |object| {
        let approvals = child_object(&path, object, APPROVALS_KEY, APPROVALS_KEY)?;
        approvals.insert(entry, Value::String(hash));
        Ok(())
    })
}

/// Approves a pending setting as listed by [`crate::load`] (see [`approve`]).
pub fn approve_pending(
    config_dir: &Path,
    project_root: &Path,
    pending: &PendingApproval,
) -> Result<(), UpdateError> {
    approve(
        config_dir,
        project_root,
        &pending.file_relative,
        &pending.key,
        &pending.value,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let value: Value =
            serde_json::from_str(r#"{"b": [{"z": 1, "a": "x\"y"}], "a": null, "c": 1.5}"#)
                .expect("json");
        assert_eq!(
            canonical_json(&value),
            r#"{"a":null,"b":[{"a":"x\"y","z":1}],"c":1.5}"#
        );
    }

    #[test]
    fn the_hash_ignores_key_order_and_layout_but_not_content() {
        let one: Value = serde_json::from_str(r#"{"allow": ["a"], "deny": []}"#).expect("json");
        let two: Value =
            serde_json::from_str("{\n  \"deny\": [],\n  \"allow\": [\"a\"]\n}").expect("json");
        let other: Value = serde_json::from_str(r#"{"allow": ["b"], "deny": []}"#).expect("json");
        assert_eq!(content_hash(&one), content_hash(&two));
        assert_ne!(content_hash(&one), content_hash(&other));
        // SHA-256 of the two bytes `[]`, as any sha256sum computes it.
        assert_eq!(
            content_hash(&Value::Array(Vec::new())),
            "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
        );
    }

    #[test]
    fn an_approval_matches_only_its_key_and_value() {
        let value = serde_json::json!(["Bash(make:*)"]);
        let mut object = Map::new();
        object.insert(
            APPROVALS_KEY.into(),
            serde_json::json!({ (approval_key(".larik/settings.json", "permissions.allow")): content_hash(&value) }),
        );
        let approvals = Approvals::from_object(&object);
        let file = ".larik/settings.json";
        assert_eq!(
            approvals.check(file, "permissions.allow", &value),
            ApprovalState::Matches
        );
        assert_eq!(
            approvals.check(
                file,
                "permissions.allow",
                &serde_json::json!(["Bash(rm:*)"])
            ),
            ApprovalState::Stale
        );
        assert_eq!(
            approvals.check(file, "sandbox.writable_paths", &value),
            ApprovalState::Missing
        );
        assert_eq!(
            approvals.check(".mcp.json", "permissions.allow", &value),
            ApprovalState::Missing
        );
    }
}
