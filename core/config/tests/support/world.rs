//! A home directory with a personal config directory and a git project in it, shared by
//! the configuration tests.

// Each test file is its own crate and uses only part of this helper.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use larik_config::{ConfigContext, LoadedConfig, approve, load, personal_project_file};
use serde_json::Value;

/// The shared project settings file, relative to the project root.
pub const SHARED: &str = ".larik/settings.json";

/// The project's shared Claude Code settings file, relative to the project root.
pub const CLAUDE: &str = ".claude/settings.json";

/// A home with a personal config directory and a project (a git repository) in it.
///
/// The config directory is not created: writing into it must create it when needed.
pub struct World {
    _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub config_dir: PathBuf,
    pub project: PathBuf,
}

impl World {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = dir.path().join("home");
        let config_dir = home.join(".config/larik");
        let project = home.join("work/proj");
        std::fs::create_dir_all(project.join(".git")).expect("mkdir");
        Self {
            _dir: dir,
            home,
            config_dir,
            project,
        }
    }

    /// Writes `text` to `path`, creating its directories.
    pub fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// Writes the user's global config file.
    pub fn user(&self, text: &str) {
        self.write(&self.config_dir.join("config.json"), text);
    }

    /// Writes the project's shared settings file.
    pub fn shared(&self, text: &str) {
        self.write(&self.project.join(SHARED), text);
    }

    /// Writes the project's shared Claude Code settings file.
    pub fn claude(&self, text: &str) {
        self.write(&self.project.join(CLAUDE), text);
    }

    /// Writes the user's personal file for this project.
    pub fn personal_project(&self, text: &str) {
        self.write(&self.personal_file(), text);
    }

    pub fn personal_file(&self) -> PathBuf {
        personal_project_file(&self.config_dir, &self.project)
    }

    pub fn context(&self) -> ConfigContext {
        ConfigContext {
            config_dir: Some(self.config_dir.clone()),
            home: Some(self.home.clone()),
            project_root: self.project.clone(),
        }
    }

    pub fn load(&self) -> LoadedConfig {
        load(&self.context())
    }

    /// Approves `value` for `key` of the shared settings file.
    pub fn approve(&self, key: &str, value: Value) {
        approve(&self.config_dir, &self.project, SHARED, key, &value).expect("approve");
    }
}
