//! Git worktrees for subagents that work in isolation (`isolation: worktree`).
//!
//! A worktree is made under `<worktrees dir>/<repo>/task-xxxxxx/` from the repository's
//! current HEAD, on a new branch `larik/task-xxxxxx`; uncommitted changes in the user's
//! checkout are not in it. While its subagent works, the subagent's run holds a lock on it,
//! and nothing removes a worktree whose lock is held. When the subagent ends, what it left
//! uncommitted is committed (libgit2 runs no hooks; the repository's identity, else
//! Larik's); a worktree without commits is removed with its branch, one with commits kept
//! for review: [`Worktrees::list`], [`Worktrees::merge`] into the user's checkout (only a
//! clean one; a conflict leaves it as it was), or [`Worktrees::discard`]. Every git
//! operation on a repository holds that repository's lock file, so parallel subagents (and
//! other Larik processes) start and finish safely.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use git2::{
    BranchType, IndexAddOption, ObjectType, Oid, Repository, Signature, StatusOptions,
    WorktreeAddOptions, WorktreePruneOptions, build::CheckoutBuilder,
};
use serde_json::{Value, json};

/// Where the worktrees of every repository are kept (`<data dir>/worktrees`).
#[derive(Debug, Clone)]
pub struct Worktrees {
    root: PathBuf,
}

/// What went wrong with a worktree.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// A git operation failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The request cannot be carried out as it stands.
    #[error("{0}")]
    Refused(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorktreeError + '_ {
    move |source| WorktreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A worktree made for a subagent, held while it works.
#[derive(Debug)]
pub struct Created {
    /// Its name, `task-xxxxxx`.
    pub name: String,
    /// Its branch, `larik/task-xxxxxx`.
    pub branch: String,
    /// Its directory.
    pub path: PathBuf,
    /// Where the subagent works: the worktree, or the directory in it that matches the
    /// parent's working directory.
    pub cwd: PathBuf,
    /// The commit it starts from.
    pub base: String,
    /// Besides the worktree, what the subagent's commands must be able to write for git
    /// to commit: the shared repository's objects, refs and logs, and the worktree's own
    /// administrative directory (never its hooks or configuration).
    pub git_writable: Vec<PathBuf>,
    /// The repository's root directory.
    repo_root: PathBuf,
    /// Held while the subagent works.
    _in_use: File,
}

/// What became of a worktree when its subagent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// No commits: the worktree and its branch are gone.
    Removed,
    /// Kept for review.
    Kept(Kept),
}

/// A kept worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Its name, `task-xxxxxx`.
    pub name: String,
    /// Its branch.
    pub branch: String,
    /// Its directory.
    pub path: PathBuf,
    /// The commit it started from.
    pub base: String,
    /// What its subagent was called.
    pub label: String,
    /// The files its branch changes against the base, each with `A`, `M`, `D` or `R`.
    pub files: Vec<String>,
    /// Lines added and removed.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// Whether a subagent works in it now.
    pub in_use: bool,
}

impl Kept {
    /// How to review and take the branch, for the parent model and the user.
    pub fn review(&self) -> String {
        format!(
            "Its changes are on branch `{branch}` (worktree {path}), {files} file(s) changed \
             (+{ins} -{del}): {list}. Review with `git diff {base}...{branch}`; take them \
             with `git merge {branch}` or `/worktrees merge {name}`; drop them with \
             `/worktrees discard {name}`.",
            branch = self.branch,
            path = self.path.display(),
            files = self.files.len(),
            ins = self.insertions,
            del = self.deletions,
            list = self.files.join(", "),
            base = short(&self.base),
            name = self.name,
        )
    }
}

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The checkout moved forward to the branch.
    FastForward,
    /// A merge commit was made.
    Commit(String),
    /// The branch held nothing new.
    UpToDate,
}

fn short(id: &str) -> &str {
    &id[..id.len().min(10)]
}

/// Holds a repository's lock file while git operations run on it.
struct RepoLock {
    _held: File,
}

