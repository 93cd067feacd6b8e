//! What a crash can leave in the store directory, staged by hand from the documented
//! layout, and the store that opens over it: it still undoes what its manifests record.

use std::fs;
use std::path::PathBuf;

#[path = "support/common.rs"]
mod common;

use common::Fixture;

#[test]
fn a_leftover_temp_manifest_and_an_unrecorded_blob_are_ignored() {
    let fx = Fixture::new();
    fx.put("b.txt", b"b before");
    // The process that edited a.txt has ended.
    drop(fx.edited("a.txt", b"a before", b"a after"));
    // The process died while capturing b.txt: its blob was written and the new manifest
    // was being written, but never renamed in. b.txt itself was never changed.
    let turn_dir = fx.store_dir.join("000001");
    fs::write(turn_dir.join("blobs/1"), b"b before").expect("orphan blob");
    fs::write(turn_dir.join("manifest.json.tmp"), b"{\"version\":1,\"tur").expect("torn tmp");

    let store = fx.open();
    assert!(store.damaged().is_empty());
    assert!(
        !turn_dir.join("manifest.json.tmp").exists(),
        "leftover cleared"
    );
    let turns = store.turns_with_changes();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].paths, [PathBuf::from("a.txt")]);

    // Capturing again after the restart reuses the orphan's slot with the real content.
    fs::write(
        turn_dir.join("blobs/1"),
        b"stale bytes from before the crash",
    )
    .expect("orphan");
    fx.tool_write(&store, "1", "b.txt", b"b after");
    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert!(report.is_complete(), "{:?}", report.failed);
    assert_eq!(
        report.restored,
        [PathBuf::from("b.txt"), PathBuf::from("a.txt")]
    );
    assert_eq!(fx.read("a.txt"), b"a before");
    assert_eq!(fx.read("b.txt"), b"b before");
}

#[test]
fn a_turn_whose_first_capture_crashed_is_skipped_and_its_number_not_reused() {
    let fx = Fixture::new();
    // The process that edited it has ended.
    drop(fx.edited("a.txt", b"a before", b"a after"));
    // Turn 2 died before its first manifest existed.
    fs::create_dir_all(fx.store_dir.join("000002/blobs")).expect("turn dir");
    fs::write(fx.store_dir.join("000002/blobs/0"), b"whatever").expect("blob");

    let store = fx.open();
    fx.tool_write(&store, "3", "c.txt", b"created");
    assert_eq!(fx.turn_dirs(), ["000001", "000002", "000003"]);

    let report = store.undo_latest().expect("undo").expect("turn 3");
    assert_eq!(report.turn, "3");
    assert!(!fx.project.join("c.txt").exists());
    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(report.turn, "1");
    assert_eq!(fx.read("a.txt"), b"a before");
    assert!(store.undo_latest().expect("undo").is_none());
}

#[test]
fn a_turn_caught_mid_deletion_is_finished_off_at_open() {
    let fx = Fixture::new();
    fx.put("a.txt", b"a before");
    {
        let store = fx.open();
        fx.tool_write(&store, "1", "a.txt", b"a after");
        fx.tool_write(&store, "2", "a.txt", b"a after 2");
    }
    // Undo of turn 2 renamed it to trash and died before removing it.
    fs::rename(
        fx.store_dir.join("000002"),
        fx.store_dir.join("trash-000002"),
    )
    .expect("rename");

    let store = fx.open();
    assert_eq!(fx.turn_dirs(), ["000001"]);
    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(report.turn, "1");
    assert_eq!(fx.read("a.txt"), b"a before");
}

#[test]
fn a_damaged_manifest_is_reported_and_left_alone() {
    let fx = Fixture::new();
    // The process that edited it has ended.
    drop(fx.edited("a.txt", b"a before", b"a after"));
    let bad = fx.store_dir.join("000007");
    fs::create_dir_all(&bad).expect("dir");
    fs::write(bad.join("manifest.json"), b"not json").expect("garbage");
    let escaping = fx.store_dir.join("000008");
    fs::create_dir_all(&escaping).expect("dir");
    fs::write(
        escaping.join("manifest.json"),
        br#"{"version":1,"turn":"x","created_ms":0,"updated_ms":0,
            "entries":[{"path":"../outside.txt","before":{"kind":"absent"}}]}"#,
    )
    .expect("tampered manifest");

    let store = fx.open();
    assert_eq!(store.damaged(), [bad.clone(), escaping]);
    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(report.turn, "1");
    assert_eq!(fx.read("a.txt"), b"a before");
    assert!(bad.join("manifest.json").exists());
}
