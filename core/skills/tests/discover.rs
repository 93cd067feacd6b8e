//! Discovery through real folders: every root in its place, later roots overriding earlier
//! ones (a skill overriding a command, the working directory's folder overriding the
//! repository root's), nested commands named `dir:name`, files skipped with their reason,
//! the flags that hide an entry from the model or from `/`, and the `skill` tool loading a
//! body with its folder.

use std::path::{Path, PathBuf};

use larik_skills::{Kind, SkillRoots, SkillTool, discover, index};
use larik_tools::Tool;
use serde_json::json;

fn write(path: PathBuf, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn skill(root: &Path, folder: &str, text: &str) {
    write(root.join("skills").join(folder).join("SKILL.md"), text);
}

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    config: PathBuf,
    repo: PathBuf,
    cwd: PathBuf,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("dir");
        let base = dir.path().canonicalize().expect("canonical");
        let repo = base.join("repo");
        let cwd = repo.join("app");
        std::fs::create_dir_all(&cwd).expect("cwd");
        World {
            home: base.join("home"),
            config: base.join("home/.config/larik"),
            repo,
            cwd,
            _dir: dir,
        }
    }

    fn roots(&self) -> SkillRoots {
        SkillRoots {
            home: Some(self.home.clone()),
            config_dir: Some(self.config.clone()),
            repo_root: self.repo.clone(),
            cwd: self.cwd.clone(),
        }
    }
}

#[test]
fn later_roots_override_earlier_ones_and_skills_override_commands() {
    let world = World::new();
    let claude_home = world.home.join(".claude");
    write(
        claude_home.join("commands/review.md"),
        "---\ndescription: Personal review\n---\nReview it.\n",
    );
    write(
        world.repo.join(".claude/commands/review.md"),
        "---\ndescription: Project review\n---\nReview the project.\n",
    );
    write(
        world.repo.join(".claude/commands/frontend/component.md"),
        "Make a component named $1.\n",
    );
    write(
        world.cwd.join(".larik/commands/deploy.md"),
        "---\ndescription: Deploy\nargument-hint: [env] [tag]\ndisable-model-invocation: true\n---\nDeploy $1 at $2.\n",
    );
    skill(
        &claude_home,
        "pdf",
        "---\nname: pdf\ndescription: Personal PDF skill\n---\nUse pdftotext.\n",
    );
    skill(
        &world.repo.join(".agents"),
        "pdf",
        "---\nname: pdf\ndescription: Repository PDF skill\n---\nUse the repo's script ${CLAUDE_SKILL_DIR}/extract.py.\n",
    );
    skill(
        &world.cwd.join(".claude"),
        "review",
        "---\nname: review\ndescription: Review skill\nuser-invocable: false\n---\nReview carefully.\n",
    );
    skill(
        &world.config,
        "broken",
        "---\nname: broken\n---\nNo description.\n",
    );
    std::fs::create_dir_all(world.repo.join(".claude/skills/empty")).expect("mkdir");
    write(
        world.repo.join(".claude/commands/bad.md"),
        "---\ndescription: [unclosed\n---\nx\n",
    );

    let found = discover(&world.roots());
    let names: Vec<&str> = found
        .entries
        .iter()
        .map(|entry| entry.name.as_str())
        .collect();
    assert_eq!(names, ["deploy", "frontend:component", "pdf", "review"]);

    let pdf = found.get("pdf").expect("pdf");
    assert_eq!(pdf.description, "Repository PDF skill");
    assert_eq!(pdf.dir, world.repo.join(".agents/skills/pdf"));
    let review = found.get("review").expect("review");
    assert_eq!(review.kind, Kind::Skill, "a skill overrides a command");
    assert!(!review.user_invocable);
    let deploy = found.get("deploy").expect("deploy");
    assert_eq!(deploy.argument_hint.as_deref(), Some("[env] [tag]"));
    assert!(!deploy.model_invocable && deploy.user_invocable);
    let component = found.get("frontend:component").expect("nested");
    assert_eq!(
        component.description, "Make a component named $1.",
        "its first line"
    );
    assert!(!component.model_invocable, "no description of its own");

    let overridden: Vec<(String, PathBuf)> = found
        .overridden
        .iter()
        .map(|o| (o.entry.file.display().to_string(), o.by.clone()))
        .collect();
    assert_eq!(overridden.len(), 3, "{overridden:#?}");
    assert!(overridden.contains(&(
        claude_home.join("commands/review.md").display().to_string(),
        world.repo.join(".claude/commands/review.md")
    )));
    assert!(
        overridden.contains(&(
            world
                .repo
                .join(".claude/commands/review.md")
                .display()
                .to_string(),
            world.cwd.join(".claude/skills/review/SKILL.md")
        ))
    );

    let skipped: Vec<(PathBuf, String)> = found
        .skipped
        .iter()
        .map(|s| (s.file.clone(), s.reason.clone()))
        .collect();
    assert!(skipped.contains(&(
        world.config.join("skills/broken/SKILL.md"),
        "has no `description`".into()
    )));
    assert!(skipped.contains(&(
        world.repo.join(".claude/skills/empty"),
        "has no SKILL.md".into()
    )));
    assert!(
        skipped
            .iter()
            .any(|(file, reason)| file.ends_with("commands/bad.md") && reason.contains("not YAML"))
    );

    let listed = index(&found.entries).expect("an index");
    assert!(listed.contains("- pdf: Repository PDF skill"), "{listed}");
    assert!(listed.contains("- review: Review skill"), "{listed}");
    assert!(
        !listed.contains("deploy") && !listed.contains("component"),
        "{listed}"
    );
}

