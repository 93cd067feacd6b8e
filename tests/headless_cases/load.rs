//! `larik -p` with outsized tool traffic: a command printing 100 MB, and a 50 MB file read
//! in pages and edited in its middle. The model must get a cut result with a note saying
//! so, the file must come out right byte for byte, and Larik's peak memory (`ru_maxrss` of
//! the process, from `wait4`) must stay far below what holding the data whole would take.

use std::fs::File;
use std::process::ExitStatus;

use larik_testkit::turn;
use serde_json::json;

use super::Harness;

/// What a measured run left behind.
struct Measured {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    /// The process's peak resident memory, in KiB.
    peak_kib: u64,
}

/// Runs `larik ARGS` to its end and reads its own peak memory from `wait4`, which reports
/// that one child (and what it waited for), not every child the test binary ever had.
async fn run_measured(harness: &Harness, args: &[&str]) -> Measured {
    let logs = tempfile::tempdir().expect("log dir");
    let (out_path, err_path) = (logs.path().join("stdout"), logs.path().join("stderr"));
    let mut command = harness.larik().into_std();
    command
        .args(args)
        .stdout(File::create(&out_path).expect("stdout file"))
        .stderr(File::create(&err_path).expect("stderr file"));
    let mut child = command.spawn().expect("larik starts");
    let pid = libc::pid_t::try_from(child.id()).expect("a pid fits pid_t");
    let waited = tokio::task::spawn_blocking(move || wait_with_peak(pid));
    let (status, peak_kib) =
        match tokio::time::timeout(std::time::Duration::from_secs(180), waited).await {
            Ok(waited) => waited.expect("the wait finishes"),
            Err(_) => {
                // Not reaped yet (the wait is still blocked), so the pid is still ours.
                let _ = child.kill();
                panic!("larik did not finish within 180 s");
            }
        };
    // `child` was reaped by `wait4` above; dropping it neither waits nor kills.
    drop(child);
    eprintln!("larik {args:?}: peak resident memory {} KiB", peak_kib);
    harness.server.assert_no_violations();
    Measured {
        status: std::os::unix::process::ExitStatusExt::from_raw(status),
        stdout: std::fs::read_to_string(&out_path).expect("stdout"),
        stderr: std::fs::read_to_string(&err_path).expect("stderr"),
        peak_kib: u64::try_from(peak_kib).expect("a peak is not negative"),
    }
}

/// Waits for child `pid` and returns its wait status and peak resident memory (KiB).
#[allow(unsafe_code)]
fn wait_with_peak(pid: libc::pid_t) -> (i32, libc::c_long) {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct, and wait4 only
    // writes the two locals it is given; `pid` is our own child, not yet waited for.
    let (reaped, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let reaped = libc::wait4(pid, &mut status, 0, &mut usage);
        (reaped, usage)
    };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    (status, usage.ru_maxrss)
}

const MIB: u64 = 1024;

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_megabytes_of_command_output_reach_the_model_cut() {
    let harness = Harness::new().await;
    harness.server.enqueue(turn().tool_call(
        "noise",
        "bash",
        json!({"command": "head -c 100000000 /dev/zero | tr '\\0' x"}),
    ));
    harness.server.enqueue(turn().text("That was loud."));
    let run = run_measured(
        &harness,
        &["-p", "make noise", "--permission-mode", "bypassPermissions"],
    )
    .await;
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(run.stdout, "That was loud.\n");

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 2);
    let result = requests[1].tool_result_text("noise").expect("the result");
    let limit = larik_tools::ToolLimits::default().output_chars;
    let omitted = 100_000_000 - limit;
    let (head, tail) = result
        .split_once(&format!("\n[… {omitted} characters omitted …]\n"))
        .unwrap_or_else(|| {
            panic!(
                "the result keeps its head and tail around a note: {}…",
                result.chars().take(300).collect::<String>()
            )
        });
    assert_eq!(head, "x".repeat(limit / 2));
    assert_eq!(tail, "x".repeat(limit - limit / 2));

    // The session keeps the cut result, not the output.
    let file = &harness.session_files()[0];
    let size = std::fs::metadata(file).expect("session file").len();
    assert!(size < 1_000_000, "the session file is {size} bytes");
    assert!(
        run.peak_kib < 200 * MIB,
        "larik's peak memory was {} MiB",
        run.peak_kib / MIB
    );
}

