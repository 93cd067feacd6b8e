//! Benchmark of diagnostics after an edit. For each installed language server (clangd, gopls,
//! pyright, typescript-language-server, and rust-analyzer when a working one is present), a
//! temp project with one source file is edited back and forth between a version with an
//! undefined name and a fixed one, and two times are taken per edit. Each server is
//! measured twice: on the short file, and on a large one (the same file followed by
//! [`FILLER_FUNCTIONS`] small functions, about 20,000 lines), which the server checks whole
//! after each edit and Larik sends whole in each `didChange`:
//!
//! - Larik: the wall time of `ServerFeedback::after_edit` after the file is written, as the
//!   edit tools call it; the time until the diagnostics are in the tool result.
//! - bare: the same server binary on the same project, driven by the minimal client in this
//!   file: from sending `didChange` (whole text, then `didSave` when the server wants it) to
//!   reading the `publishDiagnostics` for the new version (or, for servers that send no
//!   version, the first one after the change with the right verdict: a publish about an
//!   earlier text can arrive after the change, and taking it would send the next edit
//!   while the server still works, which then may push nothing at all). pyright registers pull diagnostics, which
//!   Larik then uses, so for it a second bare run pulls (`textDocument/diagnostic` right
//!   after the change) for a like-for-like comparison.
//!
//! Run with `cargo bench -p larik-lsp --bench diagnostics` (add `-- pyright` to run one
//! server; `LARIK_BENCH_LOGS=<dir>` keeps Larik's server logs); the printed table goes into
//! docs/benchmarks.md.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use larik_lsp::{
    DiagnosticsWait, LanguageServers, ManagerConfig, ServerFeedback, ServerSpec, Timeouts,
    find_command,
};
use larik_tools::EditFeedback;
use serde_json::{Value, json};

/// Edits made before timing starts (the first one also starts the server).
const WARMUP: usize = 3;
/// Functions appended to make the large version of each file.
const FILLER_FUNCTIONS: usize = 5_000;
/// Timed edits, alternating fixed and broken.
const RUNS: usize = 30;
/// The pause after each edit's answer, so a late message about one edit (another publish
/// after `didSave`, say) is not taken for the next edit's answer. An agent's next edit comes
/// a model turn later anyway.
const SETTLE: Duration = Duration::from_millis(300);
/// How long the bare client waits for any answer before giving up on the server.
const ANSWER_LIMIT: Duration = Duration::from_secs(120);
/// Larik's wait, long enough that no timed edit ends on the deadline instead of an answer.
const PATIENT: DiagnosticsWait = DiagnosticsWait {
    quiet: Duration::from_secs(60),
    loading: Duration::from_secs(120),
};

/// One server's project and the two versions of its edited file. Every broken version
/// misspells `count` as `coutn`.
struct Source {
    server: &'static str,
    files: &'static [(&'static str, &'static str)],
    file: &'static str,
    broken: &'static str,
    fixed: &'static str,
}

