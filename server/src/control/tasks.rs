//! The text of `/tasks`: the session's background tasks and where each stands.

use larik_protocol::{TaskInfo, TaskState};

/// `/tasks`: one line per background task, oldest first.
pub fn tasks_text(tasks: &[TaskInfo]) -> String {
    if tasks.is_empty() {
        return "No background tasks.".to_string();
    }
    let mut text = String::from("Background tasks:\n");
    for task in tasks {
        let delivered = match (task.state, task.delivered) {
            (TaskState::Running, _) => "",
            (_, true) => ", report delivered",
            (_, false) => ", report not yet delivered",
        };
        text.push_str(&format!(
            "- {} ({}): {}{delivered}\n",
            task.id,
            task.label,
            task.state.as_str()
        ));
    }
    text.push_str("Stop one with `/tasks stop ID`, or every one with `/tasks stop all`.");
    text
}
