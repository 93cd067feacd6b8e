//! gopls: pushes without a document version.

use crate::kit::{self, Scenario};

const BROKEN: &str = "\
package main

import \"fmt\"

func greet(times int) int {
\treturn times * 2
}

func main() {
\tcount := 3
\ttotal := greet(coutn)
\tfmt.Println(total, count)
}
";

const FIXED: &str = "\
package main

import \"fmt\"

func greet(times int) int {
\treturn times * 2
}

func main() {
\tcount := 3
\ttotal := greet(count)
\tfmt.Println(total, count)
}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gopls_reports_fixes_and_navigates() {
    // The Go toolchain must be on PATH too: gopls runs `go` to load packages.
    kit::path_bin("go");
    kit::run(Scenario {
        name: "gopls",
        command: kit::path_bin("gopls"),
        args: &[],
        files: &[
            ("go.mod", "module example.com/m\n\ngo 1.19\n"),
            ("main.go", FIXED),
        ],
        file: "main.go",
        broken: BROKEN,
        error_at: (11, 17),
        error_mentions: "coutn",
        fixed: FIXED,
        usage: (11, 11),
        definition: (5, 6),
        hover_mentions: "greet",
        symbols: &["greet", "main"],
        quick_fix: None,
        workspace_symbol: Some("greet"),
        checks_on_save: false,
    })
    .await;
}