const C_FIXED: &str = "#include <stdio.h>\n\nstatic int greet(int times) {\n    return times * 2;\n}\n\nint main(void) {\n    int count = 3;\n    int total = greet(count);\n    printf(\"%d\\n\", total);\n    return 0;\n}\n";
const C_BROKEN: &str = "#include <stdio.h>\n\nstatic int greet(int times) {\n    return times * 2;\n}\n\nint main(void) {\n    int count = 3;\n    int total = greet(coutn);\n    printf(\"%d\\n\", total);\n    return 0;\n}\n";
const GO_FIXED: &str = "package main\n\nimport \"fmt\"\n\nfunc greet(times int) int {\n\treturn times * 2\n}\n\nfunc main() {\n\tcount := 3\n\ttotal := greet(count)\n\tfmt.Println(total, count)\n}\n";
const GO_BROKEN: &str = "package main\n\nimport \"fmt\"\n\nfunc greet(times int) int {\n\treturn times * 2\n}\n\nfunc main() {\n\tcount := 3\n\ttotal := greet(coutn)\n\tfmt.Println(total, count)\n}\n";
const PY_FIXED: &str = "def greet(times: int) -> int:\n    return times * 2\n\n\ncount = 3\ntotal = greet(count)\nprint(total)\n";
const PY_BROKEN: &str = "def greet(times: int) -> int:\n    return times * 2\n\n\ncount = 3\ntotal = greet(coutn)\nprint(total)\n";
const TS_FIXED: &str = "function greet(times: number): number {\n  return times * 2;\n}\n\nconst count = 3;\nconst total = greet(count);\nconsole.log(total, count);\n";
const TS_BROKEN: &str = "function greet(times: number): number {\n  return times * 2;\n}\n\nconst count = 3;\nconst total = greet(coutn);\nconsole.log(total, count);\n";
const TSCONFIG: &str = "{\"compilerOptions\": {\"strict\": true, \"target\": \"es2020\", \"lib\": [\"es2020\", \"dom\"]}}\n";
const RS_FIXED: &str = "fn greet(times: i32) -> i32 {\n    times * 2\n}\n\nfn main() {\n    let count = 3;\n    let total = greet(count);\n    println!(\"{total} {count}\");\n}\n";
const RS_BROKEN: &str = "fn greet(times: i32) -> i32 {\n    times * 2\n}\n\nfn main() {\n    let count = 3;\n    let total = greet(coutn);\n    println!(\"{total} {count}\");\n}\n";
const MANIFEST: &str = "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";

const SOURCES: &[Source] = &[
    Source {
        server: "clangd",
        files: &[("compile_flags.txt", "-std=c11\n-Wall\n")],
        file: "main.c",
        broken: C_BROKEN,
        fixed: C_FIXED,
    },
    Source {
        server: "gopls",
        files: &[("go.mod", "module example.com/m\n\ngo 1.19\n")],
        file: "main.go",
        broken: GO_BROKEN,
        fixed: GO_FIXED,
    },
    Source {
        server: "pyright",
        files: &[("pyrightconfig.json", "{}\n")],
        file: "main.py",
        broken: PY_BROKEN,
        fixed: PY_FIXED,
    },
    Source {
        server: "typescript-language-server",
        files: &[("tsconfig.json", TSCONFIG)],
        file: "main.ts",
        broken: TS_BROKEN,
        fixed: TS_FIXED,
    },
    Source {
        server: "rust-analyzer",
        files: &[("Cargo.toml", MANIFEST)],
        file: "src/main.rs",
        broken: RS_BROKEN,
        fixed: RS_FIXED,
    },
];

/// The two versions of a source file at one size.
struct Texts {
    /// How the rows name the size: empty for the short file.
    label: String,
    broken: String,
    fixed: String,
}

impl Texts {
    fn version(&self, broken: bool) -> &str {
        if broken { &self.broken } else { &self.fixed }
    }

    /// The short file, as written above.
    fn short(source: &Source) -> Self {
        Texts {
            label: String::new(),
            broken: source.broken.to_string(),
            fixed: source.fixed.to_string(),
        }
    }

    /// The file followed by [`FILLER_FUNCTIONS`] functions in its language, none of which
    /// the server finds fault with.
    fn large(source: &Source) -> Self {
        let mut filler = String::new();
        for i in 0..FILLER_FUNCTIONS {
            let function = match source.server {
                "clangd" => format!(
                    "int filler_{i}(int x) {{\n    int y = x * {i};\n    return y + x;\n}}\n\n"
                ),
                "gopls" => {
                    format!("func filler{i}(x int) int {{\n\ty := x * {i}\n\treturn y + x\n}}\n\n")
                }
                "pyright" => format!(
                    "def filler_{i}(x: int) -> int:\n    y = x * {i}\n    return y + x\n\n\n"
                ),
                "typescript-language-server" => format!(
                    "function filler{i}(x: number): number {{\n  const y = x * {i};\n  return y + x;\n}}\n\n"
                ),
                _ => format!(
                    "#[allow(dead_code)]\nfn filler_{i}(x: i32) -> i32 {{\n    let y = x * {i};\n    y + x\n}}\n\n"
                ),
            };
            filler.push_str(&function);
        }
        let fixed = format!("{}\n{filler}", source.fixed);
        Texts {
            label: format!(", {} lines", fixed.lines().count()),
            broken: format!("{}\n{filler}", source.broken),
            fixed,
        }
    }
}