impl Worktrees {
    /// Worktrees kept under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Worktrees { root: root.into() }
    }

    /// The folder of `repo_root`'s worktrees: its name and a hash of its path.
    fn repo_dir(&self, repo_root: &Path) -> PathBuf {
        let name = repo_root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into());
        let hash = Oid::hash_object(ObjectType::Blob, repo_root.as_os_str().as_encoded_bytes())
            .map(|oid| oid.to_string())
            .unwrap_or_default();
        self.root
            .join(format!("{name}-{}", &hash[..hash.len().min(12)]))
    }

    fn lock_repo(&self, repo_root: &Path) -> Result<RepoLock, WorktreeError> {
        let dir = self.repo_dir(repo_root);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join("git.lock");
        let file = File::create(&path).map_err(io(&path))?;
        file.lock().map_err(io(&path))?;
        Ok(RepoLock { _held: file })
    }

    /// Makes a worktree for a subagent working in `cwd`, or `None` when `cwd` is in no git
    /// repository (or one without a commit yet).
    pub fn create(&self, cwd: &Path, label: &str) -> Result<Option<Created>, WorktreeError> {
        let Ok(repo) = Repository::discover(cwd) else {
            return Ok(None);
        };
        let Some(repo_root) = repo.workdir().map(Path::to_path_buf) else {
            return Ok(None);
        };
        let repo_root = repo_root.canonicalize().map_err(io(&repo_root))?;
        let Ok(head) = repo.head().and_then(|head| head.peel_to_commit()) else {
            return Ok(None);
        };
        let _lock = self.lock_repo(&repo_root)?;
        let dir = self.repo_dir(&repo_root);
        let name = loop {
            let name = format!("task-{}", unique_hex());
            if !dir.join(&name).exists() && repo.find_worktree(&name).is_err() {
                break name;
            }
        };
        let branch_name = format!("larik/{name}");
        let branch = repo.branch(&branch_name, &head, false)?;
        let path = dir.join(&name);
        let reference = branch.into_reference();
        let mut options = WorktreeAddOptions::new();
        options.reference(Some(&reference));
        if let Err(error) = repo.worktree(&name, &path, Some(&options)) {
            // Nothing half-made stays behind.
            if let Ok(mut branch) = repo.find_branch(&branch_name, BranchType::Local) {
                let _ = branch.delete();
            }
            let _ = std::fs::remove_dir_all(&path);
            return Err(error.into());
        }
        let meta = json!({
            "branch": branch_name,
            "base": head.id().to_string(),
            "label": label,
            "repo": repo_root,
        });
        let meta_path = dir.join(format!("{name}.json"));
        std::fs::write(&meta_path, meta.to_string()).map_err(io(&meta_path))?;
        let in_use_path = dir.join(format!("{name}.in-use"));
        let in_use = File::create(&in_use_path).map_err(io(&in_use_path))?;
        in_use.lock_shared().map_err(io(&in_use_path))?;

        let common = repo.commondir().to_path_buf();
        let logs = common.join("logs");
        std::fs::create_dir_all(&logs).map_err(io(&logs))?;
        let git_writable = vec![
            common.join("objects"),
            common.join("refs"),
            logs,
            common.join("worktrees").join(&name),
        ];
        let inside = cwd
            .canonicalize()
            .ok()
            .and_then(|cwd| cwd.strip_prefix(&repo_root).ok().map(Path::to_path_buf))
            .unwrap_or_default();
        let sub = path.join(inside);
        let cwd = if sub.is_dir() { sub } else { path.clone() };
        Ok(Some(Created {
            name,
            branch: branch_name,
            cwd,
            path,
            base: head.id().to_string(),
            git_writable,
            repo_root,
            _in_use: in_use,
        }))
    }

    /// Ends a subagent's work in `created`: commits what it left uncommitted, then removes
    /// the worktree and branch when it made no commit, or keeps them.
    pub fn finish(&self, created: Created, label: &str) -> Result<Finished, WorktreeError> {
        let Created {
            name,
            branch,
            path,
            base,
            repo_root,
            _in_use,
            ..
        } = created;
        drop(_in_use);
        let _lock = self.lock_repo(&repo_root)?;
        let worktree = Repository::open(&path)?;
        commit_leftovers(&worktree, label)?;
        let head = worktree.head()?.peel_to_commit()?.id().to_string();
        drop(worktree);
        if head == base {
            remove(&self.repo_dir(&repo_root), &repo_root, &name, &branch)?;
            return Ok(Finished::Removed);
        }
        let repo = Repository::open(&repo_root)?;
        let (files, insertions, deletions) = changes(&repo, &base, &head)?;
        Ok(Finished::Kept(Kept {
            name,
            branch,
            path,
            base,
            label: label.to_string(),
            files,
            insertions,
            deletions,
            in_use: false,
        }))
    }

    /// The kept worktrees of the repository `cwd` is in, oldest first.
    pub fn list(&self, cwd: &Path) -> Result<Vec<Kept>, WorktreeError> {
        let Some((repo, repo_root)) = open_repo(cwd)? else {
            return Ok(Vec::new());
        };
        let dir = self.repo_dir(&repo_root);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".json").map(str::to_string)
            })
            .collect();
        names.sort();
        let mut kept = Vec::new();
        for name in names {
            kept.extend(kept_one(&repo, &dir, name)?);
        }
        Ok(kept)
    }

    /// Removes the kept worktree `name` and its branch, unless a subagent works in it.
    pub fn discard(&self, cwd: &Path, name: &str) -> Result<(), WorktreeError> {
        let (kept, repo_root) = self.find(cwd, name)?;
        let _lock = self.lock_repo(&repo_root)?;
        remove(
            &self.repo_dir(&repo_root),
            &repo_root,
            &kept.name,
            &kept.branch,
        )
    }

    /// Merges the kept worktree `name`'s branch into the checkout of the repository `cwd`
    /// is in, then removes the worktree and branch. The checkout must have no uncommitted
    /// changes to tracked files; a merge with conflicts is undone and said so.
    pub fn merge(&self, cwd: &Path, name: &str) -> Result<Merged, WorktreeError> {
        let (kept, repo_root) = self.find(cwd, name)?;
        let _lock = self.lock_repo(&repo_root)?;
        let repo = Repository::open(&repo_root)?;
        let mut options = StatusOptions::new();
        options.include_untracked(false);
        if !repo.statuses(Some(&mut options))?.is_empty() {
            return Err(WorktreeError::Refused(format!(
                "the checkout has uncommitted changes; commit or stash them first, or run \
                 `git merge {}` yourself",
                kept.branch
            )));
        }
        if !repo.head()?.is_branch() {
            return Err(WorktreeError::Refused(format!(
                "the checkout is not on a branch; run `git merge {}` where you want it",
                kept.branch
            )));
        }
        let branch_ref = repo
            .find_branch(&kept.branch, BranchType::Local)?
            .into_reference();
        let theirs = repo.reference_to_annotated_commit(&branch_ref)?;
        let (analysis, _) = repo.merge_analysis(&[&theirs])?;
        let merged = if analysis.is_up_to_date() {
            Merged::UpToDate
        } else if analysis.is_fast_forward() {
            let target = repo.find_object(theirs.id(), None)?;
            repo.checkout_tree(&target, Some(CheckoutBuilder::new().safe()))?;
            let mut head_ref = repo.head()?;
            head_ref.set_target(theirs.id(), &format!("merge {}: fast-forward", kept.branch))?;
            Merged::FastForward
        } else {
            // Merged in memory first: a conflict leaves the checkout untouched.
            let ours = repo.head()?.peel_to_commit()?;
            let their_commit = repo.find_commit(theirs.id())?;
            if repo
                .merge_commits(&ours, &their_commit, None)?
                .has_conflicts()
            {
                return Err(WorktreeError::Refused(format!(
                    "`{}` conflicts with the checkout; nothing was changed. Merge it yourself \
                     with `git merge {}`",
                    kept.branch, kept.branch
                )));
            }
            repo.merge(&[&theirs], None, Some(CheckoutBuilder::new().safe()))?;
            let mut index = repo.index()?;
            if index.has_conflicts() {
                repo.cleanup_state()?;
                repo.checkout_head(Some(CheckoutBuilder::new().force()))?;
                return Err(WorktreeError::Refused(format!(
                    "`{}` conflicts with the checkout; nothing was changed. Merge it yourself \
                     with `git merge {}`",
                    kept.branch, kept.branch
                )));
            }
            let tree = repo.find_tree(index.write_tree_to(&repo)?)?;
            let signature = signature(&repo)?;
            let id = repo.commit(
                Some("HEAD"),
                &signature,
                &signature,
                &format!("Merge branch '{}'", kept.branch),
                &tree,
                &[&ours, &their_commit],
            )?;
            repo.cleanup_state()?;
            Merged::Commit(id.to_string())
        };
        drop(theirs);
        drop(branch_ref);
        drop(repo);
        remove(
            &self.repo_dir(&repo_root),
            &repo_root,
            &kept.name,
            &kept.branch,
        )?;
        Ok(merged)
    }

    /// The kept worktree `name` of the repository `cwd` is in, refused while in use.
    fn find(&self, cwd: &Path, name: &str) -> Result<(Kept, PathBuf), WorktreeError> {
        let Some((repo, repo_root)) = open_repo(cwd)? else {
            return Err(WorktreeError::Refused(format!(
                "{} is in no git repository",
                cwd.display()
            )));
        };
        let kept =
            kept_one(&repo, &self.repo_dir(&repo_root), name.to_string())?.ok_or_else(|| {
                WorktreeError::Refused(format!("no kept worktree is called `{name}`"))
            })?;
        if kept.in_use {
            return Err(WorktreeError::Refused(format!(
                "a subagent still works in `{name}`"
            )));
        }
        Ok((kept, repo_root))
    }
}

