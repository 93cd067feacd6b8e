//! Hook settings on real files: a personal file's `hooks` object counts as written; a shared
//! file's (`.claude/settings.json` among them) counts only while the user's approval matches
//! its exact value; every file's hooks add up in file order; a value that is not an object
//! is skipped with a notice; `disableAllHooks` from a personal file switches every hook off
//! or back on, from a shared file only shared files' hooks off; and `/config` lists each
//! hook event with whether it counts.

use larik_config::{
    HookLayer, LoadedConfig, SettingStatus, Trust, approve, approve_pending, describe,
};
use serde_json::{Value, json};

#[path = "support/world.rs"]
mod world;

use world::{CLAUDE, SHARED, World};

/// A `hooks` object running `command` before every `Bash` call.
fn bash_hook(command: &str) -> Value {
    json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command, "timeout": 30}]}]})
}

/// Each counted hook layer's file and whether it is personal.
fn layers(loaded: &LoadedConfig) -> Vec<(std::path::PathBuf, bool)> {
    loaded
        .settings
        .hooks
        .iter()
        .map(|layer| (layer.file.clone(), layer.personal))
        .collect()
}

#[test]
fn personal_hooks_count_as_written() {
    let world = World::new();
    let hooks = bash_hook("./scripts/check-command.sh");
    world.user(&json!({ "hooks": hooks }).to_string());
    let loaded = world.load();
    assert_eq!(loaded.notices, []);
    assert_eq!(loaded.pending_approvals, []);
    assert_eq!(
        loaded.settings.hooks,
        [HookLayer {
            file: world.config_dir.join("config.json"),
            personal: true,
            value: hooks,
        }]
    );
    assert!(!loaded.settings.disable_all_hooks);
    assert!(!loaded.settings.disable_shared_hooks);
}

#[test]
fn shared_claude_hooks_count_only_while_their_approved_value_is_unchanged() {
    let world = World::new();
    let claude = world.project.join(CLAUDE);
    let hooks = bash_hook("npm run lint");
    world.claude(&json!({ "hooks": hooks }).to_string());

    let loaded = world.load();
    assert_eq!(loaded.settings.hooks, []);
    assert_eq!(loaded.notices.len(), 1, "{:?}", loaded.notices);
    assert_eq!(loaded.notices[0].file, claude);
    let message = &loaded.notices[0].message;
    assert!(
        message.starts_with(
            "`hooks` ignored: a file shared with the repository cannot run commands as hooks"
        ),
        "{message}"
    );
    assert_eq!(loaded.pending_approvals.len(), 1);
    let pending = &loaded.pending_approvals[0];
    assert_eq!(pending.key, "hooks");
    assert_eq!(pending.approval_key(), ".claude/settings.json#hooks");
    assert_eq!(pending.value, hooks);
    assert!(!pending.stale);

    approve_pending(&world.config_dir, &world.project, pending).expect("approve");
    let approved = world.load();
    assert_eq!(approved.notices, [], "an approved setting says nothing");
    assert_eq!(approved.pending_approvals, []);
    assert_eq!(
        approved.settings.hooks,
        [HookLayer {
            file: claude.clone(),
            personal: false,
            value: hooks,
        }]
    );

    // A commit changes one character of the command.
    let changed = bash_hook("npm run lins");
    world.claude(&json!({ "hooks": changed }).to_string());
    let loaded = world.load();
    assert_eq!(
        loaded.settings.hooks,
        [],
        "the old approval does not cover the new value"
    );
    assert_eq!(loaded.notices.len(), 1, "{:?}", loaded.notices);
    assert!(
        loaded.notices[0]
            .message
            .starts_with("`hooks` ignored: its approval no longer matches"),
        "{}",
        loaded.notices[0]
    );
    assert_eq!(loaded.pending_approvals.len(), 1);
    let pending = &loaded.pending_approvals[0];
    assert_eq!(pending.key, "hooks");
    assert_eq!(pending.value, changed);
    assert!(pending.stale);
}

#[test]
fn every_files_hooks_accumulate_in_file_order() {
    let world = World::new();
    world.user(&json!({ "hooks": bash_hook("user-global") }).to_string());
    world.claude(&json!({ "hooks": bash_hook("from-claude") }).to_string());
    world.shared(&json!({ "hooks": bash_hook("from-larik") }).to_string());
    world.personal_project(&json!({ "hooks": bash_hook("user-project") }).to_string());
    for (file, command) in [(CLAUDE, "from-claude"), (SHARED, "from-larik")] {
        approve(
            &world.config_dir,
            &world.project,
            file,
            "hooks",
            &bash_hook(command),
        )
        .expect("approve");
    }

    let loaded = world.load();
    assert_eq!(loaded.notices, []);
    assert_eq!(
        layers(&loaded),
        [
            (world.config_dir.join("config.json"), true),
            (world.project.join(CLAUDE), false),
            (world.project.join(SHARED), false),
            (world.personal_file(), true),
        ]
    );
    let commands: Vec<&Value> = loaded
        .settings
        .hooks
        .iter()
        .map(|layer| &layer.value["PreToolUse"][0]["hooks"][0]["command"])
        .collect();
    assert_eq!(
        commands,
        ["user-global", "from-claude", "from-larik", "user-project"]
    );
}

