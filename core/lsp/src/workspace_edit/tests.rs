//! Workspace edits planned against real files in temp dirs, with hand-built edits.

use larik_tools::DiskFiles;
use serde_json::json;

use super::*;

/// A temp project with `files`; returns the guard and its canonical root.
fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    for (name, text) in files {
        std::fs::write(root.join(name), text).expect("write");
    }
    (dir, root)
}

fn uri(path: &Path) -> String {
    ls_types::Uri::from_file_path(path)
        .expect("absolute")
        .as_str()
        .to_string()
}

fn edit(start: (u32, u32), end: (u32, u32), text: &str) -> Value {
    json!({
        "range": {"start": {"line": start.0, "character": start.1},
                  "end": {"line": end.0, "character": end.1}},
        "newText": text,
    })
}

async fn plan(
    edit: Value,
    root: &Path,
    encoding: PositionEncoding,
) -> Result<Vec<EditedFile>, WorkspaceEditError> {
    plan_workspace_edit(&edit, root, &DiskFiles, encoding).await
}

#[tokio::test]
async fn changes_apply_several_edits_of_one_file_in_any_order() {
    let (_dir, root) = project(&[("a.c", "int a = 1;\nint b = 2;\nint c = 3;\n")]);
    let a = root.join("a.c");
    // Listed top-down and out of order; each range refers to the original text.
    let workspace_edit = json!({"changes": {uri(&a): [
        edit((2, 4), (2, 5), "third"),
        edit((0, 4), (0, 5), "first"),
        edit((1, 8), (1, 9), "22"),
        edit((1, 0), (1, 0), "/* b */ "),
    ]}});
    let planned = plan(workspace_edit, &root, PositionEncoding::Utf16)
        .await
        .expect("applies");
    assert_eq!(planned.len(), 1);
    assert_eq!(planned[0].path, a);
    assert_eq!(
        planned[0].new_text,
        "int first = 1;\n/* b */ int b = 22;\nint third = 3;\n"
    );
    assert_eq!(planned[0].old_text, "int a = 1;\nint b = 2;\nint c = 3;\n");
    assert_eq!(
        std::fs::read_to_string(&a).expect("read"),
        planned[0].old_text,
        "planning writes nothing"
    );
}

#[tokio::test]
async fn document_changes_apply_in_sequence_across_files() {
    let (_dir, root) = project(&[("a.py", "x = 1\n"), ("b.py", "y = 2\n")]);
    let (a, b) = (root.join("a.py"), root.join("b.py"));
    let workspace_edit = json!({"documentChanges": [
        {"textDocument": {"uri": uri(&a), "version": 3}, "edits": [edit((0, 0), (0, 1), "xx")]},
        {"textDocument": {"uri": uri(&b), "version": null},
         "edits": [{"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}},
                    "newText": "20", "annotationId": "rename"}]},
        // A second edit of a.py applies to the text the first one left.
        {"textDocument": {"uri": uri(&a), "version": 4}, "edits": [edit((0, 0), (0, 2), "z")]},
    ]});
    let planned = plan(workspace_edit, &root, PositionEncoding::Utf16)
        .await
        .expect("applies");
    let texts: Vec<(&Path, &str)> = planned
        .iter()
        .map(|file| (file.path.as_path(), file.new_text.as_str()))
        .collect();
    assert_eq!(texts, [(a.as_path(), "z = 1\n"), (b.as_path(), "y = 20\n")]);
}

#[tokio::test]
async fn file_operations_are_refused_before_anything_is_read() {
    let (_dir, root) = project(&[("a.py", "x = 1\n")]);
    let a = root.join("a.py");
    for (kind, operation) in [
        (
            "create",
            json!({"kind": "create", "uri": uri(&root.join("new.py"))}),
        ),
        (
            "rename",
            json!({"kind": "rename", "oldUri": uri(&a), "newUri": uri(&root.join("b.py"))}),
        ),
        ("delete", json!({"kind": "delete", "uri": uri(&a)})),
    ] {
        let workspace_edit = json!({"documentChanges": [
            {"textDocument": {"uri": uri(&a), "version": 1}, "edits": [edit((0, 0), (0, 1), "y")]},
            operation,
        ]});
        let error = plan(workspace_edit, &root, PositionEncoding::Utf16)
            .await
            .expect_err("refused");
        assert!(
            matches!(&error, WorkspaceEditError::FileOperation(refused) if refused == kind),
            "{error}"
        );
    }
    assert!(!root.join("new.py").exists());
    assert_eq!(std::fs::read_to_string(&a).expect("read"), "x = 1\n");
}

