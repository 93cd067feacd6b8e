//! The text of `/config` and `larik config`: every setting of every configuration file with
//! where it comes from (file and layer) and whether it counts; and `/config set KEY VALUE`,
//! which changes the personal `config.json` through the locked, atomic update.

use std::path::Path;

use larik_config::{
    Environment, KNOWN_KEYS, SettingStatus, Trust, describe, set_personal, typed_value,
};

use crate::assembly::SetupError;

/// How much of a value a row shows.
const VALUE_CHARS: usize = 80;

/// What `/config` says for the project of `cwd`.
pub fn config_text(env: &Environment, cwd: &Path) -> String {
    let context = env.config_context(cwd);
    let loaded = larik_config::load(&context);
    let report = describe(&context, &loaded);
    let mut text = format!(
        "Configuration of {} (project root {}). Files merge in this order: later files win \
         for single values, lists add up, and a file shared with the repository may only \
         tighten what Larik may do.\n\n",
        cwd.display(),
        context.project_root.display()
    );
    for (index, (path, trust, exists)) in report.files.iter().enumerate() {
        text.push_str(&format!(
            "{}. `{}`: {}{}\n",
            index + 1,
            path.display(),
            layer(*trust),
            if *exists { "" } else { " (none)" }
        ));
    }
    for (path, why) in &report.unusable {
        text.push_str(&format!(
            "\n`{}` is not used: the file {why}.\n",
            path.display()
        ));
    }
    if report.entries.is_empty() {
        text.push_str("\nNo settings are set; Larik's defaults apply.\n");
    } else {
        text.push_str("\n| setting | value | from | counts |\n|---|---|---|---|\n");
        for entry in &report.entries {
            let status = match &entry.status {
                SettingStatus::Counts => "yes".to_string(),
                SettingStatus::Overridden { by } => {
                    format!("no: overridden by `{}`", by.display())
                }
                SettingStatus::Ignored { why } => format!("no: {why}"),
                SettingStatus::AwaitingApproval { approval_key, .. } => {
                    format!("no: awaits your approval (`larik approve {approval_key}`)")
                }
                SettingStatus::NotRead => "not a Larik setting".to_string(),
            };
            text.push_str(&format!(
                "| `{}` | `{}` | `{}` ({}) | {} |\n",
                entry.key,
                cell(&short(&entry.value.to_string())),
                entry.file.display(),
                layer(entry.trust),
                cell(&status)
            ));
        }
    }
    if let Some(model) = env.get("LARIK_MODEL") {
        text.push_str(&format!(
            "\nThe environment sets `LARIK_MODEL={model}`, which new sessions use before any \
             file's `model`.\n"
        ));
    }
    text.push_str(
        "\nCommand-line flags win over every file. `/config set KEY VALUE` changes your \
         personal `config.json`; new contexts (`/clear`) and new sessions use it.",
    );
    text
}

/// `/config set KEY VALUE`: sets `key` in the personal `config.json` (VALUE as JSON when
/// it is JSON, else as a string) and says what was done and whether it counts.
pub fn set_config(
    env: &Environment,
    cwd: &Path,
    key: &str,
    value: &str,
) -> Result<String, SetupError> {
    let valid = !key.is_empty()
        && key
            .split('.')
            .all(|part| !part.is_empty() && !part.contains(char::is_whitespace));
    if !valid {
        return Err(SetupError::usage(format!(
            "`{key}` is not a setting's key: use dotted names such as `model` or \
             `permissions.defaultMode`"
        )));
    }
    let config_dir = env.config_dir().ok_or_else(|| {
        SetupError::usage("no personal configuration directory: set HOME or XDG_CONFIG_HOME")
    })?;
    let value = typed_value(value);
    let shown = value.to_string();
    let path = set_personal(&config_dir, key, value).map_err(SetupError::usage)?;
    let mut text = format!("Set `{key}` to `{shown}` in `{}`.", path.display());
    let top = key.split('.').next().unwrap_or(key);
    if !KNOWN_KEYS.contains(&top) {
        text.push_str(&format!(
            " Larik does not read `{top}`; it is kept for other tools."
        ));
    }
    // The merge says whether the new value can be used.
    let context = env.config_context(cwd);
    let loaded = larik_config::load(&context);
    let report = describe(&context, &loaded);
    let verdict = report
        .entries
        .iter()
        .filter(|entry| entry.file == path && entry.key.starts_with(key))
        .find_map(|entry| match &entry.status {
            SettingStatus::Ignored { why } => Some(format!(" It does not count: {why}.")),
            SettingStatus::Overridden { by } => Some(format!(
                " `{}` sets it too and wins for this project.",
                by.display()
            )),
            _ => None,
        });
    text.push_str(
        &verdict.unwrap_or_else(|| " New contexts (`/clear`) and new sessions use it.".to_string()),
    );
    Ok(text)
}

fn layer(trust: Trust) -> &'static str {
    match trust {
        Trust::Personal => "personal",
        Trust::Shared => "shared with the repository",
    }
}

/// `text` cut to [`VALUE_CHARS`] characters.
fn short(text: &str) -> String {
    if text.chars().count() <= VALUE_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(VALUE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `text` made safe for a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
