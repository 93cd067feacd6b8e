//! Benchmark of the `grep` and `glob` tools on a big repository against ripgrep, in one
//! run: a generated git repository of 200,000 files, about 25,000 of them in
//! `.gitignore`d build folders (see `big_repo/tree.rs`; made once and kept under the cargo
//! target directory). Three searches, each ours called in-process through the `Tool` trait
//! beside the `rg` process doing the same search: `grep` files_with_matches for a rare
//! token against `rg -l`, `grep` content mode for a common pattern with `head_limit`
//! against `rg -n`, and `glob` `**/*.rs` against `rg --files --type-add 'glob:*.rs' -t
//! glob`, the same search (for context also `rg --files -g '*.rs'`, whose `-g` overrides
//! the ignore rules and so checks no file against them, and `rg --files -g '*.rs' --sortr
//! modified`, which like glob reads every match's modification time to list the newest
//! first). Every run checks
//! that both found the same files (and lines) and stops loudly if not. After a warm-up of
//! each, the searches alternate for several rounds; the medians are compared with the
//! target (each within 1.3× of rg). The peak memory a `grep` call adds is measured in a
//! child process of this binary. Run with `cargo bench -p larik-tools --bench big_repo`;
//! it needs `rg` (Debian package `ripgrep`). Words after `--` keep only the searches whose
//! names contain one of them (`-- glob`).

#[path = "big_repo/tree.rs"]
mod tree;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use larik_protocol::transcript::result_text;
use larik_sandbox::Sandbox;
use larik_testkit::bench::{Samples, at_most, ms};
use larik_tools::{DiskFiles, GlobTool, GrepTool, ReadTracker, Tool, ToolContext, ToolLimits};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 10;
/// The content search keeps this many lines.
const HEAD_LIMIT: usize = 100;
/// How much slower than ripgrep each search may be.
const TARGET_RATIO: f64 = 1.3;
/// The argument that makes this binary measure one search's peak memory and exit.
const PEAK_RSS_OF: &str = "--peak-rss-of";

/// One search, ours and ripgrep's, and how to check that they found the same.
struct Search {
    name: &'static str,
    tool: &'static dyn Tool,
    input: Value,
    rg_args: Vec<&'static str>,
    check: fn(ours: &str, rg: &str, root: &Path) -> Result<(), String>,
    /// Other ripgrep commands listing the same files, timed beside for context (no
    /// target).
    rg_context: Vec<Vec<&'static str>>,
}

fn searches() -> Vec<Search> {
    vec![
        Search {
            name: "grep files_with_matches, rare token",
            tool: &GrepTool,
            input: json!({"pattern": tree::RARE_TOKEN}),
            rg_args: vec!["-l", tree::RARE_TOKEN],
            check: same_files_with_matches,
            rg_context: Vec::new(),
        },
        Search {
            name: "grep content, common pattern, head_limit 100",
            tool: &GrepTool,
            input: json!({"pattern": tree::COMMON_PATTERN, "output_mode": "content", "head_limit": HEAD_LIMIT}),
            rg_args: vec!["-n", tree::COMMON_PATTERN],
            check: same_first_lines,
            rg_context: Vec::new(),
        },
        Search {
            name: "glob `**/*.rs`",
            tool: &GlobTool,
            input: json!({"pattern": "**/*.rs"}),
            // The same search: every file's path checked against the ignore rules, then
            // its name against the glob (a file type applies after the ignore rules).
            rg_args: vec!["--files", "--type-add", "glob:*.rs", "-t", "glob"],
            check: same_newest_files,
            rg_context: vec![
                // `-g` overrides the ignore rules: a matching file is listed without
                // checking them (even one a `.gitignore` names, unless its directory is
                // ignored) and any other file is dropped unchecked, so rg does less work.
                vec!["--files", "-g", "*.rs"],
                // Newest first needs every match's modification time, as glob reads it;
                // rg sorts on one thread.
                vec!["--files", "-g", "*.rs", "--sortr", "modified"],
            ],
        },
    ]
}

