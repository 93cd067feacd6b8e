//! clangd: compiler diagnostics with versions, navigation, quick fixes.

use crate::kit::{self, Scenario};

const BROKEN: &str = "\
#include <stdio.h>

static int greet(int times) {
    return times * 2;
}

int main(void) {
    int count = 3;
    int total = greet(coutn);
    printf(\"%d\\n\", total);
    return 0;
}
";

const FIXED: &str = "\
#include <stdio.h>

static int greet(int times) {
    return times * 2;
}

int main(void) {
    int count = 3;
    int total = greet(count);
    printf(\"%d\\n\", total);
    return 0;
}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clangd_reports_fixes_and_navigates() {
    kit::run(Scenario {
        name: "clangd",
        command: kit::path_bin("clangd"),
        args: &[],
        files: &[
            ("compile_flags.txt", "-std=c11\n-Wall\n"),
            ("main.c", FIXED),
        ],
        file: "main.c",
        broken: BROKEN,
        error_at: (9, 23),
        error_mentions: "coutn",
        fixed: FIXED,
        usage: (9, 17),
        definition: (3, 12),
        hover_mentions: "greet",
        symbols: &["greet", "main"],
        quick_fix: Some("change 'coutn' to 'count'"),
        workspace_symbol: Some("greet"),
        checks_on_save: false,
    })
    .await;
}
