//! How front ends put the answer to `/undo` into words.

/// One paragraph for the user: what `/undo` restored and deleted, what failed, or that
/// there was nothing to undo.
pub fn summary(
    turn: Option<&str>,
    restored: &[String],
    deleted: &[String],
    failed: &[String],
) -> String {
    if turn.is_none() && failed.is_empty() {
        return "Nothing to undo: no turn of this session changed files.".into();
    }
    let mut parts = Vec::new();
    if !restored.is_empty() {
        parts.push(format!("restored {}", restored.join(", ")));
    }
    if !deleted.is_empty() {
        parts.push(format!(
            "deleted {} (created by that turn)",
            deleted.join(", ")
        ));
    }
    let mut text = if parts.is_empty() {
        "Undo changed no file.".to_string()
    } else {
        format!("Undid the last turn's file changes: {}.", parts.join("; "))
    };
    if !failed.is_empty() {
        text.push_str(&format!(
            " Could not undo: {}. The checkpoint is kept; run /undo again once that is fixed.",
            failed.join("; ")
        ));
    }
    text
}