#[tokio::test]
async fn the_skill_tool_loads_a_body_with_its_folder_and_arguments() {
    let world = World::new();
    skill(
        &world.repo.join(".claude"),
        "release",
        "---\ndescription: Cut a release\n---\nTag version $1 and run ${CLAUDE_SKILL_DIR}/notes.sh.\n",
    );
    skill(
        &world.repo.join(".claude"),
        "secret",
        "---\ndescription: Hidden\ndisable-model-invocation: true\n---\nx\n",
    );
    let found = discover(&world.roots());
    let tool = SkillTool::new(&found.entries);
    let ctx = larik_tools::ToolContext {
        cwd: world.cwd.clone(),
        cancel: tokio_util::sync::CancellationToken::new(),
        sandbox: std::sync::Arc::new(larik_sandbox::Sandbox::unconfined(&world.cwd)),
        limits: larik_tools::ToolLimits::default(),
        reads: std::sync::Arc::default(),
        hidden: None,
        files: std::sync::Arc::new(larik_tools::DiskFiles),
        feedback: None,
        checkpoint: None,
        call_id: String::new(),
        agent: None,
    };
    let output = tool
        .run(json!({"name": "release", "arguments": "2.1.0"}), &ctx)
        .await;
    assert!(!output.is_error);
    let text = larik_protocol::transcript::result_text(&output.content);
    let dir = world.repo.join(".claude/skills/release");
    assert!(
        text.contains(&format!(
            "Tag version 2.1.0 and run {}/notes.sh.",
            dir.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("Its folder is {}", dir.display())),
        "{text}"
    );

    let hidden = tool.run(json!({"name": "secret"}), &ctx).await;
    assert!(
        hidden.is_error,
        "a skill the model may not invoke is not loaded"
    );
    let text = larik_protocol::transcript::result_text(&hidden.content);
    assert!(text.contains("Skills: release."), "{text}");
}

#[test]
fn deep_folders_and_a_home_project_are_handled() {
    let world = World::new();
    write(
        world.repo.join(".claude/commands/a/b/c/d/e/five.md"),
        "Five levels down.\n",
    );
    write(
        world.repo.join(".claude/commands/a/b/c/d/e/f/six.md"),
        "Six levels down.\n",
    );
    let found = discover(&world.roots());
    assert!(
        found.get("a:b:c:d:e:five").is_some(),
        "{:#?}",
        found.entries
    );
    assert!(found.skipped.iter().any(|skipped| {
        skipped.file == world.repo.join(".claude/commands/a/b/c/d/e/f")
            && skipped.reason.contains("deeper than the 5 levels")
    }));

    // A session started in the home directory reads `~/.claude` once.
    write(
        world.home.join(".claude/commands/hello.md"),
        "---\ndescription: Say hello\nargument-hint: '[name]'\n---\nSay hello to $1.\n",
    );
    let roots = SkillRoots {
        home: Some(world.home.clone()),
        config_dir: None,
        repo_root: world.home.clone(),
        cwd: world.home.clone(),
    };
    let found = discover(&roots);
    assert!(found.overridden.is_empty(), "{:#?}", found.overridden);
    assert_eq!(
        found
            .get("hello")
            .and_then(|entry| entry.argument_hint.as_deref()),
        Some("[name]")
    );
}
