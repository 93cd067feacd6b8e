//! The soak benchmark: a 1,000-turn session in one `larik acp` process (the release
//! binary on pipes, raw JSON-RPC lines) against the fake model server in this process,
//! then that session resumed headless.
//!
//! One session, 1,000 prompts one after another, each answered with a short text; every
//! tenth turn reads a file first (a tool call, then the answer). The fake model answers
//! each request 20 ms after it arrived, as a model takes its time, so Larik waits equally
//! long at every turn although the fake server's own parsing and checks grow with the
//! conversation. Measures the resident memory (`VmRSS`) of the `larik` process after
//! turns 100, 500 and 1,000, the round trip of each turn (`session/prompt` written → its
//! response read), the same less the answer time, its first part (`session/prompt`
//! written → the turn's first model request arriving at the fake server) and the CPU time
//! `larik` used on each turn (its threads' `schedstat`), compared between turns 1–100 and
//! 901–1,000; then the session file read back in this process (`SessionStore::load`) and
//! `larik --resume ID -p "…"` from spawn to its first model request and to its exit;
//! then, in a fresh process, 100-turn sessions whose model answers at once, after 5 ms
//! and after 20 ms, which show what the answer time alone does to Larik's CPU per turn.
//! The default configuration: the command sandbox and language servers on. Run with
//! `cargo bench -p larik-server --bench soak`; it prints markdown tables, then one line
//! per target saying whether it was met.

#[path = "../../tests/support/soak.rs"]
mod soak;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use larik_testkit::bench::{Samples, at_most, ms, within};
use larik_testkit::{FakeModelServer, turn};
use serde_json::json;
use soak::{Acp, Arrivals, SoakRun};

/// Turns of the session.
const TURNS: usize = 1_000;
/// The window compared at each end of the session.
const WINDOW: usize = 100;
/// How long after each request's arrival the fake model answers: longer than the fake
/// server's own work on the longest request, so that what Larik waits for is the same
/// at every turn.
const ANSWER_TIME: Duration = Duration::from_millis(20);
/// The answer times of the short sessions that show Larik's CPU per turn against how
/// long it waits alone.
const WAITS: [Duration; 3] = [Duration::ZERO, Duration::from_millis(5), ANSWER_TIME];
/// Resumes (and loads) of the finished session.
const RESUMES: usize = 20;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(bench());
}