/// The times of one client on one server, and how many answers were not the expected ones
/// (the error missing after a broken edit, or present after a fix).
#[derive(Default)]
struct Samples {
    times: Vec<Duration>,
    wrong: usize,
}

impl Samples {
    fn record(&mut self, time: Duration, right: bool) {
        self.times.push(time);
        if !right {
            self.wrong += 1;
        }
    }

    /// Median, p90 and max in milliseconds (the same ranks as the other benches use).
    fn figures(&self) -> [f64; 3] {
        let mut sorted = self.times.clone();
        sorted.sort();
        let n = sorted.len();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        [
            ms(sorted[n / 2]),
            ms(sorted[(n * 90 / 100).min(n - 1)]),
            ms(sorted[n - 1]),
        ]
    }
}

/// What the bare client learnt about a server, for the notes under the table.
struct BareRun {
    samples: Samples,
    /// Whether the server's publishes carried document versions.
    versioned: bool,
    save: Save,
    /// Pulls sent again because the server cancelled them.
    retries: usize,
}

/// How the bare client gets diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// It declares no pull support and waits for `publishDiagnostics`.
    Push,
    /// It declares pull support and sends `textDocument/diagnostic` after each change.
    Pull,
}

/// How the server asked for `didSave` in its `initialize` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Save {
    No,
    Yes,
    WithText,
}

