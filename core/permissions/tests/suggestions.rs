//! "Always allow" suggestions for shell commands: which form each command gets, and that
//! every suggestion parses back and allows exactly the command it was made for.

use std::path::Path;

use larik_permissions::{Decision, PermissionPolicy, PermissionQuery, Rule, RuleSet, ToolCategory};
use larik_protocol::{PermissionDecision, PermissionMode};

fn decide(policy: &PermissionPolicy, command: &str) -> Decision {
    policy.decide(&PermissionQuery {
        tool: "bash",
        category: ToolCategory::Execute,
        read_only: false,
        path: None,
        command: Some(command),
        domain: None,
        cwd: Path::new("/work/proj"),
        sandboxed: false,
    })
}

fn fresh() -> PermissionPolicy {
    PermissionPolicy::new(PermissionMode::Default, RuleSet::default(), None)
}

fn suggestion(policy: &PermissionPolicy, command: &str) -> String {
    match decide(policy, command) {
        Decision::Ask { rule_suggestion } => rule_suggestion,
        other => panic!("{command:?} should ask, got {other:?}"),
    }
}

/// Checks the suggestion for `command`, that it parses to itself, and that remembering it
/// allows `command` and nothing in `still_asks`.
fn check(command: &str, expected: &str, still_asks: &[&str]) {
    let mut policy = fresh();
    let suggested = suggestion(&policy, command);
    assert_eq!(suggested, expected, "suggestion for {command:?}");
    let rule = Rule::parse(&suggested).unwrap_or_else(|err| panic!("{suggested}: {err}"));
    assert_eq!(rule.to_string(), suggested, "display round trip");
    policy
        .remember(PermissionDecision::AllowAlways, &suggested)
        .unwrap_or_else(|err| panic!("{suggested}: {err}"));
    assert_eq!(decide(&policy, command), Decision::Allow, "{suggested}");
    for other in still_asks {
        assert!(
            matches!(decide(&policy, other), Decision::Ask { .. }),
            "{suggested} should not allow {other:?}"
        );
    }
}

#[test]
fn chained_commands_suggest_the_exact_command() {
    check(
        "cd x && npm test",
        "Bash(cd x && npm test)",
        &[
            "npm test",
            "cd x",
            "cd x && npm test && rm -rf /",
            "cd y && npm test",
        ],
    );
    check(
        "git status; curl x | sh",
        "Bash(git status; curl x | sh)",
        &["curl x | sh"],
    );
    check(
        "make\nmake install",
        "Bash(make\nmake install)",
        &["make install"],
    );
    check(
        "(cd sub && make) | tee log",
        "Bash((cd sub && make) | tee log)",
        &["tee log"],
    );
    // A remembered rejection of a chained command refuses it next time.
    let mut policy = fresh();
    let suggested = suggestion(&policy, "cd x && npm test");
    policy
        .remember(PermissionDecision::RejectAlways, &suggested)
        .expect("reject always");
    assert!(matches!(
        decide(&policy, "cd x && npm test"),
        Decision::Deny { .. }
    ));
    assert!(matches!(decide(&policy, "npm test"), Decision::Ask { .. }));
}

#[test]
fn risky_programs_suggest_the_exact_command() {
    let exact = [
        "rm -rf build",
        "/bin/rm -rf build",
        "\"rm\" x",
        "FOO=1 rm x",
        "sudo make install",
        "chmod -R 777 .",
        "mv a b",
        "curl -fsSL https://example.invalid/install.sh",
        "git push origin main",
        "git push",
        "git reset --hard HEAD~1",
        "git clean -fdx",
        "git checkout -- src",
        "git -C sub status",
        "npm publish",
        "cargo publish --dry-run",
        "cargo +nightly publish",
        "docker run --rm alpine",
        "bash -c 'echo hi'",
        "python3 script.py",
        "python3.12 -m http.server",
        "node index.js",
        "env FOO=1 make",
        "xargs rm",
        "find . -name '*.o' -delete",
        "mkfs.ext4 /dev/sdz",
        "kill -9 1234",
        "timeout 5 rm x",
    ];
    for command in exact {
        check(command, &format!("Bash({command})"), &[]);
    }
    check("\\rm x", "Bash(\\\\rm x)", &["\\rm y"]);
    check(
        "find . -type f -exec rm {} \\;",
        "Bash(find . -type f -exec rm {} \\\\;)",
        &[],
    );
    check(
        "rm -rf build",
        "Bash(rm -rf build)",
        &["rm -rf /", "rm -rf build2"],
    );
}

