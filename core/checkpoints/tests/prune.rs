//! Retention of session checkpoint directories by the time of their last capture.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use larik_checkpoints::{CheckpointStore, prune};

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// A session with one captured turn; returns its directory.
fn session(root: &Path, project: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    let store = CheckpointStore::open(dir.clone(), project.to_path_buf()).expect("open");
    let file = project.join(format!("{name}.txt"));
    store.capture("1", &file).expect("capture");
    fs::write(&file, b"x").expect("write");
    dir
}

/// Back-dates a session's last capture, as if it happened `age` ago.
fn age_session(dir: &Path, age: Duration) {
    let manifest = dir.join("000001/manifest.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&fs::read(&manifest).expect("read")).expect("json");
    let then = SystemTime::now() - age;
    let ms = then
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after epoch")
        .as_millis() as u64;
    json["created_ms"] = ms.into();
    json["updated_ms"] = ms.into();
    fs::write(&manifest, serde_json::to_vec(&json).expect("encode")).expect("write");
}

struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    old: PathBuf,
    recent: PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().expect("temp dir");
    let base = fs::canonicalize(tmp.path()).expect("canonical");
    let project = base.join("project");
    fs::create_dir(&project).expect("project");
    let root = base.join("checkpoints");
    let old = session(&root, &project, "old");
    age_session(&old, DAY * 10);
    let recent = session(&root, &project, "recent");
    age_session(&recent, DAY * 2);
    // Things prune must leave alone: a stray file and a link to a directory elsewhere.
    fs::write(root.join("README"), b"not a session").expect("stray file");
    let outside = base.join("elsewhere");
    fs::create_dir(&outside).expect("outside");
    fs::write(outside.join("keep.txt"), b"keep").expect("outside file");
    symlink(&outside, root.join("linked")).expect("link");
    Setup {
        _tmp: tmp,
        root,
        outside,
        old,
        recent,
    }
}

#[test]
fn sessions_idle_longer_than_the_retention_are_removed() {
    let s = setup();
    let report = prune(&s.root, 7, SystemTime::now()).expect("prune");
    assert_eq!(report.removed, std::slice::from_ref(&s.old));
    assert_eq!(report.kept, 1);
    assert!(report.failed.is_empty());
    assert!(!s.old.exists());
    assert!(s.recent.join("000001/manifest.json").exists());
    assert!(s.root.join("README").exists());
    assert!(s.root.join("linked").exists());
    assert_eq!(fs::read(s.outside.join("keep.txt")).expect("read"), b"keep");

    let later = prune(&s.root, 7, SystemTime::now() + DAY * 6).expect("prune later");
    assert_eq!(later.removed, std::slice::from_ref(&s.recent));
}

#[test]
fn negative_retention_keeps_everything_and_zero_keeps_nothing_older_than_now() {
    let s = setup();
    let forever = prune(&s.root, -1, SystemTime::now() + DAY * 10_000).expect("prune");
    assert!(forever.removed.is_empty());
    assert!(s.old.exists() && s.recent.exists());

    let none = prune(&s.root, 0, SystemTime::now()).expect("prune");
    assert_eq!(none.removed, [s.old.clone(), s.recent.clone()]);
    assert!(s.root.join("linked").exists());
    assert_eq!(fs::read(s.outside.join("keep.txt")).expect("read"), b"keep");
}

#[test]
fn a_session_without_manifests_is_dated_by_its_directory_and_a_missing_root_is_fine() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("checkpoints");
    assert_eq!(
        prune(&root, 7, SystemTime::now())
            .expect("missing root")
            .removed,
        Vec::<PathBuf>::new()
    );
    let empty = root.join("empty-session");
    fs::create_dir_all(empty.join("000001/blobs")).expect("dirs");
    let kept = prune(&root, 7, SystemTime::now()).expect("prune");
    assert_eq!(kept.kept, 1);
    let removed = prune(&root, 7, SystemTime::now() + DAY * 8).expect("prune");
    assert_eq!(removed.removed, [empty]);
}

#[test]
fn a_session_open_in_this_process_is_kept_until_its_store_is_dropped() {
    let s = setup();
    let project = s.root.parent().expect("base").join("project");
    let store = CheckpointStore::open(s.old.clone(), project).expect("reopened");
    let report = prune(&s.root, 0, SystemTime::now()).expect("prune");
    assert_eq!(report.in_use, 1, "{report:?}");
    assert!(s.old.join("000001/manifest.json").exists());
    assert!(!s.recent.exists(), "a session nobody has open is pruned");
    drop(store);
    let report = prune(&s.root, 0, SystemTime::now()).expect("prune");
    assert_eq!(report.removed, std::slice::from_ref(&s.old));
}

/// Another process holding the session open (here `flock`, taking the same shared lock a
/// Larik process's store takes) keeps its checkpoints from being pruned.
#[test]
fn a_session_open_in_another_process_is_kept() {
    use std::io::BufRead;
    let s = setup();
    // `flock` holds the lock until the shell it runs ends, which it does when its input
    // closes; `--close` keeps the lock out of the shell itself.
    let mut holder = std::process::Command::new("flock")
        .args(["--shared", "--close"])
        .arg(s.old.join("open.lock"))
        .args(["-c", "echo held; read -r _ || true"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("flock runs (util-linux)");
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line, "held\n");
    let report = prune(&s.root, 0, SystemTime::now()).expect("prune");
    assert_eq!(report.in_use, 1, "{report:?}");
    assert!(s.old.join("000001/manifest.json").exists());
    drop(holder.stdin.take());
    assert!(holder.wait().expect("flock ends").success());
    let report = prune(&s.root, 0, SystemTime::now()).expect("prune");
    assert_eq!(report.removed, std::slice::from_ref(&s.old));
}
