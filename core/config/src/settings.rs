//! The merged settings and how each file adds to them. Later files win for single values;
//! lists (permission rules, writable paths, allowed hosts, each file's hooks) accumulate. A
//! shared file may only tighten: deny and ask rules, a stricter permission mode, the sandbox
//! switched on, a language server or all of them switched off, shared files' hooks switched
//! off, the web tools switched off or their local hosts narrowed. Whatever in a shared file
//! would loosen (allow rules, a looser mode, the sandbox off, writable paths, network,
//! language-server commands, hooks, the search backend) is ignored with one notice
//! naming the key and where it would count, and listed as awaiting approval, unless the user
//! approved that very value ([`crate::approvals`]): then it counts as if personal. A value
//! of the wrong type is ignored with a notice too; unknown keys are left alone (other tools'
//! settings). Model and spending keys are in [`models`], web keys in [`web`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use larik_protocol::PermissionMode;
use serde_json::{Map, Value};

mod models;
mod web;

pub use models::{ModelConfig, ModelEntrySettings, PriceSettings, RoleSettings};
pub use web::{BrowserSettings, SEARCH_BACKENDS, SearchSettings, WebSettings};

use crate::approvals::{APPROVALS_KEY, ApprovalState, Approvals, PendingApproval, content_hash};
use crate::layers::{
    CLAUDE_SETTINGS, LayerFile, Trust, json_kind, layer_files, personal_project_file, read_layer,
};

/// Where the configuration of one project comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigContext {
    /// Larik's personal configuration directory; `None` reads only the shared files.
    pub config_dir: Option<PathBuf>,
    /// The user's home directory, for `~/` in paths.
    pub home: Option<PathBuf>,
    /// The project root (see [`crate::project_root`]).
    pub project_root: PathBuf,
}

/// Something about the configuration the user should hear once: a file that could not be
/// used, or a setting that was ignored and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigNotice {
    /// The file it is about.
    pub file: PathBuf,
    /// What happened, in one sentence.
    pub message: String,
}

impl fmt::Display for ConfigNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

/// A permission rule as written in a file, with the file, so a rule that does not parse
/// can be reported where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredRule {
    /// The rule's text, e.g. `Bash(npm test:*)`.
    pub rule: String,
    /// The file it came from.
    pub file: PathBuf,
}

/// Permission settings (`permissions` in a file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionSettings {
    /// `allow` rules (personal files only).
    pub allow: Vec<ConfiguredRule>,
    /// `ask` rules.
    pub ask: Vec<ConfiguredRule>,
    /// `deny` rules.
    pub deny: Vec<ConfiguredRule>,
    /// `defaultMode`: the mode a session starts in.
    pub default_mode: Option<PermissionMode>,
}

/// Sandbox settings (`sandbox` in a file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    /// `enabled`: whether commands run sandboxed (`None`: Larik's default, on).
    pub enabled: Option<bool>,
    /// `writable_paths`: more places sandboxed commands may write, made absolute.
    pub writable_paths: Vec<PathBuf>,
    /// `network.allow`: hosts (`host` or `host:port`) sandboxed commands may reach.
    pub network_allow: Vec<String>,
}

/// One language server's settings (`lsp.<name>` in a file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LspServerSettings {
    /// `command`: the program (a bare name is looked up on PATH).
    pub command: Option<String>,
    /// `args`.
    pub args: Option<Vec<String>>,
    /// `extensions` it serves, without dots.
    pub extensions: Option<Vec<String>>,
    /// `root_markers`: files that mark a project root for it.
    pub root_markers: Option<Vec<String>>,
    /// `check_on_save`: its compiler errors come from a check it runs on save.
    pub check_on_save: Option<bool>,
    /// `disabled`: not to be used.
    pub disabled: bool,
}

