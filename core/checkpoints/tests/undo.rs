//! Capture and undo on real files: edits, creations, permission changes, several turns,
//! turns that changed nothing, a store reopened from disk, and a store shared by threads.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use larik_checkpoints::{CaptureOutcome, CheckpointStore};

#[path = "support/common.rs"]
mod common;

use common::Fixture;

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

#[test]
fn an_edit_comes_back_with_its_exact_bytes_and_mode() {
    let fx = Fixture::new();
    let original = b"fn main() {}\n\xff\x00binary tail".to_vec();
    fx.put_with_mode("src/main.rs", &original, 0o640);
    let store = fx.open();

    fx.tool_write(&store, "1", "src/main.rs", b"first edit");
    assert_eq!(
        store
            .capture("1", &fx.path("src/main.rs"))
            .expect("second capture"),
        CaptureOutcome::AlreadySaved,
        "the absolute spelling of the same path is the same entry"
    );
    fs::write(fx.path("src/main.rs"), b"second edit").expect("second write");

    let report = store.undo_latest().expect("undo").expect("a turn");
    assert_eq!(report.turn, "1");
    assert_eq!(report.restored, paths(&["src/main.rs"]));
    assert!(report.deleted.is_empty() && report.is_complete());
    assert_eq!(fx.read("src/main.rs"), original);
    assert_eq!(fx.mode("src/main.rs"), 0o640);
    let note = report.note_for_model().expect("a note");
    assert!(note.contains("src/main.rs"), "{note}");

    assert!(store.undo_latest().expect("second undo").is_none());
    assert_eq!(
        fx.turn_dirs(),
        Vec::<String>::new(),
        "the undone turn's checkpoint is gone from disk"
    );
}

#[test]
fn undoing_a_creation_deletes_the_file_and_the_directories_it_needed() {
    let fx = Fixture::new();
    fx.put_with_mode("src/keep.rs", b"keep", 0o644);
    let store = fx.open();

    fx.tool_write(&store, "t", "src/new/deep/mod_a.rs", b"created");
    fx.tool_write(&store, "t", "top.txt", b"also created");
    let report = store.undo_latest().expect("undo").expect("a turn");

    assert_eq!(report.deleted, paths(&["top.txt", "src/new/deep/mod_a.rs"]));
    assert!(report.restored.is_empty());
    assert!(!fx.path("top.txt").exists());
    assert!(!fx.path("src/new").exists(), "empty created dirs removed");
    assert_eq!(fx.read("src/keep.rs"), b"keep", "neighbours untouched");
    assert!(fx.path("src").is_dir(), "a directory that existed stays");
}

#[test]
fn permission_changes_are_reverted_and_a_new_executable_is_removed() {
    let fx = Fixture::new();
    fx.put_with_mode("run.sh", b"#!/bin/sh\necho old\n", 0o644);
    fx.put_with_mode("locked.txt", b"read only", 0o444);
    fx.put_with_mode("setgid.bin", b"odd bits", 0o2750);
    let store = fx.open();

    fx.tool_write(&store, "1", "run.sh", b"#!/bin/sh\necho new\n");
    fs::set_permissions(fx.path("run.sh"), fs::Permissions::from_mode(0o755)).expect("chmod +x");
    store
        .capture("1", Path::new("locked.txt"))
        .expect("capture");
    fs::set_permissions(fx.path("locked.txt"), fs::Permissions::from_mode(0o600)).expect("chmod");
    fs::write(fx.path("locked.txt"), b"changed").expect("write");
    store
        .capture("1", Path::new("setgid.bin"))
        .expect("capture");
    fs::set_permissions(fx.path("setgid.bin"), fs::Permissions::from_mode(0o644)).expect("chmod");
    fx.tool_write(&store, "1", "bin/tool", b"#!/bin/sh\n");
    fs::set_permissions(fx.path("bin/tool"), fs::Permissions::from_mode(0o755)).expect("chmod");

    let report = store.undo_latest().expect("undo").expect("a turn");
    assert!(report.is_complete(), "{:?}", report.failed);
    assert_eq!(
        report.restored,
        paths(&["setgid.bin", "locked.txt", "run.sh"])
    );
    assert_eq!(report.deleted, paths(&["bin/tool"]));
    assert_eq!(fx.read("run.sh"), b"#!/bin/sh\necho old\n");
    assert_eq!(fx.mode("run.sh"), 0o644);
    assert_eq!(fx.read("locked.txt"), b"read only");
    assert_eq!(fx.mode("locked.txt"), 0o444);
    assert_eq!(fx.mode("setgid.bin"), 0o2750);
    assert!(!fx.path("bin").exists());
}

