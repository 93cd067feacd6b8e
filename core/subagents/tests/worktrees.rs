//! Worktrees against real git repositories: one kept with its changes listed, merged into
//! a clean checkout (fast-forward and with a merge commit), refused on a dirty one and on a
//! conflict (the checkout left as it was), discarded, and never removed while in use.

use std::path::Path;

use larik_subagents::{Finished, Merged, Worktrees};
use larik_testkit::git::git;

/// A repository with one commit holding `a.txt`.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("repo");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("a.txt"), "one\n").expect("write");
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "start"]);
    dir
}

/// A kept worktree in which each file was given its text (left uncommitted, as a
/// subagent might leave it).
fn kept_with(worktrees: &Worktrees, repo: &Path, files: &[(&str, &str)]) -> String {
    let created = worktrees
        .create(repo, "worker: change")
        .expect("create")
        .expect("in a repository");
    for (file, text) in files {
        std::fs::write(created.path.join(file), text).expect("write in the worktree");
    }
    match worktrees.finish(created, "worker: change").expect("finish") {
        Finished::Kept(kept) => kept.name,
        Finished::Removed => panic!("a change is kept"),
    }
}

#[test]
fn a_kept_worktree_is_listed_and_merges_into_a_clean_checkout() {
    let repo = repository();
    let store = tempfile::tempdir().expect("store");
    let worktrees = Worktrees::new(store.path());
    let name = kept_with(&worktrees, repo.path(), &[("b.txt", "two\n")]);
    let kept = worktrees.list(repo.path()).expect("list");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].name, name);
    assert_eq!(kept[0].files, ["A b.txt"]);
    assert_eq!(kept[0].label, "worker: change");
    assert!(!kept[0].in_use);

    // A dirty checkout is refused, and nothing moves.
    std::fs::write(repo.path().join("a.txt"), "dirty\n").expect("dirty");
    let refused = worktrees.merge(repo.path(), &name).expect_err("dirty");
    assert!(refused.to_string().contains("uncommitted"), "{refused}");
    git(repo.path(), &["checkout", "-q", "--", "a.txt"]);

    assert_eq!(
        worktrees.merge(repo.path(), &name).expect("merge"),
        Merged::FastForward
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("b.txt")).expect("merged"),
        "two\n"
    );
    assert!(worktrees.list(repo.path()).expect("list").is_empty());
    assert_eq!(git(repo.path(), &["branch", "--list", "larik/*"]), "");
}

#[test]
fn a_diverged_branch_merges_with_a_commit_and_a_conflict_changes_nothing() {
    let repo = repository();
    let store = tempfile::tempdir().expect("store");
    let worktrees = Worktrees::new(store.path());
    let clean = kept_with(&worktrees, repo.path(), &[("c.txt", "three\n")]);
    let clashing = kept_with(
        &worktrees,
        repo.path(),
        &[("a.txt", "theirs\n"), ("extra.txt", "also theirs\n")],
    );
    std::fs::write(repo.path().join("a.txt"), "ours\n").expect("write");
    git(repo.path(), &["commit", "-qam", "ours"]);
    let head = git(repo.path(), &["rev-parse", "HEAD"]);

    let refused = worktrees
        .merge(repo.path(), &clashing)
        .expect_err("conflict");
    assert!(refused.to_string().contains("conflicts"), "{refused}");
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), head);
    assert_eq!(
        git(
            repo.path(),
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        "",
        "nothing of the refused merge is left behind"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("a.txt")).expect("a"),
        "ours\n"
    );

    assert!(matches!(
        worktrees.merge(repo.path(), &clean).expect("merge"),
        Merged::Commit(_)
    ));
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%p"])
            .split_whitespace()
            .count(),
        2,
        "a merge commit"
    );
    assert!(repo.path().join("c.txt").exists());
    worktrees.discard(repo.path(), &clashing).expect("discard");
    assert!(worktrees.list(repo.path()).expect("list").is_empty());
    assert_eq!(git(repo.path(), &["branch", "--list", "larik/*"]), "");
}

#[test]
fn a_worktree_in_use_is_never_removed() {
    let repo = repository();
    let store = tempfile::tempdir().expect("store");
    let worktrees = Worktrees::new(store.path());
    let created = worktrees
        .create(repo.path(), "worker: busy")
        .expect("create")
        .expect("in a repository");
    git(
        &created.path,
        &["commit", "-q", "--allow-empty", "-m", "busy"],
    );
    let listed = worktrees.list(repo.path()).expect("list");
    assert!(listed[0].in_use);
    let refused = worktrees
        .discard(repo.path(), &created.name)
        .expect_err("in use");
    assert!(refused.to_string().contains("still works"), "{refused}");
    assert!(created.path.exists());
    let name = created.name.clone();
    assert!(matches!(
        worktrees.finish(created, "worker: busy").expect("finish"),
        Finished::Kept(_)
    ));
    worktrees
        .discard(repo.path(), &name)
        .expect("discard once done");
}

#[test]
fn outside_a_repository_there_is_no_worktree() {
    let dir = tempfile::tempdir().expect("dir");
    let store = tempfile::tempdir().expect("store");
    let worktrees = Worktrees::new(store.path());
    assert!(worktrees.create(dir.path(), "x").expect("create").is_none());
}
