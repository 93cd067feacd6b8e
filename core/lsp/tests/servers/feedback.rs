//! The edit tools' checker over the server manager: the errors a real server reports on an
//! edit come back as compact lines, a clean edit adds nothing, and a file no server knows
//! is left alone.

use std::sync::Arc;

use larik_lsp::{LanguageServers, ManagerConfig, ServerFeedback, ServerSpec, Timeouts};
use larik_tools::EditFeedback;

use crate::kit;

fn manager(root: &std::path::Path, log_dir: &std::path::Path) -> Arc<LanguageServers> {
    let mut path_dirs = vec![kit::repo_root().join("tests/lsp/node_modules/.bin")];
    path_dirs.extend(kit::path_dirs());
    Arc::new(LanguageServers::new(ManagerConfig {
        project_root: root.to_path_buf(),
        path_dirs,
        log_dir: log_dir.to_path_buf(),
        servers: ServerSpec::defaults(),
        disabled: Vec::new(),
        timeouts: Timeouts::default(),
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_get_the_servers_errors_and_clean_edits_get_nothing() {
    kit::path_bin("clangd");
    kit::npm_bin("pyright-langserver");
    let (_dir, root) = kit::project(&[
        ("compile_flags.txt", "-std=c11\n"),
        ("main.c", "int main(void) { return 0; }\n"),
        ("app.py", "x = 1\n"),
        ("notes.txt", "plain\n"),
    ]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = manager(&root, logs.path());
    let feedback = ServerFeedback::new(Arc::clone(&servers), kit::patient());

    let main = root.join("main.c");
    feedback.warm(&main);
    let broken = "int main(void) {\n    return coutn;\n}\n";
    std::fs::write(&main, broken).expect("write main.c");
    let report = feedback.after_edit(&main, broken).await.expect("a report");
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines[0], "clangd reports:", "{report}");
    assert!(
        lines[1].starts_with("ERROR 2:12 ") && lines[1].contains("coutn"),
        "{report}"
    );
    // The same text again (a write that changed nothing) sends nothing new, and what the
    // server said about it still stands.
    assert_eq!(
        feedback.after_edit(&main, broken).await.as_deref(),
        Some(report.as_str())
    );
    let fixed = "int main(void) {\n    return 0;\n}\n";
    std::fs::write(&main, fixed).expect("write main.c");
    assert_eq!(feedback.after_edit(&main, fixed).await, None);

    let app = root.join("app.py");
    let broken = "x = 1\nprint(undefined_name)\n";
    std::fs::write(&app, broken).expect("write app.py");
    let report = feedback.after_edit(&app, broken).await.expect("a report");
    assert!(report.starts_with("pyright reports:\n"), "{report}");
    assert!(
        report.contains("ERROR 2:7 ") && report.contains("undefined_name"),
        "{report}"
    );

    let notes = root.join("notes.txt");
    assert_eq!(feedback.after_edit(&notes, "plain\n").await, None);
    assert!(
        logs.path().join("lsp-clangd.log").exists(),
        "the server's log is kept"
    );
    servers.shutdown().await;
}