#[test]
fn each_undo_goes_back_one_more_turn() {
    let fx = Fixture::new();
    fx.put_with_mode("a.txt", b"v0", 0o644);
    fx.put_with_mode("b.txt", b"b0", 0o600);
    let store = fx.open();

    fx.tool_write(&store, "turn-1", "a.txt", b"v1");
    fx.tool_write(&store, "turn-2", "a.txt", b"v2");
    fx.tool_write(&store, "turn-2", "b.txt", b"b2");
    fx.tool_write(&store, "turn-3", "c.txt", b"c3");

    let turns = store.turns_with_changes();
    let ids: Vec<&str> = turns.iter().map(|t| t.turn.as_str()).collect();
    assert_eq!(ids, ["turn-1", "turn-2", "turn-3"]);
    assert_eq!(turns[1].paths, paths(&["a.txt", "b.txt"]));

    let third = store.undo_latest().expect("undo").expect("turn 3");
    assert_eq!(
        (third.turn.as_str(), third.deleted.clone()),
        ("turn-3", paths(&["c.txt"]))
    );
    let second = store.undo_latest().expect("undo").expect("turn 2");
    assert_eq!(second.turn, "turn-2");
    assert_eq!(second.restored, paths(&["b.txt", "a.txt"]));
    assert_eq!(fx.read("a.txt"), b"v1");
    assert_eq!(fx.read("b.txt"), b"b0");
    assert_eq!(fx.mode("b.txt"), 0o600);
    let first = store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(first.turn, "turn-1");
    assert_eq!(fx.read("a.txt"), b"v0");
    assert!(store.undo_latest().expect("undo").is_none());
    assert!(store.turns_with_changes().is_empty());
}

#[test]
fn a_turn_that_changed_nothing_is_skipped() {
    let fx = Fixture::new();
    fx.put_with_mode("a.txt", b"a0", 0o644);
    fx.put_with_mode("watched.txt", b"w0", 0o644);
    let store = fx.open();

    fx.tool_write(&store, "1", "a.txt", b"a1");
    // A bash call listed paths to snapshot but wrote none of them.
    store
        .capture("2", Path::new("watched.txt"))
        .expect("capture");
    store.capture("2", Path::new("never.txt")).expect("capture");

    let turns = store.turns_with_changes();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].turn, "1");

    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(report.turn, "1");
    assert_eq!(report.skipped_turns, ["2"]);
    assert_eq!(fx.read("a.txt"), b"a0");
    assert_eq!(fx.read("watched.txt"), b"w0");
    assert!(!fx.path("never.txt").exists());
    assert!(store.undo_latest().expect("undo").is_none());
}

#[test]
fn a_turn_that_wrote_a_file_back_to_its_earlier_content_still_counts_before_a_later_one() {
    let fx = Fixture::new();
    let store = fx.edited("a.txt", b"x", b"y");
    fx.tool_write(&store, "2", "a.txt", b"x");

    let ids: Vec<String> = store
        .turns_with_changes()
        .into_iter()
        .map(|t| t.turn)
        .collect();
    assert_eq!(
        ids,
        ["1", "2"],
        "turn 1 changed x to y even though disk is x again"
    );
    store.undo_latest().expect("undo").expect("turn 2");
    assert_eq!(fx.read("a.txt"), b"y");
    store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(fx.read("a.txt"), b"x");
}

#[test]
fn a_reopened_store_undoes_what_the_previous_process_captured() {
    let fx = Fixture::new();
    fx.put_with_mode("lib.rs", b"original", 0o600);
    {
        let store = fx.open();
        fx.tool_write(&store, "1", "lib.rs", b"edited in turn 1");
        fx.tool_write(&store, "2", "lib.rs", b"edited in turn 2");
        fx.tool_write(&store, "2", "added.rs", b"new");
    }

    let store = fx.open();
    assert!(store.damaged().is_empty());
    let ids: Vec<String> = store
        .turns_with_changes()
        .into_iter()
        .map(|t| t.turn)
        .collect();
    assert_eq!(ids, ["1", "2"]);
    // The resumed session keeps capturing into a turn it already had.
    assert_eq!(
        store.capture("2", Path::new("lib.rs")).expect("capture"),
        CaptureOutcome::AlreadySaved
    );

    let report = store.undo_latest().expect("undo").expect("turn 2");
    assert_eq!(report.deleted, paths(&["added.rs"]));
    assert_eq!(fx.read("lib.rs"), b"edited in turn 1");
    drop(store);

    let store = fx.open();
    store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(fx.read("lib.rs"), b"original");
    assert_eq!(fx.mode("lib.rs"), 0o600);
}

#[test]
fn threads_sharing_the_store_capture_into_one_turn() {
    fn shareable<T: Send + Sync>() {}
    shareable::<CheckpointStore>();

    let fx = Fixture::new();
    for i in 0..8 {
        fx.put_with_mode(
            &format!("f{i}.txt"),
            format!("before {i}").as_bytes(),
            0o644,
        );
    }
    let store = Arc::new(fx.open());
    let project = fx.project.clone();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let store = Arc::clone(&store);
            let path = project.join(format!("f{i}.txt"));
            std::thread::spawn(move || {
                store.capture("t", &path).expect("capture");
                fs::write(&path, b"after").expect("write");
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("thread");
    }

    let report = store.undo_latest().expect("undo").expect("turn t");
    assert_eq!(report.restored.len(), 8);
    for i in 0..8 {
        assert_eq!(
            fx.read(&format!("f{i}.txt")),
            format!("before {i}").as_bytes()
        );
    }
}

#[test]
fn discarding_the_latest_checkpoint_keeps_its_files_and_exposes_the_turn_before() {
    let fx = Fixture::new();
    let store = fx.edited("a.txt", b"a0", b"a1");
    fx.tool_write(&store, "2", "a.txt", b"a2");

    assert_eq!(
        store.discard_latest().expect("discard").as_deref(),
        Some("2")
    );
    assert_eq!(fx.read("a.txt"), b"a2", "discarding restores nothing");
    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(report.turn, "1");
    assert_eq!(fx.read("a.txt"), b"a0");
    assert_eq!(store.discard_latest().expect("discard"), None);
}
