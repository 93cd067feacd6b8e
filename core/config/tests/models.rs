//! Model and spending settings on real files: per-model windows, limits and prices count
//! from personal files only (a shared file's are ignored with a notice), aliases and roles
//! merge from every layer, every file may lower the budget but none may raise it, automatic
//! compaction can be tuned or turned off, and wrong values are skipped with a notice.

use larik_config::{ModelEntrySettings, PriceSettings};

#[path = "support/world.rs"]
mod world;

use world::World;

#[test]
fn personal_model_settings_aliases_roles_and_budget() {
    let world = World::new();
    world.user(
        r#"{
        "models": {
            "ollama/qwen3-coder:30b": {"context_window": 65536, "max_output_tokens": 8192},
            "openrouter/qwen/qwen3-coder": {"prices": {"input": 0.2, "output": 0.8, "cache_read": 0.02}}
        },
        "aliases": {"local": "ollama/qwen3-coder:30b"},
        "roles": {"default": "sonnet", "explore": "local", "boss": "opus"},
        "max_budget_usd": 5,
        "auto_compact_share": 0.7
    }"#,
    );
    let loaded = world.load();
    let models = &loaded.settings.models;
    assert_eq!(
        models.models["ollama/qwen3-coder:30b"],
        ModelEntrySettings {
            context_window: Some(65_536),
            max_output_tokens: Some(8_192),
            prices: None,
        }
    );
    assert_eq!(
        models.models["openrouter/qwen/qwen3-coder"].prices,
        Some(PriceSettings {
            input: 0.2,
            output: 0.8,
            cache_read: 0.02,
            cache_write: 0.0,
        })
    );
    assert_eq!(models.aliases["local"], "ollama/qwen3-coder:30b");
    assert_eq!(models.roles.len(), 2);
    assert_eq!(models.roles["explore"], "local");
    assert_eq!(models.max_budget_usd, Some(5.0));
    assert_eq!(models.auto_compact_share, Some(Some(0.7)));
    assert_eq!(loaded.notices.len(), 1, "{:?}", loaded.notices);
    assert!(loaded.notices[0].message.contains("roles.boss"));
}

#[test]
fn a_shared_file_may_lower_the_budget_but_not_set_prices() {
    let world = World::new();
    world.user(r#"{"max_budget_usd": 5}"#);
    world.shared(
        r#"{
        "max_budget_usd": 2.5,
        "models": {"anthropic/claude-sonnet-4-5": {"prices": {"input": 0, "output": 0}}},
        "aliases": {"team": "gemini/gemini-2.5-flash"},
        "auto_compact_share": false
    }"#,
    );
    let loaded = world.load();
    let models = &loaded.settings.models;
    assert_eq!(models.max_budget_usd, Some(2.5));
    assert!(
        models.models.is_empty(),
        "free prices would defeat the budget"
    );
    assert_eq!(models.aliases["team"], "gemini/gemini-2.5-flash");
    assert_eq!(models.auto_compact_share, Some(None));
    assert!(
        loaded
            .notices
            .iter()
            .any(|notice| notice.message.contains("`models`")),
        "{:?}",
        loaded.notices
    );

    // A higher cap in a later file does not raise the lower one.
    let world = World::new();
    world.shared(r#"{"max_budget_usd": 1}"#);
    world.user(r#"{"max_budget_usd": 100}"#);
    assert_eq!(world.load().settings.models.max_budget_usd, Some(1.0));
}

#[test]
fn wrong_values_are_skipped_with_a_notice() {
    let world = World::new();
    world.user(
        r#"{
        "models": {
            "no-slash": {"context_window": 10},
            "ollama/a": {"context_window": -1},
            "ollama/b": {"prices": {"input": "cheap"}},
            "ollama/c": {"context_window": 4096, "colour": "blue"}
        },
        "max_budget_usd": 0,
        "auto_compact_share": 1.5,
        "aliases": {"x": 3}
    }"#,
    );
    let loaded = world.load();
    let models = &loaded.settings.models;
    assert_eq!(models.models.keys().collect::<Vec<_>>(), ["ollama/c"]);
    assert_eq!(models.models["ollama/c"].context_window, Some(4096));
    assert_eq!(models.max_budget_usd, None);
    assert_eq!(models.auto_compact_share, None);
    assert!(models.aliases.is_empty());
    let messages: Vec<&str> = loaded
        .notices
        .iter()
        .map(|notice| notice.message.as_str())
        .collect();
    for key in [
        "models.no-slash",
        "models.ollama/a.context_window",
        "models.ollama/b.prices.input",
        "models.ollama/c.colour",
        "max_budget_usd",
        "auto_compact_share",
        "aliases.x",
    ] {
        assert!(
            messages
                .iter()
                .any(|message| message.contains(&format!("`{key}`"))),
            "{key}: {messages:#?}"
        );
    }
}

#[test]
fn roles_written_as_objects_set_subagent_limits_from_any_file() {
    let world = World::new();
    world.user(
        r#"{"roles": {"worker": {"model": "sonnet", "max_turns": 30, "max_budget_usd": 0.5}},
            "subagents": {"max_depth": 2}}"#,
    );
    world.shared(
        r#"{"roles": {"explore": {"context": "minimal", "isolation": "worktree", "max_turns": 0,
            "colour": "red"}},
            "subagents": {"max_depth": 3}}"#,
    );
    let loaded = world.load();
    let models = &loaded.settings.models;
    assert_eq!(models.roles["worker"], "sonnet");
    let worker = &models.role_settings["worker"];
    assert_eq!(worker.max_turns, Some(30));
    assert_eq!(worker.max_budget_usd, Some(0.5));
    let explore = &models.role_settings["explore"];
    assert!(explore.minimal_context);
    assert_eq!(explore.isolation.as_deref(), Some("worktree"));
    assert_eq!(explore.max_turns, None, "0 turns is not a cap");
    let messages: Vec<&str> = loaded
        .notices
        .iter()
        .map(|notice| notice.message.as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("roles.explore.max_turns")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("roles.explore.colour")),
        "{messages:?}"
    );
    // Deeper nesting loosens: a shared file may not ask for it.
    assert_eq!(loaded.settings.subagents_max_depth, Some(2));
    assert!(
        messages.iter().any(|m| m.contains("subagents.max_depth")),
        "{messages:?}"
    );
}
