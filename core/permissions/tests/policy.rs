//! The decision table: every mode against every tool category, and the rule forms.

use std::path::{Path, PathBuf};

use larik_permissions::{Decision, PermissionPolicy, PermissionQuery, RuleSet, ToolCategory};
use larik_protocol::{PermissionDecision, PermissionMode};

const CWD: &str = "/work/proj";
const HOME: &str = "/home/me";

use PermissionMode::{AcceptEdits, BypassPermissions as Bypass, Default, Plan};

/// A tool call to decide; relative paths are taken from `CWD`.
#[derive(Debug, Clone, Copy)]
enum Call {
    Read(&'static str),
    Grep(Option<&'static str>),
    Edit(&'static str),
    Write(&'static str),
    MultiEdit(&'static str),
    Bash(&'static str),
    Tool(&'static str, bool),
    /// A network call of the named tool reaching the host (`None`: no host, `web_search`),
    /// as the agent describes it: `web_fetch` and `web_search` read-only, the browser's
    /// navigation not.
    Web(&'static str, Option<&'static str>),
}

fn absolute(path: &str) -> PathBuf {
    Path::new(CWD).join(path)
}

fn decide(policy: &PermissionPolicy, call: Call) -> Decision {
    let cwd = Path::new(CWD);
    let domain = match call {
        Call::Web(_, host) => host,
        _ => None,
    };
    let (tool, read_only, path, command) = match call {
        Call::Web(name, _) => (name, !name.starts_with("browser"), None, None),
        Call::Read(path) => ("read", true, Some(absolute(path)), None),
        Call::Grep(path) => ("grep", true, path.map(absolute), None),
        Call::Edit(path) => ("edit", false, Some(absolute(path)), None),
        Call::Write(path) => ("write", false, Some(absolute(path)), None),
        Call::MultiEdit(path) => ("multi_edit", false, Some(absolute(path)), None),
        Call::Bash(command) => ("bash", false, None, Some(command)),
        Call::Tool(name, read_only) => (name, read_only, None, None),
    };
    let category = match call {
        Call::Web(..) => ToolCategory::Network,
        _ => ToolCategory::of(tool),
    };
    policy.decide(&PermissionQuery {
        tool,
        category,
        read_only,
        path: path.as_deref(),
        command,
        domain,
        cwd,
        sandboxed: false,
    })
}

#[path = "support/common.rs"]
mod common;

use common::rules;

/// `expected` is `allow`, `ask <suggested rule>` or `deny <part of the reason>`.
fn check(mode: PermissionMode, rule_list: &[(&str, &str)], call: Call, expected: &str) {
    let policy = PermissionPolicy::new(mode, rules(rule_list), Some(PathBuf::from(HOME)));
    let decision = decide(&policy, call);
    let ok = match (&decision, expected.split_once(' ')) {
        (Decision::Allow, None) => expected == "allow",
        (Decision::Ask { rule_suggestion }, Some(("ask", rule))) => rule_suggestion == rule,
        (Decision::Deny { reason }, Some(("deny", part))) => reason.contains(part),
        _ => false,
    };
    assert!(
        ok,
        "{mode} {rule_list:?} {call:?}: expected `{expected}`, got {decision:?}"
    );
}

const NONE: &[(&str, &str)] = &[];

#[test]
fn default_mode() {
    check(Default, NONE, Call::Read("src/lib.rs"), "allow");
    check(Default, NONE, Call::Grep(None), "allow");
    check(Default, NONE, Call::Grep(Some("src")), "allow");
    check(
        Default,
        NONE,
        Call::Read("/etc/passwd"),
        "ask Read(//etc/passwd)",
    );
    check(
        Default,
        NONE,
        Call::Read("../secret.txt"),
        "ask Read(//work/secret.txt)",
    );
    check(
        Default,
        NONE,
        Call::Edit("src/lib.rs"),
        "ask Edit(src/lib.rs)",
    );
    check(
        Default,
        NONE,
        Call::Write("Cargo.toml"),
        "ask Edit(./Cargo.toml)",
    );
    check(
        Default,
        NONE,
        Call::MultiEdit("/tmp/x.rs"),
        "ask Edit(//tmp/x.rs)",
    );
    check(
        Default,
        NONE,
        Call::Bash("git status --short"),
        "ask Bash(git status:*)",
    );
    check(Default, NONE, Call::Bash("ls"), "ask Bash(ls:*)");
    check(
        Default,
        NONE,
        Call::Tool("mcp__srv__do", false),
        "ask mcp__srv__do",
    );
    check(Default, NONE, Call::Tool("mcp__srv__list", true), "allow");
}

#[test]
fn accept_edits_mode() {
    check(AcceptEdits, NONE, Call::Edit("src/lib.rs"), "allow");
    check(AcceptEdits, NONE, Call::Write("new/file.txt"), "allow");
    check(AcceptEdits, NONE, Call::MultiEdit("src/a.rs"), "allow");
    check(AcceptEdits, NONE, Call::Edit("/tmp/x"), "ask Edit(//tmp/x)");
    check(
        AcceptEdits,
        NONE,
        Call::Edit("../other/x"),
        "ask Edit(//work/other/x)",
    );
    check(
        AcceptEdits,
        NONE,
        Call::Bash("mkdir x"),
        "ask Bash(mkdir x:*)",
    );
    check(AcceptEdits, NONE, Call::Read("a.txt"), "allow");
    check(
        AcceptEdits,
        NONE,
        Call::Read("/etc/hosts"),
        "ask Read(//etc/hosts)",
    );
    check(
        AcceptEdits,
        NONE,
        Call::Tool("mcp__srv__do", false),
        "ask mcp__srv__do",
    );
}

#[test]
fn plan_mode() {
    check(Plan, NONE, Call::Read("src/lib.rs"), "allow");
    check(Plan, NONE, Call::Grep(None), "allow");
    check(
        Plan,
        NONE,
        Call::Read("/etc/hosts"),
        "ask Read(//etc/hosts)",
    );
    check(
        Plan,
        NONE,
        Call::Edit("src/lib.rs"),
        "deny plan mode: Edit is not allowed while planning; present the plan instead",
    );
    check(Plan, NONE, Call::Bash("ls"), "deny plan mode: Bash");
    check(
        Plan,
        NONE,
        Call::Tool("mcp__srv__do", false),
        "deny plan mode",
    );
    check(Plan, NONE, Call::Tool("mcp__srv__list", true), "allow");
    // Plan means no changes: allow rules do not lift that.
    check(
        Plan,
        &[("allow", "Bash")],
        Call::Bash("ls"),
        "deny plan mode",
    );
    check(
        Plan,
        &[("allow", "Edit(src/**)")],
        Call::Edit("src/a.rs"),
        "deny plan mode",
    );
    // Rules still apply to read-only calls.
    check(
        Plan,
        &[("allow", "Read(//etc/**)")],
        Call::Read("/etc/hosts"),
        "allow",
    );
    check(
        Plan,
        &[("deny", "Read(*.env)")],
        Call::Read(".env"),
        "deny `Read(*.env)`",
    );
    check(
        Plan,
        &[("ask", "Read(src/**)")],
        Call::Read("src/a.rs"),
        "ask Read(src/a.rs)",
    );
}

#[test]
fn bypass_mode() {
    check(Bypass, NONE, Call::Edit("/etc/hosts"), "allow");
    check(Bypass, NONE, Call::Bash("rm -rf build"), "allow");
    check(Bypass, NONE, Call::Tool("mcp__srv__do", false), "allow");
    check(
        Bypass,
        &[("ask", "Bash(git push:*)")],
        Call::Bash("git push"),
        "allow",
    );
    check(
        Bypass,
        &[("deny", "Bash(rm:*)")],
        Call::Bash("rm -rf build"),
        "deny `Bash(rm:*)`",
    );
    check(
        Bypass,
        &[("deny", "Edit(//etc/**)")],
        Call::Edit("/etc/hosts"),
        "deny `Edit(//etc/**)`",
    );
}

#[test]
fn bash_prefix_and_exact_rules() {
    let status = &[("allow", "Bash(git status:*)")];
    check(Default, status, Call::Bash("git status"), "allow");
    check(Default, status, Call::Bash("git status --short"), "allow");
    check(Default, status, Call::Bash("  git   status  -s "), "allow");
    check(
        Default,
        status,
        Call::Bash("git statusx"),
        "ask Bash(git statusx:*)",
    );
    check(
        Default,
        status,
        Call::Bash("git log"),
        "ask Bash(git log:*)",
    );
    check(Default, status, Call::Bash(""), "ask Bash");

    let exact = &[("allow", "Bash(npm run test)")];
    check(Default, exact, Call::Bash("npm run test"), "allow");
    check(
        Default,
        exact,
        Call::Bash("npm run test --watch"),
        "ask Bash(npm run:*)",
    );
    check(Default, exact, Call::Bash("npm run"), "ask Bash(npm run:*)");

    check(
        Default,
        &[("allow", "Bash")],
        Call::Bash("anything $(at) all > x"),
        "allow",
    );
}

#[test]
fn chained_commands_need_every_part_allowed() {
    let status = &[("allow", "Bash(git status:*)")];
    check(
        Default,
        status,
        Call::Bash("git status && rm -rf /"),
        "ask Bash(git status && rm -rf /)",
    );
    check(
        Default,
        status,
        Call::Bash("git status; curl x | sh"),
        "ask Bash(git status; curl x | sh)",
    );
    check(
        Default,
        status,
        Call::Bash("git status || reboot"),
        "ask Bash(git status || reboot)",
    );
    check(
        Default,
        status,
        Call::Bash("git status & reboot"),
        "ask Bash(git status & reboot)",
    );
    check(
        Default,
        status,
        Call::Bash("git status\nrm x"),
        "ask Bash(git status\nrm x)",
    );
    check(
        Default,
        status,
        Call::Bash("git status $(rm -rf /)"),
        "ask Bash(git status $(rm -rf /))",
    );
    check(
        Default,
        status,
        Call::Bash("git status `rm -rf /`"),
        "ask Bash(git status `rm -rf /`)",
    );
    check(
        Default,
        status,
        Call::Bash("git status > notes.txt"),
        "ask Bash(git status > notes.txt)",
    );
    check(
        Default,
        status,
        Call::Bash("git status >> ~/.bashrc"),
        "ask Bash(git status >> ~/.bashrc)",
    );
    check(
        Default,
        status,
        Call::Bash("git status > /dev/null 2>&1"),
        "allow",
    );
    check(
        Default,
        status,
        Call::Bash("git status 'a && b; c'"),
        "allow",
    );
    check(Default, status, Call::Bash("git status \"a | b\""), "allow");

    let two = &[("allow", "Bash(git status:*)"), ("allow", "Bash(wc:*)")];
    check(Default, two, Call::Bash("git status && wc -l x"), "allow");
    check(Default, two, Call::Bash("git status | wc -l"), "allow");
    check(
        Default,
        two,
        Call::Bash("git status | wc -l | sh"),
        "ask Bash(git status | wc -l | sh)",
    );

    // Any part matching a deny rule denies the whole, even inside a substitution.
    let deny = &[("allow", "Bash"), ("deny", "Bash(rm:*)")];
    check(
        Default,
        deny,
        Call::Bash("ls && rm -rf /"),
        "deny `Bash(rm:*)`",
    );
    check(
        Default,
        deny,
        Call::Bash("echo $(rm -rf x)"),
        "deny `Bash(rm:*)`",
    );
    check(
        Default,
        deny,
        Call::Bash("(cd x; rm y)"),
        "deny `Bash(rm:*)`",
    );
    check(Default, deny, Call::Bash("ls -la"), "allow");
    check(Default, deny, Call::Bash("echo 'rm x'"), "allow");
}

#[test]
fn path_rules() {
    let src = &[("allow", "Edit(src/**)")];
    check(Default, src, Call::Edit("src/a/b.rs"), "allow");
    check(Default, src, Call::Write("src/new.rs"), "allow");
    check(Default, src, Call::MultiEdit("src/lib.rs"), "allow");
    check(
        Default,
        src,
        Call::Edit("tests/x.rs"),
        "ask Edit(tests/x.rs)",
    );
    check(
        Default,
        src,
        Call::Edit("lib/src/x.rs"),
        "ask Edit(lib/src/x.rs)",
    );
    check(
        Default,
        src,
        Call::Edit("/other/src/a.rs"),
        "ask Edit(//other/src/a.rs)",
    );
    check(
        Default,
        src,
        Call::Edit("src/../../etc/passwd"),
        "ask Edit(//work/etc/passwd)",
    );

    // No `/`: any depth. A directory name covers what is below it.
    let md = &[("allow", "Edit(*.md)"), ("allow", "Edit(generated)")];
    check(Default, md, Call::Edit("README.md"), "allow");
    check(Default, md, Call::Edit("docs/deep/a.md"), "allow");
    check(Default, md, Call::Edit("a.rs"), "ask Edit(./a.rs)");
    check(Default, md, Call::Edit("x/generated/y/z.rs"), "allow");
    check(
        Default,
        md,
        Call::Edit("x/generated.rs"),
        "ask Edit(x/generated.rs)",
    );

    // `./` and a leading `/` anchor at the cwd; `*` does not cross directories.
    let docs = &[("deny", "Read(./docs/*.md)"), ("deny", "Read(/top.txt)")];
    check(
        Default,
        docs,
        Call::Read("docs/a.md"),
        "deny `Read(./docs/*.md)`",
    );
    check(
        Default,
        docs,
        Call::Grep(Some("docs/a.md")),
        "deny `Read(./docs/*.md)`",
    );
    check(Default, docs, Call::Read("docs/sub/a.md"), "allow");
    check(
        Default,
        docs,
        Call::Read("top.txt"),
        "deny `Read(/top.txt)`",
    );
    check(Default, docs, Call::Read("sub/top.txt"), "allow");

    // Home and absolute patterns.
    let outside = &[("allow", "Read(~/notes/**)"), ("allow", "Read(//etc/**)")];
    check(
        Default,
        outside,
        Call::Read("/home/me/notes/a/b.txt"),
        "allow",
    );
    check(
        Default,
        outside,
        Call::Read("/home/me/secret"),
        "ask Read(//home/me/secret)",
    );
    check(Default, outside, Call::Read("/etc/hosts"), "allow");
    check(
        Default,
        outside,
        Call::Read("/var/etc/hosts"),
        "ask Read(//var/etc/hosts)",
    );
    let no_home = PermissionPolicy::new(Default, rules(outside), None);
    assert!(matches!(
        decide(&no_home, Call::Read("/home/me/notes/a.txt")),
        Decision::Ask { .. }
    ));

    // A rule for another tool name only covers that tool.
    let write = &[("allow", "Write(src/**)")];
    check(Default, write, Call::Write("src/a.rs"), "allow");
    check(Default, write, Call::Edit("src/a.rs"), "ask Edit(src/a.rs)");
    // Suggestions escape glob characters so they name exactly one file.
    check(
        Default,
        NONE,
        Call::Edit("src/[id]/*.rs"),
        r"ask Edit(src/\[id\]/\*.rs)",
    );
}

#[test]
fn suggested_rules_allow_the_call_once_remembered() {
    let cases = [
        Call::Edit("src/[id]/page (1).rs"),
        Call::Edit("Cargo.toml"),
        Call::Edit("/tmp/out.txt"),
        Call::Read("/etc/hosts"),
        Call::Bash("cargo test -p x"),
        Call::Tool("mcp__srv__do", false),
        Call::Web("web_fetch", Some("docs.rs")),
        Call::Web("web_search", None),
        Call::Web("browser_navigate", Some("localhost")),
        Call::Web("browser_back", None),
    ];
    for call in cases {
        let mut policy = PermissionPolicy::new(Default, RuleSet::default(), None);
        let Decision::Ask { rule_suggestion } = decide(&policy, call) else {
            panic!("{call:?} should ask");
        };
        policy
            .remember(PermissionDecision::AllowAlways, &rule_suggestion)
            .unwrap_or_else(|err| panic!("{rule_suggestion}: {err}"));
        assert_eq!(decide(&policy, call), Decision::Allow, "{rule_suggestion}");
    }
}

/// Network calls ask in every mode but `bypassPermissions`, read-only or not (plan mode
/// lets the read-only ones ask and refuses the others); `domain:` rules match the host
/// exactly or, with `*.`, the hosts below it, a trailing dot aside.
#[test]
fn network_calls_ask_unless_a_domain_rule_allows_them() {
    let fetch = |host| Call::Web("web_fetch", Some(host));
    for mode in [Default, AcceptEdits, Plan] {
        check(mode, NONE, fetch("docs.rs"), "ask WebFetch(domain:docs.rs)");
        check(mode, NONE, Call::Web("web_search", None), "ask WebSearch");
    }
    for mode in [Default, AcceptEdits] {
        check(
            mode,
            NONE,
            Call::Web("browser_navigate", Some("localhost")),
            "ask browser_navigate(domain:localhost)",
        );
    }
    check(
        Plan,
        NONE,
        Call::Web("browser_navigate", Some("localhost")),
        "deny plan mode",
    );
    check(
        Default,
        &[("deny", "WebFetch(domain:evil.test.)")],
        fetch("evil.test"),
        "deny `WebFetch(domain:evil.test)`",
    );
    check(Bypass, NONE, fetch("docs.rs"), "allow");

    let exact = &[("allow", "WebFetch(domain:Docs.RS)")];
    check(Default, exact, fetch("docs.rs"), "allow");
    check(
        Default,
        exact,
        fetch("api.docs.rs"),
        "ask WebFetch(domain:api.docs.rs)",
    );
    check(
        Default,
        exact,
        fetch("xdocs.rs"),
        "ask WebFetch(domain:xdocs.rs)",
    );

    let below = &[("allow", "WebFetch(domain:*.example.com)")];
    check(Default, below, fetch("a.b.example.com"), "allow");
    check(
        Default,
        below,
        fetch("example.com"),
        "ask WebFetch(domain:example.com)",
    );
    check(
        Default,
        below,
        fetch("badexample.com"),
        "ask WebFetch(domain:badexample.com)",
    );

    let deny = &[
        ("allow", "WebFetch"),
        ("deny", "WebFetch(domain:evil.test)"),
    ];
    check(Default, deny, fetch("docs.rs"), "allow");
    check(
        Default,
        deny,
        fetch("evil.test"),
        "deny `WebFetch(domain:evil.test)`",
    );
    check(
        Default,
        &[("ask", "WebFetch(domain:docs.rs)"), ("allow", "WebFetch")],
        fetch("docs.rs"),
        "ask WebFetch(domain:docs.rs)",
    );
    // A domain rule names hosts of its own tool only.
    check(
        Default,
        &[("allow", "WebFetch(domain:localhost)")],
        Call::Web("browser_navigate", Some("localhost")),
        "ask browser_navigate(domain:localhost)",
    );
}

#[test]
fn deny_beats_allow_and_ask_beats_allow() {
    let edit = &[("allow", "Edit"), ("deny", "Edit(src/secret.rs)")];
    check(
        AcceptEdits,
        edit,
        Call::Edit("src/secret.rs"),
        "deny `Edit(src/secret.rs)`",
    );
    check(AcceptEdits, edit, Call::Edit("src/open.rs"), "allow");
    let bash = &[("allow", "Bash"), ("deny", "Bash")];
    check(Default, bash, Call::Bash("ls"), "deny `Bash`");
    let ask = &[("allow", "Bash"), ("ask", "Bash(git push:*)")];
    check(
        Default,
        ask,
        Call::Bash("git push origin"),
        "ask Bash(git push origin)",
    );
    check(
        Default,
        ask,
        Call::Bash("git fetch && git push"),
        "ask Bash(git fetch && git push)",
    );
    check(Default, ask, Call::Bash("git fetch"), "allow");
    let read = &[("ask", "Read(*.env)"), ("allow", "Read")];
    check(
        Default,
        read,
        Call::Read("config/.env"),
        "ask Read(config/.env)",
    );
    check(
        Default,
        &[("deny", "Read")],
        Call::Grep(None),
        "deny `Read`",
    );
}

#[test]
fn tool_names_are_case_insensitive_and_ignore_underscores() {
    check(
        Default,
        &[("allow", "multi_edit")],
        Call::MultiEdit("a.rs"),
        "allow",
    );
    check(
        Default,
        &[("allow", "MultiEdit")],
        Call::MultiEdit("a.rs"),
        "allow",
    );
    check(
        Default,
        &[("allow", "MULTIEDIT")],
        Call::Edit("a.rs"),
        "ask Edit(./a.rs)",
    );
    check(
        Default,
        &[("allow", "BASH(ls:*)")],
        Call::Bash("ls -la"),
        "allow",
    );
    check(Default, &[("allow", "edit")], Call::Write("x"), "allow");
    check(
        Default,
        &[("allow", "mcp__srv__do")],
        Call::Tool("mcp__srv__do", false),
        "allow",
    );
    check(
        Default,
        &[("allow", "mcp__srv__do")],
        Call::Tool("mcp__srv__other", false),
        "ask mcp__srv__other",
    );
    // A server's name alone, or with `__*`, covers each of its tools and no other server's.
    for rule in ["mcp__srv", "mcp__srv__*"] {
        check(
            Default,
            &[("allow", rule)],
            Call::Tool("mcp__srv__other", false),
            "allow",
        );
        check(
            Default,
            &[("deny", rule)],
            Call::Tool("mcp__srv__list", true),
            "deny denied by the rule `mcp__srv",
        );
        check(
            Default,
            &[("allow", rule)],
            Call::Tool("mcp__srv2__do", false),
            "ask mcp__srv2__do",
        );
    }
    check(
        Default,
        &[("allow", "mcp__s__*")],
        Call::Tool("mcp__s__", false),
        "ask mcp__s__",
    );
    // Server names compare as tool names do: case, `_`, `-` and `.` aside.
    check(
        Default,
        &[("deny", "mcp__My-Server")],
        Call::Tool("mcp__my_server__drop", false),
        "deny denied by the rule `mcp__My-Server",
    );
    check(
        Default,
        &[("allow", "mcp__my.server")],
        Call::Tool("mcp__my_server__drop", false),
        "allow",
    );
    // Kept for later: fetch calls carry no URL yet, so a domain rule allows nothing.
    check(
        Default,
        &[("allow", "WebFetch(domain:example.com)")],
        Call::Tool("web_fetch", false),
        "ask WebFetch",
    );
    check(
        Default,
        &[("allow", "WebFetch")],
        Call::Tool("web_fetch", false),
        "allow",
    );
}

#[test]
fn remember_adds_session_rules() {
    let mut policy = PermissionPolicy::new(Default, RuleSet::default(), None);
    assert_eq!(
        decide(&policy, Call::Bash("git status -s")),
        Decision::Ask {
            rule_suggestion: "Bash(git status:*)".into()
        }
    );
    policy
        .remember(PermissionDecision::AllowOnce, "Bash(git status:*)")
        .expect("once");
    policy
        .remember(PermissionDecision::RejectOnce, "Bash")
        .expect("once");
    policy
        .remember(PermissionDecision::Cancelled, "Bash")
        .expect("cancelled");
    assert_eq!(policy.rules(), &RuleSet::default());

    policy
        .remember(PermissionDecision::AllowAlways, "Bash(git status:*)")
        .expect("always");
    policy
        .remember(PermissionDecision::AllowAlways, "bash(git status:*)")
        .expect("again");
    assert_eq!(policy.rules().allow.len(), 1, "no duplicates");
    assert_eq!(decide(&policy, Call::Bash("git status")), Decision::Allow);

    policy
        .remember(PermissionDecision::RejectAlways, "Edit(src/**)")
        .expect("reject always");
    assert!(matches!(
        decide(&policy, Call::Edit("src/a.rs")),
        Decision::Deny { reason } if reason.contains("Edit(src/**)")
    ));
    assert!(
        policy
            .remember(PermissionDecision::AllowAlways, "Edit(")
            .is_err()
    );

    policy.set_mode(Plan);
    assert_eq!(policy.mode(), Plan);
    assert!(matches!(
        decide(&policy, Call::Bash("git status")),
        Decision::Deny { .. }
    ));
}

/// A command that runs inside the OS sandbox runs without asking in `default` and
/// `acceptEdits`; rules still apply first, and `plan` still refuses it.
#[test]
fn sandboxed_commands_run_without_asking_unless_a_rule_says_otherwise() {
    let sandboxed = |policy: &PermissionPolicy, command: &str| {
        policy.decide(&PermissionQuery {
            tool: "bash",
            category: ToolCategory::Execute,
            read_only: false,
            path: None,
            command: Some(command),
            domain: None,
            cwd: Path::new(CWD),
            sandboxed: true,
        })
    };
    for mode in [Default, AcceptEdits] {
        let policy = PermissionPolicy::new(mode, RuleSet::default(), None);
        assert_eq!(
            sandboxed(&policy, "cargo test"),
            Decision::Allow,
            "{mode:?}"
        );
    }
    let policy = PermissionPolicy::new(
        Default,
        rules(&[("deny", "Bash(rm:*)"), ("ask", "Bash(git push:*)")]),
        None,
    );
    assert!(matches!(
        sandboxed(&policy, "rm -rf build"),
        Decision::Deny { .. }
    ));
    assert!(matches!(
        sandboxed(&policy, "git push"),
        Decision::Ask { .. }
    ));
    let plan = PermissionPolicy::new(Plan, RuleSet::default(), None);
    assert!(matches!(
        sandboxed(&plan, "cargo test"),
        Decision::Deny { .. }
    ));
}
