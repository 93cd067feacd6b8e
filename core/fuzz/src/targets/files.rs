//! Targets for what Larik reads from files: session files and permission rules (with the
//! shell commands they are checked against).

use std::path::Path;

use larik_permissions::{Decision, PermissionPolicy, PermissionQuery, Rule, RuleSet, ToolCategory};
use larik_protocol::{Message, PermissionMode};
use larik_session::SessionStore;

use super::text;
use crate::Target;

/// The file targets.
pub const TARGETS: &[Target] = &[
    Target {
        name: "session_jsonl",
        run: session_jsonl,
        tokens: &[
            "{\"id\":\"x\",\"parent_id\":null,\"time\":\"2026-12-03T11:04:24.409Z\",",
            "\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n",
            "\"type\":\"compaction\",\"summary\":\"s\"}\n",
            "\"type\":\"clear\"}\n",
            "\"type\":\"note\",\"text\":\"n\"}\n",
            "\"type\":\"meta\",\"meta\":{\"cwd\":\"/p\",\"provider\":\"anthropic\",\"model\":\"m\"}}\n",
            "{\"type\":\"tool_result\",\"call_id\":\"c\",\"content\":[],\"is_error\":true}",
            "{\"type\":\"tool_call\",\"id\":\"c\",\"name\":\"read\",\"input\":{}}",
            "\"parent_id\":\"m3\"",
            "\"fork_at\":",
        ],
    },
    Target {
        name: "permission_rule",
        run: permission_rule,
        tokens: &[
            "Bash(",
            "Read(",
            "Edit(",
            "Write(",
            "WebFetch(domain:",
            "mcp__",
            ":*)",
            " *)",
            ")",
            "~/",
            "//",
            "/**/",
            "**",
            "&&",
            "||",
            ";",
            "|",
            "&",
            "$(",
            "`",
            "<(",
            ">",
            ">>",
            "2>&1",
            "'",
            "\"",
            "\\\n",
            "<<EOF\n",
            "\n",
            "#",
            "(",
            "{ ",
            " }",
        ],
    },
];

/// A session file as found on disk: loading never fails on its lines, a loaded session
/// replays, and one resumed and appended to loses nothing it held.
fn session_jsonl(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        panic!("no temporary folder");
    };
    let folder = dir.path().join("sessions").join("-p");
    let path = folder.join("20261203-110424-cf2ea1.jsonl");
    if std::fs::create_dir_all(&folder)
        .and_then(|()| std::fs::write(&path, data))
        .is_err()
    {
        panic!("cannot write the session file");
    }
    let store = SessionStore::new(dir.path());
    let _ = store.summary(&path);
    let Ok(loaded) = store.load(&path) else {
        return;
    };
    let _ = loaded.replay();
    let _ = loaded.prompt_texts();
    let mut writer = match store.resume(&loaded) {
        Ok(writer) => writer,
        Err(error) => panic!("a loaded session could not be resumed: {error}"),
    };
    let next = Message::user_text("next");
    if let Err(error) = writer.append_message(&next) {
        panic!("appending to a resumed session failed: {error}");
    }
    drop(writer);
    let again = match store.load(&path) {
        Ok(again) => again,
        Err(error) => panic!("a resumed session no longer loads: {error}"),
    };
    assert_eq!(
        again.messages.split_last(),
        Some((&next, loaded.messages.as_slice())),
        "resuming lost or changed messages"
    );
}

/// A rule line, then a command, path or host it is checked against: parsing a rule
/// never panics, what it parses to reads back the same, and a rule both allowed and
/// denied never allows.
fn permission_rule(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let (rule_text, subject) = text.split_once('\n').unwrap_or((text, ""));
    let cwd = Path::new("/home/dev/proj");
    let home = Some(Path::new("/home/dev").to_path_buf());
    let queries = [
        query(
            "Bash",
            ToolCategory::Execute,
            None,
            Some(subject),
            None,
            cwd,
        ),
        query(
            "Read",
            ToolCategory::Read,
            Some(Path::new(subject)),
            None,
            None,
            cwd,
        ),
        query(
            "Edit",
            ToolCategory::Edit,
            Some(Path::new(subject)),
            None,
            None,
            cwd,
        ),
        query(
            "WebFetch",
            ToolCategory::Network,
            None,
            None,
            Some(subject),
            cwd,
        ),
        query(rule_text, ToolCategory::Other, None, None, None, cwd),
    ];
    // The command splitter meets the subject whatever the rule.
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
    ] {
        let policy = PermissionPolicy::new(mode, RuleSet::default(), home.clone());
        for query in &queries {
            let _ = policy.decide(query);
            let _ = larik_permissions::suggest_rule(query);
        }
    }
    let Ok(rule) = Rule::parse(rule_text) else {
        return;
    };
    let written = rule.to_string();
    match Rule::parse(&written) {
        Ok(again) => assert_eq!(again.to_string(), written, "a rule read back differs"),
        Err(error) => panic!(
            "the rule {rule_text:?} writes back as {written:?}, which does not parse: {error}"
        ),
    }
    let mut rules = RuleSet::default();
    let (Ok(()), Ok(())) = (rules.add_allow(rule_text), rules.add_deny(rule_text)) else {
        panic!("a rule that parses was refused by the rule set");
    };
    let policy = PermissionPolicy::new(PermissionMode::BypassPermissions, rules, home);
    for query in &queries {
        let decision = policy.decide(query);
        assert!(
            !matches!(decision, Decision::Allow) || !policy_denies_by_rule(&policy, query),
            "a call both allowed and denied by {rule_text:?} was allowed"
        );
    }
}

/// Whether a policy with only deny rules would deny `query`.
fn policy_denies_by_rule(policy: &PermissionPolicy, query: &PermissionQuery) -> bool {
    let mut deny_only = RuleSet::default();
    for rule in &policy.rules().deny {
        let _ = deny_only.add_deny(&rule.to_string());
    }
    let strict = PermissionPolicy::new(PermissionMode::BypassPermissions, deny_only, None);
    matches!(strict.decide(query), Decision::Deny { .. })
}

fn query<'a>(
    tool: &'a str,
    category: ToolCategory,
    path: Option<&'a Path>,
    command: Option<&'a str>,
    domain: Option<&'a str>,
    cwd: &'a Path,
) -> PermissionQuery<'a> {
    PermissionQuery {
        tool,
        category,
        read_only: category == ToolCategory::Read,
        path,
        command,
        domain,
        cwd,
        sandboxed: false,
    }
}
