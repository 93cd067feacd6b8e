//! Rule text: parsing, canonical display, errors, and rule sets read from config.

use larik_permissions::{Rule, RuleError, RuleSet, ToolCategory, normalize_tool_name};

/// A bad rule, a check on the error variant, and part of the expected message.
type Case = (&'static str, fn(&RuleError) -> bool, &'static str);

#[test]
fn rules_parse_to_canonical_text() {
    let good = [
        ("Bash", "Bash"),
        ("bash(git status:*)", "Bash(git status:*)"),
        ("Bash(npm run test)", "Bash(npm run test)"),
        (" Edit( src/** ) ", "Edit(src/**)"),
        ("multi_edit", "MultiEdit"),
        ("Read(./docs/*.md)", "Read(./docs/*.md)"),
        ("Read(~/secret/**)", "Read(~/secret/**)"),
        ("Edit(//abs/path/**)", "Edit(//abs/path/**)"),
        (
            "WebFetch(domain:example.com)",
            "WebFetch(domain:example.com)",
        ),
        ("mcp__server__tool", "mcp__server__tool"),
        ("Bash(echo (hi))", "Bash(echo (hi))"),
        (r"Edit(a\(b)", r"Edit(a\(b)"),
    ];
    for (text, canonical) in good {
        let rule = Rule::parse(text).unwrap_or_else(|err| panic!("{text}: {err}"));
        assert_eq!(rule.to_string(), canonical);
        assert_eq!(Rule::parse(canonical).expect("canonical parses"), rule);
    }
    assert_eq!(
        Rule::parse("MultiEdit").expect("parse"),
        Rule::parse("multi_edit").expect("parse")
    );
    assert_ne!(
        Rule::parse("Bash(ls:*)").expect("parse"),
        Rule::parse("Bash(ls)").expect("parse")
    );
}

#[test]
fn bad_rules_are_clear_errors() {
    let cases: [Case; 10] = [
        (
            "",
            |e| matches!(e, RuleError::EmptyName { .. }),
            "no tool name",
        ),
        (
            "   ",
            |e| matches!(e, RuleError::EmptyName { .. }),
            "no tool name",
        ),
        (
            "(ls)",
            |e| matches!(e, RuleError::EmptyName { .. }),
            "no tool name",
        ),
        (
            "Bash(ls",
            |e| matches!(e, RuleError::Unbalanced { .. }),
            "unbalanced parentheses",
        ),
        (
            "Bash)",
            |e| matches!(e, RuleError::Unbalanced { .. }),
            "unbalanced",
        ),
        (
            "Bash(a)b",
            |e| matches!(e, RuleError::Unbalanced { .. }),
            "unbalanced",
        ),
        (
            "Bash(a))",
            |e| matches!(e, RuleError::Unbalanced { .. }),
            "unbalanced",
        ),
        (
            "Bash()",
            |e| matches!(e, RuleError::EmptySpecifier { .. }),
            "write `Bash`",
        ),
        (
            "Bash(:*)",
            |e| matches!(e, RuleError::EmptySpecifier { .. }),
            "empty specifier",
        ),
        (
            "Git Status",
            |e| matches!(e, RuleError::BadName { .. }),
            "not a tool name",
        ),
    ];
    for (text, is_expected, message) in cases {
        let err = Rule::parse(text).expect_err(text);
        assert!(is_expected(&err), "{text}: {err:?}");
        assert!(err.to_string().contains(message), "{text}: {err}");
    }
    let err = Rule::parse("Edit({a,b)").expect_err("bad glob");
    assert!(matches!(err, RuleError::BadPattern { .. }), "{err:?}");
    let mut set = RuleSet::default();
    assert!(set.add_deny("Bash(").is_err());
    assert!(set.deny.is_empty());
}

#[test]
fn rule_sets_read_from_config_text() {
    let set: RuleSet =
        serde_json::from_str(r#"{"allow": ["Bash(ls:*)", "edit"], "deny": ["Read(*.env)"]}"#)
            .expect("parse rule set");
    assert_eq!(set.allow.len(), 2);
    assert!(set.ask.is_empty());
    assert_eq!(
        serde_json::to_value(&set).expect("encode")["allow"][1],
        "Edit"
    );
    let err = serde_json::from_str::<RuleSet>(r#"{"allow": ["Bash(ls"]}"#).expect_err("bad rule");
    assert!(err.to_string().contains("unbalanced"), "{err}");
    assert_eq!(ToolCategory::of("MultiEdit"), ToolCategory::Edit);
    assert_eq!(ToolCategory::of("glob"), ToolCategory::Read);
    assert_eq!(ToolCategory::of("Bash"), ToolCategory::Execute);
    assert_eq!(ToolCategory::of("mcp__x__y"), ToolCategory::Other);
}

#[test]
fn tool_names_normalise_for_matching_registry_names() {
    for (name, normal) in [
        ("MultiEdit", "multiedit"),
        ("multi_edit", "multiedit"),
        ("multi-edit", "multiedit"),
        ("GREP", "grep"),
        ("Grep", "grep"),
        ("grep", "grep"),
        ("Web_Fetch", "webfetch"),
        ("mcp__srv__do_it", "mcpsrvdoit"),
    ] {
        assert_eq!(normalize_tool_name(name), normal, "{name}");
    }
    // The same normalisation decides which rule names which tool.
    assert_eq!(
        Rule::parse("multi-edit").expect("parse"),
        Rule::parse("MultiEdit").expect("parse")
    );
    assert_eq!(ToolCategory::of("MULTI-EDIT"), ToolCategory::Edit);
    assert_ne!(normalize_tool_name("Grep"), normalize_tool_name("Glob"));
}

#[test]
fn bash_specifiers_take_nested_parentheses_and_escapes() {
    for (text, valid) in [
        ("Bash(echo ((a) (b)))", true),
        (r"Bash(echo \()", true),
        (r"Bash(echo \):*)", true),
        (r"Bash(echo \\)", true),
        (r"Bash(a\)", false),
        ("Bash(echo ((a))", false),
        ("Bash(echo (a)))", false),
        (r"Bash(\(\))", true),
    ] {
        let parsed = Rule::parse(text);
        assert_eq!(parsed.is_ok(), valid, "{text}: {parsed:?}");
        if let Ok(rule) = parsed {
            assert_eq!(rule.to_string(), text);
        }
    }
    // Escaped and plain spellings of the same rule are different text but both parse.
    assert!(Rule::parse(r"Bash(echo \(hi\))").is_ok());
}