#[tokio::test]
async fn files_outside_the_root_are_refused_even_through_a_symlink() {
    let (_dir, root) = project(&[("a.py", "x = 1\n")]);
    let (_other, elsewhere) = project(&[("secret.py", "s = 1\n")]);
    let secret = elsewhere.join("secret.py");
    std::os::unix::fs::symlink(&secret, root.join("link.py")).expect("symlink");
    for target in [secret.clone(), root.join("link.py")] {
        let workspace_edit = json!({"changes": {
            uri(&root.join("a.py")): [edit((0, 0), (0, 1), "y")],
            uri(&target): [edit((0, 0), (0, 1), "t")],
        }});
        let error = plan(workspace_edit, &root, PositionEncoding::Utf16)
            .await
            .expect_err("refused");
        assert!(
            matches!(&error, WorkspaceEditError::OutsideRoot(path) if *path == secret),
            "{error}"
        );
    }
    let missing = json!({"changes": {uri(&root.join("missing.py")): [edit((0, 0), (0, 0), "m")]}});
    let error = plan(missing, &root, PositionEncoding::Utf16)
        .await
        .expect_err("refused");
    assert!(matches!(error, WorkspaceEditError::NotAFile(_)), "{error}");
    let remote = json!({"changes": {"untitled:Untitled-1": [edit((0, 0), (0, 0), "m")]}});
    let error = plan(remote, &root, PositionEncoding::Utf16)
        .await
        .expect_err("refused");
    assert!(matches!(error, WorkspaceEditError::NotAFile(_)), "{error}");
}

#[tokio::test]
async fn positions_count_utf16_units_or_utf8_bytes_as_negotiated() {
    // 'é' is one UTF-16 unit and two bytes; the emoji two units and four bytes.
    let text = "s = \"é😀\"; coutn\n";
    let (_dir, root) = project(&[("a.c", text)]);
    let a = root.join("a.c");
    let utf16 = json!({"changes": {uri(&a): [edit((0, 11), (0, 16), "count")]}});
    let planned = plan(utf16, &root, PositionEncoding::Utf16)
        .await
        .expect("applies");
    assert_eq!(planned[0].new_text, "s = \"é😀\"; count\n");
    let utf8 = json!({"changes": {uri(&a): [edit((0, 14), (0, 19), "count")]}});
    let planned = plan(utf8, &root, PositionEncoding::Utf8)
        .await
        .expect("applies");
    assert_eq!(planned[0].new_text, "s = \"é😀\"; count\n");
}

#[tokio::test]
async fn overlapping_and_malformed_edits_are_refused() {
    let (_dir, root) = project(&[("a.c", "abcdef\n")]);
    let a = root.join("a.c");
    let overlapping = json!({"changes": {uri(&a): [
        edit((0, 0), (0, 3), "x"),
        edit((0, 2), (0, 4), "y"),
    ]}});
    let error = plan(overlapping, &root, PositionEncoding::Utf16)
        .await
        .expect_err("refused");
    assert!(matches!(error, WorkspaceEditError::Overlap(_)), "{error}");
    let snippet = json!({"documentChanges": [{"textDocument": {"uri": uri(&a), "version": 1},
        "edits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                   "snippet": {"kind": "snippet", "value": "${1:x}"}}]}]});
    let error = plan(snippet, &root, PositionEncoding::Utf16)
        .await
        .expect_err("refused");
    assert!(matches!(error, WorkspaceEditError::Malformed(_)), "{error}");
    // Inserts at one position keep their order; an edit that changes nothing is dropped.
    let inserts = json!({"changes": {uri(&a): [
        edit((0, 3), (0, 3), "1"),
        edit((0, 3), (0, 3), "2"),
        edit((0, 3), (0, 4), "D"),
    ]}});
    let planned = plan(inserts, &root, PositionEncoding::Utf16)
        .await
        .expect("applies");
    assert_eq!(planned[0].new_text, "abc12Def\n");
    let same = json!({"changes": {uri(&a): [edit((0, 0), (0, 1), "a")]}});
    assert!(
        plan(same, &root, PositionEncoding::Utf16)
            .await
            .expect("applies")
            .is_empty()
    );
}
