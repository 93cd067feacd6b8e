//! rust-analyzer, only when a working one is on PATH (it is not installable everywhere):
//! compiler errors arrive by push after `didSave`, pulls come back empty.

use crate::kit::{self, Scenario};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_analyzer_reports_fixes_and_navigates_when_present() {
    let Some(command) = larik_lsp::find_command(
        "rust-analyzer",
        &kit::path_dirs(),
        std::path::Path::new("/"),
    ) else {
        return;
    };
    // A rustup proxy without the component installed is on PATH but does not run.
    let works = std::process::Command::new(&command)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !works {
        return;
    }
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
        quick_fix: None,
        workspace_symbol: None,
    })
    .await;
}