#[test]
fn hooks_that_are_not_an_object_are_ignored_with_a_notice() {
    let world = World::new();
    world.user(r#"{"hooks": [{"matcher": "Bash"}]}"#);
    world.claude(r#"{"hooks": "echo hi"}"#);
    let loaded = world.load();
    assert_eq!(loaded.settings.hooks, []);
    let messages: Vec<String> = loaded.notices.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            format!(
                "{}: `hooks` ignored: expected an object, found an array",
                world.config_dir.join("config.json").display()
            ),
            format!(
                "{}: `hooks` ignored: expected an object, found a string",
                world.project.join(CLAUDE).display()
            ),
        ]
    );
    assert_eq!(
        loaded.pending_approvals,
        [],
        "a value that is no hooks object waits for no approval"
    );
}

#[test]
fn disable_all_hooks_from_a_personal_file_switches_every_hook_off_and_back_on() {
    let world = World::new();
    world.user(&json!({ "disableAllHooks": true, "hooks": bash_hook("mine") }).to_string());
    let loaded = world.load();
    assert_eq!(loaded.notices, []);
    assert!(loaded.settings.disable_all_hooks);
    assert!(!loaded.settings.disable_shared_hooks);
    assert_eq!(
        loaded.settings.hooks.len(),
        1,
        "the hooks are kept; the flag says not to run them"
    );

    world.personal_project(r#"{"disableAllHooks": false}"#);
    let loaded = world.load();
    assert_eq!(loaded.notices, []);
    assert!(
        !loaded.settings.disable_all_hooks,
        "the later file clears it"
    );

    world.personal_project(r#"{"disableAllHooks": "yes"}"#);
    let loaded = world.load();
    assert!(loaded.settings.disable_all_hooks);
    assert_eq!(loaded.notices.len(), 1);
    assert_eq!(
        loaded.notices[0].message,
        "`disableAllHooks` ignored: expected true or false, found a string"
    );
}

#[test]
fn a_shared_disable_all_hooks_switches_off_only_shared_hooks() {
    let world = World::new();
    world.user(&json!({ "hooks": bash_hook("mine") }).to_string());
    world.claude(r#"{"disableAllHooks": true}"#);
    let loaded = world.load();
    assert_eq!(loaded.notices, []);
    assert!(loaded.settings.disable_shared_hooks);
    assert!(
        !loaded.settings.disable_all_hooks,
        "the user's own hooks still run"
    );
    assert_eq!(
        layers(&loaded),
        [(world.config_dir.join("config.json"), true)]
    );

    // A later shared file cannot switch them back on, nor can the user's `false`, which
    // answers only their own `true`.
    world.shared(r#"{"disableAllHooks": false}"#);
    world.personal_project(r#"{"disableAllHooks": false}"#);
    let loaded = world.load();
    assert!(loaded.settings.disable_shared_hooks);
    assert!(!loaded.settings.disable_all_hooks);
    assert_eq!(loaded.notices.len(), 1, "{:?}", loaded.notices);
    assert_eq!(loaded.notices[0].file, world.project.join(SHARED));
    assert_eq!(
        loaded.notices[0].message,
        "`disableAllHooks` ignored: a file shared with the repository may switch hooks off, \
         not back on"
    );
    assert_eq!(loaded.pending_approvals, []);
}

#[test]
fn describe_lists_each_hook_event_and_whether_it_counts() {
    let world = World::new();
    world.user(&json!({ "disableAllHooks": true, "hooks": bash_hook("mine") }).to_string());
    world.claude(&json!({ "disableAllHooks": true, "hooks": bash_hook("theirs") }).to_string());
    world.personal_project(&json!({ "hooks": bash_hook("also mine") }).to_string());
    let context = world.context();
    let report = describe(&context, &larik_config::load(&context));
    let status = |key: &str, trust: Trust| -> Vec<SettingStatus> {
        report
            .entries
            .iter()
            .filter(|entry| entry.key == key && entry.trust == trust)
            .map(|entry| entry.status.clone())
            .collect()
    };
    assert_eq!(
        status("hooks.PreToolUse", Trust::Personal),
        [SettingStatus::Counts, SettingStatus::Counts],
        "hooks add up: neither file's overrides the other's"
    );
    let shared = status("hooks.PreToolUse", Trust::Shared);
    assert!(
        matches!(
            &shared[..],
            [SettingStatus::AwaitingApproval { approval_key, why }]
                if approval_key == ".claude/settings.json#hooks"
                    && why.contains("cannot run commands as hooks")
        ),
        "{shared:?}"
    );
    let entry = report
        .entries
        .iter()
        .find(|entry| entry.key == "hooks.PreToolUse" && entry.trust == Trust::Shared)
        .expect("listed");
    assert_eq!(entry.value, bash_hook("theirs")["PreToolUse"]);
    assert_eq!(
        status("disableAllHooks", Trust::Personal),
        [SettingStatus::Counts],
        "a shared file's `true` sets something else, so it overrides nothing"
    );
    assert_eq!(
        status("disableAllHooks", Trust::Shared),
        [SettingStatus::Counts]
    );

    world.personal_project(&json!({ "disableAllHooks": false }).to_string());
    let report = describe(&context, &larik_config::load(&context));
    let user = report
        .entries
        .iter()
        .find(|entry| entry.key == "disableAllHooks" && entry.trust == Trust::Personal)
        .expect("listed");
    assert_eq!(
        user.status,
        SettingStatus::Overridden {
            by: world.personal_file()
        }
    );
}
