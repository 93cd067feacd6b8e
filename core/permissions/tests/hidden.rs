//! Which paths deny rules hide from searches: `PermissionPolicy::hides_from_reads`.

use std::path::{Path, PathBuf};

use larik_permissions::{PermissionPolicy, RuleSet};
use larik_protocol::PermissionMode;

#[path = "support/common.rs"]
mod common;

const CWD: &str = "/work/proj";
const HOME: &str = "/home/me";

/// A policy in `mode` whose rules are `(kind, rule)` pairs, with `HOME` as home.
fn policy(mode: PermissionMode, list: &[(&str, &str)]) -> PermissionPolicy {
    PermissionPolicy::new(mode, common::rules(list), Some(PathBuf::from(HOME)))
}

fn deny(rule: &str) -> PermissionPolicy {
    policy(PermissionMode::Default, &[("deny", rule)])
}

/// Asserts which of `hidden` and `visible` (relative paths are taken from `CWD`) the
/// policy hides.
fn check(policy: &PermissionPolicy, hidden: &[&str], visible: &[&str]) {
    let cwd = Path::new(CWD);
    let deny: Vec<String> = policy
        .rules()
        .deny
        .iter()
        .map(ToString::to_string)
        .collect();
    for path in hidden {
        assert!(
            policy.hides_from_reads(&cwd.join(path), cwd),
            "{deny:?}: `{path}` should be hidden"
        );
    }
    for path in visible {
        assert!(
            !policy.hides_from_reads(&cwd.join(path), cwd),
            "{deny:?}: `{path}` should be visible"
        );
    }
}

#[test]
fn cwd_relative_rule_hides_the_directory_and_its_contents() {
    check(
        &deny("Read(secrets/**)"),
        &[
            "secrets",
            "secrets/key.txt",
            "secrets/deep/er/key.txt",
            "src/../secrets/key.txt",
            "/work/proj/secrets/a",
        ],
        &[
            ".",
            "secretsx",
            "secrets.txt",
            "src/secrets/key.txt",
            "src/secrets",
            "/other/secrets/key.txt",
        ],
    );
    // A trailing `/` means the same as `/**`.
    check(
        &deny("Read(secrets/)"),
        &["secrets", "secrets/key.txt", "src/secrets/key.txt"],
        &["secretsx", "src"],
    );
    // A bare name matches at any depth, and covers what lies below it.
    check(
        &deny("Read(.env)"),
        &[".env", "app/.env", "app/.env/inner"],
        &[".envrc", "app"],
    );
}

#[test]
fn absolute_rule_hides_outside_the_cwd() {
    check(
        &deny("Read(//etc/**)"),
        &["/etc", "/etc/passwd", "/etc/ssl/certs/ca.pem"],
        &["/", "/var/etc/hosts", "/etcetera/x", "etc/passwd"],
    );
}

#[test]
fn home_rule_hides_below_the_home_directory() {
    check(
        &deny("Read(~/.ssh/**)"),
        &["/home/me/.ssh", "/home/me/.ssh/id_ed25519"],
        &[
            "/home/me",
            "/home/me/.sshx/id",
            "/home/other/.ssh/id",
            ".ssh/id",
        ],
    );
    // Without a home directory the rule can match nothing.
    let mut rules = RuleSet::default();
    rules.add_deny("Read(~/.ssh/**)").expect("valid rule");
    let no_home = PermissionPolicy::new(PermissionMode::Default, rules, None);
    let cwd = Path::new(CWD);
    assert!(!no_home.hides_from_reads(Path::new("/home/me/.ssh/id_ed25519"), cwd));
}

#[test]
fn extension_rule_hides_matching_files_at_any_depth() {
    check(
        &deny("Read(*.pem)"),
        &["key.pem", "certs/server.pem", "a/b/c/d.pem"],
        &["key.pem.txt", "certs", "pem", "/etc/key.pem"],
    );
    // A pattern for some files in a directory does not hide the directory itself.
    check(
        &deny("Read(./docs/*.md)"),
        &["docs/a.md"],
        &["docs", "docs/sub/a.md", "docs/a.txt"],
    );
}

#[test]
fn bare_read_rule_hides_everything() {
    check(&deny("Read"), &[".", "src/lib.rs", "/etc/passwd", "/"], &[]);
    // `~` alone covers the home directory and all below it.
    check(
        &deny("Read(~)"),
        &["/home/me", "/home/me/notes.txt"],
        &["/home", "src/lib.rs"],
    );
}

#[test]
fn rules_for_other_tools_hide_nothing() {
    for rule in [
        "Edit(secrets/**)",
        "Edit",
        "Write(secrets/**)",
        "Bash(cat:*)",
        "Bash",
    ] {
        check(&deny(rule), &[], &["secrets", "secrets/key.txt", "a.pem"]);
    }
}

#[test]
fn only_deny_rules_hide_not_ask_rules_allow_rules_or_the_mode() {
    let cwd = Path::new(CWD);
    let secret = cwd.join("secrets/key.txt");
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
    ] {
        let not_denied = policy(
            mode,
            &[("ask", "Read(secrets/**)"), ("allow", "Read(*.txt)")],
        );
        assert!(!not_denied.hides_from_reads(&secret, cwd), "{mode}");
        // An allow rule does not lift a deny rule.
        let denied = policy(
            mode,
            &[("allow", "Read(secrets/**)"), ("deny", "Read(secrets/**)")],
        );
        assert!(denied.hides_from_reads(&secret, cwd), "{mode}");
    }
}

#[test]
fn rules_remembered_as_reject_always_hide_too() {
    let mut policy = policy(PermissionMode::Default, &[]);
    let cwd = Path::new(CWD);
    let key = cwd.join("private/key");
    assert!(!policy.hides_from_reads(&key, cwd));
    policy
        .remember(
            larik_protocol::PermissionDecision::RejectAlways,
            "Read(private/**)",
        )
        .expect("valid rule");
    assert!(policy.hides_from_reads(&key, cwd));
    assert!(policy.hides_from_reads(&cwd.join("private"), cwd));
}