fn main() {
    let mut path_dirs = vec![
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/lsp/node_modules/.bin")
            .canonicalize()
            .unwrap_or_default(),
    ];
    // The bench's own PATH, read only, as the tests do.
    if let Some(path) = std::env::var_os("PATH") {
        path_dirs.extend(std::env::split_paths(&path));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");

    // Names after `--` pick servers (cargo passes `--bench` itself, hence the filter).
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut targets = Vec::new();
    for source in SOURCES {
        if !only.is_empty() && !only.iter().any(|name| name == source.server) {
            continue;
        }
        let Some(spec) = usable_spec(source.server, &path_dirs) else {
            continue;
        };
        for texts in [Texts::short(source), Texts::large(source)] {
            let name = format!("{}{}", source.server, texts.label);
            eprintln!("{name}: measuring");
            let project = tempfile::tempdir().expect("temp project");
            let root = project.path().canonicalize().expect("canonical temp dir");
            for (file_name, text) in source.files {
                std::fs::write(root.join(file_name), text).expect("write a project file");
            }
            let path = root.join(source.file);
            std::fs::create_dir_all(path.parent().expect("the file has a parent")).expect("mkdir");
            std::fs::write(&path, &texts.fixed).expect("write the source file");

            let larik = runtime.block_on(measure_larik(source, &texts, &spec, &root, &path_dirs));
            std::fs::write(&path, &texts.fixed).expect("write the source file");
            // A server that never answers the bare client is reported, not a lost run.
            let bare = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                measure_bare(source, &texts, &spec, &root, Mode::Push)
            })) {
                Ok(bare) => bare,
                Err(panic) => {
                    let why = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
                        .unwrap_or_default();
                    rows.push(row(&name, "Larik", &larik));
                    rows.push(format!("| {name} | bare client | failed: {why} | | | |"));
                    targets.push((name.clone(), f64::NAN, larik.wrong));
                    continue;
                }
            };
            // pyright registers pull diagnostics and then stops pushing, so Larik pulls from it;
            // a bare client that pulls too is the like-for-like comparison.
            let pulled = (source.server == "pyright").then(|| {
                std::fs::write(&path, &texts.fixed).expect("write the source file");
                measure_bare(source, &texts, &spec, &root, Mode::Pull)
            });

            let larik_figures = larik.figures();
            if let Some(pulled) = &pulled {
                rows.push(row(&name, "Larik (pull)", &larik));
                rows.push(row(&name, "bare client (push)", &bare.samples));
                rows.push(row(&name, "bare client (pull)", &pulled.samples));
            } else {
                rows.push(row(&name, "Larik", &larik));
                rows.push(row(&name, "bare client", &bare.samples));
            }
            let like_for_like = pulled.as_ref().unwrap_or(&bare);
            let difference: Vec<String> = larik_figures
                .iter()
                .zip(like_for_like.samples.figures())
                .map(|(larik, bare)| format!("{:+.2} ms", larik - bare))
                .collect();
            targets.push((
                name.clone(),
                larik_figures[0] - like_for_like.samples.figures()[0],
                larik.wrong,
            ));
            let compared = if pulled.is_some() {
                "Larik − bare (pull)"
            } else {
                "Larik − bare"
            };
            rows.push(format!(
                "| {name} | {compared} | | {} |",
                difference.join(" | ")
            ));
            notes.push(format!(
                "{name}: the server {} versions in its publishes; it asked for didSave {}; unexpected answers: Larik {}, bare {}",
                if bare.versioned { "puts" } else { "puts no" },
                match bare.save {
                    Save::No => "not at all",
                    Save::Yes => "without the text",
                    Save::WithText => "with the text",
                },
                larik.wrong,
                bare.samples.wrong,
            ));
            if let Some(pulled) = &pulled {
                notes.push(format!(
                    "{name}: bare pulls the server cancelled and were sent again: {}; unexpected answers: {}",
                    pulled.retries, pulled.samples.wrong,
                ));
            }
        }
    }

    println!("| server | client | runs | median | p90 | max |");
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    println!();
    for note in notes {
        println!("- {note}");
    }
    for (server, added_ms, wrong) in targets {
        larik_testkit::bench::at_most(
            &format!("{server}: Larik adds to the server's own time (median)"),
            added_ms,
            20.0,
            "ms",
        );
        larik_testkit::bench::at_most(
            &format!("{server}: wrong or failed answers from Larik"),
            wrong as f64,
            0.0,
            "answers",
        );
    }
}

fn row(server: &str, client: &str, samples: &Samples) -> String {
    let [median, p90, max] = samples.figures();
    format!(
        "| {server} | {client} | {} | {median:.2} ms | {p90:.2} ms | {max:.2} ms |",
        samples.times.len()
    )
}

/// The built-in spec for `server` with its command resolved to an absolute path, so both
/// clients run the very same binary; `None`, with a note, when it is not installed.
fn usable_spec(server: &str, path_dirs: &[PathBuf]) -> Option<ServerSpec> {
    let mut spec = ServerSpec::defaults()
        .into_iter()
        .find(|spec| spec.name == server)
        .expect("a built-in server");
    let Some(command) = find_command(&spec.command, path_dirs, Path::new("/")) else {
        println!("skipped {server}: `{}` is not installed", spec.command);
        return None;
    };
    if server == "gopls" && find_command("go", path_dirs, Path::new("/")).is_none() {
        println!("skipped gopls: the Go toolchain (`go`) is not on PATH");
        return None;
    }
    if server == "rust-analyzer" {
        // A rustup proxy without the component installed is on PATH but does not run.
        let works = Command::new(&command)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !works {
            println!(
                "skipped rust-analyzer: `{}` does not run",
                command.display()
            );
            return None;
        }
    }
    spec.command = command.display().to_string();
    Some(spec)
}

