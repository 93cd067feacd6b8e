//! What capture and undo refuse: paths outside the project, protected paths, symlinks
//! planted between the edit and the undo, and restores that fail and are retried.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use larik_checkpoints::CheckpointError;

#[path = "support/common.rs"]
mod common;

use common::Fixture;

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[test]
fn a_symlink_planted_before_undo_is_replaced_not_written_through() {
    let fx = Fixture::new();
    let store = fx.edited("a.txt", b"original a", b"edited a");
    fx.tool_write(&store, "1", "made.txt", b"created");

    // Between the edit and the undo both entries become links to a file outside.
    fs::remove_file(fx.path("a.txt")).expect("remove");
    symlink(fx.outside.join("secret.txt"), fx.path("a.txt")).expect("plant link");
    fs::remove_file(fx.path("made.txt")).expect("remove");
    symlink(fx.outside.join("secret.txt"), fx.path("made.txt")).expect("plant link");

    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert!(report.is_complete(), "{:?}", report.failed);
    assert!(
        !is_symlink(&fx.path("a.txt")),
        "the link itself was replaced"
    );
    assert_eq!(fx.read("a.txt"), b"original a");
    assert!(
        fs::symlink_metadata(fx.path("made.txt")).is_err(),
        "the planted link was removed"
    );
    assert_eq!(fx.secret(), common::SECRET);
}

#[test]
fn a_parent_directory_swapped_for_a_link_outside_is_refused_until_fixed() {
    let fx = Fixture::new();
    let store = fx.edited("sub/a.txt", b"original", b"edited");

    fs::rename(fx.path("sub"), fx.project.join("moved")).expect("move dir away");
    fs::write(fx.outside.join("a.txt"), b"outside a").expect("outside twin");
    symlink(&fx.outside, fx.path("sub")).expect("plant dir link");

    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert!(report.restored.is_empty());
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].path, PathBuf::from("sub/a.txt"));
    assert!(
        report.failed[0].reason.contains("outside"),
        "{:?}",
        report.failed
    );
    assert_eq!(
        fs::read(fx.outside.join("a.txt")).expect("read"),
        b"outside a"
    );
    assert_eq!(fx.secret(), common::SECRET);
    assert_eq!(
        store.turns_with_changes().len(),
        1,
        "the checkpoint is kept"
    );

    fs::remove_file(fx.path("sub")).expect("remove link");
    fs::rename(fx.project.join("moved"), fx.path("sub")).expect("move dir back");
    let report = store.undo_latest().expect("undo").expect("turn 1 again");
    assert!(report.is_complete());
    assert_eq!(fx.read("sub/a.txt"), b"original");
}

#[test]
fn paths_outside_the_project_are_refused_at_capture() {
    let fx = Fixture::new();
    symlink(&fx.outside, fx.path("escape")).expect("link to outside");
    fx.put("inside.txt", b"x");
    symlink(fx.outside.join("secret.txt"), fx.path("link.txt")).expect("file link");
    let store = fx.open();

    let outside_file = fx.outside.join("secret.txt");
    let cases: [&Path; 4] = [
        &outside_file,
        Path::new("../outside/secret.txt"),
        Path::new("escape/secret.txt"),
        Path::new("escape/new.txt"),
    ];
    for path in cases {
        let error = store.capture("1", path).expect_err("refused");
        assert!(
            matches!(error, CheckpointError::OutsideProject { .. }),
            "{path:?}: {error}"
        );
    }
    assert!(matches!(
        store.capture("1", Path::new("link.txt")),
        Err(CheckpointError::Symlink { .. })
    ));
    fs::create_dir(fx.path("adir")).expect("dir");
    assert!(matches!(
        store.capture("1", Path::new("adir")),
        Err(CheckpointError::NotAFile { .. })
    ));
    assert!(store.turns_with_changes().is_empty());
    assert!(store.undo_latest().expect("undo").is_none());
    assert_eq!(fx.secret(), common::SECRET);
}

