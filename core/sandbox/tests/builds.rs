//! Real projects build and test inside the sandbox: a Rust crate with `cargo test`, a
//! Python package with `unittest`, and an npm package with `npm test`, all with the
//! project's own caches and outputs under the project, in bubblewrap and under Landlock
//! (the `landlock_…` tests need a kernel with Landlock; `tests/run` leaves them out by name,
//! saying so, on one without).

use std::path::{Path, PathBuf};
use std::time::Duration;

use larik_sandbox::{Network, Policy, Sandbox};

#[path = "support/bwrap.rs"]
mod support;

use support::bwrap;

fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    (dir, root)
}

fn bubblewrap(root: &Path) -> Sandbox {
    Sandbox::bubblewrap(bwrap(), policy(root))
}

fn landlock(root: &Path) -> Sandbox {
    Sandbox::landlock(policy(root)).expect("this kernel has Landlock")
}

fn policy(root: &Path) -> Policy {
    Policy::new(root, &[std::env::temp_dir()], &[], Network::Off)
}

/// Runs `script` sandboxed in `root` with the variables cargo sets for this test removed,
/// so the inner cargo builds the inner project where it lives.
async fn run(sandbox: &Sandbox, script: &str, root: &Path) -> (bool, String) {
    let shell = sandbox.shell_command(script, root).expect("a command");
    let (mut command, guard) = (shell.command, shell.guard);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CARGO")
            || key == "RUSTFLAGS"
            || key == "PYTHONDONTWRITEBYTECODE"
        {
            command.env_remove(key);
        }
    }
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = tokio::time::timeout(Duration::from_secs(300), command.output())
        .await
        .expect("the build ends")
        .expect("the build runs");
    assert_eq!(
        guard.finish().await,
        Vec::new(),
        "the build changed no protected path"
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

async fn a_rust_crate_builds_and_tests(sandbox: fn(&Path) -> Sandbox) {
    let (_dir, root) = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn double(x: i32) -> i32 { x * 2 }\n\n#[test]\nfn doubles() { assert_eq!(double(21), 42); }\n",
        ),
    ]);
    let (ok, text) = run(&sandbox(&root), "cargo test --offline 2>&1", &root).await;
    assert!(ok, "{text}");
    assert!(text.contains("test doubles ... ok"), "{text}");
    assert!(root.join("target").is_dir());
}

async fn a_python_package_tests(sandbox: fn(&Path) -> Sandbox) {
    let (_dir, root) = project(&[
        ("shapes/__init__.py", "def area(w, h):\n    return w * h\n"),
        (
            "tests/test_shapes.py",
            "import unittest\nimport shapes\n\nclass Area(unittest.TestCase):\n    def test_area(self):\n        self.assertEqual(shapes.area(2, 3), 6)\n",
        ),
        ("tests/__init__.py", ""),
    ]);
    let (ok, text) = run(&sandbox(&root), "python3 -m unittest -v 2>&1", &root).await;
    assert!(ok, "{text}");
    assert!(text.contains("test_area") && text.contains("OK"), "{text}");
    assert!(
        root.join("shapes/__pycache__").is_dir(),
        "bytecode cached in the project"
    );
}

async fn an_npm_package_tests(sandbox: fn(&Path) -> Sandbox) {
    let (_dir, root) = project(&[
        (
            "package.json",
            "{\"name\": \"probe\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node test.js\"}}\n",
        ),
        (
            "test.js",
            "const assert = require('assert');\nassert.strictEqual(6 * 7, 42);\nrequire('fs').writeFileSync('result.txt', 'passed');\nconsole.log('all passed');\n",
        ),
    ]);
    let (ok, text) = run(&sandbox(&root), "npm test 2>&1", &root).await;
    assert!(ok, "{text}");
    assert!(text.contains("all passed"), "{text}");
    assert_eq!(
        std::fs::read_to_string(root.join("result.txt")).expect("written"),
        "passed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_builds_and_tests_a_rust_crate() {
    a_rust_crate_builds_and_tests(bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_builds_and_tests_a_rust_crate() {
    a_rust_crate_builds_and_tests(landlock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_tests_a_python_package() {
    a_python_package_tests(bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_tests_a_python_package() {
    a_python_package_tests(landlock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_tests_an_npm_package() {
    an_npm_package_tests(bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_tests_an_npm_package() {
    an_npm_package_tests(landlock).await;
}

/// Git works on the project's repository inside the sandbox: status, a commit and the log,
/// with its hooks and configuration protected (placeholders stand at the missing ones
/// while the command runs, `.git/commondir` among them).
async fn git_commits_in_the_project(sandbox: fn(&Path) -> Sandbox) {
    let (_dir, root) = project(&[("src/main.c", "int main(void) { return 0; }\n")]);
    larik_testkit::git::git(&root, &["init", "-q", "-b", "main"]);
    let (ok, text) = run(
        &sandbox(&root),
        "git status --short && git add -A && \
         git -c user.name=T -c user.email=t@example.com commit -q -m start && git log --oneline",
        &root,
    )
    .await;
    assert!(ok, "{text}");
    assert!(text.contains("start"), "{text}");
    // Nothing is left behind: git still works outside.
    assert_eq!(
        larik_testkit::git::git(&root, &["log", "--format=%s"]),
        "start"
    );
    assert!(!root.join(".git/commondir").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bubblewrap_lets_git_commit_in_the_project() {
    git_commits_in_the_project(bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn landlock_lets_git_commit_in_the_project() {
    git_commits_in_the_project(landlock).await;
}
