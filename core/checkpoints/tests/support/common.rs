//! A project directory, a directory outside it and a store location in one temp dir,
//! shared by the checkpoint tests.

// Each test file is its own crate and uses only part of this fixture.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use larik_checkpoints::CheckpointStore;
use tempfile::TempDir;

/// The secret file's contents in the directory outside the project.
pub const SECRET: &[u8] = b"outside secret";

/// A project with a sibling directory outside it, and where its store lives.
pub struct Fixture {
    _tmp: TempDir,
    /// The project root, canonical so that paths compare equal to the store's.
    pub project: PathBuf,
    /// A directory beside the project holding `secret.txt`.
    pub outside: PathBuf,
    /// The session's store directory; nested so opening must create its parents.
    pub store_dir: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().expect("temp dir");
        let base = fs::canonicalize(tmp.path()).expect("canonical temp dir");
        let project = base.join("project");
        let outside = base.join("outside");
        fs::create_dir(&project).expect("project dir");
        fs::create_dir(&outside).expect("outside dir");
        fs::write(outside.join("secret.txt"), SECRET).expect("outside file");
        Fixture {
            _tmp: tmp,
            project,
            outside,
            store_dir: base.join("data/checkpoints/session-1"),
        }
    }

    pub fn open(&self) -> CheckpointStore {
        CheckpointStore::open(self.store_dir.clone(), self.project.clone()).expect("store opens")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.project.join(rel)
    }

    /// Writes a file in the project, creating its directories.
    pub fn put(&self, rel: &str, bytes: &[u8]) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().expect("has parent")).expect("parent dirs");
        fs::write(path, bytes).expect("write file");
    }

    /// Creates a file with exact bytes and mode, as the user had it before the agent.
    pub fn put_with_mode(&self, rel: &str, bytes: &[u8], mode: u32) {
        self.put(rel, bytes);
        fs::set_permissions(self.path(rel), fs::Permissions::from_mode(mode)).expect("chmod");
    }

    /// What a tool does: capture, then write.
    pub fn tool_write(&self, store: &CheckpointStore, turn: &str, rel: &str, bytes: &[u8]) {
        store.capture(turn, Path::new(rel)).expect("capture");
        self.put(rel, bytes);
    }

    /// A store in which turn `1` changed `rel` from `before` to `after`.
    pub fn edited(&self, rel: &str, before: &[u8], after: &[u8]) -> CheckpointStore {
        self.put(rel, before);
        let store = self.open();
        self.tool_write(&store, "1", rel, after);
        store
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        fs::read(self.path(rel)).expect("read file")
    }

    pub fn mode(&self, rel: &str) -> u32 {
        fs::symlink_metadata(self.path(rel))
            .expect("metadata")
            .permissions()
            .mode()
            & 0o7777
    }

    /// The directories in the store directory (turns, trash), sorted.
    pub fn turn_dirs(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.store_dir)
            .expect("store dir")
            .map(|e| e.expect("entry"))
            .filter(|e| e.file_type().is_ok_and(|kind| kind.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The outside file's bytes now; tests compare them with `SECRET`.
    pub fn secret(&self) -> Vec<u8> {
        fs::read(self.outside.join("secret.txt")).expect("outside file still there")
    }
}
