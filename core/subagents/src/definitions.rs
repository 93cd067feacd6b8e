//! Subagent definitions in Claude Code's format: a `<name>.md` file whose YAML
//! frontmatter says what the child may do (`name`, `description`, `tools`,
//! `disallowedTools`, `model`, `permissionMode`, `maxTurns`, `isolation`, `background`)
//! and whose body is its system prompt. Claude Code's tool names (`Read`, `Bash`, …) are
//! read as Larik's (`read`, `bash`, …); others pass as written (`mcp__docs__search`).
//!
//! Discovery, lowest to highest precedence: `~/.claude/agents`, `<config dir>/agents`,
//! then `.claude/agents` and `.larik/agents` in each directory from the repository root
//! down to the working directory; a later file of a name replaces an earlier one, and any
//! file replaces a built-in (`general-purpose`: every tool; `explore`: read, grep, glob and
//! lsp). A file that cannot be read as a definition is one notice; discovery goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

/// Where a child works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// In a git worktree of its own.
    Worktree,
}

/// Where a definition comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// One of Larik's own.
    BuiltIn,
    /// A file.
    File(PathBuf),
}

/// What a child is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// How the model names it in `task`.
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// Its system prompt (the file's body).
    pub prompt: String,
    /// The tools it may use (Larik's names); `None`: the parent's.
    pub tools: Option<Vec<String>>,
    /// Tools it may not use.
    pub disallowed_tools: Vec<String>,
    /// The model (a role, `provider/model`, or Claude Code's `sonnet`/`opus`/`haiku`);
    /// `None` (or `inherit`): decided by the task and the roles.
    pub model: Option<String>,
    /// The permission mode it asks for (only a tighter one than the parent's applies).
    pub permission_mode: Option<String>,
    /// Most model turns.
    pub max_turns: Option<u32>,
    /// A spending cap of its own in US dollars (`maxBudgetUsd`), besides the session's.
    pub max_budget_usd: Option<f64>,
    /// Where it works.
    pub isolation: Option<Isolation>,
    /// Whether it runs in the background unless the task says otherwise.
    pub background: bool,
    /// Where it comes from.
    pub origin: Origin,
}

/// The folders definitions are found in.
#[derive(Debug, Clone, Default)]
pub struct DefinitionRoots {
    /// The user's home (for `~/.claude/agents`).
    pub home: Option<PathBuf>,
    /// Larik's personal configuration folder (for `<config dir>/agents`).
    pub config_dir: Option<PathBuf>,
    /// The repository root (the project root outside a repository).
    pub repo_root: PathBuf,
    /// The working directory, at or below the repository root.
    pub cwd: PathBuf,
}

impl DefinitionRoots {
    /// The folders to read, lowest precedence first.
    pub fn folders(&self) -> Vec<PathBuf> {
        let mut folders = Vec::new();
        if let Some(home) = &self.home {
            folders.push(home.join(".claude/agents"));
        }
        if let Some(config) = &self.config_dir {
            folders.push(config.join("agents"));
        }
        let mut dirs = vec![self.repo_root.clone()];
        if let Ok(below) = self.cwd.strip_prefix(&self.repo_root) {
            let mut dir = self.repo_root.clone();
            for part in below.components() {
                dir.push(part);
                dirs.push(dir.clone());
            }
        }
        for dir in dirs {
            folders.push(dir.join(".claude/agents"));
            folders.push(dir.join(".larik/agents"));
        }
        folders
    }
}

/// What discovery found.
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// By name.
    pub definitions: BTreeMap<String, Definition>,
    /// One line per file that could not be used.
    pub notices: Vec<String>,
}

/// Every definition `roots` give, the built-ins included.
pub fn discover(roots: &DefinitionRoots) -> Discovered {
    let mut found = Discovered::default();
    for definition in builtins() {
        found
            .definitions
            .insert(definition.name.clone(), definition);
    }
    for folder in roots.folders() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
            .collect();
        files.sort();
        for file in files {
            match read(&file) {
                Ok(definition) => {
                    found
                        .definitions
                        .insert(definition.name.clone(), definition);
                }
                Err(why) => found
                    .notices
                    .push(format!("subagent definition {}: {why}", file.display())),
            }
        }
    }
    found
}

/// The definition in `file`.
fn read(file: &Path) -> Result<Definition, String> {
    let text = std::fs::read_to_string(file).map_err(|error| format!("cannot read it: {error}"))?;
    let stem = file
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut definition = parse(&text, &stem)?;
    definition.origin = Origin::File(file.to_path_buf());
    Ok(definition)
}

