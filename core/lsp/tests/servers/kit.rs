//! Shared helpers for the real-server tests: finding the servers (npm ones under
//! `tests/lsp/node_modules/.bin`, Debian ones on PATH), temp projects, and one scenario
//! that every server runs through.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use larik_lsp::{DiagnosticsWait, LanguageServer, ServerOptions, Severity, Timeouts};

/// Waits generous enough that a slow machine still gets fresh diagnostics.
pub fn patient() -> DiagnosticsWait {
    DiagnosticsWait {
        quiet: Duration::from_secs(60),
        loading: Duration::from_secs(120),
    }
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

/// The PATH of the test process (read only, never changed).
pub fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default()
}

/// An npm-installed server binary; fails the test when the setup has not run.
pub fn npm_bin(name: &str) -> PathBuf {
    let path = repo_root().join("tests/lsp/node_modules/.bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run tests/lsp/setup first",
        path.display()
    );
    path
}

/// A server binary from PATH; fails the test when it is not installed.
pub fn path_bin(name: &str) -> PathBuf {
    larik_lsp::find_command(name, &path_dirs(), Path::new("/")).unwrap_or_else(|| {
        panic!(
            "{name} is not on PATH: run tests/lsp/setup (it says which Debian packages to install)"
        )
    })
}

/// A temp project with `files` written; returns the guard and the canonical root.
pub fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical temp dir");
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    (dir, root)
}

pub fn options(name: &str, command: PathBuf, args: &[&str], root: &Path) -> ServerOptions {
    ServerOptions {
        name: name.into(),
        command,
        args: args.iter().map(|arg| arg.to_string()).collect(),
        root: root.to_path_buf(),
        log_path: root.join(".logs").join(format!("lsp-{name}.log")),
        timeouts: Timeouts {
            initialize: Duration::from_secs(120),
            request: Duration::from_secs(60),
            shutdown: Duration::from_secs(5),
        },
        checks_on_save: false,
        on_exit: None,
    }
}

/// What one server is checked on. Positions are 1-based (line, character column).
pub struct Scenario {
    pub name: &'static str,
    pub command: PathBuf,
    pub args: &'static [&'static str],
    /// Project files; `file` among them is the one edited.
    pub files: &'static [(&'static str, &'static str)],
    pub file: &'static str,
    /// The file with an undefined name, where the error must be, and a word its message has.
    pub broken: &'static str,
    pub error_at: (u32, u32),
    pub error_mentions: &'static str,
    /// The file fixed: no errors.
    pub fixed: &'static str,
    /// In `fixed`: a use of a symbol, where the symbol is defined, and a word its hover has.
    pub usage: (u32, u32),
    pub definition: (u32, u32),
    pub hover_mentions: &'static str,
    /// Symbols the outline must list.
    pub symbols: &'static [&'static str],
    /// A word in the title of a code action offered on the error's line of `broken`.
    pub quick_fix: Option<&'static str>,
    /// A name `workspace/symbol` must find.
    pub workspace_symbol: Option<&'static str>,
    /// The server reports compiler errors after a check it runs on save.
    pub checks_on_save: bool,
}

fn log_tail(root: &Path, name: &str) -> String {
    let log = std::fs::read_to_string(root.join(".logs").join(format!("lsp-{name}.log")))
        .unwrap_or_default();
    let start = log.len().saturating_sub(4000);
    log[log.floor_char_boundary(start)..].to_string()
}

/// Runs the scenario: an undefined name gets an error at the right place, fixing it clears
/// it, then definition, references, hover and symbols give real answers.
pub async fn run(scenario: Scenario) {
    let (_dir, root) = project(scenario.files);
    let path = root.join(scenario.file);
    let server = LanguageServer::start(ServerOptions {
        checks_on_save: scenario.checks_on_save,
        ..options(
            scenario.name,
            scenario.command.clone(),
            scenario.args,
            &root,
        )
    })
    .expect("the server starts");

    std::fs::write(&path, scenario.broken).expect("write");
    let started = Instant::now();
    let report = server
        .diagnostics_after_change(&path, scenario.broken, patient())
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", log_tail(&root, scenario.name)));
    eprintln!(
        "{}: first diagnostics after {:?} (including start-up)",
        scenario.name,
        started.elapsed()
    );
    assert!(
        report.fresh,
        "{report:?}\n{}",
        log_tail(&root, scenario.name)
    );
    let error = report
        .diagnostics
        .iter()
        .find(|diagnostic| {
            diagnostic.severity == Severity::Error
                && (diagnostic.line, diagnostic.column) == scenario.error_at
        })
        .unwrap_or_else(|| panic!("no error at {:?} in {report:?}", scenario.error_at));
    assert!(error.message.contains(scenario.error_mentions), "{error}");
    eprintln!("{}: {error}", scenario.name);

    if let Some(word) = scenario.quick_fix {
        let line = scenario.error_at.0;
        let actions = server
            .code_actions(&path, line, line)
            .await
            .expect("code actions");
        assert!(
            actions.iter().any(|action| action.title.contains(word)),
            "no action mentioning {word:?} in {actions:#?}"
        );
    }

    std::fs::write(&path, scenario.fixed).expect("write");
    let started = Instant::now();
    let report = server
        .diagnostics_after_change(&path, scenario.fixed, patient())
        .await
        .unwrap_or_else(|error| panic!("{error}\n{}", log_tail(&root, scenario.name)));
    eprintln!(
        "{}: diagnostics after the fix in {:?}",
        scenario.name,
        started.elapsed()
    );
    assert!(report.fresh, "{report:?}");
    assert!(
        report
            .diagnostics
            .iter()
            .all(|diagnostic| diagnostic.severity != Severity::Error),
        "{report:?}"
    );

    let (line, column) = scenario.usage;
    let definitions = server
        .definition(&path, line, column)
        .await
        .expect("definition");
    assert!(
        definitions
            .iter()
            .any(|found| found.path == path && (found.line, found.column) == scenario.definition),
        "{definitions:?}"
    );

    let references = server
        .references(&path, line, column, true)
        .await
        .expect("references");
    let lines: Vec<u32> = references
        .iter()
        .filter(|found| found.path == path)
        .map(|found| found.line)
        .collect();
    assert!(
        lines.contains(&scenario.definition.0) && lines.contains(&line),
        "{references:?}"
    );

    let hover = server
        .hover(&path, line, column)
        .await
        .expect("hover")
        .expect("some hover text");
    assert!(hover.contains(scenario.hover_mentions), "{hover}");

    let symbols = server.document_symbols(&path).await.expect("symbols");
    for name in scenario.symbols {
        assert!(
            symbols.iter().any(|symbol| symbol.name == *name),
            "{name} missing from {symbols:?}"
        );
    }

    if let Some(name) = scenario.workspace_symbol {
        let found = server
            .workspace_symbols(name)
            .await
            .expect("workspace symbols");
        assert!(
            found
                .iter()
                .any(|symbol| symbol.name == name && symbol.location.path == path),
            "{name} missing from {found:?}"
        );
    }

    server.shutdown().await;
    assert!(
        server.exited().is_some(),
        "the server is gone after shutdown"
    );
}
