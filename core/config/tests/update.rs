//! Changing personal settings files on real files: concurrent writers that each open their
//! own handles (as separate processes do) lose nothing, unknown keys and the file's
//! indentation survive, a file the user broke or shaped differently is never overwritten,
//! and links and missing directories are handled.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use larik_config::{
    UpdateError, persist_allow_rule, persist_deny_rule, personal_project_file, update_json,
};
use serde_json::{Value, json};

/// A temp dir (kept alive by the caller), a config directory and a project in it, and
/// the project's personal settings file, whose directory exists but which is not written.
fn personal() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let config_dir = dir.path().join("config");
    let project = dir.path().join("proj");
    let path = personal_project_file(&config_dir, &project);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    (dir, config_dir, project, path)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("valid JSON")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

fn allow_rules(path: &Path) -> Vec<String> {
    read_json(path)["permissions"]["allow"]
        .as_array()
        .expect("allow list")
        .iter()
        .map(|rule| rule.as_str().expect("string").to_string())
        .collect()
}

#[test]
fn concurrent_writers_never_lose_each_others_rules() {
    let (_dir, config_dir, project, path) = personal();
    std::fs::write(
        &path,
        r#"{"theme": "dark", "permissions": {"deny": ["Bash(rm:*)"]}}"#,
    )
    .expect("write");

    const THREADS: usize = 8;
    const RULES_EACH: usize = 6;
    let start = Arc::new(Barrier::new(THREADS));
    let writers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (start, config_dir, project) =
                (Arc::clone(&start), config_dir.clone(), project.clone());
            std::thread::spawn(move || {
                start.wait();
                for index in 0..RULES_EACH {
                    let rule = format!("Bash(job-{thread}-{index}:*)");
                    let added = persist_allow_rule(&config_dir, &project, &rule).expect("persist");
                    assert!(added, "{rule} was new");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer thread");
    }

    let mut rules = allow_rules(&path);
    rules.sort();
    let mut expected: Vec<String> = (0..THREADS)
        .flat_map(|thread| {
            (0..RULES_EACH).map(move |index| format!("Bash(job-{thread}-{index}:*)"))
        })
        .collect();
    expected.sort();
    assert_eq!(rules, expected, "every writer's rules are there, once");
    let object = read_json(&path);
    assert_eq!(object["theme"], "dark");
    assert_eq!(object["permissions"]["deny"], json!(["Bash(rm:*)"]));
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
        .expect("list")
        .map(|entry| entry.expect("entry").file_name())
        .filter(|name| name.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert_eq!(leftovers, Vec::<std::ffi::OsString>::new());
}

#[test]
fn unknown_keys_values_and_indentation_survive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("config.json");
    let original = r#"{
    "editor": {"font": "Iosevka", "size": 13.5, "ligatures": true, "tabs": [2, 4]},
    "theme": "dark — ünïcode",
    "nothing": null,
    "permissions": {"deny": ["Bash(rm:*)"], "futureKey": {"x": 1}}
}"#;
    std::fs::write(&path, original).expect("write");
    let before = read_json(&path);

    update_json(&path, |object| {
        let permissions = object
            .get_mut("permissions")
            .and_then(Value::as_object_mut)
            .expect("permissions");
        permissions.insert("allow".into(), json!(["Bash(make:*)"]));
        Ok(())
    })
    .expect("update");

    let text = std::fs::read_to_string(&path).expect("read");
    let mut after = read_json(&path);
    assert_eq!(after["permissions"]["allow"], json!(["Bash(make:*)"]));
    after["permissions"]
        .as_object_mut()
        .expect("object")
        .remove("allow");
    assert_eq!(after, before, "everything else is exactly as it was");
    assert!(
        text.lines()
            .nth(1)
            .expect("second line")
            .starts_with("    \""),
        "four-space indentation kept:\n{text}"
    );
    assert!(text.ends_with("}\n"), "{text}");
    assert_eq!(mode(&path), 0o600, "the file is private");
    assert_eq!(mode(&dir.path().join("config.json.lock")), 0o600);
}

#[test]
fn an_edit_that_changes_nothing_writes_nothing() {
    let (_dir, config_dir, project, path) = personal();
    let compact = r#"{"permissions":{"allow":["Bash(make:*)"]}}"#;
    std::fs::write(&path, compact).expect("write");

    let added = persist_allow_rule(&config_dir, &project, "Bash(make:*)").expect("persist");
    assert!(!added, "already there");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), compact);

    assert!(persist_deny_rule(&config_dir, &project, "Bash(rm:*)").expect("persist"));
    assert!(!persist_deny_rule(&config_dir, &project, "Bash(rm:*)").expect("persist"));
    let object = read_json(&path);
    assert_eq!(object["permissions"]["deny"], json!(["Bash(rm:*)"]));
    assert_eq!(object["permissions"]["allow"], json!(["Bash(make:*)"]));
}

#[test]
fn a_broken_or_differently_shaped_file_is_never_overwritten() {
    let (_dir, config_dir, project, path) = personal();

    for (text, expect_reason) in [
        (
            "{\"permissions\": {\"allow\": [\"Bash(ls)\"",
            "is not valid JSON",
        ),
        ("[\"Bash(ls)\"]", "is not a JSON object"),
    ] {
        std::fs::write(&path, text).expect("write");
        let mut called = false;
        let error = update_json(&path, |object| {
            called = true;
            object.insert("x".into(), json!(1));
            Ok(())
        })
        .expect_err("refused");
        assert!(!called, "the edit never saw a broken file");
        match &error {
            UpdateError::Unusable {
                path: named,
                reason,
            } => {
                assert_eq!(named, &path);
                assert!(reason.to_string().starts_with(expect_reason), "{reason}");
            }
            other => panic!("unexpected error: {other}"),
        }
        assert!(error.to_string().contains("fix it first"), "{error}");
        let error = persist_allow_rule(&config_dir, &project, "Bash(make:*)").expect_err("refused");
        assert!(matches!(error, UpdateError::Unusable { .. }), "{error}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    }

    let shaped = r#"{"permissions": {"allow": "Bash(ls)"}}"#;
    std::fs::write(&path, shaped).expect("write");
    let error = persist_allow_rule(&config_dir, &project, "Bash(make:*)").expect_err("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "{} not changed: `permissions.allow` should be a list of rules but holds a string",
            path.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&path).expect("read"), shaped);
}

#[test]
fn missing_directories_are_created_and_links_are_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config_dir = dir.path().join("no/such/config");
    let project = dir.path().join("proj");
    assert!(persist_allow_rule(&config_dir, &project, "Read(**)").expect("persist"));
    let path = personal_project_file(&config_dir, &project);
    assert_eq!(allow_rules(&path), ["Read(**)"]);
    assert_eq!(mode(path.parent().expect("parent")), 0o700);

    // A dotfile manager keeps the real file elsewhere and links it in.
    let real = dir.path().join("dotfiles/config.json");
    std::fs::create_dir_all(real.parent().expect("parent")).expect("mkdir");
    std::fs::write(&real, r#"{"model": "openai/gpt-5.1"}"#).expect("write");
    let link = dir.path().join("config.json");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    update_json(&link, |object| {
        object.insert("permissions".into(), json!({"deny": ["Bash(rm:*)"]}));
        Ok(())
    })
    .expect("update");
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("metadata")
            .file_type()
            .is_symlink(),
        "still a link"
    );
    let object = read_json(&real);
    assert_eq!(object["model"], "openai/gpt-5.1");
    assert_eq!(object["permissions"]["deny"], json!(["Bash(rm:*)"]));
}
