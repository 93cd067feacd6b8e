//! `settings_file`: one settings file, read as each layer it can be, through the real
//! loading and merging path, described as `/config` shows it, and changed as Larik changes
//! a personal file.
//!
//! The input is the file's text. It is read as the personal `config.json`; as a shared
//! file (`.mcp.json`, `.claude/settings.json` or `.larik/settings.json`, by the input's
//! length) over a loose personal file; as a local file (`settings.local.json`), which Larik never reads; and as
//! the project's personal file beside a shared file that asks for much, where its
//! `approvals` decide what of the shared file counts. Then one change is written into it.
//! What must hold: no panic; a wrong value is a notice; a shared file only narrows what the
//! personal file allows, and whatever loosening of it counts was approved with that very
//! value; a local file changes nothing; a change leaves valid JSON that holds every other
//! key as it was, or is refused with the file untouched and nothing left beside it.

use std::path::{Path, PathBuf};

use larik_config::{
    ConfigContext, KNOWN_KEYS, LoadedConfig, SettingStatus, Settings, Trust, UpdateError,
    approval_key, approve, content_hash, describe, load, persist_allow_rule, personal_project_file,
    read_layer, remove_personal_mcp_server, set_personal, set_personal_mcp_server,
};
use larik_protocol::PermissionMode;
use serde_json::{Map, Value, json};

/// Fragments of settings files that mutations splice in.
pub(super) const TOKENS: &[&str] = &[
    "\"permissions\":{\"allow\":[\"Bash(npm test:*)\"],\"deny\":[\"Read(.env)\"],\"ask\":[],\"defaultMode\":\"bypassPermissions\"}",
    "\"defaultMode\":\"plan\"",
    "\"sandbox\":{\"enabled\":false,\"writable_paths\":[\"~/x\",\"../y\"],\"network\":{\"allow\":[\"*\"]}}",
    "\"mcpServers\":{\"docs\":{\"command\":\"npx\",\"args\":[\"-y\",\"docs\"],\"env\":{\"K\":\"v\"},\"tool_timeout\":1e400}}",
    "{\"type\":\"http\",\"url\":\"https://mcp.example.com/mcp\",\"headers\":{\"Authorization\":\"Bearer x\"},\"oauth\":{\"clientId\":\"c\",\"callbackPort\":70000,\"scope\":\"a b\"}}",
    "\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash|Edit\",\"hooks\":[{\"type\":\"command\",\"command\":\"check.sh\",\"timeout\":30}]}]}",
    "\"disableAllHooks\":",
    "\"web\":{\"enabled\":true,\"allowed_hosts\":[\"localhost\",\"10.0.0.8\"],\"search\":{\"backend\":\"searxng\",\"url\":\"http://10.0.0.8\"},\"browser\":{\"path\":\"/tmp/chrome\",\"headless\":false}}",
    "\"lsp\":{\"pyright\":{\"command\":\"evil\",\"args\":[],\"disabled\":false,\"check_on_save\":true}}",
    "\"lsp\":false",
    "\"models\":{\"openai/gpt-5.1\":{\"context_window\":0,\"max_output_tokens\":4294967296,\"prices\":{\"input\":-1,\"output\":1e308}}}",
    "\"aliases\":{\"fast\":\"openai/gpt-5-mini\"}",
    "\"roles\":{\"worker\":{\"model\":\"fast\",\"max_turns\":0,\"isolation\":\"worktree\",\"context\":\"minimal\",\"max_budget_usd\":-2}}",
    "\"max_budget_usd\":",
    "\"auto_compact_share\":",
    "\"mcp_search_share\":",
    "\"mcp_search_count\":",
    "\"subagents\":{\"max_depth\":4294967296}",
    "\"checkpoint_retention_days\":-1",
    "\"debug\":true",
    "\"model\":\"openai/gpt-5.1\"",
    "\"approvals\":{\".larik/settings.json#permissions.allow\":\"sha256:",
    "\"env\":{\"A\":\"1\"}",
];

