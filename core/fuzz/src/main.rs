//! `larik-fuzz`: runs the fuzz targets for as long as asked, the long version of what the
//! tests run for a few thousand cases. Each target runs its saved inputs, then mutated
//! ones until its time or case budget is spent; targets run side by side, one per core.
//! Crashing inputs are saved under `core/fuzz/found/<target>/`; the exit status is 1 when
//! any target crashed.
//!
//! ```sh
//! cargo run -p larik-fuzz --profile fuzz -- --seconds 300            # every target, 5 min each
//! cargo run -p larik-fuzz --profile fuzz -- provider_anthropic --seconds 3600
//! ```

use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use larik_fuzz::Target;
use larik_fuzz::engine::{self, Budget, Report};

const USAGE: &str =
    "usage: larik-fuzz [--list] [--seconds N] [--cases N] [--seed N] [--jobs N] [TARGET...]";

struct Options {
    targets: Vec<&'static Target>,
    seconds: u64,
    cases: u64,
    seed: Option<u64>,
    jobs: usize,
}

fn main() -> ExitCode {
    match parse(std::env::args().skip(1).collect()) {
        Ok(Some(options)) => run(options),
        Ok(None) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("larik-fuzz: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The options, or `None` when the arguments asked only for the list of targets.
fn parse(args: Vec<String>) -> Result<Option<Options>, String> {
    let mut options = Options {
        targets: Vec::new(),
        seconds: 60,
        cases: u64::MAX,
        seed: None,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| -> Result<u64, String> {
            args.next()
                .and_then(|value| value.parse().ok())
                .ok_or_else(|| format!("{flag} takes a number"))
        };
        match arg.as_str() {
            "--list" => {
                for target in larik_fuzz::all() {
                    println!("{}", target.name);
                }
                return Ok(None);
            }
            "--seconds" => options.seconds = number("--seconds")?,
            "--cases" => options.cases = number("--cases")?,
            "--seed" => options.seed = Some(number("--seed")?),
            "--jobs" => options.jobs = number("--jobs")?.max(1) as usize,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            name => match larik_fuzz::find(name) {
                Some(target) => options.targets.push(target),
                None => return Err(format!("no target is called {name} (see --list)")),
            },
        }
    }
    if options.targets.is_empty() {
        options.targets = larik_fuzz::all().collect();
    }
    Ok(Some(options))
}

fn run(options: Options) -> ExitCode {
    let found = larik_fuzz::crate_dir().join("found");
    let queue = Mutex::new(options.targets.clone());
    let results: Mutex<Vec<(&'static str, Result<Report, String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.min(options.targets.len()) {
            scope.spawn(|| {
                while let Some(target) = queue.lock().ok().and_then(|mut queue| queue.pop()) {
                    let outcome = engine::saved_inputs(&larik_fuzz::crate_dir(), target.name)
                        .map_err(|error| error.to_string())
                        .map(|inputs| {
                            let budget = Budget {
                                cases: options.cases,
                                time: Duration::from_secs(options.seconds),
                                seed: options
                                    .seed
                                    .unwrap_or_else(|| engine::name_seed(target.name)),
                            };
                            engine::explore(target, &inputs, budget, &found)
                        });
                    print_line(target.name, &outcome);
                    if let Ok(mut results) = results.lock() {
                        results.push((target.name, outcome));
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let (mut cases, mut crashes, mut failed) = (0, 0, false);
    for (name, outcome) in &results {
        match outcome {
            Ok(report) => {
                cases += report.cases + report.saved_inputs as u64;
                crashes += report.crashes.len();
                if !report.crashes.is_empty() {
                    failed = true;
                    eprint!("{}", report.describe_crashes(name));
                }
            }
            Err(_) => failed = true,
        }
    }
    println!(
        "{} targets, {cases} cases, {crashes} crash(es)",
        results.len()
    );
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_line(name: &str, outcome: &Result<Report, String>) {
    match outcome {
        Ok(report) => {
            let seconds = report.elapsed.as_secs_f64().max(1e-9);
            println!(
                "{name}: {} saved inputs, {} mutated cases in {:.1} s ({:.0}/s), {} crash(es)",
                report.saved_inputs,
                report.cases,
                seconds,
                report.cases as f64 / seconds,
                report.crashes.len()
            );
        }
        Err(error) => println!("{name}: {error}"),
    }
}