/// One MCP server (`mcpServers.<name>`, in `.mcp.json` or any settings file): a command to
/// start (stdio) or a URL (`type` `http` or `sse`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerSettings {
    /// `command`, for a server started as a child process.
    pub command: Option<String>,
    /// `args`.
    pub args: Vec<String>,
    /// `env`: variables set for the child.
    pub env: BTreeMap<String, String>,
    /// `url`, for a remote server.
    pub url: Option<String>,
    /// `type`: `stdio`, `http` or `sse` (from `command`/`url` when absent).
    pub transport: Option<String>,
    /// `headers`: sent with every request to a remote server.
    pub headers: BTreeMap<String, String>,
    /// `startup_timeout` (seconds): how long it may take to start and answer the
    /// handshake.
    pub startup_timeout: Option<std::time::Duration>,
    /// `connect_timeout` (seconds): how long a context's first request waits for it while
    /// it connects.
    pub connect_timeout: Option<std::time::Duration>,
    /// `tool_timeout` (seconds): how long one tool call may take.
    pub tool_timeout: Option<std::time::Duration>,
    /// `max_output_tokens`: most tokens of one tool result passed to the model.
    pub max_output_tokens: Option<u64>,
    /// `disabled`: configured but not to be started.
    pub disabled: bool,
    /// `lazy`: a stdio server started on the first call of one of its tools, once its
    /// tool list is known from an earlier start.
    pub lazy: bool,
    /// `oauth`: how to log in to a remote server that asks for OAuth.
    pub oauth: McpOAuthSettings,
    /// The file it came from.
    pub file: PathBuf,
}

/// `mcpServers.<name>.oauth` (Claude Code's camel-case names are read too).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpOAuthSettings {
    /// `client_id` (`clientId`): a client registered beforehand; without one, Larik
    /// registers itself dynamically.
    pub client_id: Option<String>,
    /// `client_secret` (`clientSecret`): that client's secret.
    pub client_secret: Option<String>,
    /// `callback_port` (`callbackPort`): the port of the redirect listener on 127.0.0.1.
    pub callback_port: Option<u16>,
    /// `scopes` (`scope`): a list, or one string separated by spaces.
    pub scopes: Vec<String>,
}

/// Language-server settings (`lsp` in a file: `false`, or an object by server name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspSettings {
    /// `"lsp": false` turns every language server off.
    pub enabled: bool,
    /// Per server, by name (built-in names adjust the built-in server).
    pub servers: BTreeMap<String, LspServerSettings>,
}

impl Default for LspSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            servers: BTreeMap::new(),
        }
    }
}

/// The `hooks` object of one configuration file, as written: the hooks crate reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct HookLayer {
    /// The file it came from.
    pub file: PathBuf,
    /// Whether that file is personal (a shared file's hooks count only once approved).
    pub personal: bool,
    /// The `hooks` object.
    pub value: Value,
}

/// Every setting Larik takes from its configuration files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// `model`: the model to use, as `provider/model`.
    pub model: Option<String>,
    /// `permissions`.
    pub permissions: PermissionSettings,
    /// `sandbox`.
    pub sandbox: SandboxSettings,
    /// `lsp`.
    pub lsp: LspSettings,
    /// `checkpoint_retention_days`: how long `/undo` checkpoints are kept (Larik's default
    /// is 7; a negative number keeps them forever). Personal files only (or approved): it
    /// applies to every project's checkpoints.
    pub checkpoint_retention_days: Option<i64>,
    /// `mcpServers`, by name. A shared file's server counts only once the user approved
    /// its exact entry (a changed command loses the approval).
    pub mcp_servers: BTreeMap<String, McpServerSettings>,
    /// `models`, `aliases`, `roles`, `max_budget_usd` and `auto_compact_share`.
    pub models: ModelConfig,
    /// `debug`: write a debug trace beside each session file (personal files only, or
    /// approved: the trace holds every request and answer).
    pub debug: Option<bool>,
    /// `mcp_search_share`: MCP tools are reached through `mcp_search` when their schemas
    /// would take more than this share of the model's context window (0 to 1).
    pub mcp_search_share: Option<f64>,
    /// `mcp_search_count`: MCP tools are reached through `mcp_search` when there are more
    /// than this many.
    pub mcp_search_count: Option<u64>,
    /// `subagents.max_depth`: how deep subagents may start subagents of their own (1, the
    /// default: only the main agent starts them). Personal files only (or approved).
    pub subagents_max_depth: Option<u32>,
    /// `hooks`: the `hooks` object of every file that has one, in file order; every file's
    /// hooks run (none overrides another's). A shared file's object counts only once the
    /// user approved its exact value (any change loses the approval).
    pub hooks: Vec<HookLayer>,
    /// `disableAllHooks` from personal files: `true` means no hooks run at all, personal or
    /// shared. A later personal file's `false` clears an earlier `true`; shared files never
    /// change it.
    pub disable_all_hooks: bool,
    /// `disableAllHooks: true` from a shared file: the hooks of every shared file (each
    /// [`HookLayer`] whose `personal` is false, whether its file is merged before or after
    /// the one saying so) do not run; personal files' hooks still do. Nothing clears it: a
    /// personal file's `false` clears only [`Settings::disable_all_hooks`], and a shared
    /// file's `false` is ignored with a notice.
    pub disable_shared_hooks: bool,
    /// `web`: the web and browser tools.
    pub web: WebSettings,
}