/// The messages of the errors among a server's diagnostics (an unset severity counts as an
/// error, as Larik counts it).
fn error_messages(diagnostics: &[Value]) -> Vec<String> {
    diagnostics
        .iter()
        .filter(|diagnostic| diagnostic["severity"].as_i64().unwrap_or(1) == 1)
        .map(|diagnostic| diagnostic["message"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// Whether a result (Larik's tool-result text, or the bare client's error messages joined)
/// is what the edit calls for: the misspelling reported after a broken edit, no error after
/// a fix.
fn expected(broken: bool, errors: &str) -> bool {
    if broken {
        errors.contains("coutn")
    } else {
        errors.is_empty()
    }
}

async fn measure_larik(
    source: &Source,
    texts: &Texts,
    spec: &ServerSpec,
    root: &Path,
    path_dirs: &[PathBuf],
) -> Samples {
    let logs = tempfile::tempdir().expect("log dir");
    // LARIK_BENCH_LOGS=<dir> keeps Larik's server logs there, to see where time goes.
    let log_dir = std::env::var_os("LARIK_BENCH_LOGS")
        .map_or_else(|| logs.path().to_path_buf(), PathBuf::from);
    let servers = Arc::new(LanguageServers::new(ManagerConfig {
        project_root: root.to_path_buf(),
        path_dirs: path_dirs.to_vec(),
        log_dir,
        servers: vec![spec.clone()],
        disabled: Vec::new(),
        timeouts: Timeouts::default(),
    }));
    let path = root.join(source.file);
    let mut samples = Samples::default();
    for edit in 0..WARMUP + RUNS {
        let broken = edit % 2 == 0;
        let text = texts.version(broken);
        std::fs::write(&path, text).expect("write the source file");
        // A checker of its own per edit: one that failed before says so only once, and a
        // failure must never pass for a clean answer here.
        let feedback = ServerFeedback::new(Arc::clone(&servers), PATIENT);
        let started = Instant::now();
        let result = feedback.after_edit(&path, text).await;
        let elapsed = started.elapsed();
        let result = result.unwrap_or_default();
        let errors: Vec<&str> = result
            .lines()
            .filter(|line| line.starts_with("ERROR "))
            .collect();
        // Parenthesised lines say the answer is not a verdict: no diagnostics (the request
        // failed), a server that crashed or restarted, a check that had not finished.
        let not_a_verdict = result.lines().any(|line| line.starts_with('('));
        if edit >= WARMUP {
            samples.record(
                elapsed,
                expected(broken, &errors.join("\n")) && !not_a_verdict,
            );
        }
        tokio::time::sleep(SETTLE).await;
    }
    servers.shutdown().await;
    samples
}

fn measure_bare(
    source: &Source,
    texts: &Texts,
    spec: &ServerSpec,
    root: &Path,
    mode: Mode,
) -> BareRun {
    let path = root.join(source.file);
    let uri = file_uri(&path);
    let mut bare = Bare::start(spec, root, mode);
    let language = larik_lsp::language_id(&path);
    bare.notify(
        "textDocument/didOpen",
        json!({"textDocument": {
            "uri": uri, "languageId": language, "version": 1, "text": texts.fixed,
        }}),
    );
    match mode {
        // A server that checks on save pushes nothing for a file that opens clean; the
        // warm-up edits wait for its start instead.
        Mode::Push if spec.checks_on_save => {}
        Mode::Push => drop(bare.wait_for_publish(&uri, 1)),
        Mode::Pull => drop(bare.pull(&uri)),
    }
    let mut samples = Samples::default();
    for edit in 0..WARMUP + RUNS {
        let broken = edit % 2 == 0;
        let text = texts.version(broken);
        let version = i64::try_from(edit).expect("a small count") + 2;
        std::fs::write(&path, text).expect("write the source file");
        // Whatever arrived while settling belongs to earlier edits.
        while bare.incoming.try_recv().is_ok() {}
        let started = Instant::now();
        bare.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version},
                   "contentChanges": [{"text": text}]}),
        );
        match bare.save {
            Save::No => {}
            Save::Yes => bare.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri}}),
            ),
            Save::WithText => bare.notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": uri}, "text": text}),
            ),
        }
        let errors = loop {
            let diagnostics = match mode {
                Mode::Push => bare.wait_for_publish(&uri, version),
                Mode::Pull => bare.pull(&uri),
            };
            let errors = error_messages(&diagnostics);
            // A server that checks on save first pushes its own analysis of the new text,
            // then the check's verdict: the one wanted is the push with the right verdict.
            // So is it from a server whose pushes carry no version.
            let any_push_counts = !spec.checks_on_save && (bare.versioned || mode == Mode::Pull);
            if any_push_counts || expected(broken, &errors.join("\n")) {
                break errors;
            }
        };
        let elapsed = started.elapsed();
        if edit >= WARMUP {
            samples.record(elapsed, expected(broken, &errors.join("\n")));
        }
        std::thread::sleep(SETTLE);
    }
    let (versioned, save, retries) = (bare.versioned, bare.save, bare.retries);
    bare.stop();
    BareRun {
        samples,
        versioned,
        save,
        retries,
    }
}

