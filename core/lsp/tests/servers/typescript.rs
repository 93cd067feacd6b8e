//! typescript-language-server: pushes without a document version.

use crate::kit::{self, Scenario};

const BROKEN: &str = "\
function greet(times: number): number {
  return times * 2;
}

const count = 3;
const total = greet(coutn);
console.log(total, count);
";

const FIXED: &str = "\
function greet(times: number): number {
  return times * 2;
}

const count = 3;
const total = greet(count);
console.log(total, count);
";

const TSCONFIG: &str = r#"{"compilerOptions": {"strict": true, "target": "es2020", "lib": ["es2020", "dom"]}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_language_server_reports_fixes_and_navigates() {
    kit::run(Scenario {
        name: "typescript-language-server",
        command: kit::npm_bin("typescript-language-server"),
        args: &["--stdio"],
        files: &[("tsconfig.json", TSCONFIG), ("main.ts", FIXED)],
        file: "main.ts",
        broken: BROKEN,
        error_at: (6, 21),
        error_mentions: "coutn",
        fixed: FIXED,
        usage: (6, 15),
        definition: (1, 10),
        hover_mentions: "greet",
        symbols: &["greet", "count", "total"],
        quick_fix: None,
        workspace_symbol: None,
        checks_on_save: false,
    })
    .await;
}