/// The merged settings, the notices for the user, and the files that were read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedConfig {
    /// The settings.
    pub settings: Settings,
    /// Files that could not be used and settings that were ignored.
    pub notices: Vec<ConfigNotice>,
    /// The files that existed and were merged, in order.
    pub files: Vec<PathBuf>,
    /// Loosening settings of shared files that would count once approved, in file order
    /// (empty without a personal configuration directory, where no approval can be stored).
    pub pending_approvals: Vec<PendingApproval>,
}

/// Reads and merges every configuration file of a project. Never fails: a file that cannot
/// be read or parsed is skipped with a notice, and so is any setting that may not count.
pub fn load(context: &ConfigContext) -> LoadedConfig {
    let mut loaded = LoadedConfig::default();
    let personal = context
        .config_dir
        .as_deref()
        .map(|dir| personal_project_file(dir, &context.project_root));
    // Approvals decide how shared files merge, so they are read before any file merges; a
    // broken personal file approves nothing (its own merge reports it).
    let approvals = personal
        .as_deref()
        .and_then(|path| read_layer(path).ok().flatten())
        .map(|object| Approvals::from_object(&object))
        .unwrap_or_default();
    for file in layer_files(context.config_dir.as_deref(), &context.project_root) {
        match read_layer(&file.path) {
            Ok(None) => {}
            Ok(Some(object)) => {
                let relative = file
                    .path
                    .strip_prefix(&context.project_root)
                    .unwrap_or(&file.path)
                    .to_string_lossy()
                    .into_owned();
                let mut layer = Layer {
                    file: &file,
                    relative,
                    context,
                    personal: personal.as_deref(),
                    approvals: &approvals,
                    notices: &mut loaded.notices,
                    pending: &mut loaded.pending_approvals,
                };
                layer.merge(&object, &mut loaded.settings);
                loaded.files.push(file.path);
            }
            Err(reason) => loaded.notices.push(ConfigNotice {
                file: file.path,
                message: format!("not used: the file {reason}"),
            }),
        }
    }
    loaded
}

/// One file being merged.
struct Layer<'a> {
    file: &'a LayerFile,
    /// The file relative to the project root, as approvals name shared files.
    relative: String,
    context: &'a ConfigContext,
    personal: Option<&'a Path>,
    approvals: &'a Approvals,
    notices: &'a mut Vec<ConfigNotice>,
    pending: &'a mut Vec<PendingApproval>,
}

