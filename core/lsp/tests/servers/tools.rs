//! The `lsp` and `apply_code_action` tools over real servers: every query answers with the
//! server's real findings, a quick fix is applied to the file on disk and leaves it clean,
//! and a wrong title or an edit outside the project writes nothing.

use std::path::Path;
use std::sync::Arc;

use larik_lsp::{ApplyCodeActionTool, LanguageServers, LspTool, ManagerConfig, Timeouts};
use larik_protocol::ResultPart;
use larik_sandbox::Sandbox;
use larik_tools::{
    CallTarget, DiskFiles, ReadTracker, Tool, ToolContext, ToolLimits, ToolOutput, ToolRegistry,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::kit;

const BROKEN_C: &str = "\
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

const BROKEN_PY: &str = "\
def greet(times: int) -> int:
    return times * 2


count = 3
total = greet(coutn) + greet(count)
print(total)
";

pub fn servers(root: &Path, log_dir: &Path) -> Arc<LanguageServers> {
    let mut path_dirs = vec![kit::repo_root().join("tests/lsp/node_modules/.bin")];
    path_dirs.extend(kit::path_dirs());
    Arc::new(LanguageServers::new(ManagerConfig {
        project_root: root.to_path_buf(),
        path_dirs,
        log_dir: log_dir.to_path_buf(),
        servers: Vec::new(),
        disabled: Vec::new(),
        timeouts: Timeouts::default(),
    }))
}

pub fn context(cwd: &Path) -> ToolContext {
    ToolContext {
        cwd: cwd.to_path_buf(),
        cancel: CancellationToken::new(),
        sandbox: Arc::new(Sandbox::unconfined(cwd)),
        limits: ToolLimits::default(),
        reads: Arc::new(ReadTracker::default()),
        hidden: None,
        files: Arc::new(DiskFiles),
        feedback: None,
        checkpoint: None,
        call_id: String::new(),
        agent: None,
    }
}

pub fn text_of(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .map(|part| match part {
            ResultPart::Text { text } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Runs a call that must succeed and returns its text.
pub async fn ok(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> String {
    let output = tool.run(input.clone(), ctx).await;
    let text = text_of(&output);
    assert!(!output.is_error, "{input} failed: {text}");
    text
}

/// Runs a call that must fail and returns its message.
pub async fn fails(tool: &dyn Tool, ctx: &ToolContext, input: Value) -> String {
    let output = tool.run(input.clone(), ctx).await;
    let text = text_of(&output);
    assert!(output.is_error, "{input} should fail: {text}");
    assert!(output.changes.is_empty());
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_tool_answers_every_operation_from_clangd() {
    kit::path_bin("clangd");
    let (_dir, root) = kit::project(&[
        ("compile_flags.txt", "-std=c11\n-Wall\n"),
        ("main.c", BROKEN_C),
        ("notes.txt", "plain\n"),
    ]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let tool = LspTool::new(Arc::clone(&servers), kit::patient());
    let ctx = context(&root);
    assert!(tool.read_only());
    assert_eq!(
        tool.target(&json!({"operation": "hover", "file_path": "main.c"}), &ctx),
        CallTarget::Path(root.join("main.c"))
    );
    let call = |operation: &str, extra: Value| {
        let mut input = json!({"operation": operation, "file_path": "main.c"});
        for (key, value) in extra.as_object().expect("an object") {
            input[key] = value.clone();
        }
        input
    };

    let diagnostics = ok(&tool, &ctx, call("diagnostics", json!({}))).await;
    assert!(
        diagnostics
            .lines()
            .any(|line| line.starts_with("ERROR 9:23 ") && line.contains("coutn")),
        "{diagnostics}"
    );

    let actions = ok(&tool, &ctx, call("code_actions", json!({"line": 9}))).await;
    assert!(
        actions.contains("1. change 'coutn' to 'count' (quickfix"),
        "{actions}"
    );

    let definition = ok(
        &tool,
        &ctx,
        call("definition", json!({"line": 9, "column": 17})),
    )
    .await;
    assert_eq!(definition, "main.c:3:12: static int greet(int times) {");

    let references = ok(
        &tool,
        &ctx,
        call("references", json!({"line": 3, "column": 13})),
    )
    .await;
    assert_eq!(
        references,
        "2 references (the declaration included):\n\
         main.c:3:12: static int greet(int times) {\n\
         main.c:9:17: int total = greet(coutn);"
    );

    let hover = ok(&tool, &ctx, call("hover", json!({"line": 9, "column": 17}))).await;
    assert!(hover.contains("greet") && hover.contains("int"), "{hover}");

    let symbols = ok(&tool, &ctx, call("document_symbols", json!({}))).await;
    assert!(symbols.contains("Function greet  3:12"), "{symbols}");
    assert!(symbols.contains("Function main  7:5"), "{symbols}");

    let found = ok(
        &tool,
        &ctx,
        call("workspace_symbols", json!({"query": "greet"})),
    )
    .await;
    assert!(found.contains("greet  main.c:3:12"), "{found}");

    let error = fails(&tool, &ctx, call("hover", json!({"line": 40, "column": 1}))).await;
    assert!(error.contains("Line 40 is not in main.c"), "{error}");
    let error = fails(&tool, &ctx, call("hover", json!({"line": 9, "column": 99}))).await;
    assert!(error.contains("Column 99 is not on line 9"), "{error}");
    let error = fails(&tool, &ctx, call("definition", json!({}))).await;
    assert!(error.contains("needs `line` and `column`"), "{error}");
    let error = fails(
        &tool,
        &ctx,
        json!({"operation": "hover", "file_path": "notes.txt", "line": 1, "column": 1}),
    )
    .await;
    assert!(
        error.starts_with("No language server handles notes.txt"),
        "{error}"
    );
    let error = fails(
        &tool,
        &ctx,
        json!({"operation": "rename", "file_path": "main.c"}),
    )
    .await;
    assert!(error.contains("Invalid input for lsp"), "{error}");
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_code_action_fixes_the_file_with_clangds_quick_fix() {
    kit::path_bin("clangd");
    let (_dir, root) = kit::project(&[("compile_flags.txt", "-std=c11\n"), ("main.c", BROKEN_C)]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let tool = ApplyCodeActionTool::new(Arc::clone(&servers), kit::patient());
    let ctx = context(&root);
    let main = root.join("main.c");
    assert!(!tool.read_only());
    assert_eq!(
        tool.target(&json!({"file_path": "main.c"}), &ctx),
        CallTarget::Path(main.clone())
    );

    let error = fails(
        &tool,
        &ctx,
        json!({"file_path": "main.c", "line": 9, "title": "make it compile"}),
    )
    .await;
    assert!(
        error.contains("No code action titled \"make it compile\"")
            && error.contains("- change 'coutn' to 'count'"),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&main).expect("read"), BROKEN_C);

    let input = json!({"file_path": "main.c", "line": 9, "title": "change 'coutn' to 'count'"});
    let preview = tool.preview(&input, &ctx).await.expect("a preview");
    assert_eq!(preview.path, main.display().to_string());
    assert_eq!(preview.old_text.as_deref(), Some(BROKEN_C));
    let fixed = BROKEN_C.replace("greet(coutn)", "greet(count)");
    assert_eq!(preview.new_text, fixed);
    assert_eq!(
        std::fs::read_to_string(&main).expect("read"),
        BROKEN_C,
        "a preview writes nothing"
    );

    let output = tool.run(input, &ctx).await;
    let text = text_of(&output);
    assert!(!output.is_error, "{text}");
    assert_eq!(std::fs::read_to_string(&main).expect("read"), fixed);
    assert_eq!(output.changes, [preview]);
    assert!(
        text.starts_with("Applied \"change 'coutn' to 'count'\": changed main.c."),
        "{text}"
    );
    assert!(
        text.ends_with("clangd reports no errors or warnings in main.c."),
        "{text}"
    );
    assert_eq!(
        ctx.reads.check(&main, "main.c"),
        Ok(()),
        "the written file counts as read"
    );
    // The fix is gone from the fixed line.
    let lsp = LspTool::new(Arc::clone(&servers), kit::patient());
    let diagnostics = ok(
        &lsp,
        &ctx,
        json!({"operation": "diagnostics", "file_path": "main.c"}),
    )
    .await;
    assert_eq!(diagnostics, "No diagnostics in main.c.");
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_code_action_refuses_an_edit_outside_the_working_directory() {
    kit::path_bin("clangd");
    let (_dir, root) = kit::project(&[
        ("compile_flags.txt", "-std=c11\n"),
        ("main.c", BROKEN_C),
        ("app/readme.txt", "the agent works in here\n"),
    ]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let tool = ApplyCodeActionTool::new(Arc::clone(&servers), kit::patient());
    // The agent's project is `app`; the fix would change `../main.c`.
    let ctx = context(&root.join("app"));
    let input = json!({"file_path": "../main.c", "line": 9, "title": "change 'coutn' to 'count'"});
    assert_eq!(tool.preview(&input, &ctx).await, None);
    let error = fails(&tool, &ctx, input).await;
    assert!(
        error.contains("outside the project root") && error.contains("Nothing was written"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("main.c")).expect("read"),
        BROKEN_C
    );
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refactoring_run_as_a_command_applies_the_edit_the_server_sends() {
    kit::path_bin("clangd");
    let source = "#define TWICE(a) ((a) * 2)\nint h(void) { return TWICE(3); }\n";
    let (_dir, root) = kit::project(&[("compile_flags.txt", "-std=c11\n"), ("main.c", source)]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let lsp = LspTool::new(Arc::clone(&servers), kit::patient());
    let tool = ApplyCodeActionTool::new(Arc::clone(&servers), kit::patient());
    let ctx = context(&root);

    // A whole line selects nothing clangd can refactor; the macro's name does.
    let listed = ok(
        &lsp,
        &ctx,
        json!({"operation": "code_actions", "file_path": "main.c", "line": 2}),
    )
    .await;
    assert_eq!(listed, "No code actions offered for main.c:2.");
    let listed = ok(
        &lsp,
        &ctx,
        json!({"operation": "code_actions", "file_path": "main.c", "line": 2, "column": 22}),
    )
    .await;
    assert!(
        listed.starts_with("Code actions for main.c:2:22:\n1. Expand macro 'TWICE' (refactor)\n"),
        "{listed}"
    );

    // clangd sends this action as a command and the edit as `workspace/applyEdit`, so
    // there is nothing to preview.
    let input =
        json!({"file_path": "main.c", "line": 2, "column": 22, "title": "Expand macro 'TWICE'"});
    assert_eq!(tool.preview(&input, &ctx).await, None);
    let output = tool.run(input, &ctx).await;
    let text = text_of(&output);
    assert!(!output.is_error, "{text}");
    let expanded = "#define TWICE(a) ((a) * 2)\nint h(void) { return ((3) * 2); }\n";
    assert_eq!(
        std::fs::read_to_string(root.join("main.c")).expect("read"),
        expanded
    );
    assert_eq!(output.changes.len(), 1, "{:?}", output.changes);
    assert_eq!(output.changes[0].old_text.as_deref(), Some(source));
    assert_eq!(output.changes[0].new_text, expanded);
    assert!(
        text.starts_with("Applied \"Expand macro 'TWICE'\": changed main.c."),
        "{text}"
    );
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goplss_quick_fix_runs_as_a_command_whose_edit_is_applied() {
    kit::path_bin("gopls");
    let source = "package main\n\nimport \"fmt\"\n\nfunc twice(n int) int {\n\treturn n * 2\n}\n\nfunc main() {\n\tcount := 3\n\ttotal := coutn + twice(count)\n\tfmt.Println(total)\n}\n";
    let (_dir, root) =
        kit::project(&[("go.mod", "module probe\n\ngo 1.19\n"), ("main.go", source)]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let lsp = LspTool::new(Arc::clone(&servers), kit::patient());
    let tool = ApplyCodeActionTool::new(Arc::clone(&servers), kit::patient());
    let ctx = context(&root);
    let listed = ok(
        &lsp,
        &ctx,
        json!({"operation": "code_actions", "file_path": "main.go", "line": 11}),
    )
    .await;
    assert!(
        listed.contains("undeclared name: coutn (quickfix)"),
        "{listed}"
    );
    // gopls sends an empty edit and a `gopls.apply_fix` command, which sends the real
    // edit back as `workspace/applyEdit` while it runs.
    let output = tool
        .run(
            json!({"file_path": "main.go", "line": 11, "title": "undeclared name: coutn"}),
            &ctx,
        )
        .await;
    let text = text_of(&output);
    assert!(!output.is_error, "{text}");
    // gopls declares the name and leaves its value for the author to write.
    let declared = source.replace("\ttotal := ", "\tcoutn := \n\ttotal := ");
    let written = std::fs::read_to_string(root.join("main.go")).expect("read");
    assert_eq!(written, declared);
    assert_eq!(output.changes.len(), 1, "{:?}", output.changes);
    assert_eq!(output.changes[0].old_text.as_deref(), Some(source));
    assert_eq!(output.changes[0].new_text, declared);
    assert!(
        text.starts_with("Applied \"undeclared name: coutn\": changed main.go.\ngopls reports:\n"),
        "{text}"
    );
    // The fresh diagnostics are about the new text: the half-written declaration.
    assert!(text.contains("ERROR 12:8 "), "{text}");
    assert!(!text.contains("undeclared name: coutn ["), "{text}");
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_tool_answers_from_pyright() {
    kit::npm_bin("pyright-langserver");
    let (_dir, root) = kit::project(&[("pyrightconfig.json", "{}\n"), ("main.py", BROKEN_PY)]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let tool = LspTool::new(Arc::clone(&servers), kit::patient());
    let ctx = context(&root);
    let call = |operation: &str, line: u32, column: u32| json!({"operation": operation, "file_path": "main.py", "line": line, "column": column});

    let diagnostics = ok(
        &tool,
        &ctx,
        json!({"operation": "diagnostics", "file_path": "main.py"}),
    )
    .await;
    assert!(
        diagnostics
            .lines()
            .any(|line| line.starts_with("ERROR 6:15 ") && line.contains("coutn")),
        "{diagnostics}"
    );

    let definition = ok(&tool, &ctx, call("definition", 6, 9)).await;
    assert_eq!(definition, "main.py:1:5: def greet(times: int) -> int:");

    let references = ok(&tool, &ctx, call("references", 1, 5)).await;
    assert!(
        references.starts_with("3 references (the declaration included):\n"),
        "{references}"
    );
    assert!(references.contains("main.py:6:24: total = greet(coutn) + greet(count)"));

    let hover = ok(&tool, &ctx, call("hover", 6, 9)).await;
    assert!(hover.contains("def greet(times: int) -> int"), "{hover}");

    let symbols = ok(
        &tool,
        &ctx,
        json!({"operation": "document_symbols", "file_path": "main.py"}),
    )
    .await;
    let lines: Vec<&str> = symbols.lines().collect();
    assert!(lines.contains(&"Function greet  1:5"), "{symbols}");
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("  ") && line.contains("times  1:11")),
        "the parameter is nested under its function: {symbols}"
    );
    assert!(
        lines.iter().any(|line| line.ends_with("count  5:1")),
        "{symbols}"
    );

    let found = ok(
        &tool,
        &ctx,
        json!({"operation": "workspace_symbols", "file_path": "main.py", "query": "greet"}),
    )
    .await;
    assert!(found.contains("greet  main.py:1:5"), "{found}");

    let actions = ok(
        &tool,
        &ctx,
        json!({"operation": "code_actions", "file_path": "main.py", "line": 6}),
    )
    .await;
    // Pyright offers quick fixes only for missing type stubs, none for an undefined name.
    assert_eq!(actions, "No code actions offered for main.py:6.");
    servers.shutdown().await;
}

/// Pyright's quick fix for a library without type stubs runs its `pyright.createtypestub`
/// command, which writes the stub files itself; the import is then resolved through them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyrights_create_type_stub_quick_fix_runs_its_command() {
    kit::npm_bin("pyright-langserver");
    let (_dir, root) = kit::project(&[
        (
            "pyrightconfig.json",
            "{\"venvPath\": \".\", \"venv\": \"env\", \"reportMissingTypeStubs\": \"error\"}\n",
        ),
        (
            "env/lib/python3.11/site-packages/shapes/__init__.py",
            "def area(width, height):\n    return width * height\n",
        ),
        ("main.py", "import shapes\n\nprint(shapes.area(2, 3))\n"),
    ]);
    let logs = tempfile::tempdir().expect("log dir");
    let servers = servers(&root, logs.path());
    let lsp = LspTool::new(Arc::clone(&servers), kit::patient());
    let apply = ApplyCodeActionTool::new(Arc::clone(&servers), kit::patient());
    let ctx = context(&root);

    let diagnostics = ok(
        &lsp,
        &ctx,
        json!({"operation": "diagnostics", "file_path": "main.py"}),
    )
    .await;
    assert!(
        diagnostics.contains("ERROR 1:8 Stub file not found for \"shapes\""),
        "{diagnostics}"
    );
    let actions = ok(
        &lsp,
        &ctx,
        json!({"operation": "code_actions", "file_path": "main.py", "line": 1}),
    )
    .await;
    assert!(
        actions.contains("Create Type Stub For \"shapes\""),
        "{actions}"
    );

    let text = ok(
        &apply,
        &ctx,
        json!({"file_path": "main.py", "line": 1, "title": "Create Type Stub For \"shapes\""}),
    )
    .await;
    let stub = std::fs::read_to_string(root.join("typings/shapes/__init__.pyi"))
        .unwrap_or_else(|error| panic!("no stub ({error}) after: {text}"));
    assert!(stub.contains("def area("), "{stub}");
    assert_eq!(
        std::fs::read_to_string(root.join("main.py")).expect("read"),
        "import shapes\n\nprint(shapes.area(2, 3))\n",
        "the command wrote the stub, not the source"
    );
    assert!(
        text.starts_with(
            "Applied \"Create Type Stub For \\\"shapes\\\"\": the server ran its command and sent no edit."
        ),
        "{text}"
    );
    let diagnostics = ok(
        &lsp,
        &ctx,
        json!({"operation": "diagnostics", "file_path": "main.py"}),
    )
    .await;
    assert_eq!(
        diagnostics, "No diagnostics in main.py.",
        "the import resolves to the stub"
    );
    servers.shutdown().await;
}

#[test]
fn registering_adds_both_tools() {
    let (_dir, root) = kit::project(&[]);
    let logs = tempfile::tempdir().expect("log dir");
    let mut tools = ToolRegistry::default();
    larik_lsp::register_lsp_tools(&mut tools, &servers(&root, logs.path()));
    assert_eq!(tools.names(), ["apply_code_action", "lsp"]);
    let lsp = tools.get("lsp").expect("registered");
    assert_eq!(lsp.kind(), larik_protocol::ToolKind::Search);
    let apply = tools.get("apply_code_action").expect("registered");
    assert_eq!(apply.kind(), larik_protocol::ToolKind::Edit);

    // With no server installed there is nothing for the tools to ask.
    let none = Arc::new(LanguageServers::new(ManagerConfig {
        project_root: root.clone(),
        path_dirs: Vec::new(),
        log_dir: logs.path().to_path_buf(),
        servers: Vec::new(),
        disabled: Vec::new(),
        timeouts: Timeouts::default(),
    }));
    let mut tools = ToolRegistry::default();
    larik_lsp::register_lsp_tools(&mut tools, &none);
    assert!(tools.names().is_empty());
}