/// A personal `config.json` that allows much: what a shared file may only narrow.
const LOOSE_PERSONAL: &str = r#"{
  "model": "anthropic/claude-sonnet-4-5",
  "debug": true,
  "permissions": {
    "allow": ["Bash(npm test:*)", "Read(~/notes/**)", "WebFetch(domain:docs.rs)"],
    "deny": ["Read(.env)"],
    "defaultMode": "acceptEdits"
  },
  "sandbox": {"enabled": false, "writable_paths": ["~/.cache/pip"], "network": {"allow": ["pypi.org"]}},
  "mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}},
  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]},
  "web": {
    "enabled": true,
    "allowed_hosts": ["localhost", "127.0.0.1", "dev.internal"],
    "search": {"backend": "brave", "api_key_env": "BRAVE_API_KEY"},
    "browser": {"path": "chromium", "headless": true}
  },
  "lsp": {"pyright": {"disabled": true}, "zls": {"command": "zls", "args": ["--stdio"]}},
  "models": {"openai/gpt-5.1": {"context_window": 400000, "prices": {"input": 1.25, "output": 10}}},
  "max_budget_usd": 5,
  "checkpoint_retention_days": 30,
  "subagents": {"max_depth": 3}
}"#;

/// The shared file that sits beside the input read as the project's personal file: every
/// loosening it asks for counts only when the input approves that very value.
const ASKING_SHARED: &str = r#"{
  "permissions": {"allow": ["Bash(make:*)"]},
  "sandbox": {"enabled": false},
  "mcpServers": {"docs": {"command": "docs-mcp", "args": ["--stdio"]}},
  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]},
  "web": {"search": {"backend": "searxng", "url": "http://10.0.0.8"}}
}"#;

/// The shared files, relative to the project root, in merge order.
const SHARED_FILES: [&str; 3] = [".mcp.json", ".claude/settings.json", ".larik/settings.json"];

/// A home with a configuration directory and a project, in a temporary folder.
struct World {
    _dir: tempfile::TempDir,
    context: ConfigContext,
    config_dir: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = super::scratch();
        let home = dir.path().join("home");
        let config_dir = home.join(".config/larik");
        let project = home.join("proj");
        let context = ConfigContext {
            config_dir: Some(config_dir.clone()),
            home: Some(home),
            project_root: project.clone(),
        };
        World {
            _dir: dir,
            context,
            config_dir,
            project,
        }
    }

    fn put(&self, path: &Path, data: &[u8]) {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, data));
        if let Err(error) = written {
            panic!("cannot write {}: {error}", path.display());
        }
    }

    fn clear(&self, path: &Path) {
        if let Err(error) = std::fs::remove_file(path) {
            panic!("cannot remove {}: {error}", path.display());
        }
    }

    fn user_file(&self) -> PathBuf {
        self.config_dir.join("config.json")
    }

    fn personal_file(&self) -> PathBuf {
        personal_project_file(&self.config_dir, &self.project)
    }

    fn load(&self) -> LoadedConfig {
        load(&self.context)
    }
}

pub(super) fn run(data: &[u8]) {
    let world = World::new();

    world.put(&world.user_file(), data);
    let own = world.load();
    assert_pending_only_from_shared(&own, &world.project);
    for (name, server) in &own.settings.mcp_servers {
        let timeouts = [
            server.startup_timeout,
            server.connect_timeout,
            server.tool_timeout,
        ];
        assert!(
            timeouts.iter().flatten().all(|timeout| !timeout.is_zero()),
            "the MCP server {name} has a time limit of zero"
        );
    }
    // `/config` reads every file again and must make sense of whatever the merge said.
    let _ = describe(&world.context, &own);
    world.clear(&world.user_file());

    world.put(&world.user_file(), LOOSE_PERSONAL.as_bytes());
    let loose = world.load();
    assert!(
        loose.notices.is_empty(),
        "the loose personal file has notices: {:?}",
        loose.notices
    );
    // One shared file a case, by the input's length, keeps a case fast.
    let path = world
        .project
        .join(SHARED_FILES[data.len() % SHARED_FILES.len()]);
    world.put(&path, data);
    let merged = world.load();
    assert_narrows(&loose.settings, &merged, &path);
    assert_described_as_merged(&world.context, &merged, &path, data);
    world.clear(&path);

    for local in [".claude/settings.local.json", ".larik/settings.local.json"] {
        world.put(&world.project.join(local), data);
    }
    assert_eq!(
        world.load(),
        loose,
        "a settings.local.json file changed the configuration"
    );

    world.clear(&world.user_file());
    let shared = world.project.join(".larik/settings.json");
    world.put(&shared, ASKING_SHARED.as_bytes());
    world.put(&world.personal_file(), data);
    let merged = world.load();
    assert_loosened_only_when_approved(&merged, &shared, data);

    change(&world, data);
}