#[test]
fn protected_paths_are_refused_at_capture_and_at_restore() {
    let fx = Fixture::new();
    fx.put(".git/config", b"[core]");
    let store = fx.open();
    for rel in [
        ".git/config",
        "vendor/dep/.git/HEAD",
        ".larik/settings.json",
        ".claude/settings.json",
        ".mcp.json",
        "src/../.git/config",
    ] {
        let error = store.capture("1", Path::new(rel)).expect_err("refused");
        assert!(
            matches!(error, CheckpointError::Protected { .. }),
            "{rel}: {error}"
        );
    }
    // A link inside the project that resolves into `.git` is refused by its real path.
    symlink(fx.path(".git"), fx.path("gitlink")).expect("link");
    assert!(matches!(
        store.capture("1", Path::new("gitlink/config")),
        Err(CheckpointError::Protected { .. })
    ));

    // The list is the caller's: replacing it drops the defaults.
    let custom = fx.open().with_protected(vec!["secrets/".into()]);
    assert!(matches!(
        custom.capture("1", Path::new("secrets/key.pem")),
        Err(CheckpointError::Protected { .. })
    ));
    fx.tool_write(&custom, "1", "notes/todo.md", b"edited");

    // A store reopened with a stricter list refuses to restore what it now protects.
    let stricter = fx.open().with_protected(vec!["notes/".into()]);
    let report = stricter.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert_eq!(fx.read("notes/todo.md"), b"edited");
}

#[test]
fn a_failed_restore_keeps_the_checkpoint_and_a_retry_succeeds() {
    let fx = Fixture::new();
    fx.put("a.txt", b"original a");
    fx.put("b.txt", b"original b");
    let store = fx.open();
    fx.tool_write(&store, "1", "a.txt", b"edited a");
    fx.tool_write(&store, "1", "b.txt", b"edited b");

    // A directory now stands where a.txt was: no rename can replace it, even as root.
    fs::remove_file(fx.path("a.txt")).expect("remove");
    fx.put("a.txt/inner", b"blocks the restore");

    let report = store.undo_latest().expect("undo").expect("turn 1");
    assert_eq!(report.restored, [PathBuf::from("b.txt")]);
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].path, PathBuf::from("a.txt"));
    assert!(!report.is_complete());
    assert_eq!(fx.read("b.txt"), b"original b");

    // The snapshot survives a reopen too.
    let store = fx.open();
    fs::remove_dir_all(fx.path("a.txt")).expect("clear the blocker");
    let report = store.undo_latest().expect("undo").expect("turn 1 again");
    assert!(report.is_complete());
    assert_eq!(report.restored, [PathBuf::from("a.txt")]);
    assert_eq!(fx.read("a.txt"), b"original a");
    assert!(store.undo_latest().expect("undo").is_none());
}

#[test]
fn a_read_only_directory_fails_the_restore_when_permissions_are_enforced() {
    let fx = Fixture::new();
    let store = fx.edited("ro/a.txt", b"original", b"edited");

    let ro = fx.path("ro");
    fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).expect("chmod");
    // Root ignores directory permissions; then this failure cannot be staged and the
    // directory-in-place-of-file test above covers the retry instead.
    let enforced = fs::write(ro.join("probe"), b"").is_err();
    let report = store.undo_latest().expect("undo").expect("turn 1");
    if enforced {
        assert_eq!(report.failed.len(), 1, "{report:?}");
        assert_eq!(fs::read(ro.join("a.txt")).expect("read"), b"edited");
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).expect("chmod back");
        let report = store.undo_latest().expect("undo").expect("retry");
        assert!(report.is_complete());
    } else {
        assert!(report.is_complete());
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o755)).expect("chmod back");
    }
    assert_eq!(fs::read(ro.join("a.txt")).expect("read"), b"original");
}
