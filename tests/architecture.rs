//! Checks the written architecture rules against the code: which crate may depend on
//! which, and the style rules every source file keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("server/ sits in the workspace root")
        .to_path_buf()
}

/// Normal (non-dev) dependencies between Larik crates, from `cargo metadata`.
fn larik_edges() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
    let mut edges = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name").to_string();
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|dep| dep["kind"].is_null())
            .filter_map(|dep| dep["name"].as_str())
            .filter(|dep| dep.starts_with("larik-"))
            .map(str::to_string)
            .collect();
        edges.insert(name, deps);
    }
    edges
}

#[test]
fn dependencies_point_one_way() {
    let edges = larik_edges();
    assert!(
        edges.contains_key("larik-protocol"),
        "metadata lists the workspace"
    );
    // Which Larik crates each crate may depend on (normal dependencies only).
    let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("larik-protocol", &[][..]),
        ("larik-config", &["larik-protocol"][..]),
        ("larik-sandbox", &[][..]),
        ("larik-checkpoints", &[][..]),
        ("larik-permissions", &["larik-protocol"][..]),
        ("larik-session", &["larik-protocol", "larik-config"][..]),
        ("larik-providers", &["larik-protocol"][..]),
        ("larik-tools", &["larik-protocol", "larik-sandbox"][..]),
        ("larik-testkit", &["larik-protocol"][..]),
        (
            "larik-lsp",
            &["larik-protocol", "larik-tools", "larik-sandbox"][..],
        ),
        (
            "larik-mcp",
            &["larik-protocol", "larik-tools", "larik-sandbox"][..],
        ),
        ("larik-subagents", &["larik-protocol", "larik-tools"][..]),
        ("larik-hooks", &["larik-sandbox"][..]),
        ("larik-skills", &["larik-protocol", "larik-tools"][..]),
        ("larik-web", &["larik-protocol", "larik-tools"][..]),
        (
            "larik-browser",
            &["larik-protocol", "larik-tools", "larik-web"][..],
        ),
        (
            "larik-agent",
            &[
                "larik-protocol",
                "larik-providers",
                "larik-tools",
                "larik-sandbox",
                "larik-session",
                "larik-permissions",
                "larik-checkpoints",
            ][..],
        ),
    ]);
    let mut wrong = Vec::new();
    for (krate, deps) in &edges {
        // The fuzz targets sit on top of everything they test, the binary's front ends
        // included, and nothing depends on them.
        if krate == "larik-fuzz" {
            continue;
        }
        if krate == "larik-server" {
            if deps.contains("larik-testkit") {
                wrong.push("larik-server -> larik-testkit (test support in the binary)".into());
            }
            if deps.contains("larik-fuzz") {
                wrong.push("larik-server -> larik-fuzz (the fuzz targets in the binary)".into());
            }
            continue;
        }
        let Some(permitted) = allowed.get(krate.as_str()) else {
            wrong.push(format!(
                "{krate} is not in the architecture test: add it and to docs/ARCHITECTURE.md"
            ));
            continue;
        };
        for dep in deps {
            if !permitted.contains(&dep.as_str()) {
                wrong.push(format!("{krate} -> {dep}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependency edges that run the wrong way: {wrong:#?}"
    );
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target"
                && name != "node_modules"
                && !name.to_string_lossy().starts_with('.')
            {
                rust_sources(&path, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_source_file_keeps_the_style_rules() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["core", "server", "tests"] {
        rust_sources(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 20,
        "found the sources ({} files)",
        files.len()
    );
    let mut problems = Vec::new();
    let ignore_attribute = ["#[", "ignore"].concat();
    for file in &files {
        let relative = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        if file.file_name().is_some_and(|name| name == "mod.rs") {
            problems.push(format!("{relative}: use foo.rs instead of foo/mod.rs"));
        }
        let text = std::fs::read_to_string(file).expect("source is UTF-8");
        if !text.trim_start().starts_with("//!") {
            problems.push(format!("{relative}: starts without a //! paragraph"));
        }
        if text.contains(&ignore_attribute) {
            problems.push(format!("{relative}: has an ignored test"));
        }
    }
    assert!(problems.is_empty(), "style problems: {problems:#?}");
}

/// Where a process may be started outside `larik-sandbox`, and why.
const PROCESS_EXCEPTIONS: &[(&str, &str)] = &[
    (
        "core/lsp/src/connection.rs",
        "language servers are the user's own tools, started unsandboxed with tokio::process \
         in a process group of their own",
    ),
    (
        "core/mcp/src/stdio.rs",
        "stdio MCP servers are programs the user configured (a shared file's only once \
         approved), started as configured with tokio::process in a process group of their own",
    ),
    (
        "server/src/browser.rs",
        "a login opens the user's own browser ($BROWSER or xdg-open) on the authorization \
         page, only when the user asks to log in",
    ),
];

/// Whether `text` starts a process itself: a `Command::new(` that is not part of a longer
/// name (such as `AvailableCommand::new(`), or a raw fork or exec.
fn starts_a_process(text: &str) -> bool {
    let constructs = text.match_indices("Command::new(").any(|(at, _)| {
        let before = text[..at].chars().next_back();
        !before.is_some_and(|ch| ch.is_alphanumeric() || ch == '_')
    });
    constructs
        || ["libc::fork(", "libc::execv", "nix::unistd::fork"]
            .iter()
            .any(|raw| text.contains(raw))
}

#[test]
fn processes_start_only_through_the_sandbox_or_a_listed_exception() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in std::fs::read_dir(root.join("core"))
        .expect("core")
        .flatten()
    {
        // The test kit is a dev-dependency only: it never runs inside Larik.
        if dir.file_name() != "testkit" && dir.file_name() != "sandbox" {
            rust_sources(&dir.path().join("src"), &mut files);
        }
    }
    rust_sources(&root.join("server/src"), &mut files);
    assert!(
        files.len() > 20,
        "found the sources ({} files)",
        files.len()
    );
    let mut starting = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source is UTF-8");
        if starts_a_process(&text) {
            let relative = file
                .strip_prefix(&root)
                .unwrap_or(file)
                .display()
                .to_string();
            starting.push(relative);
        }
    }
    let listed: Vec<&str> = PROCESS_EXCEPTIONS.iter().map(|(path, _)| *path).collect();
    let unlisted: Vec<&String> = starting
        .iter()
        .filter(|path| !listed.contains(&path.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "these start processes outside larik-sandbox; build the command with it, or list the \
         file in PROCESS_EXCEPTIONS with the reason: {unlisted:#?}"
    );
    // An exception that no longer starts anything is dropped from the list.
    let stale: Vec<&&str> = listed
        .iter()
        .filter(|path| !starting.iter().any(|found| found == *path))
        .collect();
    assert!(stale.is_empty(), "listed but starting nothing: {stale:#?}");
    assert!(starts_a_process("let child = Command::new(\"sh\");"));
    assert!(starts_a_process("std::process::Command::new(\"sh\")"));
    assert!(!starts_a_process("AvailableCommand::new(name, text)"));
}