async fn bench() {
    let server = FakeModelServer::start().await;
    // The requests grow to the whole conversation; copies of 1,100 of them would cost this
    // process gigabytes and most of each turn's time. The observer sees what is needed.
    server.forget_requests();
    server.answer_after(ANSWER_TIME);
    let arrivals = Arrivals::watch(&server);
    let project = tempfile::tempdir().expect("project");
    let data = tempfile::tempdir().expect("data");
    let cwd = project.path().canonicalize().expect("canonical project");
    std::fs::write(cwd.join("README.md"), "# Soak\nA small project.\n").expect("README");
    std::fs::write(cwd.join(soak::NOTES), soak::NOTES_TEXT).expect("notes");
    let env = vec![
        ("HOME".to_string(), data.path().display().to_string()),
        (
            "XDG_DATA_HOME".to_string(),
            data.path().join("share").display().to_string(),
        ),
        ("ANTHROPIC_API_KEY".to_string(), "bench-key".to_string()),
        (
            "ANTHROPIC_BASE_URL".to_string(),
            server.anthropic_base_url(),
        ),
        (
            "LARIK_MODEL".to_string(),
            "anthropic/claude-sonnet-4-5".to_string(),
        ),
    ];
    let program = PathBuf::from(env!("CARGO_BIN_EXE_larik"));

    // The long session's process, and the reference: a second process whose session is
    // replaced by a fresh one every WINDOW turns, prompted alternately with the long one,
    // so that both meet the same state of the machine.
    let mut acp = Acp::spawn(&program, &cwd, &env);
    let mut fresh = Acp::spawn(&program, &cwd, &env);
    let pid = acp.pid();
    let session_id = acp.open_session(&cwd).await;
    let mut fresh_session = fresh.open_session(&cwd).await;
    let rss_start = soak::status_kib(pid, "VmRSS");
    let started = Instant::now();
    let mut run = SoakRun::default();
    let mut reference = SoakRun::default();
    let sample_after = [WINDOW, TURNS / 2, TURNS - WINDOW, TURNS];
    for n in 1..=TURNS {
        let long_turn = soak::run_turns(
            &mut acp,
            &server,
            &arrivals,
            &session_id,
            n..=n,
            &sample_after,
            Some(ANSWER_TIME),
        )
        .await;
        run.append(long_turn);
        // Each fresh session numbers its turns from its own multiple of 10,000, so its
        // prompts are its own (the fake server tells conversations apart by their first
        // message) and every tenth turn still reads the file.
        let fresh_turn = (n - 1) % WINDOW + 1;
        let fresh_number = (n - 1) / WINDOW * 10_000 + 10_000 + fresh_turn;
        if fresh_turn == 1 && n > 1 {
            let closed = fresh
                .call("session/close", json!({"sessionId": fresh_session}))
                .await;
            assert!(closed.is_object(), "session/close: {closed}");
            fresh_session = fresh.new_session(&cwd).await;
        }
        let reference_turn = soak::run_turns(
            &mut fresh,
            &server,
            &arrivals,
            &fresh_session,
            fresh_number..=fresh_number,
            &[],
            Some(ANSWER_TIME),
        )
        .await;
        reference.append(reference_turn);
    }
    let soak_time = started.elapsed();
    let peak = soak::status_kib(pid, "VmHWM");
    acp.finish().await;
    fresh.finish().await;
    let rss = |turn: usize| {
        run.samples
            .iter()
            .find(|sample| sample.turn == turn)
            .expect("a sample after that turn")
            .rss_kib
    };
    // Where the fake server's own work outlasted the answer time, it delayed the answer.
    let longest_server_time = arrivals.longest_server_time();
    let delayed = arrivals.server_time_over(ANSWER_TIME);

    // The session file, read back in this process.
    let store = larik_session::SessionStore::new(data.path().join("share/larik"));
    let file = store.find(&cwd, &session_id).expect("the session file");
    let file_bytes = std::fs::metadata(&file).expect("session file").len();
    let mut load = Samples::new();
    for _ in 0..RESUMES {
        let started = Instant::now();
        let loaded = store.load(&file).expect("the session loads");
        load.push(started.elapsed());
        assert!(loaded.messages.len() >= soak::messages_after(TURNS));
    }

    // `larik --resume ID -p`, spawn → first model request, spawn → exit.
    let mut to_request = Samples::new();
    let mut to_exit = Samples::new();
    for run in 0..RESUMES {
        server.enqueue(turn().text("Resumed.").usage(10, 1));
        let before = arrivals.len();
        let started = Instant::now();
        let output = resume(&program, &cwd, &env, &session_id).await;
        to_exit.push(started.elapsed());
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&output.stdout), "Resumed.\n");
        assert_eq!(arrivals.len(), before + 1, "one request per resume");
        to_request.push(arrivals.at(before).saturating_duration_since(started));
        assert_eq!(
            arrivals.messages(before),
            soak::messages_after(TURNS) + 2 * run + 1,
            "the resumed request carries the whole session"
        );
    }

    // Larik's CPU per turn against the model's answer time alone: short sessions in a
    // fresh process, one per answer time.
    let mut by_wait = Vec::new();
    let mut acp = Acp::spawn(&program, &cwd, &env);
    acp.initialize().await;
    for answer_time in WAITS {
        server.answer_after(answer_time);
        let session_id = acp.new_session(&cwd).await;
        let run = soak::run_turns(
            &mut acp,
            &server,
            &arrivals,
            &session_id,
            1..=WINDOW,
            &[],
            Some(answer_time),
        )
        .await;
        by_wait.push((answer_time, run));
    }
    acp.finish().await;
    server.assert_no_violations();

    let window = |samples: &[Duration]| {
        let mut window = Samples::new();
        for sample in samples {
            window.push(*sample);
        }
        window
    };
    let late_turns = TURNS - WINDOW..;
    let early = window(&run.turn_times[..WINDOW]);
    let late = window(&run.turn_times[late_turns.clone()]);
    let early_own = window(&run.without_server[..WINDOW]);
    let late_own = window(&run.without_server[late_turns.clone()]);
    let beside_own = window(&reference.without_server[late_turns.clone()]);
    let early_request = window(&run.to_request[..WINDOW]);
    let late_request = window(&run.to_request[late_turns.clone()]);
    let beside_request = window(&reference.to_request[late_turns.clone()]);
    let early_cpu = window(&run.cpu[..WINDOW]);
    let late_cpu = window(&run.cpu[late_turns.clone()]);
    let beside_cpu = window(&reference.cpu[late_turns]);
    let mb = |kib: u64| kib as f64 / 1024.0;
    let growth = |from: f64, to: f64| (to - from) / from * 100.0;
    let time_growth = |from: Duration, to: Duration| growth(from.as_secs_f64(), to.as_secs_f64());
    let answer = ANSWER_TIME.as_millis();
    const BESIDE: &str = "a fresh session's turns 1–100, alongside turns 901–1,000";

    println!("| measurement | runs | median | p90 | max |");
    println!("|---|---|---|---|---|");
    println!("{}", early.row("turn round trip, turns 1–100"));
    println!("{}", late.row("turn round trip, turns 901–1,000"));
    println!(
        "{}",
        early_own.row(&format!(
            "— less the model's answer time ({answer} ms a request), turns 1–100"
        ))
    );
    println!(
        "{}",
        late_own.row(&format!(
            "— less the model's answer time ({answer} ms a request), turns 901–1,000"
        ))
    );
    println!("{}", beside_own.row(&format!("— the same, {BESIDE}")));
    println!(
        "{}",
        early_request.row("— `session/prompt` → first model request, turns 1–100")
    );
    println!(
        "{}",
        late_request.row("— `session/prompt` → first model request, turns 901–1,000")
    );
    println!("{}", beside_request.row(&format!("— the same, {BESIDE}")));
    println!(
        "{}",
        early_cpu.row("CPU time of `larik` per turn, turns 1–100")
    );
    println!(
        "{}",
        late_cpu.row("CPU time of `larik` per turn, turns 901–1,000")
    );
    println!("{}", beside_cpu.row(&format!("— the same, {BESIDE}")));
    println!("{}", load.row("session file loaded (`SessionStore::load`)"));
    println!(
        "{}",
        to_request.row("`larik --resume ID -p` spawn → first model request")
    );
    println!("{}", to_exit.row("`larik --resume ID -p` spawn → exit"));
    println!();
    println!("| memory of `larik acp` | VmRSS |");
    println!("|---|---|");
    println!("| after `session/new` | {:.1} MB |", mb(rss_start));
    for turn in sample_after {
        println!("| after turn {turn} | {:.1} MB |", mb(rss(turn)));
    }
    println!("| peak (`VmHWM`) | {:.1} MB |", mb(peak));
    println!();
    println!(
        "| model's answer time | turns | round trip (median) | less the answer time (median) | CPU time of `larik` per turn (median) |"
    );
    println!("|---|---|---|---|---|");
    for (answer_time, run) in &by_wait {
        println!(
            "| {} ms | {WINDOW} | {} | {} | {} |",
            answer_time.as_millis(),
            ms(window(&run.turn_times).median()),
            ms(window(&run.without_server).median()),
            ms(window(&run.cpu).median()),
        );
    }
    println!();
    println!(
        "{TURNS} turns ({} model requests), each followed by a turn of the fresh sessions, in {:.1} s; the session file holds {} messages in {} bytes; the last turn's request carried {} messages; the fake server's longest time on one request: {}.",
        soak::requests_in(TURNS),
        soak_time.as_secs_f64(),
        soak::messages_after(TURNS),
        file_bytes,
        soak::messages_after(TURNS) - 1,
        ms(longest_server_time),
    );
    at_most(
        "model requests whose answer the fake server's own work delayed past the answer time",
        delayed as f64 * 100.0 / (2 * soak::requests_in(TURNS)) as f64,
        1.0,
        "%",
    );
    at_most(
        "VmRSS growth from turn 100 to turn 1,000",
        growth(mb(rss(WINDOW)), mb(rss(TURNS))),
        10.0,
        "%",
    );
    println!(
        "turns 901–1,000 against turns 1–100 of the same session (the machine's drift over the run included): round trip less the answer time {:+.1}%, CPU per turn {:+.1}%",
        time_growth(early_own.median(), late_own.median()),
        time_growth(early_cpu.median(), late_cpu.median()),
    );
    at_most(
        "turns 901–1,000 against a fresh session's alongside, growth of the round trip less the model's answer time (medians)",
        time_growth(beside_own.median(), late_own.median()),
        10.0,
        "%",
    );
    at_most(
        "turns 901–1,000 against a fresh session's alongside, growth of Larik's CPU time per turn (medians)",
        time_growth(beside_cpu.median(), late_cpu.median()),
        10.0,
        "%",
    );
    within(
        "`larik --resume` spawn → first model request (median)",
        to_request.median(),
        200.0,
    );
    within("session file load (median)", load.median(), 200.0);
}

/// Runs `larik --resume ID -p "one more"` in `cwd` to its end.
async fn resume(
    program: &Path,
    cwd: &Path,
    env: &[(String, String)],
    session_id: &str,
) -> std::process::Output {
    let child = tokio::process::Command::new(program)
        .args(["--resume", session_id, "-p", "one more"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().cloned())
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("larik starts");
    tokio::time::timeout(soak::WAIT, child.wait_with_output())
        .await
        .expect("the resumed run finishes")
        .expect("larik runs")
}