#[test]
fn plain_commands_suggest_a_prefix() {
    check(
        "git status --short",
        "Bash(git status:*)",
        &[
            "git statusx",
            "git status > notes.txt",
            "git status && rm x",
        ],
    );
    check("ls", "Bash(ls:*)", &["lsof"]);
    check("cargo test -p x", "Bash(cargo test:*)", &["cargo publish"]);
    check("git log --oneline", "Bash(git log:*)", &["git push"]);
    check("find . -name x", "Bash(find .:*)", &[]);
    check("FOO=1 cargo build", "Bash(FOO=1 cargo:*)", &[]);
    check("ls > /dev/null", "Bash(ls:*)", &[]);
    check("ls 2> /dev/null", "Bash(ls:*)", &[]);
    check("npm test", "Bash(npm test:*)", &["npm publish"]);
    assert_eq!(suggestion(&fresh(), ""), "Bash");
    assert_eq!(suggestion(&fresh(), " ; "), "Bash");
}

#[test]
fn suggestions_with_side_channels_are_exact() {
    check("echo $(whoami)", "Bash(echo $(whoami))", &["echo $(id)"]);
    check(
        "git log > out.txt",
        "Bash(git log > out.txt)",
        &["git log > x"],
    );
    check("diff <(ls a) <(ls b)", "Bash(diff <(ls a) <(ls b))", &[]);
}

#[test]
fn parentheses_and_backslashes_in_commands_round_trip() {
    check("echo \"(x)\"", "Bash(echo \"(x)\":*)", &["echo \"(y)\""]);
    check("echo \"(\"", "Bash(echo \"\\(\":*)", &[]);
    check("echo )", "Bash(echo \\):*)", &[]);
    check("rm \"a)b\"", "Bash(rm \"a\\)b\")", &["rm \"a)c\""]);
    check(
        "find . \\( -name a -o -name b \\) -delete",
        "Bash(find . \\\\\\( -name a -o -name b \\\\\\) -delete)",
        &["find . ( -name a -o -name b ) -delete"],
    );
    check("rm a\\ b", "Bash(rm a\\\\ b)", &["rm a b"]);
    check("cd x && echo \\", "Bash(cd x && echo \\\\)", &[]);
    // The escaped space would be trimmed off a rule, so the prefix stops before it.
    check("echo \\ ", "Bash(echo:*)", &[]);
    check("rm x:*", "Bash(rm x:\\*)", &["rm x y"]);
    check("mv a:*", "Bash(mv a:\\*)", &["mv a b"]);
}

#[test]
fn many_commands_round_trip() {
    let commands = [
        "echo ((a) (b))",
        "echo '((('",
        "printf '%s\\n' \"$(date)\"",
        "a | b || c && d; e & f",
        "echo \\\\(",
        "x=$(( 1 + 2 )) && echo $x",
        "cat <<EOF\n(hi\nEOF",
        "awk '{ print $1 }' file",
        "echo a:* && ls",
        "grep -E '^(a|b)$' x",
    ];
    for command in commands {
        let mut policy = fresh();
        let suggested = suggestion(&policy, command);
        let rule = Rule::parse(&suggested).unwrap_or_else(|err| panic!("{suggested}: {err}"));
        assert_eq!(rule.to_string(), suggested);
        policy
            .remember(PermissionDecision::AllowAlways, &suggested)
            .unwrap_or_else(|err| panic!("{suggested}: {err}"));
        assert_eq!(
            decide(&policy, command),
            Decision::Allow,
            "{command:?}: {suggested}"
        );
    }
}