fn context(root: &Path) -> ToolContext {
    ToolContext {
        cwd: root.to_path_buf(),
        cancel: CancellationToken::new(),
        sandbox: Arc::new(Sandbox::unconfined(root)),
        limits: ToolLimits::default(),
        reads: Arc::new(ReadTracker::default()),
        hidden: None,
        files: Arc::new(DiskFiles),
        feedback: None,
        checkpoint: None,
        call_id: String::new(),
        agent: None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Our search's text; a failed call stops the benchmark.
fn run_ours(runtime: &tokio::runtime::Runtime, search: &Search, ctx: &ToolContext) -> String {
    let output = runtime.block_on(search.tool.run(search.input.clone(), ctx));
    let text = result_text(&output.content);
    assert!(!output.is_error, "{} failed: {text}", search.name);
    text
}

/// ripgrep's output for the same search.
fn run_rg(args: &[&str], root: &Path) -> String {
    let output = Command::new("rg")
        .args(args)
        .current_dir(root)
        .env_remove("RIPGREP_CONFIG_PATH")
        .output()
        .expect("rg runs");
    assert!(
        output.status.success(),
        "rg {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("rg prints UTF-8 here")
}

fn require_ripgrep() {
    match Command::new("rg").arg("--version").output() {
        Ok(output) if output.status.success() => {
            let version = String::from_utf8_lossy(&output.stdout);
            println!("ripgrep: {}", version.lines().next().unwrap_or_default());
        }
        _ => panic!(
            "ripgrep (`rg`) is not installed or does not run; this benchmark compares with it. \
             Install it (Debian: `apt-get install -y ripgrep`) and run again."
        ),
    }
}

/// The result lines of our output: everything before the closing notes, which start
/// with `(`.
fn result_lines(ours: &str) -> Vec<&str> {
    ours.lines()
        .take_while(|line| !line.starts_with('(') && !line.is_empty())
        .collect()
}

/// A description of how two sets differ, or `None` when they are equal.
fn difference(ours: &BTreeSet<&str>, rg: &BTreeSet<&str>) -> Option<String> {
    if ours == rg {
        return None;
    }
    let only_ours: Vec<_> = ours.difference(rg).take(10).collect();
    let only_rg: Vec<_> = rg.difference(ours).take(10).collect();
    Some(format!(
        "ours {} against rg {}; only ours (first 10): {only_ours:?}; only rg's (first 10): {only_rg:?}",
        ours.len(),
        rg.len()
    ))
}

fn same_files_with_matches(ours: &str, rg: &str, _root: &Path) -> Result<(), String> {
    let mut lines = result_lines(ours);
    let header = if lines.is_empty() {
        ""
    } else {
        lines.remove(0)
    };
    if ours.contains("\n(") {
        return Err(format!("our output has notes, so it is not whole: {ours}"));
    }
    let ours: BTreeSet<&str> = lines.iter().copied().collect();
    let rg: BTreeSet<&str> = rg.lines().collect();
    if header != format!("Found {} files", ours.len()) {
        return Err(format!("unexpected header `{header}`"));
    }
    if rg.len() < 100 {
        return Err(format!("only {} files match; the tree is wrong", rg.len()));
    }
    difference(&ours, &rg).map_or(Ok(()), Err)
}

/// `path:line:text` split into its path and line number.
fn path_and_line(line: &str) -> Option<(&Path, u64)> {
    let mut parts = line.splitn(3, ':');
    let path = parts.next()?;
    let number = parts.next()?.parse().ok()?;
    Some((Path::new(path), number))
}

/// Ours must be rg's lines in path order (then line order), cut at `head_limit`.
fn same_first_lines(ours: &str, rg: &str, _root: &Path) -> Result<(), String> {
    let lines = result_lines(ours);
    if !ours.contains(&format!("(head_limit {HEAD_LIMIT} reached")) {
        return Err(format!("no head_limit note in: {ours}"));
    }
    let mut expected: Vec<((&Path, u64), &str)> = Vec::new();
    for line in rg.lines() {
        let key = path_and_line(line).ok_or_else(|| format!("unexpected rg line `{line}`"))?;
        expected.push((key, line));
    }
    if expected.len() < 10 * HEAD_LIMIT {
        return Err(format!(
            "only {} lines match; the tree is wrong",
            expected.len()
        ));
    }
    expected.sort();
    let expected: Vec<&str> = expected
        .iter()
        .take(HEAD_LIMIT)
        .map(|(_, line)| *line)
        .collect();
    if lines == expected {
        return Ok(());
    }
    let first = lines.iter().zip(&expected).position(|(a, b)| a != b);
    Err(format!(
        "ours has {} lines, rg's first {} differ at {first:?}: ours {:?}, rg {:?}",
        lines.len(),
        expected.len(),
        first.and_then(|at| lines.get(at)),
        first.and_then(|at| expected.get(at))
    ))
}

/// Ours must count rg's files and show the 100 newest of them, newest first, ties by path.
fn same_newest_files(ours: &str, rg: &str, root: &Path) -> Result<(), String> {
    let lines = result_lines(ours);
    let total: usize = ours
        .lines()
        .find_map(|line| {
            line.strip_prefix("(Showing the 100 most recently modified of ")
                .and_then(|rest| rest.split(' ').next())
                .and_then(|count| count.parse().ok())
        })
        .ok_or_else(|| format!("no count note in our output: {ours}"))?;
    let rg_files: Vec<&str> = rg.lines().collect();
    if total != rg_files.len() {
        return Err(format!(
            "ours counts {total} files, rg lists {}",
            rg_files.len()
        ));
    }
    let mut expected: Vec<(SystemTime, &str)> = rg_files
        .iter()
        .map(|path| {
            let modified = std::fs::metadata(root.join(path))
                .and_then(|meta| meta.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            (modified, *path)
        })
        .collect();
    expected.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let expected: Vec<&str> = expected.iter().take(100).map(|(_, path)| *path).collect();
    if lines == expected {
        Ok(())
    } else {
        Err(format!(
            "the 100 newest differ: ours {:?}…, expected {:?}…",
            &lines[..lines.len().min(5)],
            &expected[..expected.len().min(5)]
        ))
    }
}

/// One line of `/proc/self/status` in kB.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// In the child: runs search `index` once on `root` and prints the resident memory before
/// the call and the process's peak after it, in kB.
fn measure_peak(index: usize, root: &Path) {
    let runtime = runtime();
    let ctx = context(root);
    let search = &searches()[index];
    let before = status_kb("VmRSS:");
    run_ours(&runtime, search, &ctx);
    let peak = status_kb("VmHWM:");
    println!("{before} {peak}");
}

/// Our call's peak memory growth and our process's peak, in kB, from a child process.
fn our_peak(index: usize, root: &Path) -> (u64, u64) {
    let output = Command::new(std::env::current_exe().expect("this binary"))
        .arg(PEAK_RSS_OF)
        .arg(index.to_string())
        .arg(root)
        .output()
        .expect("the child runs");
    assert!(
        output.status.success(),
        "the peak memory child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let figures: Vec<u64> = text
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    match figures[..] {
        [before, peak] => (peak.saturating_sub(before), peak),
        _ => panic!("unexpected child output: {text}"),
    }
}

/// ripgrep's peak resident memory in kB, through GNU time when it is installed.
fn rg_peak(args: &[&str], root: &Path) -> Option<u64> {
    let output = Command::new("/usr/bin/time")
        .args(["-f", "%M", "rg"])
        .args(args)
        .current_dir(root)
        .env_remove("RIPGREP_CONFIG_PATH")
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == PEAK_RSS_OF) {
        let index = args[at + 1].parse().expect("a search index");
        measure_peak(index, Path::new(&args[at + 2]));
        return;
    }
    require_ripgrep();
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("big_repo");
    tree::ensure(&root);
    let runtime = runtime();
    let ctx = context(&root);
    // Words given after `--` (cargo adds `--bench`) keep only the searches they name.
    let wanted: Vec<&String> = args[1..]
        .iter()
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let searches: Vec<(usize, Search)> = searches()
        .into_iter()
        .enumerate()
        .filter(|(_, search)| {
            wanted.is_empty()
                || wanted
                    .iter()
                    .any(|word| search.name.contains(word.as_str()))
        })
        .collect();
    let check = |search: &Search, ours: &str, rg: &str| {
        if let Err(problem) = (search.check)(ours, rg, &root) {
            panic!("{}: results differ from rg's: {problem}", search.name);
        }
    };

    // Warm the page cache, then alternate, so drift on the machine touches both alike.
    for (_, search) in &searches {
        let ours = run_ours(&runtime, search, &ctx);
        let rg = run_rg(&search.rg_args, &root);
        check(search, &ours, &rg);
    }
    let mut timings: Vec<(Samples, Samples)> =
        searches.iter().map(|_| Default::default()).collect();
    let mut context_samples: Vec<Vec<Samples>> = searches
        .iter()
        .map(|(_, search)| search.rg_context.iter().map(|_| Samples::new()).collect())
        .collect();
    for round in 0..ROUNDS {
        for ((search, (ours_samples, rg_samples)), context_samples) in searches
            .iter()
            .map(|(_, search)| search)
            .zip(&mut timings)
            .zip(&mut context_samples)
        {
            let started = Instant::now();
            let ours = run_ours(&runtime, search, &ctx);
            ours_samples.push(started.elapsed());
            let started = Instant::now();
            let rg = run_rg(&search.rg_args, &root);
            rg_samples.push(started.elapsed());
            check(search, &ours, &rg);
            for (args, samples) in search.rg_context.iter().zip(context_samples.iter_mut()) {
                let started = Instant::now();
                let other = run_rg(args, &root);
                samples.push(started.elapsed());
                let other: BTreeSet<&str> = other.lines().collect();
                let rg: BTreeSet<&str> = rg.lines().collect();
                if let Some(problem) = difference(&other, &rg) {
                    panic!("`rg {}` lists other files: {problem}", args.join(" "));
                }
            }
        }
        eprintln!("round {} of {ROUNDS} done", round + 1);
    }

    println!();
    println!("| search | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    for (((_, search), (ours, rg)), context_samples) in
        searches.iter().zip(&timings).zip(&context_samples)
    {
        println!("{}", ours.row(&format!("ours: {}", search.name)));
        println!(
            "{}",
            rg.row(&format!("— `rg {}`", search.rg_args.join(" ")))
        );
        for (args, samples) in search.rg_context.iter().zip(context_samples) {
            let name = format!("— `rg {}` (no target)", args.join(" "));
            println!("{}", samples.row(&name));
        }
    }
    println!();
    println!("| target | ours (median) | rg (median) | ratio | verdict |");
    println!("|---|---|---|---|---|");
    let mut verdicts = Vec::new();
    for ((_, search), (ours, rg)) in searches.iter().zip(&timings) {
        let ratio = ours.median().as_secs_f64() / rg.median().as_secs_f64();
        let met = ratio <= TARGET_RATIO;
        println!(
            "| {} within {TARGET_RATIO}× of rg | {} | {} | {ratio:.2}× | {} |",
            search.name,
            ms(ours.median()),
            ms(rg.median()),
            if met { "met" } else { "**missed**" }
        );
        verdicts.push((search.name, ratio));
    }
    println!();
    println!(
        "| peak memory | ours: growth during the call | ours: process peak | rg: process peak |"
    );
    println!("|---|---|---|---|");
    // The peak of each `grep` search (indices into the whole list, as the child reads them).
    for (index, search) in searches.iter().filter(|(index, _)| *index < 2) {
        let (growth, peak) = our_peak(*index, &root);
        let rg = rg_peak(&search.rg_args, &root).map_or("n/a (no /usr/bin/time)".into(), mb);
        println!("| {} | {} | {} | {rg} |", search.name, mb(growth), mb(peak));
    }
    println!();
    for (name, ratio) in verdicts {
        at_most(
            &format!("{name}, median against rg"),
            ratio,
            TARGET_RATIO,
            "×",
        );
    }
}
