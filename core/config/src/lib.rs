//! Settings Larik reads from its surroundings.
//!
//! Core crates never read the process environment themselves: the binary captures it once
//! into an [`Environment`] and everything is resolved from that snapshot, so tests can build
//! any environment without touching the real one. Configuration files come in layers
//! ([`layers`]) merged into [`Settings`] ([`settings`]), where files shared with a
//! repository may only tighten what the agent may do.

mod approvals;
mod describe;
mod layers;
mod settings;
mod update;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use approvals::{
    APPROVALS_KEY, PendingApproval, approval_key, approve, approve_pending, canonical_json,
    content_hash,
};
pub use describe::{
    ConfigReport, KNOWN_KEYS, SettingEntry, SettingStatus, describe, set_personal, typed_value,
};
pub use layers::{
    LayerError, LayerFile, Trust, layer_files, path_slug, personal_project_file, project_root,
    read_layer,
};
pub use settings::{
    BrowserSettings, ConfigContext, ConfigNotice, ConfiguredRule, HookLayer, LoadedConfig,
    LspServerSettings, LspSettings, McpOAuthSettings, McpServerSettings, ModelConfig,
    ModelEntrySettings, PermissionSettings, PriceSettings, RoleSettings, SEARCH_BACKENDS,
    SandboxSettings, SearchSettings, Settings, WebSettings, load,
};
pub use update::{
    UpdateError, persist_allow_rule, persist_deny_rule, remove_personal_mcp_server,
    set_personal_mcp_server, update_json,
};

/// Errors resolving settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No provider key is set and no model was named.
    #[error(
        "no model provider is configured: set ANTHROPIC_API_KEY (for anthropic/claude-sonnet-4-5), \
         OPENAI_API_KEY (for openai/gpt-5.1) or GEMINI_API_KEY (for gemini/gemini-2.5-pro), or \
         name a model with --model provider/model (e.g. ollama/qwen3-coder for a local Ollama)"
    )]
    NoProvider,
    /// Neither `XDG_DATA_HOME` nor `HOME` is set.
    #[error("cannot find a data directory: set XDG_DATA_HOME or HOME")]
    NoDataDir,
    /// A variable holds a value Larik cannot use.
    #[error("{name} must be {expected}, not `{value}`")]
    BadVariable {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
}

/// A snapshot of environment variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// An environment holding exactly these variables.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: pairs
                .into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
        }
    }

    /// A variable's value; empty values count as unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }

    /// The user's home directory.
    pub fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }

    /// Larik's personal configuration directory: `$XDG_CONFIG_HOME/larik`, else
    /// `~/.config/larik`; `None` without either variable.
    pub fn config_dir(&self) -> Option<PathBuf> {
        if let Some(xdg) = self.get("XDG_CONFIG_HOME") {
            return Some(PathBuf::from(xdg).join("larik"));
        }
        self.home().map(|home| home.join(".config/larik"))
    }

    /// The configuration context of the project `cwd` belongs to.
    pub fn config_context(&self, cwd: &std::path::Path) -> ConfigContext {
        ConfigContext {
            config_dir: self.config_dir(),
            home: self.home(),
            project_root: project_root(cwd),
        }
    }

    /// Larik's data directory: `$XDG_DATA_HOME/larik`, else `~/.local/share/larik`.
    pub fn data_dir(&self) -> Result<PathBuf, ConfigError> {
        if let Some(xdg) = self.get("XDG_DATA_HOME") {
            return Ok(PathBuf::from(xdg).join("larik"));
        }
        self.home()
            .map(|home| home.join(".local/share/larik"))
            .ok_or(ConfigError::NoDataDir)
    }

    /// The key and base URL for a provider, from `<PROVIDER>_API_KEY` and
    /// `<PROVIDER>_BASE_URL`; Ollama's server is also found through its own `OLLAMA_HOST`.
    pub fn provider_endpoint(&self, provider: &str) -> ProviderEndpoint {
        let prefix = provider.to_ascii_uppercase().replace('-', "_");
        let mut base_url = self.get(&format!("{prefix}_BASE_URL")).map(str::to_string);
        if provider == "ollama" && base_url.is_none() {
            base_url = self.get("OLLAMA_HOST").map(str::to_string);
        }
        ProviderEndpoint {
            api_key: self.get(&format!("{prefix}_API_KEY")).map(str::to_string),
            base_url,
        }
    }

    /// How long a model request may wait for the next byte (and for a connection, when
    /// that is less than 30 s): `API_TIMEOUT_MS`, milliseconds as Claude Code reads them;
    /// `None` when unset.
    pub fn api_timeout(&self) -> Result<Option<Duration>, ConfigError> {
        Ok(self
            .positive_number("API_TIMEOUT_MS", "a number of milliseconds above 0")?
            .map(Duration::from_millis))
    }

    /// How many times a failed model request is tried again: `CLAUDE_CODE_MAX_RETRIES`, as
    /// Claude Code reads it (0 for none); `None` when unset.
    pub fn max_retries(&self) -> Result<Option<u32>, ConfigError> {
        let Some(value) = self.get("CLAUDE_CODE_MAX_RETRIES") else {
            return Ok(None);
        };
        value
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| ConfigError::BadVariable {
                name: "CLAUDE_CODE_MAX_RETRIES",
                value: value.to_string(),
                expected: "a whole number of retries",
            })
    }

    /// A variable holding a whole number above 0, or nothing.
    fn positive_number(
        &self,
        name: &'static str,
        expected: &'static str,
    ) -> Result<Option<u64>, ConfigError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        match value.trim().parse::<u64>() {
            Ok(number) if number > 0 => Ok(Some(number)),
            _ => Err(ConfigError::BadVariable {
                name,
                value: value.to_string(),
                expected,
            }),
        }
    }

    /// The model to use when none is named on the command line: `LARIK_MODEL`, else the
    /// default model of the first provider whose key is set.
    pub fn default_model(&self) -> Result<String, ConfigError> {
        if let Some(model) = self.get("LARIK_MODEL") {
            return Ok(model.to_string());
        }
        DEFAULT_MODELS
            .iter()
            .find(|(provider, _)| self.provider_endpoint(provider).api_key.is_some())
            .map(|(provider, model)| format!("{provider}/{model}"))
            .ok_or(ConfigError::NoProvider)
    }
}

