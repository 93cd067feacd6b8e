//! `skill_file`, `command_file` and `agent_file`: Markdown files with YAML frontmatter in
//! Claude Code's layout — a skill's `SKILL.md`, a custom command's `commands/<name>.md`,
//! a subagent's `agents/<name>.md` — found by discovery in a project's `.claude` folder,
//! and a skill's or command's text with fuzzed arguments put in.
//!
//! What must hold: no panic, and no YAML bomb (anchors and aliases expanding
//! exponentially) that takes unbounded memory or time; each file gives exactly one entry or
//! one reason it was skipped; a file without frontmatter is all body (a command), has no
//! `description` (a skill), or is not a definition (an agent), as the crates document; a
//! command is named by its path whatever its frontmatter says; what a definition holds
//! keeps its documented bounds; and arguments go where `$ARGUMENTS` and `$1`… are, or after
//! a text that takes none.

use std::path::PathBuf;

use larik_skills::{Entry, Kind, SkillRoots, discover, expand, frontmatter, index, with_folder};
use larik_subagents::{DefinitionRoots, Origin};

/// Fragments of frontmatter that mutations splice in.
pub(super) const TOKENS: &[&str] = &[
    "---\n",
    "---\r\n",
    "\u{feff}",
    "name: review-pr\n",
    "description: Review a pull request\n",
    "description: >\n  folded\n  text\n",
    "description: |\n  literal\n",
    "description: [a, b]\n",
    "description: 12\n",
    "argument-hint: [pr-number] [priority]\n",
    "argument-hint: \"[file]\"\n",
    "allowed-tools: Bash(git add:*), Bash(git status:*)\n",
    "disable-model-invocation: true\n",
    "user-invocable: false\n",
    "user-invocable: \"false\"\n",
    "model: haiku\n",
    "model: inherit\n",
    "tools: Read, Grep, Glob, Bash\n",
    "tools: [Read, mcp__docs__search]\n",
    "disallowedTools: Write, Edit\n",
    "permissionMode: plan\n",
    "maxTurns: 0\n",
    "maxTurns: 18446744073709551616\n",
    "maxBudgetUsd: .inf\n",
    "isolation: worktree\n",
    "background: yes\n",
    "a: &a [x, x, x, x, x, x, x, x, x]\n",
    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n",
    "*b",
    "&anchor ",
    "<<: *a\n",
    "!!binary ",
    "!tag ",
    "? complex\n",
    "{",
    "[",
    "$ARGUMENTS",
    "$1",
    "$2",
    "$10",
    "$",
    "${CLAUDE_SKILL_DIR}",
    "$CLAUDE_SKILL_DIR",
    "@$1",
    "!`git status`",
];

/// Arguments a user types after `/name`; the input's last line is tried too.
const ARGUMENTS: [&str; 5] = [
    "",
    "123",
    "123 \"very high\"",
    "  'a b' \"c d\" e  ",
    "\"unclosed quote",
];

/// The most bytes of the input's last line used as arguments: what a user types.
const MOST_ARGUMENT_BYTES: usize = 64;

/// A project in a temporary folder.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Project {
    fn new() -> Self {
        let dir = super::scratch();
        let root = dir.path().join("repo");
        Project { _dir: dir, root }
    }

    /// Writes `data` to `relative` under the project.
    fn put(&self, relative: &str, data: &[u8]) -> PathBuf {
        let path = self.root.join(relative);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, data));
        if let Err(error) = written {
            panic!("cannot write {}: {error}", path.display());
        }
        path
    }

    fn skill_roots(&self) -> SkillRoots {
        SkillRoots {
            home: None,
            config_dir: None,
            repo_root: self.root.clone(),
            cwd: self.root.clone(),
        }
    }
}

/// Whether the text opens a frontmatter block, as the crates read it.
fn opens_frontmatter(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.starts_with("---\n") || text.starts_with("---\r\n")
}

/// A skill's `SKILL.md` in `.claude/skills/review-pr/`.
pub(super) fn skill_file(data: &[u8]) {
    let project = Project::new();
    let file = project.put(".claude/skills/review-pr/SKILL.md", data);
    let found = discover(&project.skill_roots());
    let text = std::str::from_utf8(data).ok();
    let read = text.map(frontmatter::read);
    match (found.entries.as_slice(), found.skipped.as_slice()) {
        ([entry], []) => {
            assert_eq!(entry.kind, Kind::Skill);
            assert_eq!(entry.file, file);
            check_entry(entry);
            let Some(Ok((front, body))) = read else {
                panic!("a skill was found in a file whose frontmatter does not read");
            };
            assert_eq!(
                &entry.body, &body,
                "the skill's body is not the text after its frontmatter"
            );
            assert_eq!(
                Some(&entry.description),
                front.description.as_ref(),
                "a skill without a description was found"
            );
            assert_eq!(
                entry.name,
                front.name.unwrap_or_else(|| "review-pr".into()),
                "the skill is misnamed"
            );
            expansions(entry, data);
        }
        ([], [skipped]) => {
            assert!(
                !skipped.reason.trim().is_empty(),
                "a skill was skipped without a reason"
            );
            if let Some(text) = text.filter(|text| !opens_frontmatter(text)) {
                assert!(
                    skipped.reason.contains("description"),
                    "a SKILL.md without frontmatter ({text:?}) was skipped for another reason: {}",
                    skipped.reason
                );
            }
        }
        (entries, skipped) => panic!(
            "one SKILL.md gave {} entries and {} skipped",
            entries.len(),
            skipped.len()
        ),
    }
    let _ = index(&found.entries);
}

