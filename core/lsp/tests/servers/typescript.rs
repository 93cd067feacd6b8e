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

/// Each version's answer, asked right after it is sent, whatever the server still works on
/// for the version before: a syntax and a type error together, with the column counted in
/// characters past a character outside the BMP, then none, then one type error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_edit_gets_typescripts_answer_for_exactly_its_text() {
    let (_dir, root) = kit::project(&[("tsconfig.json", TSCONFIG), ("main.ts", FIXED)]);
    let path = root.join("main.ts");
    let command = kit::npm_bin("typescript-language-server");
    let server = larik_lsp::LanguageServer::start(kit::options("ts", command, &["--stdio"], &root))
        .expect("the server starts");
    let both = "const smile = \"😀\"; const n: number = smile;\nlet broken = ;\n";
    let shown = |report: &larik_lsp::DiagnosticsReport| -> Vec<String> {
        assert!(report.fresh, "{report:?}");
        report
            .diagnostics
            .iter()
            .filter(|found| found.severity == larik_lsp::Severity::Error)
            .map(|found| {
                format!(
                    "{}:{} {}",
                    found.line,
                    found.column,
                    found.code.as_deref().unwrap_or("")
                )
            })
            .collect()
    };
    for _ in 0..3 {
        let report = server
            .diagnostics_after_change(&path, both, kit::patient())
            .await
            .expect("diagnostics");
        // TS2322 at `n` (column 26: the emoji is one character, two UTF-16 units), TS1109 after `=`.
        assert_eq!(shown(&report), ["1:26 2322", "2:14 1109"], "{report:?}");
        let report = server
            .diagnostics_after_change(&path, FIXED, kit::patient())
            .await
            .expect("diagnostics");
        assert_eq!(shown(&report), Vec::<String>::new(), "{report:?}");
        let report = server
            .diagnostics_after_change(&path, BROKEN, kit::patient())
            .await
            .expect("diagnostics");
        assert_eq!(shown(&report), ["6:21 2552"], "{report:?}");
    }
    server.shutdown().await;
}