/// What the bare client's reader hands over: answers to its requests (the result, or the
/// error object), diagnostics, and the methods the server registered.
enum Incoming {
    Answer {
        id: i64,
        outcome: Result<Value, Value>,
    },
    Registered(Vec<String>),
    Publish {
        uri: String,
        version: Option<i64>,
        diagnostics: Vec<Value>,
    },
}

/// A minimal language-server client: one process, `Content-Length` framing, a reader
/// thread that answers the server's requests and passes answers and diagnostics on.
struct Bare {
    child: Child,
    writer: Arc<Mutex<ChildStdin>>,
    incoming: Receiver<Incoming>,
    next_id: i64,
    save: Save,
    versioned: bool,
    retries: usize,
}

impl Bare {
    fn start(spec: &ServerSpec, root: &Path, mode: Mode) -> Self {
        let mut child = Command::new(&spec.command)
            .args(&spec.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let writer = Arc::new(Mutex::new(child.stdin.take().expect("piped stdin")));
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, incoming) = mpsc::channel();
        let reader_writer = Arc::clone(&writer);
        std::thread::spawn(move || read_loop(stdout, &reader_writer, &sender));
        let mut bare = Bare {
            child,
            writer,
            incoming,
            next_id: 0,
            save: Save::No,
            versioned: false,
            retries: 0,
        };
        let root_uri = file_uri(root);
        let mut capabilities = json!({
            "workspace": {"configuration": true, "workspaceFolders": true},
            "textDocument": {
                "synchronization": {"didSave": true},
                "publishDiagnostics": {"versionSupport": true},
            },
        });
        // Without this pyright pushes; with it, it registers pull and stops pushing.
        if mode == Mode::Pull {
            capabilities["textDocument"]["diagnostic"] = json!({"dynamicRegistration": true});
        }
        let answer = bare
            .request(
                "initialize",
                json!({
                    "processId": std::process::id(),
                    "rootUri": root_uri,
                    "rootPath": root.display().to_string(),
                    "workspaceFolders": [{"uri": root_uri, "name": "bench"}],
                    "capabilities": capabilities,
                }),
            )
            .unwrap_or_else(|error| panic!("initialize failed: {error}"));
        let save = &answer["capabilities"]["textDocumentSync"]["save"];
        bare.save = match save {
            Value::Bool(true) => Save::Yes,
            Value::Object(options) if options.get("includeText") == Some(&Value::Bool(true)) => {
                Save::WithText
            }
            Value::Object(_) => Save::Yes,
            _ => Save::No,
        };
        bare.notify("initialized", json!({}));
        if mode == Mode::Pull {
            loop {
                if let Incoming::Registered(methods) = bare.receive("the pull registration")
                    && methods
                        .iter()
                        .any(|method| method == "textDocument/diagnostic")
                {
                    break;
                }
            }
        }
        bare
    }