/// A custom command in `.claude/commands/git/commit.md`: `/git:commit`.
pub(super) fn command_file(data: &[u8]) {
    let project = Project::new();
    let file = project.put(".claude/commands/git/commit.md", data);
    let found = discover(&project.skill_roots());
    let text = std::str::from_utf8(data).ok();
    match (found.entries.as_slice(), found.skipped.as_slice()) {
        ([entry], []) => {
            assert_eq!(entry.kind, Kind::Command);
            assert_eq!(entry.file, file);
            assert_eq!(
                entry.name, "git:commit",
                "a command is named by its path, not its frontmatter"
            );
            check_entry(entry);
            let Some(text) = text else {
                panic!("a command was read from a file that is not UTF-8");
            };
            if !opens_frontmatter(text) {
                let body = text.strip_prefix('\u{feff}').unwrap_or(text);
                assert_eq!(
                    entry.body, body,
                    "a command without frontmatter is not all body"
                );
                assert!(
                    entry.user_invocable,
                    "a command without frontmatter cannot be run"
                );
                assert!(
                    !entry.model_invocable,
                    "a command without a description is offered to the model"
                );
            }
            expansions(entry, data);
        }
        ([], [skipped]) => {
            assert!(
                !skipped.reason.trim().is_empty(),
                "a command was skipped without a reason"
            );
            if let Some(text) = text {
                assert!(
                    opens_frontmatter(text),
                    "a command without frontmatter was skipped: {}",
                    skipped.reason
                );
            }
        }
        (entries, skipped) => panic!(
            "one command file gave {} entries and {} skipped",
            entries.len(),
            skipped.len()
        ),
    }
    let _ = index(&found.entries);
}

/// What any entry holds: a usable name and, when offered to the model, a description.
fn check_entry(entry: &Entry) {
    assert!(
        !entry.name.is_empty()
            && !entry.name.contains(char::is_whitespace)
            && !entry.name.starts_with('/'),
        "{:?} names an entry",
        entry.name
    );
    assert!(
        !entry.model_invocable || !entry.description.trim().is_empty(),
        "an entry without a description is offered to the model"
    );
}

/// The entry's text with each of [`ARGUMENTS`] and the input's last line put in.
fn expansions(entry: &Entry, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let last_line = text.lines().last().unwrap_or("");
    let cut = (0..=last_line.len().min(MOST_ARGUMENT_BYTES))
        .rev()
        .find(|&at| last_line.is_char_boundary(at))
        .unwrap_or(0);
    let typed = &last_line[..cut];
    let folder_text = with_folder(entry);
    assert!(
        !folder_text.contains("${CLAUDE_SKILL_DIR}"),
        "the skill's folder was not put in"
    );
    for arguments in ARGUMENTS.into_iter().chain([typed]) {
        let expanded = expand(entry, arguments);
        let given = arguments.trim();
        if !folder_text.contains('$') {
            let plain = folder_text.trim_end();
            let expected = if given.is_empty() {
                plain.to_string()
            } else {
                format!("{plain}\n\n{given}")
            };
            assert_eq!(
                expanded, expected,
                "a text without `$` changed, or lost the arguments"
            );
        } else if folder_text.contains("$ARGUMENTS") && !given.is_empty() {
            assert!(
                expanded.contains(given),
                "`$ARGUMENTS` did not put the arguments in"
            );
        }
    }
}

/// A subagent definition in `.claude/agents/reviewer.md`.
pub(super) fn agent_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = larik_subagents::parse(&text, "reviewer");
    match &parsed {
        Ok(definition) => {
            assert!(
                !definition.name.is_empty() && !definition.name.contains(char::is_whitespace),
                "{:?} names a subagent",
                definition.name
            );
            assert!(
                !definition.description.trim().is_empty(),
                "a subagent without a description"
            );
            assert_eq!(
                definition.prompt,
                definition.prompt.trim(),
                "the prompt is not trimmed"
            );
            for tool in definition
                .tools
                .iter()
                .flatten()
                .chain(&definition.disallowed_tools)
            {
                assert!(
                    !tool.is_empty() && tool == tool.trim(),
                    "the tool name {tool:?} is blank or padded"
                );
            }
            assert!(
                definition.max_turns.is_none_or(|turns| turns > 0),
                "no turn allowed"
            );
            assert!(
                definition
                    .max_budget_usd
                    .is_none_or(|cap| cap > 0.0 && cap.is_finite()),
                "the budget {:?} is not a positive amount",
                definition.max_budget_usd
            );
            assert!(
                definition
                    .model
                    .as_deref()
                    .is_none_or(|model| !model.is_empty() && model != "inherit")
            );
        }
        Err(why) => {
            assert!(
                !why.trim().is_empty(),
                "a definition refused without a reason"
            );
            if !opens_frontmatter(&text) {
                assert!(
                    why.contains("frontmatter"),
                    "a file without frontmatter was refused for another reason: {why}"
                );
            }
        }
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let project = Project::new();
    let file = project.put(".claude/agents/reviewer.md", text.as_bytes());
    let found = larik_subagents::discover(&DefinitionRoots {
        home: None,
        config_dir: None,
        repo_root: project.root.clone(),
        cwd: project.root.join("src"),
    });
    match parsed {
        Ok(mut definition) => {
            definition.origin = Origin::File(file);
            assert_eq!(
                found.definitions.get(&definition.name),
                Some(&definition),
                "discovery read the file otherwise"
            );
            assert!(
                found.notices.is_empty(),
                "a readable definition gave a notice: {:?}",
                found.notices
            );
        }
        Err(_) => {
            assert_eq!(
                found.notices.len(),
                1,
                "a file that is not a definition is not one notice"
            );
            assert!(
                found
                    .definitions
                    .values()
                    .all(|definition| definition.origin == Origin::BuiltIn),
                "a file that is not a definition gave one"
            );
        }
    }
}
