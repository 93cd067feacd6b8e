//! The `git` command line in tests: real repositories made and inspected the way a user's
//! would be, with a fixed identity so commits never depend on the machine's configuration.

use std::path::Path;

/// Runs `git args` in `dir` as `Test <test@example.com>`; its output, trimmed. Panics
/// with git's error when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}