/// Approvals are listed only for shared files.
fn assert_pending_only_from_shared(loaded: &LoadedConfig, project: &Path) {
    for pending in &loaded.pending_approvals {
        assert!(
            SHARED_FILES
                .iter()
                .any(|shared| pending.file == project.join(shared)),
            "a setting of {} awaits approval, but only shared files need one",
            pending.file.display()
        );
    }
}

/// `merged` (the loose personal file, then `shared`) allows nothing `personal` did not.
fn assert_narrows(personal: &Settings, merged: &LoadedConfig, shared: &Path) {
    let settings = &merged.settings;
    let name = shared.display();
    assert_eq!(
        settings.permissions.allow, personal.permissions.allow,
        "{name} changed the allow rules"
    );
    assert!(
        settings.permissions.default_mode == personal.permissions.default_mode
            || matches!(
                settings.permissions.default_mode,
                Some(PermissionMode::Default | PermissionMode::Plan)
            ),
        "{name} set the looser mode {:?}",
        settings.permissions.default_mode
    );
    assert!(
        settings.sandbox.enabled == personal.sandbox.enabled
            || settings.sandbox.enabled == Some(true),
        "{name} switched the sandbox off"
    );
    assert_eq!(
        settings.sandbox.writable_paths, personal.sandbox.writable_paths,
        "{name} added writable paths"
    );
    assert_eq!(
        settings.sandbox.network_allow, personal.sandbox.network_allow,
        "{name} opened the network"
    );
    assert_eq!(
        settings.mcp_servers, personal.mcp_servers,
        "{name} changed the MCP servers"
    );
    assert_eq!(settings.hooks, personal.hooks, "{name} added hooks");
    assert_eq!(
        settings.disable_all_hooks, personal.disable_all_hooks,
        "{name} changed disableAllHooks"
    );
    assert!(
        !settings.web.enabled() || personal.web.enabled(),
        "{name} switched the web tools on"
    );
    let allowed = personal.web.allowed_hosts();
    for host in settings.web.allowed_hosts() {
        assert!(allowed.contains(&host), "{name} allowed the host {host:?}");
    }
    assert_eq!(
        settings.web.search, personal.web.search,
        "{name} chose the search backend"
    );
    assert_eq!(
        settings.web.browser.path, personal.web.browser.path,
        "{name} chose the browser"
    );
    assert_eq!(
        settings.models.models, personal.models.models,
        "{name} changed models' prices or windows"
    );
    if let Some(cap) = personal.models.max_budget_usd {
        assert!(
            settings
                .models
                .max_budget_usd
                .is_some_and(|merged| merged <= cap),
            "{name} raised the budget cap to {:?}",
            settings.models.max_budget_usd
        );
    }
    assert!(
        settings.debug == personal.debug || settings.debug == Some(false),
        "{name} switched the debug trace on"
    );
    assert_eq!(
        settings.checkpoint_retention_days, personal.checkpoint_retention_days,
        "{name} changed how long checkpoints are kept"
    );
    assert!(
        settings.subagents_max_depth == personal.subagents_max_depth
            || settings.subagents_max_depth == Some(1),
        "{name} let subagents go deeper"
    );
    assert!(
        !settings.lsp.enabled || personal.lsp.enabled,
        "{name} switched language servers on"
    );
    for (server, merged_server) in &settings.lsp.servers {
        let own = personal
            .lsp
            .servers
            .get(server)
            .cloned()
            .unwrap_or_default();
        assert!(
            merged_server.command == own.command
                && merged_server.args == own.args
                && merged_server.extensions == own.extensions
                && merged_server.root_markers == own.root_markers
                && merged_server.check_on_save == own.check_on_save,
            "{name} changed how the language server {server} runs"
        );
        assert!(
            !own.disabled || merged_server.disabled,
            "{name} switched {server} back on"
        );
    }
    for pending in &merged.pending_approvals {
        assert_eq!(pending.file, shared, "a personal setting awaits approval");
    }
}