/// The definition `text` holds (named `stem` unless its frontmatter names it).
pub fn parse(text: &str, stem: &str) -> Result<Definition, String> {
    let (front, body) = split(text).ok_or("it does not start with `---` frontmatter")?;
    let fields = larik_tools::yaml::read(front)?;
    let fields = match fields {
        Value::Mapping(fields) => fields,
        Value::Null => Default::default(),
        _ => return Err("its frontmatter is not a mapping of fields".to_string()),
    };
    let get = |name: &str| fields.get(name);
    let text_of = |name: &str| -> Result<Option<String>, String> {
        match get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.trim().to_string())),
            Some(Value::Number(number)) => Ok(Some(number.to_string())),
            Some(_) => Err(format!("`{name}` must be text")),
        }
    };
    let name = text_of("name")?
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| stem.to_string());
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!(
            "`{name}` cannot name a subagent (use a word, no spaces)"
        ));
    }
    let description = text_of("description")?
        .filter(|description| !description.is_empty())
        .ok_or("it has no `description`")?;
    let max_turns = match get("maxTurns") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_u64()
                .and_then(|turns| u32::try_from(turns).ok())
                .filter(|turns| *turns > 0)
                .ok_or("`maxTurns` must be a positive whole number")?,
        ),
    };
    let isolation = match text_of("isolation")?.as_deref() {
        None | Some("") | Some("none") => None,
        Some("worktree") => Some(Isolation::Worktree),
        Some(other) => {
            return Err(format!(
                "`isolation: {other}` is not known (use `worktree`)"
            ));
        }
    };
    let max_budget_usd = match get("maxBudgetUsd").or_else(|| get("max_budget_usd")) {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_f64()
                .filter(|cap| *cap > 0.0 && cap.is_finite())
                .ok_or("`maxBudgetUsd` must be a positive number of dollars")?,
        ),
    };
    let background = match get("background") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(background)) => *background,
        Some(_) => return Err("`background` must be true or false".to_string()),
    };
    let model = text_of("model")?.filter(|model| !model.is_empty() && model != "inherit");
    Ok(Definition {
        name,
        description,
        prompt: body.trim().to_string(),
        tools: tool_list(get("tools"), "tools")?,
        disallowed_tools: tool_list(get("disallowedTools"), "disallowedTools")?.unwrap_or_default(),
        model,
        permission_mode: text_of("permissionMode")?.filter(|mode| !mode.is_empty()),
        max_turns,
        max_budget_usd,
        isolation,
        background,
        origin: Origin::BuiltIn,
    })
}