/// The kept worktree `name` in `dir`, with what its branch changes; `None` when its notes,
/// directory or branch are gone.
fn kept_one(repo: &Repository, dir: &Path, name: String) -> Result<Option<Kept>, WorktreeError> {
    let Some(meta) = read_meta(dir, &name) else {
        return Ok(None);
    };
    let path = dir.join(&name);
    if !path.is_dir() {
        return Ok(None);
    }
    let head = match repo
        .find_branch(&meta.branch, BranchType::Local)
        .and_then(|branch| branch.get().peel_to_commit())
    {
        Ok(commit) => commit.id().to_string(),
        Err(_) => return Ok(None),
    };
    let (files, insertions, deletions) = changes(repo, &meta.base, &head)?;
    Ok(Some(Kept {
        in_use: in_use(dir, &name),
        name,
        branch: meta.branch,
        path,
        base: meta.base,
        label: meta.label,
        files,
        insertions,
        deletions,
    }))
}

/// The repository `cwd` is in and its root; from inside a worktree, its main repository.
fn open_repo(cwd: &Path) -> Result<Option<(Repository, PathBuf)>, WorktreeError> {
    let Ok(mut repo) = Repository::discover(cwd) else {
        return Ok(None);
    };
    if repo.is_worktree()
        && let Some(main) = repo.commondir().parent()
    {
        repo = Repository::open(main)?;
    }
    let Some(root) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(None);
    };
    let root = root.canonicalize().map_err(io(&root))?;
    Ok(Some((repo, root)))
}

