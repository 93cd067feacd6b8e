//! Running a target: its saved inputs first, then mutated ones, each case isolated so a
//! panic is caught, reported with the input that caused it, and saved for a regression.
//!
//! A case that runs longer than [`HANG_AFTER`] is a hang: a watchdog saves its input and
//! ends the process with a message naming the file, since a stuck parser cannot be
//! interrupted from outside. Panics inside a case are kept quiet (the report says what
//! happened); panics elsewhere print as usual.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use crate::Target;
use crate::mutate::{self, Rng};

/// How long one case may run before it counts as a hang.
pub const HANG_AFTER: Duration = Duration::from_secs(20);

/// How far a run explores beyond the saved inputs; it stops at whichever limit comes first.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Mutated cases to run at most.
    pub cases: u64,
    /// Time to spend at most.
    pub time: Duration,
    /// The generator's seed; the same seed and inputs give the same cases.
    pub seed: u64,
}

impl Budget {
    /// The budget of a test run: `LARIK_FUZZ_CASES` cases (default 2,000) and
    /// `LARIK_FUZZ_SECONDS` seconds (default 15), seeded by the target's name unless
    /// `LARIK_FUZZ_SEED` is set.
    pub fn for_tests(target: &Target) -> Self {
        let number = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        Budget {
            cases: number("LARIK_FUZZ_CASES").unwrap_or(2_000),
            time: Duration::from_secs(number("LARIK_FUZZ_SECONDS").unwrap_or(15)),
            seed: number("LARIK_FUZZ_SEED").unwrap_or_else(|| name_seed(target.name)),
        }
    }
}

/// A seed derived from a target's name, so each target explores its own cases.
pub fn name_seed(name: &str) -> u64 {
    fnv(name.as_bytes())
}

/// An input that made a target panic.
#[derive(Debug, Clone)]
pub struct Crash {
    /// The panic message and where it was raised.
    pub message: String,
    /// The input.
    pub input: Vec<u8>,
    /// Where the input was saved, when it was.
    pub saved: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Saved inputs run (corpus and regressions).
    pub saved_inputs: usize,
    /// Mutated cases run.
    pub cases: u64,
    /// Distinct crashes (by panic message), first input of each.
    pub crashes: Vec<Crash>,
    /// Time taken.
    pub elapsed: Duration,
}

impl Report {
    /// A readable account of the crashes, each with its message, saved file and input.
    pub fn describe_crashes(&self, target: &str) -> String {
        let mut text = String::new();
        for crash in &self.crashes {
            let _ = writeln!(text, "{target}: {}", crash.message);
            if let Some(saved) = &crash.saved {
                let _ = writeln!(text, "  input saved to {}", saved.display());
            }
            let _ = writeln!(text, "  input: {}", escaped(&crash.input, 400));
        }
        text
    }
}

