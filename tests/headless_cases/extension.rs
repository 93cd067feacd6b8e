//! An extension registered once, through `larik -p`: its hook sees every loop point and
//! denies a call, its prompt command expands, its prompt section reaches the model.

use super::recording::{self, assert_saw_every_point};
use super::{Harness, stderr, stdout};

#[tokio::test(flavor = "multi_thread")]
async fn a_test_extension_takes_part_in_a_headless_run() {
    let mut harness = Harness::new().await;
    let log = harness.data.path().join("points.jsonl");
    harness.program = recording::program();
    harness.extra_env = recording::env(&log);
    let readme = harness.cwd().join("README.md").display().to_string();
    recording::enqueue_turns(&harness.server, &readme);

    let greeted = harness.run(&["-p", "/greet Ada"]).await;
    assert!(greeted.status.success(), "{}", stderr(&greeted));
    assert!(
        stdout(&greeted).contains("Hello, Ada."),
        "{}",
        stdout(&greeted)
    );
    let compacted = harness.run(&["-p", "/compact", "-c"]).await;
    assert!(compacted.status.success(), "{}", stderr(&compacted));

    let requests = recording::request_bodies(&harness.server);
    assert_saw_every_point(&log, &harness.cwd(), &requests);
}
