//! rust-analyzer: compiler errors arrive by push after `didSave`, pulls come back empty.
//! `tests/lsp/setup` installs it (rustup's component); where it cannot be installed,
//! `tests/run` leaves these tests out by name and says so, and run on their own they fail.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use larik_lsp::{ApplyCodeActionTool, LspTool};
use serde_json::json;

use crate::kit::{self, Scenario};
use crate::tools::{context, ok, servers};

const BROKEN: &str = "\
fn greet(times: i32) -> i32 {
    times * 2
}

fn main() {
    let count = 3;
    let total = greet(coutn);
    println!(\"{total} {count}\");
}
";

const FIXED: &str = "\
fn greet(times: i32) -> i32 {
    times * 2
}

fn main() {
    let count = 3;
    let total = greet(count);
    println!(\"{total} {count}\");
}
";

const MANIFEST: &str = "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";

/// The rust-analyzer on PATH; a rustup proxy without the component installed is on PATH
/// but does not run, which fails the test.
fn working_rust_analyzer() -> PathBuf {
    let command = larik_lsp::find_command("rust-analyzer", &kit::path_dirs(), Path::new("/"))
        .expect("rust-analyzer is on PATH (tests/lsp/setup installs it)");
    let works = std::process::Command::new(&command)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        works,
        "rust-analyzer does not run: tests/lsp/setup installs it (rustup component add rust-analyzer)"
    );
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_analyzer_reports_fixes_and_navigates() {
    let command = working_rust_analyzer();
    kit::run(Scenario {
        name: "rust-analyzer",
        command,
        args: &[],
        files: &[("Cargo.toml", MANIFEST), ("src/main.rs", FIXED)],
        file: "src/main.rs",
        broken: BROKEN,
        error_at: (7, 23),
        error_mentions: "coutn",
        fixed: FIXED,
        usage: (7, 17),
        definition: (1, 4),
        hover_mentions: "greet",
        symbols: &["greet", "main"],
        quick_fix: Some("similar name"),
        workspace_symbol: None,
        checks_on_save: true,
    })
    .await;
}

/// rust-analyzer's fix from the compiler's suggestion is applied as it comes; its assists
/// come without an edit and are resolved first. Both leave a file that checks clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_code_action_uses_rust_analyzers_fixes_and_resolved_assists() {
    working_rust_analyzer();
    let (_dir, root) = kit::project(&[("Cargo.toml", MANIFEST), ("src/main.rs", BROKEN)]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let apply = ApplyCodeActionTool::new(Arc::clone(&servers), kit::patient());
    let lsp = LspTool::new(Arc::clone(&servers), kit::patient());
    let ctx = context(&root);
    let main = root.join("src/main.rs");

    let diagnostics = ok(
        &lsp,
        &ctx,
        json!({"operation": "diagnostics", "file_path": "src/main.rs"}),
    )
    .await;
    assert!(
        diagnostics.contains("ERROR 7:23 cannot find value `coutn` in this scope"),
        "{diagnostics}"
    );

    let text = ok(
        &apply,
        &ctx,
        json!({"file_path": "src/main.rs", "line": 7,
               "title": "a local variable with a similar name exists: `count`"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&main).expect("read"), FIXED);
    assert!(
        text.ends_with("rust-analyzer reports no errors or warnings in src/main.rs."),
        "{text}"
    );

    let actions = ok(
        &lsp,
        &ctx,
        json!({"operation": "code_actions", "file_path": "src/main.rs", "line": 2}),
    )
    .await;
    assert!(actions.contains("Extract into variable"), "{actions}");
    let text = ok(
        &apply,
        &ctx,
        json!({"file_path": "src/main.rs", "line": 2, "title": "Extract into variable"}),
    )
    .await;
    let extracted = std::fs::read_to_string(&main).expect("read");
    assert_eq!(
        extracted,
        FIXED.replace(
            "    times * 2\n",
            "    let var_name = times * 2;\n    var_name\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("rust-analyzer reports no errors or warnings in src/main.rs."),
        "{text}\n{extracted}"
    );
    let log = std::fs::read_to_string(logs.path().join("lsp-rust-analyzer.log")).expect("log");
    assert!(
        log.contains("\"method\":\"codeAction/resolve\""),
        "the assist was resolved before it was applied"
    );
    servers.shutdown().await;
}