/// Errors reading a target's saved inputs.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The target has no corpus folder or it is empty: a run would prove nothing.
    #[error("the target {target} has no corpus: add real inputs to {}", folder.display())]
    NoCorpus {
        /// The target.
        target: String,
        /// The folder that should hold them.
        folder: PathBuf,
    },
    /// A folder of saved inputs could not be read.
    #[error("cannot read {}: {source}", folder.display())]
    Read {
        /// The folder.
        folder: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The corpus folder of `target` under `root`.
pub fn corpus_dir(root: &Path, target: &str) -> PathBuf {
    root.join("corpus").join(target)
}

/// The regressions folder of `target` under `root`.
pub fn regressions_dir(root: &Path, target: &str) -> PathBuf {
    root.join("regressions").join(target)
}

/// The saved inputs of `target` under `root`: its regressions (there may be none) and its
/// corpus (there must be some), sorted by file name.
pub fn saved_inputs(root: &Path, target: &str) -> Result<Vec<Vec<u8>>, EngineError> {
    let corpus = read_folder(&corpus_dir(root, target))?;
    if corpus.is_empty() {
        return Err(EngineError::NoCorpus {
            target: target.to_string(),
            folder: corpus_dir(root, target),
        });
    }
    let mut inputs = read_folder(&regressions_dir(root, target))?;
    inputs.extend(corpus);
    Ok(inputs)
}

fn read_folder(folder: &Path) -> Result<Vec<Vec<u8>>, EngineError> {
    let error = |source| EngineError::Read {
        folder: folder.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(error(err)),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(error)?.path();
        if path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .iter()
        .map(|path| std::fs::read(path).map_err(error))
        .collect()
}

thread_local! {
    /// Set while this thread runs a case: its panics are recorded, not printed.
    static IN_CASE: Cell<bool> = const { Cell::new(false) };
    /// The last panic of a case on this thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs, once, a panic hook that records panics inside cases and leaves others to the
/// hook that was there before.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_CASE.with(Cell::get) {
                let location = info
                    .location()
                    .map(|at| format!(" at {}:{}", at.file(), at.line()))
                    .unwrap_or_default();
                let payload = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_string());
                LAST_PANIC.with(|last| *last.borrow_mut() = Some(format!("{payload}{location}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `target` on one input; the panic message when it panicked. A panic inside a task
/// the case spawned counts too: the runtime catches it (the task just ends), but the hook
/// saw it on this thread.
pub fn run_case(target: &Target, input: &[u8]) -> Result<(), String> {
    install_hook();
    LAST_PANIC.with(|last| last.borrow_mut().take());
    IN_CASE.with(|flag| flag.set(true));
    let outcome = std::panic::catch_unwind(|| (target.run)(input));
    IN_CASE.with(|flag| flag.set(false));
    let last = LAST_PANIC.with(|last| last.borrow_mut().take());
    match (outcome, last) {
        (Ok(()), None) => Ok(()),
        (Ok(()), Some(message)) => Err(format!("in a task the case spawned: {message}")),
        (Err(_), last) => Err(last.unwrap_or_else(|| "a panic".to_string())),
    }
}

/// Watches the running case: when one case runs past [`HANG_AFTER`], saves its input to
/// `found` and ends the process.
struct Watchdog {
    /// Bumped at every case start.
    started: Arc<AtomicU64>,
    current: Arc<Mutex<Vec<u8>>>,
}

impl Watchdog {
    fn start(target: &'static str, found: PathBuf) -> Self {
        let started = Arc::new(AtomicU64::new(0));
        let current = Arc::new(Mutex::new(Vec::new()));
        let (seen, input) = (started.clone(), current.clone());
        std::thread::spawn(move || {
            let mut last = (u64::MAX, Instant::now());
            loop {
                std::thread::sleep(Duration::from_millis(500));
                // The run ended: the engine dropped its side.
                if Arc::strong_count(&seen) == 1 {
                    return;
                }
                let now = seen.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, Instant::now());
                } else if last.1.elapsed() > HANG_AFTER {
                    let data = input.lock().map(|data| data.clone()).unwrap_or_default();
                    let saved = save(&found, "hang", &data);
                    eprintln!(
                        "larik-fuzz: {target}: one case ran for over {} s (a hang); input saved to {}: {}",
                        HANG_AFTER.as_secs(),
                        saved
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|| "(not saved)".into()),
                        escaped(&data, 400)
                    );
                    std::process::exit(101);
                }
            }
        });
        Watchdog { started, current }
    }

    fn case(&self, input: &[u8]) {
        if let Ok(mut current) = self.current.lock() {
            current.clear();
            current.extend_from_slice(input);
        }
        self.started.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `target` on `inputs`, then on inputs mutated from them within `budget`. Crashing
/// inputs are saved under `found/<target>/`. At most five distinct crashes are gathered.
pub fn explore(
    target: &'static Target,
    inputs: &[Vec<u8>],
    budget: Budget,
    found: &Path,
) -> Report {
    let begun = Instant::now();
    let found = found.join(target.name);
    let watchdog = Watchdog::start(target.name, found.clone());
    let mut report = Report::default();
    let record = |report: &mut Report, message: String, input: &[u8]| {
        if report.crashes.iter().any(|crash| crash.message == message) {
            return;
        }
        let saved = save(&found, "crash", input);
        report.crashes.push(Crash {
            message,
            input: input.to_vec(),
            saved,
        });
    };
    for input in inputs {
        watchdog.case(input);
        if let Err(message) = run_case(target, input) {
            record(&mut report, message, input);
        }
        report.saved_inputs += 1;
    }
    let mut rng = Rng::new(budget.seed);
    let pool: Vec<&[u8]> = if inputs.is_empty() {
        vec![b"".as_slice()]
    } else {
        inputs.iter().map(Vec::as_slice).collect()
    };
    while report.cases < budget.cases && begun.elapsed() < budget.time && report.crashes.len() < 5 {
        let base = pool[rng.below(pool.len())];
        let other = pool[rng.below(pool.len())];
        let input = mutate::mutate(base, other, target.tokens, &mut rng);
        watchdog.case(&input);
        if let Err(message) = run_case(target, &input) {
            record(&mut report, message, &input);
        }
        report.cases += 1;
    }
    report.elapsed = begun.elapsed();
    report
}

/// Saves `input` as `found/<kind>-<hash>`; the path when it could be written.
fn save(found: &Path, kind: &str, input: &[u8]) -> Option<PathBuf> {
    std::fs::create_dir_all(found).ok()?;
    let path = found.join(format!("{kind}-{:016x}", fnv(input)));
    std::fs::write(&path, input).ok()?;
    Some(path)
}

/// The FNV-1a hash of `bytes`.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `input` as a Rust byte-string literal body, cut to `max` bytes.
pub fn escaped(input: &[u8], max: usize) -> String {
    let shown: String = input
        .iter()
        .take(max)
        .flat_map(|&byte| std::ascii::escape_default(byte))
        .map(char::from)
        .collect();
    if input.len() > max {
        format!("b\"{shown}\"… ({} bytes)", input.len())
    } else {
        format!("b\"{shown}\"")
    }
}

/// Runs `target` as a test does: its saved inputs under this crate's folder, then mutated
/// inputs within [`Budget::for_tests`]; panics with a report of every crash, whose inputs
/// are saved under `found`.
pub fn check(name: &str, found: &Path) {
    let Some(target) = crate::find(name) else {
        panic!("no fuzz target is called {name}");
    };
    let inputs = match saved_inputs(&crate::crate_dir(), name) {
        Ok(inputs) => inputs,
        Err(error) => panic!("{error}"),
    };
    let report = explore(target, &inputs, Budget::for_tests(target), found);
    assert!(
        report.crashes.is_empty(),
        "{} crash(es) after {} saved inputs and {} mutated cases:\n{}",
        report.crashes.len(),
        report.saved_inputs,
        report.cases,
        report.describe_crashes(name)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fussy(data: &[u8]) {
        assert!(!data.windows(4).any(|w| w == b"boom"), "it went boom");
        assert!(data.len() < 3 || data[0] != b'!', "it shouted");
    }

    static FUSSY: Target = Target {
        name: "fussy",
        run: fussy,
        tokens: &["boom"],
    };

    /// Panics inside a task it spawns, which the runtime catches.
    fn panics_in_a_task(data: &[u8]) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        let shout = data.first() == Some(&b'!');
        let task = runtime.spawn(async move { assert!(!shout, "the task shouted") });
        assert!(runtime.block_on(task).is_err() == shout);
    }

    #[test]
    fn a_panic_in_a_spawned_task_is_a_crash() {
        let target = Target {
            name: "tasks",
            run: panics_in_a_task,
            tokens: &[],
        };
        assert_eq!(run_case(&target, b"quiet"), Ok(()));
        let error = run_case(&target, b"!").expect_err("a crash");
        assert!(
            error.starts_with("in a task the case spawned: the task shouted at "),
            "{error}"
        );
        assert_eq!(run_case(&target, b"quiet"), Ok(()), "nothing carried over");
    }

    #[test]
    fn crashes_are_caught_reported_once_and_saved() {
        let found = tempfile::tempdir().expect("tempdir");
        let inputs = vec![b"boom".to_vec(), b"a boom".to_vec(), b"fine".to_vec()];
        let budget = Budget {
            cases: 0,
            time: Duration::from_secs(60),
            seed: 1,
        };
        let report = explore(&FUSSY, &inputs, budget, found.path());
        assert_eq!(report.saved_inputs, 3);
        assert_eq!(report.crashes.len(), 1, "one distinct crash: {report:?}");
        let crash = &report.crashes[0];
        assert!(
            crash.message.starts_with("it went boom at "),
            "{}",
            crash.message
        );
        let saved = crash.saved.as_ref().expect("saved");
        assert_eq!(std::fs::read(saved).expect("read"), b"boom");
        assert!(report.describe_crashes("fussy").contains("b\"boom\""));
    }

    #[test]
    fn mutated_inputs_find_what_the_corpus_misses() {
        let found = tempfile::tempdir().expect("tempdir");
        let budget = Budget {
            cases: 100_000,
            time: Duration::from_secs(600),
            seed: 3,
        };
        let report = explore(&FUSSY, &[b"fine input".to_vec()], budget, found.path());
        let mut messages: Vec<&str> = report
            .crashes
            .iter()
            .map(|crash| crash.message.split(" at ").next().unwrap_or_default())
            .collect();
        messages.sort_unstable();
        assert_eq!(
            messages,
            ["it shouted", "it went boom"],
            "after {} cases",
            report.cases
        );
    }

    #[test]
    fn a_target_without_corpus_is_an_error() {
        let root = tempfile::tempdir().expect("tempdir");
        let error = saved_inputs(root.path(), "fussy").expect_err("no corpus");
        assert!(matches!(error, EngineError::NoCorpus { .. }));
        std::fs::create_dir_all(corpus_dir(root.path(), "fussy")).expect("mkdir");
        std::fs::write(corpus_dir(root.path(), "fussy").join("a"), "x").expect("write");
        std::fs::create_dir_all(regressions_dir(root.path(), "fussy")).expect("mkdir");
        std::fs::write(regressions_dir(root.path(), "fussy").join("r"), "y").expect("write");
        assert_eq!(
            saved_inputs(root.path(), "fussy").expect("inputs"),
            [b"y", b"x"]
        );
    }
}