struct Meta {
    branch: String,
    base: String,
    label: String,
}

fn read_meta(dir: &Path, name: &str) -> Option<Meta> {
    let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).ok()?;
    let value: Value = serde_json::from_str(&text).ok()?;
    Some(Meta {
        branch: value["branch"].as_str()?.to_string(),
        base: value["base"].as_str()?.to_string(),
        label: value["label"].as_str().unwrap_or_default().to_string(),
    })
}

/// Whether a subagent holds the worktree `name`.
fn in_use(dir: &Path, name: &str) -> bool {
    let Ok(file) = File::open(dir.join(format!("{name}.in-use"))) else {
        return false;
    };
    match file.try_lock() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(_)) => false,
    }
}

/// Removes the worktree `name` (its directory, git's record of it, its branch, Larik's
/// notes of it).
fn remove(dir: &Path, repo_root: &Path, name: &str, branch: &str) -> Result<(), WorktreeError> {
    let repo = Repository::open(repo_root)?;
    let path = dir.join(name);
    if path.exists() {
        std::fs::remove_dir_all(&path).map_err(io(&path))?;
    }
    if let Ok(worktree) = repo.find_worktree(name) {
        worktree.prune(Some(
            WorktreePruneOptions::new()
                .valid(true)
                .locked(false)
                .working_tree(true),
        ))?;
    }
    if let Ok(mut branch) = repo.find_branch(branch, BranchType::Local) {
        branch.delete()?;
    }
    for extension in ["json", "in-use"] {
        let _ = std::fs::remove_file(dir.join(format!("{name}.{extension}")));
    }
    Ok(())
}

/// Commits whatever the worktree holds uncommitted (untracked files included, ignored
/// ones not); libgit2 runs no hooks.
fn commit_leftovers(repo: &Repository, label: &str) -> Result<(), WorktreeError> {
    let mut options = StatusOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true);
    if repo.statuses(Some(&mut options))?.is_empty() {
        return Ok(());
    }
    let mut index = repo.index()?;
    index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
    index.update_all(["*"], None)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let parent = repo.head()?.peel_to_commit()?;
    let signature = signature(repo)?;
    repo.commit(
        Some("HEAD"),
        &signature,
        &signature,
        &format!("Larik subagent ({label}): changes left uncommitted"),
        &tree,
        &[&parent],
    )?;
    Ok(())
}

/// The repository's identity, else Larik's.
fn signature(repo: &Repository) -> Result<Signature<'static>, WorktreeError> {
    Ok(repo
        .signature()
        .or_else(|_| Signature::now("Larik", "larik@localhost"))?)
}

/// The files `head` changes against `base`, and the lines added and removed.
fn changes(
    repo: &Repository,
    base: &str,
    head: &str,
) -> Result<(Vec<String>, usize, usize), WorktreeError> {
    let base = repo.find_commit(Oid::from_str(base)?)?.tree()?;
    let head = repo.find_commit(Oid::from_str(head)?)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&base), Some(&head), None)?;
    let stats = diff.stats()?;
    let files = diff
        .deltas()
        .map(|delta| {
            let status = match delta.status() {
                git2::Delta::Added => "A",
                git2::Delta::Deleted => "D",
                git2::Delta::Renamed => "R",
                _ => "M",
            };
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|path| path.display().to_string())
                .unwrap_or_default();
            format!("{status} {path}")
        })
        .collect();
    Ok((files, stats.insertions(), stats.deletions()))
}

/// Six hex digits that differ between calls.
fn unique_hex() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let seed = format!("{nanos}-{}-{count}", std::process::id());
    let hash = Oid::hash_object(ObjectType::Blob, seed.as_bytes())
        .map(|oid| oid.to_string())
        .unwrap_or(seed);
    hash[..6].to_string()
}