/// The default model of each provider, in the order a key is looked for.
pub const DEFAULT_MODELS: [(&str, &str); 3] = [
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-5.1"),
    ("gemini", "gemini-2.5-pro"),
];

/// Where to reach one provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderEndpoint {
    /// The API key.
    pub api_key: Option<String>,
    /// The base URL, overriding the provider's default.
    pub base_url: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dir_prefers_xdg_then_home() {
        let env = Environment::from_pairs([("HOME", "/h"), ("XDG_DATA_HOME", "/x")]);
        assert_eq!(env.data_dir(), Ok(PathBuf::from("/x/larik")));
        let env = Environment::from_pairs([("HOME", "/h")]);
        assert_eq!(env.data_dir(), Ok(PathBuf::from("/h/.local/share/larik")));
        let env = Environment::from_pairs([("XDG_DATA_HOME", "")]);
        assert_eq!(env.data_dir(), Err(ConfigError::NoDataDir));
    }

    #[test]
    fn default_model_follows_the_keys_that_are_set() {
        let env = Environment::from_pairs([("OPENAI_API_KEY", "k")]);
        assert_eq!(env.default_model().as_deref(), Ok("openai/gpt-5.1"));
        let env = Environment::from_pairs([("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")]);
        assert_eq!(
            env.default_model().as_deref(),
            Ok("anthropic/claude-sonnet-4-5")
        );
        let env = Environment::from_pairs([("LARIK_MODEL", "openai/gpt-5-mini")]);
        assert_eq!(env.default_model().as_deref(), Ok("openai/gpt-5-mini"));
        let message = Environment::default()
            .default_model()
            .expect_err("no key, no model")
            .to_string();
        assert!(message.contains("ANTHROPIC_API_KEY") && message.contains("OPENAI_API_KEY"));
        assert!(message.contains("GEMINI_API_KEY"), "{message}");
        let env = Environment::from_pairs([("GEMINI_API_KEY", "k")]);
        assert_eq!(env.default_model().as_deref(), Ok("gemini/gemini-2.5-pro"));
    }

    #[test]
    fn ollama_is_found_through_ollama_host_unless_a_base_url_is_set() {
        let env = Environment::from_pairs([("OLLAMA_HOST", "0.0.0.0:11500")]);
        assert_eq!(
            env.provider_endpoint("ollama").base_url.as_deref(),
            Some("0.0.0.0:11500")
        );
        let env = Environment::from_pairs([
            ("OLLAMA_HOST", "0.0.0.0:11500"),
            ("OLLAMA_BASE_URL", "http://gpu-box:11434"),
        ]);
        assert_eq!(
            env.provider_endpoint("ollama").base_url.as_deref(),
            Some("http://gpu-box:11434")
        );
        assert_eq!(env.provider_endpoint("gemini").base_url, None);
    }

    #[test]
    fn api_timeout_and_max_retries_read_claude_codes_variables() {
        let env =
            Environment::from_pairs([("API_TIMEOUT_MS", "1500"), ("CLAUDE_CODE_MAX_RETRIES", "0")]);
        assert_eq!(env.api_timeout(), Ok(Some(Duration::from_millis(1500))));
        assert_eq!(env.max_retries(), Ok(Some(0)));
        let env = Environment::default();
        assert_eq!(env.api_timeout(), Ok(None));
        assert_eq!(env.max_retries(), Ok(None));
        for bad in ["0", "-5", "1.5s", "soon"] {
            let env = Environment::from_pairs([("API_TIMEOUT_MS", bad)]);
            let message = env.api_timeout().expect_err(bad).to_string();
            assert!(message.starts_with("API_TIMEOUT_MS must be"), "{message}");
            assert!(message.contains(bad), "{message}");
        }
        let env = Environment::from_pairs([("CLAUDE_CODE_MAX_RETRIES", "-1")]);
        assert!(env.max_retries().is_err());
    }

    #[test]
    fn provider_endpoint_reads_key_and_base_url() {
        let env = Environment::from_pairs([
            ("ANTHROPIC_API_KEY", "sk"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
        ]);
        let endpoint = env.provider_endpoint("anthropic");
        assert_eq!(endpoint.api_key.as_deref(), Some("sk"));
        assert_eq!(endpoint.base_url.as_deref(), Some("http://127.0.0.1:1"));
        assert_eq!(env.provider_endpoint("openai"), ProviderEndpoint::default());
    }
}