/// Lines of the 50 MB file; every line is 100 bytes.
const LINES: usize = 500_000;
/// The line the model edits (1-based), in the middle.
const TARGET: usize = 250_000;

fn line(number: usize) -> String {
    let text = format!("line {number:07}: the quick brown fox jumps over the lazy dog");
    format!("{text:.<99}\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifty_megabyte_file_is_read_in_pages_and_edited_in_its_middle() {
    let harness = Harness::new().await;
    let path = harness.cwd().join("big.txt");
    let original: String = (1..=LINES).map(line).collect();
    assert_eq!(original.len(), 50_000_000);
    std::fs::write(&path, &original).expect("big file");
    let old_line = line(TARGET);
    let new_line = format!("line {TARGET:07}: EDITED by the model\n");
    let expected = original.replacen(&old_line, &new_line, 1);
    drop(original);

    // Whole, then a window too long for one result, then the edit.
    harness
        .server
        .enqueue(turn().tool_call("whole", "read", json!({"file_path": "big.txt"})));
    harness.server.enqueue(turn().tool_call(
        "page",
        "read",
        json!({"file_path": "big.txt", "offset": TARGET - 5, "limit": 100_000}),
    ));
    harness.server.enqueue(turn().tool_call(
        "change",
        "edit",
        json!({"file_path": "big.txt", "old_string": old_line, "new_string": new_line}),
    ));
    harness
        .server
        .enqueue(turn().text("Edited the middle line."));
    let run = run_measured(
        &harness,
        &["-p", "edit the middle", "--permission-mode", "acceptEdits"],
    )
    .await;
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(run.stdout, "Edited the middle line.\n");

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 4);
    let whole = requests[1].tool_result_text("whole").expect("whole");
    assert!(
        whole.contains("50000000 bytes") && whole.contains("Pass offset and limit"),
        "reading it whole is refused with a way on: {whole}"
    );
    let page = requests[2].tool_result_text("page").expect("page");
    let limit = larik_tools::ToolLimits::default().output_chars;
    assert!(page.chars().count() < limit + 200, "the page is cut");
    assert!(
        page.starts_with(&format!("{:>6}\t{}", TARGET - 5, line(TARGET - 5))),
        "the page starts at its offset: {}",
        page.chars().take(200).collect::<String>()
    );
    assert!(page.contains(&format!("{TARGET:>6}\t{}", line(TARGET))));
    assert!(
        page.contains("output limit of 30000 characters reached")
            && page.contains("use offset to read on (offset="),
        "the page ends with a note: {}",
        page.chars()
            .skip(page.chars().count().saturating_sub(300))
            .collect::<String>()
    );
    let edit = requests[3].tool_result_text("change").expect("edit");
    assert!(
        edit.contains(&format!("first at line {TARGET}")),
        "the edit landed: {edit}"
    );

    let after = std::fs::read(&path).expect("the edited file");
    let differs = after
        .iter()
        .zip(expected.as_bytes())
        .position(|(a, b)| a != b);
    assert!(
        after.len() == expected.len() && differs.is_none(),
        "the file differs from the expected one (lengths {} and {}, first difference at {differs:?})",
        after.len(),
        expected.len()
    );
    // The old and the new text are held once each (about 100 MB with the process's own
    // 40 MB); four copies, as before the edit tools moved their texts, would pass 200 MB.
    assert!(
        run.peak_kib < 200 * MIB,
        "larik's peak memory was {} MiB",
        run.peak_kib / MIB
    );
}
