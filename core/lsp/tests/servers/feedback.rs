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

/// A log directory that cannot be made (here a file stands where it would go, as a full
/// or read-only data directory would refuse it) costs the log, not the diagnostics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_that_cannot_be_written_leaves_the_server_working() {
    kit::path_bin("clangd");
    let (_dir, root) = kit::project(&[
        ("compile_flags.txt", "-std=c11\n"),
        ("main.c", "int main(void) { return 0; }\n"),
    ]);
    let blocked = tempfile::tempdir().expect("temp dir");
    let not_a_dir = blocked.path().join("logs");
    std::fs::write(&not_a_dir, "a file where the log directory would be").expect("write");
    let servers = manager(&root, &not_a_dir.join("larik"));
    let feedback = ServerFeedback::new(Arc::clone(&servers), kit::patient());
    let main = root.join("main.c");
    let broken = "int main(void) {\n    return coutn;\n}\n";
    std::fs::write(&main, broken).expect("write main.c");
    let report = feedback.after_edit(&main, broken).await.expect("a report");
    assert!(
        report.starts_with("clangd reports:\nERROR 2:12 ") && report.contains("coutn"),
        "{report}"
    );
    servers.shutdown().await;
}

/// A checker over one configured server for `.zz` files, with short waits, logging into
/// `log_dir`.
fn broken_server(
    root: &std::path::Path,
    log_dir: &std::path::Path,
    script: &str,
) -> (Arc<LanguageServers>, ServerFeedback) {
    let spec = ServerSpec::new("broken", "bash", &["-c", script], &["zz"], &[]);
    let servers = Arc::new(LanguageServers::new(ManagerConfig {
        project_root: root.to_path_buf(),
        path_dirs: kit::path_dirs(),
        log_dir: log_dir.to_path_buf(),
        servers: vec![spec],
        disabled: Vec::new(),
        timeouts: Timeouts {
            initialize: std::time::Duration::from_secs(2),
            ..Timeouts::default()
        },
    }));
    let wait = larik_lsp::DiagnosticsWait {
        quiet: std::time::Duration::from_secs(1),
        loading: std::time::Duration::from_secs(3),
    };
    let feedback = ServerFeedback::new(Arc::clone(&servers), wait);
    (servers, feedback)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_or_writes_garbage_costs_one_line_once() {
    for script in [
        "sleep 1000",
        "echo 'this is not LSP'; sleep 1000",
        "echo garbage; exit 3",
    ] {
        let (_dir, root) = kit::project(&[("a.zz", "one\n")]);
        let (servers, feedback) = broken_server(&root, &root.join(".logs"), script);
        let path = root.join("a.zz");
        let report = feedback.after_edit(&path, "two\n").await.expect("a line");
        assert_eq!(report.lines().count(), 1, "{script}: {report}");
        assert!(
            report.starts_with("(No diagnostics from broken: "),
            "{script}: {report}"
        );
        let log = root.join(".logs/lsp-broken.log");
        assert!(
            report.ends_with(&format!(" Its log: {}.)", log.display())),
            "{script}: {report}"
        );
        // Said once: the next edit of the session adds nothing.
        assert_eq!(
            feedback.after_edit(&path, "three\n").await,
            None,
            "{script}"
        );
        servers.shutdown().await;
    }
}

/// A server that fails while its log could not be opened: the line says what failed and
/// points at no log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_server_without_a_log_names_no_log() {
    let (_dir, root) = kit::project(&[("a.zz", "one\n")]);
    let blocked = root.join("blocked");
    std::fs::write(&blocked, "a file where the log directory would be").expect("write");
    let (servers, feedback) = broken_server(&root, &blocked.join("logs"), "echo garbage; exit 3");
    let report = feedback
        .after_edit(&root.join("a.zz"), "two\n")
        .await
        .expect("a line");
    assert!(
        report.starts_with("(No diagnostics from broken: ") && report.ends_with(".)"),
        "{report}"
    );
    assert!(!report.contains("Its log"), "{report}");
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_the_next_edit_says_so_and_a_new_server_answers() {
    kit::path_bin("clangd");
    let (_dir, root) = kit::project(&[
        ("compile_flags.txt", "-std=c11\n"),
        ("main.c", "int main(void) { return 0; }\n"),
    ]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = manager(&root, logs.path());
    let feedback = ServerFeedback::new(Arc::clone(&servers), kit::patient());
    let main = root.join("main.c");
    let broken = "int main(void) {\n    return coutn;\n}\n";
    std::fs::write(&main, broken).expect("write");
    let first = feedback.after_edit(&main, broken).await.expect("a report");
    assert!(first.contains("ERROR 2:12 "), "{first}");

    let running = servers.running();
    let pid = running[0].pid().expect("clangd runs");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    running[0].wait_for_exit().await;

    let again = "int main(void) {\n    return coutn + 1;\n}\n";
    std::fs::write(&main, again).expect("write");
    let report = feedback.after_edit(&main, again).await.expect("a report");
    let lines: Vec<&str> = report.lines().collect();
    assert!(
        lines[0].starts_with("(clangd: "),
        "the crash is told: {report}"
    );
    assert!(
        report.contains("clangd reports:\nERROR 2:12 "),
        "a new clangd checked the edit: {report}"
    );
    assert_ne!(servers.running()[0].pid(), Some(pid));
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_keeps_the_text_the_server_has_and_an_update_replaces_it() {
    kit::path_bin("clangd");
    let (_dir, root) = kit::project(&[
        ("compile_flags.txt", "-std=c11\n"),
        ("lib.c", "int first(void) { return 1; }\n"),
    ]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = manager(&root, logs.path());
    let lib = root.join("lib.c");
    let names = |symbols: Vec<larik_lsp::Symbol>| -> Vec<String> {
        symbols.into_iter().map(|symbol| symbol.name).collect()
    };
    assert!(
        servers
            .open(&lib, "int first(void) { return 1; }\n")
            .await
            .expect("opens")
    );
    let server = servers
        .server_for(&lib)
        .expect("starts")
        .expect("serves .c");
    // A later warm-up with other text (read from disk before an edit) changes nothing.
    servers
        .open(&lib, "int stale(void) { return 0; }\n")
        .await
        .expect("warms");
    assert_eq!(
        names(server.document_symbols(&lib).await.expect("symbols")),
        ["first"]
    );
    // An update (a file a code action changed) does replace it.
    servers
        .update(&lib, "int second(void) { return 2; }\n")
        .await
        .expect("updates");
    assert_eq!(
        names(server.document_symbols(&lib).await.expect("symbols")),
        ["second"]
    );
    servers.shutdown().await;
}
