//! pyright: pull diagnostics once registered dynamically (it then stops pushing), navigation.

use crate::kit::{self, Scenario};

const BROKEN: &str = "\
def greet(times: int) -> int:
    return times * 2


count = 3
total = greet(coutn)
print(total)
";

const FIXED: &str = "\
def greet(times: int) -> int:
    return times * 2


count = 3
total = greet(count)
print(total)
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_reports_fixes_and_navigates() {
    kit::run(Scenario {
        name: "pyright",
        command: kit::npm_bin("pyright-langserver"),
        args: &["--stdio"],
        files: &[("pyrightconfig.json", "{}\n"), ("main.py", FIXED)],
        file: "main.py",
        broken: BROKEN,
        error_at: (6, 15),
        error_mentions: "coutn",
        fixed: FIXED,
        usage: (6, 9),
        definition: (1, 5),
        hover_mentions: "greet",
        symbols: &["greet", "count", "total"],
        quick_fix: None,
        workspace_symbol: Some("greet"),
        checks_on_save: false,
    })
    .await;
}