/// Keys of a shared file that loosen: whatever lies under them may count only once
/// approved, so `/config` must never show one as counting when nothing was approved.
const LOOSENING: [&str; 8] = [
    "permissions.allow",
    "sandbox.writable_paths",
    "sandbox.network",
    "hooks",
    "models",
    "checkpoint_retention_days",
    "web.search",
    "web.browser.path",
];

/// `/config` shows no loosening setting of `shared` (the input, `data`) as counting.
fn assert_described_as_merged(
    context: &ConfigContext,
    merged: &LoadedConfig,
    shared: &Path,
    data: &[u8],
) {
    let report = describe(context, merged);
    let Ok(Value::Object(file)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    // The loosening settings the file holds as nested keys: a key written with a dot in its
    // name is another key, and what is under a key Larik does not know is shown as it is.
    let held: Vec<&str> = LOOSENING
        .into_iter()
        .filter(|key| {
            let mut parts = key.split('.');
            let first = parts.next().and_then(|part| file.get(part));
            parts
                .try_fold(first, |value, part| Some(value?.get(part)))
                .flatten()
                .is_some()
        })
        .collect();
    for entry in report.entries.iter().filter(|entry| entry.file == shared) {
        assert_eq!(
            entry.trust,
            Trust::Shared,
            "{} is shown as personal",
            shared.display()
        );
        let read_key = file.keys().any(|top| {
            KNOWN_KEYS.contains(&top.as_str())
                && (entry.key == *top
                    || entry
                        .key
                        .strip_prefix(top.as_str())
                        .is_some_and(|rest| rest.starts_with('.')))
        });
        assert!(
            read_key || entry.status == SettingStatus::NotRead,
            "/config shows `{}` of {} as read, though no key Larik reads holds it",
            entry.key,
            shared.display()
        );
        let loosening = held.iter().any(|key| {
            entry.key == *key
                || entry
                    .key
                    .strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with('.'))
        });
        assert!(
            !loosening || entry.status != SettingStatus::Counts,
            "/config shows `{}` of {} as counting, though nothing approved it",
            entry.key,
            shared.display()
        );
    }
}

/// What of [`ASKING_SHARED`] counts was approved with its value in `personal`, the
/// project's personal file.
fn assert_loosened_only_when_approved(merged: &LoadedConfig, shared: &Path, personal: &[u8]) {
    let Ok(Value::Object(asked)) = serde_json::from_str::<Value>(ASKING_SHARED) else {
        panic!("the asking shared file is not an object");
    };
    let approvals = match serde_json::from_slice::<Value>(personal) {
        Ok(Value::Object(mut object)) => match object.remove("approvals") {
            Some(Value::Object(approvals)) => approvals,
            _ => Map::new(),
        },
        _ => Map::new(),
    };
    let approved = |key: &str, value: &Value| {
        approvals.get(&approval_key(".larik/settings.json", key))
            == Some(&Value::String(content_hash(value)))
    };
    let settings = &merged.settings;
    if settings
        .permissions
        .allow
        .iter()
        .any(|rule| rule.file == shared)
    {
        assert!(
            approved("permissions.allow", &asked["permissions"]["allow"]),
            "the shared allow rules count without their approval"
        );
    }
    if settings.hooks.iter().any(|layer| layer.file == shared) {
        assert!(
            approved("hooks", &asked["hooks"]),
            "the shared hooks count without their approval"
        );
    }
    for (name, server) in &settings.mcp_servers {
        if server.file == shared {
            let key = format!("mcpServers.{name}");
            assert!(
                approved(&key, &asked["mcpServers"][name.as_str()]),
                "the shared MCP server {name} counts without its approval"
            );
        }
    }
}

/// One change Larik writes into a personal file, chosen by the input's length.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// `/config set model …`.
    SetModel,
    /// `/config set web.allowed_hosts […]`.
    SetNested,
    /// `larik mcp add docs …`.
    AddServer,
    /// `larik mcp remove docs`.
    RemoveServer,
    /// An "always allow" answer.
    AllowRule,
    /// `larik approve` of a shared file's allow rules.
    Approve,
}

const CHANGES: [Change; 6] = [
    Change::SetModel,
    Change::SetNested,
    Change::AddServer,
    Change::RemoveServer,
    Change::AllowRule,
    Change::Approve,
];