impl Layer<'_> {
    fn merge(&mut self, object: &Map<String, Value>, settings: &mut Settings) {
        for (key, value) in object {
            match key.as_str() {
                // Claude Code's model names (`opus`, `claude-sonnet-4-5`) name no provider.
                "model" if self.file.path.ends_with(CLAUDE_SETTINGS) => self.notice(
                    "`model` ignored: it names a model for Claude Code; set `model` as \
                     `provider/model` in .larik/settings.json or a personal file"
                        .to_string(),
                ),
                "model" => {
                    if let Some(model) = self.string("model", value) {
                        settings.model = Some(model);
                    }
                }
                "debug" => {
                    if let Some(debug) = self.boolean("debug", value)
                        && (!debug
                            || self.may_loosen(
                                "debug",
                                value,
                                "write every request and answer to disk",
                            ))
                    {
                        settings.debug = Some(debug);
                    }
                }
                // Pruning covers every project's checkpoints, so one repository may not
                // decide it.
                "checkpoint_retention_days" => match value.as_i64() {
                    Some(days)
                        if self.may_loosen(
                            "checkpoint_retention_days",
                            value,
                            "decide how long the undo checkpoints of every project are kept",
                        ) =>
                    {
                        settings.checkpoint_retention_days = Some(days);
                    }
                    Some(_) => {}
                    None => self.wrong_type("checkpoint_retention_days", "a whole number", value),
                },
                "mcp_search_share" => match value.as_f64() {
                    Some(share) if (0.0..=1.0).contains(&share) => {
                        settings.mcp_search_share = Some(share);
                    }
                    _ => self.wrong_type("mcp_search_share", "a number from 0 to 1", value),
                },
                "mcp_search_count" => match value.as_u64() {
                    Some(count) => settings.mcp_search_count = Some(count),
                    None => self.wrong_type("mcp_search_count", "a whole number", value),
                },
                "subagents" => self.subagents(value, settings),
                "hooks" => self.hooks(value, &mut settings.hooks),
                "disableAllHooks" => self.disable_all_hooks(value, settings),
                "web" => self.web(value, &mut settings.web),
                "permissions" => self.permissions(value, &mut settings.permissions),
                "sandbox" => self.sandbox(value, &mut settings.sandbox),
                "lsp" => self.lsp(value, &mut settings.lsp),
                "mcpServers" => self.mcp_servers(value, &mut settings.mcp_servers),
                APPROVALS_KEY => self.approvals(value),
                other if self.model_key(other, value, &mut settings.models) => {}
                // Keys of other tools and of later versions are left alone.
                _ => {}
            }
        }
    }

    fn subagents(&mut self, value: &Value, settings: &mut Settings) {
        let Some(object) = self.object("subagents", value) else {
            return;
        };
        for (field, value) in object {
            match field.as_str() {
                "max_depth" => match value.as_u64().and_then(|depth| u32::try_from(depth).ok()) {
                    Some(depth) if depth >= 1 => {
                        if depth == 1
                            || self.may_loosen(
                                "subagents.max_depth",
                                value,
                                "let subagents start subagents of their own",
                            )
                        {
                            settings.subagents_max_depth = Some(depth);
                        }
                    }
                    _ => self.wrong_type("subagents.max_depth", "a whole number from 1", value),
                },
                other => self.notice(format!("`subagents.{other}` ignored: not a setting")),
            }
        }
    }

    /// `hooks`: the object is kept whole for the hooks crate, from a shared file only when
    /// the user approved this very value.
    fn hooks(&mut self, value: &Value, hooks: &mut Vec<HookLayer>) {
        if self.object("hooks", value).is_none()
            || !self.may_loosen("hooks", value, "run commands as hooks")
        {
            return;
        }
        hooks.push(HookLayer {
            file: self.file.path.clone(),
            personal: !self.shared(),
            value: value.clone(),
        });
    }

    /// `disableAllHooks`: a personal file's value sets [`Settings::disable_all_hooks`]; a
    /// shared file's `true` sets [`Settings::disable_shared_hooks`], and its `false` is
    /// refused (a shared file may switch hooks off, not back on).
    fn disable_all_hooks(&mut self, value: &Value, settings: &mut Settings) {
        let Some(disable) = self.boolean("disableAllHooks", value) else {
            return;
        };
        if !self.shared() {
            settings.disable_all_hooks = disable;
        } else if disable {
            settings.disable_shared_hooks = true;
        } else {
            self.notice(
                "`disableAllHooks` ignored: a file shared with the repository may switch hooks \
                 off, not back on"
                    .to_string(),
            );
        }
    }

    fn shared(&self) -> bool {
        self.file.trust == Trust::Shared
    }

    fn notice(&mut self, message: String) {
        self.notices.push(ConfigNotice {
            file: self.file.path.clone(),
            message,
        });
    }

    /// Whether a loosening setting counts: always from a personal file; from a shared file
    /// only when the user approved this very value. Otherwise it is ignored with a notice
    /// saying why (`why` completes "a file shared with the repository cannot …") and listed
    /// as awaiting approval.
    fn may_loosen(&mut self, key: &str, value: &Value, why: &str) -> bool {
        if !self.shared() {
            return true;
        }
        let Some(personal) = self.personal else {
            self.notice(format!(
                "`{key}` ignored: a file shared with the repository cannot {why}; it counts \
                 only from a personal file"
            ));
            return false;
        };
        let place = personal.display();
        let state = self.approvals.check(&self.relative, key, value);
        let message = match state {
            ApprovalState::Matches => return true,
            ApprovalState::Missing => format!(
                "`{key}` ignored: a file shared with the repository cannot {why}; put it in \
                 {place} to use it, or approve its current value"
            ),
            ApprovalState::Stale => format!(
                "`{key}` ignored: its approval no longer matches because the file changed \
                 since it was approved (a file shared with the repository cannot {why} \
                 without approval); approve the new value or put it in {place} to use it"
            ),
        };
        self.notice(message);
        self.pending.push(PendingApproval {
            file: self.file.path.clone(),
            file_relative: self.relative.clone(),
            key: key.to_string(),
            value: value.clone(),
            hash: content_hash(value),
            stale: state == ApprovalState::Stale,
        });
        false
    }

    /// `approvals` counts only in the project's personal file, where load read it first;
    /// here it is only checked, and refused anywhere else.
    fn approvals(&mut self, value: &Value) {
        let Some(personal) = self.personal else {
            self.notice(format!(
                "`{APPROVALS_KEY}` ignored: approvals count only in a personal project file"
            ));
            return;
        };
        if self.file.path != personal {
            self.notice(format!(
                "`{APPROVALS_KEY}` ignored: approvals count only in {}",
                personal.display()
            ));
            return;
        }
        let Some(entries) = self.object(APPROVALS_KEY, value) else {
            return;
        };
        for (key, hash) in entries {
            if !hash.is_string() {
                self.wrong_type(&format!("{APPROVALS_KEY}.{key}"), "a hash string", hash);
            }
        }
    }

    fn wrong_type(&mut self, key: &str, expected: &str, value: &Value) {
        self.notice(format!(
            "`{key}` ignored: expected {expected}, found {}",
            json_kind(value)
        ));
    }

    fn string(&mut self, key: &str, value: &Value) -> Option<String> {
        match value {
            Value::String(text) => Some(text.clone()),
            other => {
                self.wrong_type(key, "a string", other);
                None
            }
        }
    }

    fn boolean(&mut self, key: &str, value: &Value) -> Option<bool> {
        match value {
            Value::Bool(flag) => Some(*flag),
            other => {
                self.wrong_type(key, "true or false", other);
                None
            }
        }
    }

    fn strings(&mut self, key: &str, value: &Value) -> Option<Vec<String>> {
        let items = match value {
            Value::Array(items) => items,
            other => {
                self.wrong_type(key, "a list of strings", other);
                return None;
            }
        };
        let mut strings = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Value::String(text) => strings.push(text.clone()),
                other => {
                    self.wrong_type(key, "a list of strings", other);
                    return None;
                }
            }
        }
        Some(strings)
    }

    fn object<'v>(&mut self, key: &str, value: &'v Value) -> Option<&'v Map<String, Value>> {
        match value {
            Value::Object(object) => Some(object),
            other => {
                self.wrong_type(key, "an object", other);
                None
            }
        }
    }

    fn rules(&mut self, key: &str, value: &Value, into: &mut Vec<ConfiguredRule>) {
        if let Some(rules) = self.strings(key, value) {
            into.extend(rules.into_iter().map(|rule| ConfiguredRule {
                rule,
                file: self.file.path.clone(),
            }));
        }
    }

    fn permissions(&mut self, value: &Value, permissions: &mut PermissionSettings) {
        let Some(object) = self.object("permissions", value) else {
            return;
        };
        for (key, value) in object {
            match key.as_str() {
                // Refused unless approved; the refusal has been said.
                "allow"
                    if self.may_loosen(
                        "permissions.allow",
                        value,
                        "let tools run without asking",
                    ) =>
                {
                    self.rules("permissions.allow", value, &mut permissions.allow);
                }
                "ask" => self.rules("permissions.ask", value, &mut permissions.ask),
                "deny" => self.rules("permissions.deny", value, &mut permissions.deny),
                "defaultMode" => {
                    let Some(name) = self.string("permissions.defaultMode", value) else {
                        continue;
                    };
                    match PermissionMode::parse(&name) {
                        None => self.notice(format!(
                            "`permissions.defaultMode` ignored: unknown mode `{name}` (choose one of: {})",
                            PermissionMode::ALL.map(PermissionMode::as_str).join(", ")
                        )),
                        Some(mode) => {
                            let tighter =
                                matches!(mode, PermissionMode::Default | PermissionMode::Plan);
                            if tighter
                                || self.may_loosen(
                                    "permissions.defaultMode",
                                    value,
                                    &format!("start sessions in the looser `{name}` mode"),
                                )
                            {
                                permissions.default_mode = Some(mode);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn sandbox(&mut self, value: &Value, sandbox: &mut SandboxSettings) {
        let Some(object) = self.object("sandbox", value) else {
            return;
        };
        for (key, value) in object {
            match key.as_str() {
                "enabled" => {
                    if let Some(enabled) = self.boolean("sandbox.enabled", value)
                        && (enabled
                            || self.may_loosen("sandbox.enabled", value, "switch the sandbox off"))
                    {
                        sandbox.enabled = Some(enabled);
                    }
                }
                "writable_paths" => {
                    if !self.may_loosen(
                        "sandbox.writable_paths",
                        value,
                        "let sandboxed commands write more places",
                    ) {
                        continue;
                    }
                    if let Some(paths) = self.strings("sandbox.writable_paths", value) {
                        let resolved: Vec<PathBuf> =
                            paths.iter().map(|path| self.resolve(path)).collect();
                        sandbox.writable_paths.extend(resolved);
                    }
                }
                "network" => {
                    if !self.may_loosen(
                        "sandbox.network",
                        value,
                        "open the network to sandboxed commands",
                    ) {
                        continue;
                    }
                    let Some(network) = self.object("sandbox.network", value) else {
                        continue;
                    };
                    if let Some(allow) = network.get("allow")
                        && let Some(hosts) = self.strings("sandbox.network.allow", allow)
                    {
                        sandbox.network_allow.extend(hosts);
                    }
                }
                _ => {}
            }
        }
    }

    /// A configured path made absolute: `~/` from the home directory, relative paths from
    /// the project root.
    fn resolve(&self, path: &str) -> PathBuf {
        if let Some(rest) = path.strip_prefix("~/")
            && let Some(home) = &self.context.home
        {
            return home.join(rest);
        }
        self.context.project_root.join(path)
    }

    fn mcp_servers(&mut self, value: &Value, servers: &mut BTreeMap<String, McpServerSettings>) {
        let Some(entries) = self.object("mcpServers", value) else {
            return;
        };
        for (name, entry) in entries {
            let key = format!("mcpServers.{name}");
            let Some(server) = self.mcp_server(&key, entry) else {
                continue;
            };
            if self.may_loosen(&key, entry, "start MCP servers") {
                servers.insert(name.clone(), server);
            }
        }
    }

    /// One server entry, or `None` (with a notice) when it is not one.
    fn mcp_server(&mut self, key: &str, entry: &Value) -> Option<McpServerSettings> {
        let fields = self.object(key, entry)?;
        let text = |field: &str| {
            fields
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let seconds = |field: &str| {
            fields
                .get(field)
                .and_then(Value::as_f64)
                .filter(|seconds| *seconds > 0.0)
                .and_then(|seconds| std::time::Duration::try_from_secs_f64(seconds).ok())
                // Less than a nanosecond rounds to no time at all.
                .filter(|duration| !duration.is_zero())
        };
        let server = McpServerSettings {
            command: text("command"),
            args: fields
                .get("args")
                .and_then(Value::as_array)
                .map(|args| {
                    args.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            env: string_map(fields.get("env")),
            url: text("url"),
            transport: text("type"),
            headers: string_map(fields.get("headers")),
            startup_timeout: seconds("startup_timeout"),
            connect_timeout: seconds("connect_timeout"),
            tool_timeout: seconds("tool_timeout"),
            max_output_tokens: fields.get("max_output_tokens").and_then(Value::as_u64),
            disabled: fields.get("disabled").and_then(Value::as_bool) == Some(true),
            lazy: fields.get("lazy").and_then(Value::as_bool) == Some(true),
            oauth: match fields.get("oauth") {
                Some(oauth) => self.mcp_oauth(&format!("{key}.oauth"), oauth),
                None => McpOAuthSettings::default(),
            },
            file: self.file.path.clone(),
        };
        for field in ["startup_timeout", "connect_timeout", "tool_timeout"] {
            if fields.get(field).is_some() && seconds(field).is_none() {
                self.notice(format!(
                    "`{key}.{field}` ignored: it must be a positive number of seconds"
                ));
            }
        }
        if server.command.is_none() && server.url.is_none() {
            self.notice(format!("`{key}` ignored: it needs a `command` or a `url`"));
            return None;
        }
        Some(server)
    }

    /// A server's `oauth` object; a field of the wrong type is left out with a notice.
    fn mcp_oauth(&mut self, key: &str, value: &Value) -> McpOAuthSettings {
        let Some(fields) = self.object(key, value) else {
            return McpOAuthSettings::default();
        };
        let field = |snake: &str, camel: &str| fields.get(snake).or_else(|| fields.get(camel));
        let text = |snake: &str, camel: &str| {
            field(snake, camel)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let callback_port = field("callback_port", "callbackPort").and_then(|port| {
            port.as_u64()
                .and_then(|port| u16::try_from(port).ok())
                .filter(|port| *port > 0)
        });
        if field("callback_port", "callbackPort").is_some() && callback_port.is_none() {
            self.notice(format!(
                "`{key}.callback_port` ignored: it must be a port number (1 to 65535)"
            ));
        }
        let scopes = match field("scopes", "scope") {
            Some(Value::String(scopes)) => scopes.split_whitespace().map(str::to_string).collect(),
            Some(Value::Array(scopes)) => scopes
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        McpOAuthSettings {
            client_id: text("client_id", "clientId"),
            client_secret: text("client_secret", "clientSecret"),
            callback_port,
            scopes,
        }
    }

    fn lsp(&mut self, value: &Value, lsp: &mut LspSettings) {
        let object = match value {
            Value::Bool(false) => {
                lsp.enabled = false;
                return;
            }
            Value::Bool(true) => {
                if self.may_loosen("lsp", value, "switch language servers back on") {
                    lsp.enabled = true;
                }
                return;
            }
            Value::Object(object) => object,
            other => {
                self.wrong_type("lsp", "false or an object of servers by name", other);
                return;
            }
        };
        for (name, value) in object {
            let key = format!("lsp.{name}");
            let Some(fields) = self.object(&key, value) else {
                continue;
            };
            let mut server = lsp.servers.get(name).cloned().unwrap_or_default();
            for (field, value) in fields {
                let key = format!("lsp.{name}.{field}");
                match field.as_str() {
                    "disabled" => {
                        if let Some(disabled) = self.boolean(&key, value)
                            && (disabled
                                || self.may_loosen(&key, value, "switch a language server back on"))
                        {
                            server.disabled = disabled;
                        }
                    }
                    // Refused unless approved; the refusal has been said.
                    "command" | "args" | "extensions" | "root_markers" | "check_on_save"
                        if !self.may_loosen(
                            &key,
                            value,
                            "choose which programs run as language servers",
                        ) => {}
                    "command" => server.command = self.string(&key, value).or(server.command),
                    "args" => server.args = self.strings(&key, value).or(server.args),
                    "extensions" => {
                        server.extensions = self.strings(&key, value).or(server.extensions);
                    }
                    "root_markers" => {
                        server.root_markers = self.strings(&key, value).or(server.root_markers);
                    }
                    "check_on_save" => {
                        server.check_on_save = self.boolean(&key, value).or(server.check_on_save);
                    }
                    _ => {}
                }
            }
            lsp.servers.insert(name.clone(), server);
        }
    }
}

/// The string values of a JSON object (`env`, `headers`); anything else is left out.
fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|object| {
            object
                .iter()
                .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}