    fn notify(&self, method: &str, params: Value) {
        send(
            &self.writer,
            &json!({"jsonrpc": "2.0", "method": method, "params": params}),
        );
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        send(
            &self.writer,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        loop {
            match self.receive(method) {
                Incoming::Answer {
                    id: answered,
                    outcome,
                } if answered == id => return outcome,
                _ => {}
            }
        }
    }

    fn receive(&self, waiting_for: &str) -> Incoming {
        match self.incoming.recv_timeout(ANSWER_LIMIT) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("no {waiting_for} within {ANSWER_LIMIT:?}"),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the server closed its output while waiting for {waiting_for}")
            }
        }
    }

    /// Waits for the diagnostics of `uri` at `version`, or the first ones without a version.
    fn wait_for_publish(&mut self, uri: &str, version: i64) -> Vec<Value> {
        loop {
            if let Incoming::Publish {
                uri: published,
                version: published_version,
                diagnostics,
            } = self.receive("publishDiagnostics")
                && published == uri
            {
                match published_version {
                    None => return diagnostics,
                    Some(published_version) if published_version >= version => {
                        self.versioned = true;
                        return diagnostics;
                    }
                    Some(_) => self.versioned = true,
                }
            }
        }
    }

    /// Pulls the diagnostics of `uri`, asking again while the server cancels the request
    /// (server-cancelled or content-modified).
    fn pull(&mut self, uri: &str) -> Vec<Value> {
        loop {
            let outcome = self.request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": uri}}),
            );
            match outcome {
                Ok(report) => return report["items"].as_array().cloned().unwrap_or_default(),
                Err(error) if matches!(error["code"].as_i64(), Some(-32802 | -32801)) => {
                    self.retries += 1;
                }
                Err(error) => panic!("textDocument/diagnostic failed: {error}"),
            }
        }
    }

    /// `shutdown`, `exit`, and a kill if the server is still there after a few seconds.
    fn stop(mut self) {
        // An error answer to `shutdown` changes nothing: the server is stopped either way.
        let _ = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            // Polling a child's exit: there is no event to wait on with a deadline here.
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Bare {
    /// A run given up on part way leaves no server behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn send(writer: &Mutex<ChildStdin>, message: &Value) {
    let body = message.to_string();
    let mut stdin = writer
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let written =
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).and_then(|()| stdin.flush());
    // A server gone mid-run shows as the next wait failing, with its message.
    drop(written);
}

/// Reads frames until the server closes its output: answers its requests (`null` for every
/// configuration item, `null` for anything else) and passes answers and publishes on.
fn read_loop(stdout: ChildStdout, writer: &Mutex<ChildStdin>, sender: &Sender<Incoming>) {
    let mut reader = BufReader::new(stdout);
    while let Some(message) = read_frame(&mut reader) {
        let method = message["method"].as_str();
        let id = message.get("id").filter(|id| !id.is_null());
        let passed = match (method, id) {
            (Some(method), Some(id)) => {
                let result = if method == "workspace/configuration" {
                    let items = message["params"]["items"].as_array().map_or(0, Vec::len);
                    Value::Array(vec![Value::Null; items])
                } else {
                    Value::Null
                };
                send(
                    writer,
                    &json!({"jsonrpc": "2.0", "id": id, "result": result}),
                );
                if method == "client/registerCapability" {
                    let methods = message["params"]["registrations"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|registration| registration["method"].as_str())
                        .map(str::to_string)
                        .collect();
                    sender.send(Incoming::Registered(methods))
                } else {
                    Ok(())
                }
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let params = &message["params"];
                sender.send(Incoming::Publish {
                    uri: params["uri"].as_str().unwrap_or_default().to_string(),
                    version: params["version"].as_i64(),
                    diagnostics: params["diagnostics"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                })
            }
            (None, Some(id)) => sender.send(Incoming::Answer {
                id: id.as_i64().unwrap_or(-1),
                outcome: match message.get("error").filter(|error| !error.is_null()) {
                    Some(error) => Err(error.clone()),
                    None => Ok(message["result"].clone()),
                },
            }),
            _ => Ok(()),
        };
        if passed.is_err() {
            return;
        }
    }
}

/// One message; `None` at the end of the output. A body that is not JSON reads as `null`.
fn read_frame(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// The `file://` URI of an absolute path (temp dirs need no escaping).
fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}