/// Writes one change into the input read as a personal file and checks the file after.
fn change(world: &World, data: &[u8]) {
    let change = CHANGES[data.len() % CHANGES.len()];
    let path = match change {
        Change::AllowRule | Change::Approve => world.personal_file(),
        _ => world.user_file(),
    };
    world.put(&path, data);
    let before = read_layer(&path);
    let hash = content_hash(&json!(["Bash(make:*)"]));
    let approval = approval_key(".larik/settings.json", "permissions.allow");
    // The dotted path changed and the value it holds after, `None` for a removal.
    let (changed, value): (Vec<&str>, Option<Value>) = match change {
        Change::SetModel => (vec!["model"], Some(json!("openai/gpt-5.1"))),
        Change::SetNested => (vec!["web", "allowed_hosts"], Some(json!(["localhost"]))),
        Change::AddServer => (
            vec!["mcpServers", "docs"],
            Some(json!({"command": "docs-mcp"})),
        ),
        Change::RemoveServer => (vec!["mcpServers", "docs"], None),
        Change::AllowRule => (vec!["permissions", "allow"], None),
        Change::Approve => (vec!["approvals", approval.as_str()], Some(json!(hash))),
    };
    let result: Result<(), UpdateError> = match change {
        Change::SetModel | Change::SetNested => {
            let key = changed.join(".");
            set_personal(&world.config_dir, &key, value.clone().unwrap_or_default()).map(drop)
        }
        Change::AddServer => {
            set_personal_mcp_server(&world.config_dir, "docs", value.clone().unwrap_or_default())
                .map(drop)
        }
        Change::RemoveServer => remove_personal_mcp_server(&world.config_dir, "docs").map(drop),
        Change::AllowRule => {
            persist_allow_rule(&world.config_dir, &world.project, "Bash(make:*)").map(drop)
        }
        Change::Approve => approve(
            &world.config_dir,
            &world.project,
            ".larik/settings.json",
            "permissions.allow",
            &json!(["Bash(make:*)"]),
        ),
    };
    let Ok(after_bytes) = std::fs::read(&path) else {
        panic!("{change:?} left no file");
    };
    let mut temp = path.clone().into_os_string();
    temp.push(".tmp");
    assert!(
        !Path::new(&temp).exists(),
        "{change:?} left its temporary file behind"
    );
    let before = match (before, result) {
        (_, Err(error)) => {
            assert!(
                after_bytes == data,
                "{change:?} failed ({error}) but changed the file"
            );
            return;
        }
        (Err(reason), Ok(())) => panic!("{change:?} wrote over a file that {reason}"),
        (Ok(before), Ok(())) => before.unwrap_or_default(),
    };
    let after = match read_layer(&path) {
        Ok(Some(after)) => after,
        Ok(None) => panic!("{change:?} removed the file"),
        Err(reason) => panic!("after {change:?} the file {reason}"),
    };
    if let Change::AllowRule = change {
        let mut rules = before
            .get("permissions")
            .and_then(|permissions| permissions.get("allow"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !rules.contains(&json!("Bash(make:*)")) {
            rules.push(json!("Bash(make:*)"));
        }
        assert_kept(
            &before,
            &after,
            &changed,
            Some(&Value::Array(rules)),
            change,
        );
    } else if let (Change::RemoveServer, None) =
        (change, before.get("mcpServers").and_then(Value::as_object))
    {
        assert!(
            after_bytes == data,
            "removing a server from a file without servers changed it"
        );
    } else {
        assert_kept(&before, &after, &changed, value.as_ref(), change);
    }
}

/// `after` is `before` with only `changed` set to `value` (or removed).
fn assert_kept(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    changed: &[&str],
    value: Option<&Value>,
    change: Change,
) {
    let Some((key, rest)) = changed.split_first() else {
        return;
    };
    for (other, held) in before {
        if other != key {
            assert_eq!(after.get(other), Some(held), "{change:?} changed `{other}`");
        }
    }
    for other in after.keys() {
        assert!(
            other == key || before.contains_key(other),
            "{change:?} added `{other}`"
        );
    }
    if rest.is_empty() {
        assert_eq!(after.get(*key), value, "{change:?} did not set `{key}`");
        return;
    }
    let empty = Map::new();
    let inner_before = before
        .get(*key)
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let Some(inner_after) = after.get(*key).and_then(Value::as_object) else {
        panic!("after {change:?} `{key}` is not an object");
    };
    assert_kept(inner_before, inner_after, rest, value, change);
}
