//! The edit tools append what the context's `EditFeedback` reports, and `read` warms it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use larik_tools::{EditFeedback, EditTool, MultiEditTool, ReadTool, ToolContext, WriteTool};
use serde_json::json;

use super::{context, fails, ok, put, read_first};

/// Answers every edit with one diagnostic line naming the file's first line; records calls.
#[derive(Debug, Default)]
struct Checker {
    edits: Mutex<Vec<(PathBuf, String)>>,
    warmed: Mutex<Vec<PathBuf>>,
    silent: bool,
}

#[async_trait::async_trait]
impl EditFeedback for Checker {
    async fn after_edit(&self, path: &Path, text: &str) -> Option<String> {
        self.edits
            .lock()
            .expect("lock")
            .push((path.to_path_buf(), text.to_string()));
        let first = text.lines().next().unwrap_or_default().to_string();
        (!self.silent).then(|| format!("ERROR 1:1 checked `{first}` [test]"))
    }

    fn warm(&self, path: &Path) {
        self.warmed.lock().expect("lock").push(path.to_path_buf());
    }
}

fn checked_context(dir: &Path, checker: &Arc<Checker>) -> ToolContext {
    ToolContext {
        feedback: Some(Arc::clone(checker) as Arc<dyn EditFeedback>),
        checkpoint: None,
        call_id: String::new(),
        agent: None,
        ..context(dir)
    }
}

#[tokio::test]
async fn each_edit_tool_appends_the_report_on_the_text_it_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "a.py", "x = 1\n");
    let checker = Arc::new(Checker::default());
    let ctx = checked_context(dir.path(), &checker);
    read_first(&ctx, "a.py").await;
    assert_eq!(
        *checker.warmed.lock().expect("lock"),
        [dir.path().join("a.py")],
        "read warms the checker"
    );

    let text = ok(
        &EditTool,
        &ctx,
        json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "y = 2"}),
    )
    .await;
    assert!(
        text.ends_with("\nERROR 1:1 checked `y = 2` [test]"),
        "{text}"
    );

    let text = ok(
        &MultiEditTool,
        &ctx,
        json!({"file_path": "a.py", "edits": [{"old_string": "y = 2", "new_string": "z = 3"}]}),
    )
    .await;
    assert!(
        text.ends_with("\nERROR 1:1 checked `z = 3` [test]"),
        "{text}"
    );

    let text = ok(
        &WriteTool,
        &ctx,
        json!({"file_path": "b.py", "content": "print(undefined)\n"}),
    )
    .await;
    assert!(
        text.ends_with("\nERROR 1:1 checked `print(undefined)` [test]"),
        "{text}"
    );
    let edits = checker.edits.lock().expect("lock").clone();
    assert_eq!(
        edits,
        [
            (dir.path().join("a.py"), "y = 2\n".to_string()),
            (dir.path().join("a.py"), "z = 3\n".to_string()),
            (dir.path().join("b.py"), "print(undefined)\n".to_string()),
        ]
    );
}

#[tokio::test]
async fn nothing_to_report_leaves_the_result_as_it_was_and_failed_edits_are_not_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    put(dir.path(), "a.py", "x = 1\n");
    let checker = Arc::new(Checker {
        silent: true,
        ..Checker::default()
    });
    let ctx = checked_context(dir.path(), &checker);
    ok(&ReadTool, &ctx, json!({"file_path": "a.py"})).await;
    let text = ok(
        &EditTool,
        &ctx,
        json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}),
    )
    .await;
    assert!(!text.contains('\n'), "{text}");
    fails(
        &EditTool,
        &ctx,
        json!({"file_path": "a.py", "old_string": "not there", "new_string": "y"}),
    )
    .await;
    assert_eq!(checker.edits.lock().expect("lock").len(), 1);
}