/// The frontmatter and the body of `text`.
fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\r\n")
        .or_else(|| text.strip_prefix("---\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// A `tools`-like field: a list, or one string of names separated by commas; `None` when
/// absent.
fn tool_list(value: Option<&Value>, field: &str) -> Result<Option<Vec<String>>, String> {
    let names: Vec<String> = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(names)) => names.split(',').map(str::to_string).collect(),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or(format!("`{field}` must list tool names"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("`{field}` must list tool names")),
    };
    Ok(Some(
        names
            .iter()
            .map(|name| name.trim())
            .filter(|name| !name.is_empty())
            .map(larik_tool_name)
            .collect(),
    ))
}

/// Larik's name for a tool named as Claude Code names it; other names as written.
fn larik_tool_name(name: &str) -> String {
    let known = [
        ("Read", "read"),
        ("Write", "write"),
        ("Edit", "edit"),
        ("MultiEdit", "multi_edit"),
        ("Bash", "bash"),
        ("Grep", "grep"),
        ("Glob", "glob"),
        ("TodoWrite", "todo_write"),
        ("WebFetch", "web_fetch"),
        ("WebSearch", "web_search"),
        ("Task", "task"),
        ("Skill", "skill"),
    ];
    known
        .iter()
        .find(|(claude, _)| *claude == name)
        .map_or_else(|| name.to_string(), |(_, larik)| (*larik).to_string())
}

/// Larik's own definitions.
pub fn builtins() -> Vec<Definition> {
    let builtin =
        |name: &str, description: &str, prompt: &str, tools: Option<&[&str]>| Definition {
            name: name.to_string(),
            description: description.to_string(),
            prompt: prompt.to_string(),
            tools: tools.map(|tools| tools.iter().map(|tool| (*tool).to_string()).collect()),
            disallowed_tools: Vec::new(),
            model: None,
            permission_mode: None,
            max_turns: None,
            max_budget_usd: None,
            isolation: None,
            background: false,
            origin: Origin::BuiltIn,
        };
    vec![
        builtin(
            "general-purpose",
            "A capable agent for multi-step work: researching, changing code, running commands.",
            "You are a subagent working on one task for another agent. Do the task fully with \
             the tools you have.",
            None,
        ),
        builtin(
            "explore",
            "Reads and searches the code to answer a question; changes nothing.",
            "You are a read-only subagent exploring a codebase to answer a question. Read and \
             search; do not change anything.",
            Some(&["read", "grep", "glob", "lsp"]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_files_read_with_larik_tool_names() {
        let text = "---\nname: reviewer\ndescription: Reviews diffs.\ntools: Read, Grep, mcp__docs__search\n\
                    disallowedTools: [Bash]\nmodel: sonnet\npermissionMode: plan\nmaxTurns: 12\n\
                    isolation: worktree\nbackground: true\n---\nYou review.\n";
        let definition = parse(text, "file").expect("a definition");
        assert_eq!(definition.name, "reviewer");
        assert_eq!(definition.description, "Reviews diffs.");
        assert_eq!(definition.prompt, "You review.");
        assert_eq!(
            definition.tools,
            Some(vec![
                "read".into(),
                "grep".into(),
                "mcp__docs__search".into()
            ])
        );
        assert_eq!(definition.disallowed_tools, ["bash"]);
        assert_eq!(definition.model.as_deref(), Some("sonnet"));
        assert_eq!(definition.permission_mode.as_deref(), Some("plan"));
        assert_eq!(definition.max_turns, Some(12));
        assert_eq!(definition.isolation, Some(Isolation::Worktree));
        assert!(definition.background);

        let plain = parse("---\ndescription: d\nmodel: inherit\n---\nbody", "stem").expect("ok");
        assert_eq!(plain.name, "stem");
        assert_eq!(plain.tools, None);
        assert_eq!(plain.model, None);
    }

    #[test]
    fn malformed_files_say_why() {
        let cases = [
            ("no frontmatter", "frontmatter"),
            ("---\nname: x\n", "frontmatter"),
            ("---\n: : :\n---\n", "not YAML"),
            ("---\nname: x\n---\n", "no `description`"),
            ("---\ndescription: d\nmaxTurns: many\n---\n", "maxTurns"),
            (
                "---\ndescription: d\nisolation: box\n---\n",
                "isolation: box",
            ),
            ("---\ndescription: d\ntools: 3\n---\n", "`tools`"),
            ("---\nname: two words\ndescription: d\n---\n", "cannot name"),
        ];
        for (text, why) in cases {
            let error = parse(text, "f").expect_err(text);
            assert!(error.contains(why), "{text:?}: {error}");
        }
    }

    #[test]
    fn a_yaml_bomb_in_the_frontmatter_is_refused_not_expanded() {
        // One anchor of 2,000 values repeated by 2,000 aliases: four million values, which
        // took seconds and hundreds of megabytes before expansion was bounded.
        let wide = format!(
            "---\ndescription: d\nx: &x [{}]\ny: [{}]\n---\nbody\n",
            vec!["1"; 2000].join(","),
            vec!["*x"; 2000].join(",")
        );
        let error = parse(&wide, "bomb").expect_err("a bomb");
        assert!(error.contains("expands to more than"), "{error}");
        let mut nested = "---\ndescription: d\na: &a [l, l, l, l, l, l, l, l, l]\n".to_string();
        for (name, previous) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            let aliases = vec![format!("*{previous}"); 9].join(",");
            nested.push_str(&format!("{name}: &{name} [{aliases}]\n"));
        }
        nested.push_str("---\n");
        assert!(parse(&nested, "laughs").is_err());
    }

    #[test]
    fn later_folders_win_and_a_broken_file_is_one_notice() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("repo");
        let cwd = root.join("pkg/app");
        let write = |path: PathBuf, text: &str| {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        let home = dir.path().join("home");
        let config = dir.path().join("config");
        let agent = |description: &str| format!("---\ndescription: {description}\n---\nbody\n");
        write(home.join(".claude/agents/a.md"), &agent("home"));
        write(config.join("agents/a.md"), &agent("config"));
        write(config.join("agents/b.md"), &agent("config b"));
        write(root.join(".claude/agents/b.md"), &agent("repo claude"));
        write(root.join(".larik/agents/b.md"), &agent("repo larik"));
        write(root.join("pkg/.claude/agents/explore.md"), &agent("mine"));
        write(cwd.join(".larik/agents/broken.md"), "no frontmatter");
        let roots = DefinitionRoots {
            home: Some(home),
            config_dir: Some(config),
            repo_root: root.clone(),
            cwd,
        };
        let found = discover(&roots);
        let description = |name: &str| found.definitions[name].description.clone();
        assert_eq!(description("a"), "config");
        assert_eq!(description("b"), "repo larik");
        assert_eq!(description("explore"), "mine");
        assert_eq!(found.definitions["general-purpose"].origin, Origin::BuiltIn);
        assert!(!found.definitions.contains_key("broken"));
        assert_eq!(found.notices.len(), 1, "{:?}", found.notices);
        assert!(
            found.notices[0].contains("broken.md"),
            "{:?}",
            found.notices
        );
    }
}
