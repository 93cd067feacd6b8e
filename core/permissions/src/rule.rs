//! Permission rules: parsing `Tool` / `Tool(specifier)` text and matching it to calls.
//!
//! The specifier depends on the tool: `Bash` takes a command (`git status:*` for a prefix,
//! anything else exact), the file tools take a gitignore-style path pattern, `WebFetch`
//! takes `domain:<host>`. Tool names compare case-insensitively with `_` and `-` ignored,
//! so `MultiEdit` and `multi_edit` are the same rule.
//!
//! Inside the parentheses a backslash escapes the next character, so a specifier can hold
//! unbalanced parentheses: `Bash(echo \()` is the command `echo (`. Balanced parentheses
//! need no escape: `Bash(echo (hi))` is the command `echo (hi)`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ToolCategory;
use crate::command::{CommandPart, words};
use crate::paths::normalize;

/// A rule that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The text is empty or has no tool name before `(`.
    #[error("permission rule `{rule}` has no tool name")]
    EmptyName {
        /// The rule text.
        rule: String,
    },
    /// The tool name holds characters a tool name cannot.
    #[error("permission rule `{rule}`: `{name}` is not a tool name")]
    BadName {
        /// The rule text.
        rule: String,
        /// The name found.
        name: String,
    },
    /// A `(` without its `)`, a stray `)`, or text after the closing `)`.
    #[error(
        "permission rule `{rule}` has unbalanced parentheses; expected `Tool` or `Tool(specifier)`"
    )]
    Unbalanced {
        /// The rule text.
        rule: String,
    },
    /// `Tool()` or `Bash(:*)`.
    #[error("permission rule `{rule}` has an empty specifier; write `{name}` to match every call")]
    EmptySpecifier {
        /// The rule text.
        rule: String,
        /// The tool name, the rule to use instead.
        name: String,
    },
    /// The path pattern is not a valid glob.
    #[error("permission rule `{rule}`: bad path pattern: {message}")]
    BadPattern {
        /// The rule text.
        rule: String,
        /// What is wrong with it.
        message: String,
    },
}

/// One parsed permission rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The tool name as displayed: canonical for built-in tools, as written otherwise.
    tool: String,
    /// The tool name lowercased with `_` removed, for comparisons.
    key: String,
    specifier: Option<Specifier>,
}

#[derive(Debug, Clone)]
enum Specifier {
    /// `Bash(git status:*)`: the command's first words.
    CommandPrefix { text: String, words: Vec<String> },
    /// `Bash(npm run test)`: the whole command, or one part of a chained command.
    CommandExact {
        /// As written in the rule, escapes included.
        text: String,
        /// The command itself, unescaped and trimmed.
        command: String,
        words: Vec<String>,
    },
    /// `Edit(src/**)` and the like.
    Path(PathPattern),
    /// `WebFetch(domain:example.com)`: the host a call reaches, exactly, or any host
    /// below it for `domain:*.example.com`. Stored lowercase.
    Domain(String),
    /// A specifier for a tool whose calls carry nothing to match it against.
    Other(String),
}

/// A path pattern and the directory it is relative to.
#[derive(Debug, Clone)]
struct PathPattern {
    text: String,
    base: Base,
    matcher: GlobMatcher,
    /// The directories whose whole contents the pattern covers without matching them
    /// themselves: those matching the part before a trailing `/**`.
    contents_of: ContentsOf,
}

/// For a pattern `<p>/**`: which directories it empties, beyond those it matches.
#[derive(Debug, Clone)]
enum ContentsOf {
    /// The pattern does not end in `/**`.
    Nothing,
    /// The pattern is `**` alone: everything below its base directory.
    Base,
    /// Directories matching `<p>`, relative to the base.
    Matching(GlobMatcher),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Cwd,
    Home,
    Root,
}

/// Tools whose specifier may be `domain:<host>`.
const DOMAIN_TOOLS: [&str; 2] = ["webfetch", "browsernavigate"];

/// Tools whose specifier is a path pattern.
const PATH_TOOLS: [&str; 7] = [
    "read",
    "edit",
    "write",
    "multiedit",
    "grep",
    "glob",
    "notebookedit",
];

/// `name` lowercased with `_` and `-` removed: the form rules compare tool names in, so
/// `MultiEdit`, `multi_edit`, `multi-edit` and `MULTIEDIT` all name the same tool.
pub fn normalize_tool_name(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `rule` (a tool name as a rule or `--disallowedTools` gives it) is `mcp__<server>`
/// or `mcp__<server>__*` and `tool` is a tool of that MCP server, `mcp__<server>__<name>`.
/// Server names compare by their letters and digits alone, case aside, as tool names do
/// (a server `my.server` has tools `mcp__my_server__…`, and the rule `mcp__My-Server`
/// covers them).
pub fn mcp_server_rule_covers(rule: &str, tool: &str) -> bool {
    let Some(server) = rule.strip_prefix("mcp__") else {
        return false;
    };
    let server = server.strip_suffix("__*").unwrap_or(server);
    let Some((tool_server, name)) = tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    else {
        return false;
    };
    let key = |text: &str| -> String {
        text.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    !server.contains("__")
        && !name.is_empty()
        && !key(server).is_empty()
        && key(server) == key(tool_server)
}

/// The display name of a tool: Claude Code's spelling for built-in tools, else as given.
pub(crate) fn canonical_name(name: &str) -> String {
    let canonical = match normalize_tool_name(name).as_str() {
        "bash" => "Bash",
        "read" => "Read",
        "edit" => "Edit",
        "write" => "Write",
        "multiedit" => "MultiEdit",
        "grep" => "Grep",
        "glob" => "Glob",
        "notebookedit" => "NotebookEdit",
        "webfetch" => "WebFetch",
        "websearch" => "WebSearch",
        _ => return name.to_owned(),
    };
    canonical.to_owned()
}

impl Rule {
    /// Parses `Tool` or `Tool(specifier)`.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let unbalanced = || RuleError::Unbalanced {
            rule: text.to_owned(),
        };
        let (name, inner) = match text.find('(') {
            None if text.contains(')') => return Err(unbalanced()),
            None => (text, None),
            Some(open) => {
                let body = &text[open + 1..];
                // The specifier ends at the `)` that closes the first `(`, and so must the rule.
                let close = closing_paren(body).ok_or_else(unbalanced)?;
                if close + 1 != body.len() {
                    return Err(unbalanced());
                }
                (text[..open].trim(), Some(body[..close].trim()))
            }
        };
        if name.is_empty() {
            return Err(RuleError::EmptyName {
                rule: text.to_owned(),
            });
        }
        // `*` only in `mcp__<server>__*`, Claude Code's spelling of every tool of a server.
        let plain = name
            .strip_suffix("__*")
            .filter(|_| name.starts_with("mcp__"));
        if !plain
            .unwrap_or(name)
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(RuleError::BadName {
                rule: text.to_owned(),
                name: name.to_owned(),
            });
        }
        let key = normalize_tool_name(name);
        let tool = canonical_name(name);
        let specifier = match inner {
            None => None,
            Some("") => {
                return Err(RuleError::EmptySpecifier {
                    rule: text.to_owned(),
                    name: tool,
                });
            }
            Some(inner) => Some(parse_specifier(text, &key, &tool, inner)?),
        };
        Ok(Rule {
            tool,
            key,
            specifier,
        })
    }

    /// The tool name this rule is about, e.g. `Bash`.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Whether the rule names the tool (or, for `Read`/`Edit`, its category).
    pub(crate) fn applies_to(&self, tool: &str, category: ToolCategory) -> bool {
        match self.key.as_str() {
            "read" if category == ToolCategory::Read => true,
            "edit" if category == ToolCategory::Edit => true,
            key => key == normalize_tool_name(tool) || self.covers_mcp_server_of(tool),
        }
    }

    /// Whether the rule is `mcp__<server>` or `mcp__<server>__*` and `tool` is one of that
    /// server's tools (see [`mcp_server_rule_covers`]).
    fn covers_mcp_server_of(&self, tool: &str) -> bool {
        mcp_server_rule_covers(&self.tool, tool)
    }

    /// Whether the rule has no specifier, so it covers every call of its tool.
    pub(crate) fn is_bare(&self) -> bool {
        self.specifier.is_none()
    }

    /// Whether the rule's `domain:` specifier covers `host` (lowercase): the same host, or
    /// for `*.example.com` any host ending in `.example.com`; false for other rules.
    pub(crate) fn matches_domain(&self, host: &str) -> bool {
        let Some(Specifier::Domain(domain)) = &self.specifier else {
            return false;
        };
        match domain.strip_prefix("*.") {
            Some(parent) => host
                .strip_suffix(parent)
                .is_some_and(|below| below.ends_with('.') && below.len() > 1),
            None => host == domain,
        }
    }

    /// Whether the rule's path pattern matches `path`; false for rules without one.
    pub(crate) fn matches_path(&self, path: &Path, cwd: &Path, home: Option<&Path>) -> bool {
        let Some((pattern, relative)) = self.relative_path(path, cwd, home) else {
            return false;
        };
        // Gitignore style: a pattern naming a directory covers everything below it.
        relative
            .ancestors()
            .filter(|ancestor| !ancestor.as_os_str().is_empty())
            .any(|ancestor| pattern.matcher.is_match(ancestor))
    }

    /// Whether the rule's path pattern covers everything inside the directory `dir`: it
    /// matches `dir` itself, or it is `<p>/**` and `<p>` matches `dir`.
    pub(crate) fn covers_contents_of(&self, dir: &Path, cwd: &Path, home: Option<&Path>) -> bool {
        let Some((pattern, relative)) = self.relative_path(dir, cwd, home) else {
            return false;
        };
        match &pattern.contents_of {
            ContentsOf::Nothing => false,
            ContentsOf::Base => relative.as_os_str().is_empty(),
            ContentsOf::Matching(matcher) => {
                !relative.as_os_str().is_empty() && matcher.is_match(&relative)
            }
        }
    }

    /// The rule's path pattern and `path` relative to the pattern's base, when the rule has
    /// a path pattern and `path` lies at or below that base.
    fn relative_path(
        &self,
        path: &Path,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Option<(&PathPattern, PathBuf)> {
        let Some(Specifier::Path(pattern)) = &self.specifier else {
            return None;
        };
        let base = match pattern.base {
            Base::Cwd => normalize(cwd),
            Base::Home => normalize(home?),
            Base::Root => Path::new("/").to_owned(),
        };
        let relative = normalize(path).strip_prefix(&base).ok()?.to_owned();
        Some((pattern, relative))
    }

    /// Whether the rule's command specifier matches one simple command.
    ///
    /// With `strict`, a prefix rule does not vouch for a part that runs a substitution or
    /// redirects to a file (used for allow rules); deny and ask rules match regardless.
    pub(crate) fn matches_command(&self, part: &CommandPart, strict: bool) -> bool {
        match &self.specifier {
            Some(Specifier::CommandPrefix { words, .. }) => {
                !(strict && part.has_side_channel) && part.words.starts_with(words)
            }
            Some(Specifier::CommandExact { words, .. }) => part.words == *words,
            _ => false,
        }
    }

    /// Whether the rule is an exact command equal to the whole of `command`, as remembered
    /// for a chained command that no per-part rule describes.
    pub(crate) fn matches_whole_command(&self, command: &str) -> bool {
        matches!(&self.specifier, Some(Specifier::CommandExact { command: exact, .. })
            if exact == command.trim())
    }
}

fn parse_specifier(rule: &str, key: &str, tool: &str, inner: &str) -> Result<Specifier, RuleError> {
    if key == "bash" {
        let (raw, is_prefix) = match inner.strip_suffix(":*") {
            Some(prefix) => (prefix.trim_end(), true),
            None => (inner, false),
        };
        let command = unescape_command(raw);
        let command = command.trim();
        if command.is_empty() {
            return Err(RuleError::EmptySpecifier {
                rule: rule.to_owned(),
                name: tool.to_owned(),
            });
        }
        return Ok(if is_prefix {
            Specifier::CommandPrefix {
                text: raw.to_owned(),
                words: words(command),
            }
        } else {
            Specifier::CommandExact {
                text: inner.to_owned(),
                command: command.to_owned(),
                words: words(command),
            }
        });
    }
    if PATH_TOOLS.contains(&key) {
        return parse_path(rule, inner).map(Specifier::Path);
    }
    if DOMAIN_TOOLS.contains(&key)
        && let Some(domain) = inner.strip_prefix("domain:")
    {
        let domain = domain
            .trim()
            .trim_end_matches('.')
            .trim_start_matches('[')
            .trim_end_matches(']');
        return Ok(Specifier::Domain(domain.to_ascii_lowercase()));
    }
    Ok(Specifier::Other(inner.to_owned()))
}

/// Reads a path pattern: `//abs`, `~/in-home`, `/anchored-at-cwd`, `./anchored-at-cwd`,
/// `dir/anchored-at-cwd`, or `name` (no `/`) which matches at any depth.
fn parse_path(rule: &str, text: &str) -> Result<PathPattern, RuleError> {
    let (base, rest, anchored) = if let Some(rest) = text.strip_prefix("//") {
        (Base::Root, rest, true)
    } else if let Some(rest) = text.strip_prefix("~/") {
        (Base::Home, rest, true)
    } else if text == "~" {
        (Base::Home, "", true)
    } else if let Some(rest) = text.strip_prefix("./") {
        (Base::Cwd, rest, true)
    } else if let Some(rest) = text.strip_prefix('/') {
        (Base::Cwd, rest, true)
    } else {
        (Base::Cwd, text, text.trim_end_matches('/').contains('/'))
    };
    let mut glob = rest.to_owned();
    if glob.is_empty() || glob.ends_with('/') {
        glob.push_str("**");
    }
    if !anchored {
        glob.insert_str(0, "**/");
    }
    let matcher = compile_glob(rule, &glob)?;
    let contents_of = if glob == "**" {
        ContentsOf::Base
    } else if let Some(dir) = glob.strip_suffix("/**") {
        // A prefix that is no glob on its own (`a\/**`) just leaves directories to `matcher`.
        compile_glob(rule, dir).map_or(ContentsOf::Nothing, ContentsOf::Matching)
    } else {
        ContentsOf::Nothing
    };
    Ok(PathPattern {
        text: text.to_owned(),
        base,
        matcher,
        contents_of,
    })
}

/// A path glob as rules use it: `*` stays within one directory, `\` escapes.
fn compile_glob(rule: &str, glob: &str) -> Result<GlobMatcher, RuleError> {
    Ok(GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| RuleError::BadPattern {
            rule: rule.to_owned(),
            message: err.kind().to_string(),
        })?
        .compile_matcher())
}

/// The byte index in `body` of the `)` closing a `(` just before it; backslash-escaped
/// parentheses do not count, nested pairs are skipped.
fn closing_paren(body: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut chars = body.char_indices();
    while let Some((index, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '(' => depth += 1,
            ')' => match depth.checked_sub(1) {
                Some(less) => depth = less,
                None => return Some(index),
            },
            _ => {}
        }
    }
    None
}

/// A `Bash` specifier's command with the rule-level escapes removed: `\\`, `\(` and `\)`
/// anywhere, and `\*` after a `:` at the very end (which keeps an exact command ending in `:*` from
/// reading as a prefix rule). Any other backslash is the shell's and stays.
fn unescape_command(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek().copied() {
                Some(next @ ('\\' | '(' | ')')) => {
                    out.push(next);
                    chars.next();
                    continue;
                }
                Some('*') if out.ends_with(':') && chars.clone().nth(1).is_none() => {
                    out.push('*');
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// `command` written so that `Bash(<result>)` parses back to exactly `command`, as an
/// exact rule: the inverse of [`unescape_command`]. Commands without backslashes whose
/// parentheses pair up are left as they are, for readability.
pub(crate) fn escape_command(command: &str) -> String {
    let plain = !command.contains('\\') && {
        let mut wrapped = command.to_owned();
        wrapped.push(')');
        closing_paren(&wrapped) == Some(command.len())
    };
    let mut out = String::with_capacity(command.len() + 4);
    for c in command.chars() {
        if !plain && matches!(c, '\\' | '(' | ')') {
            out.push('\\');
        }
        out.push(c);
    }
    if out.ends_with(":*") {
        out.insert(out.len() - 1, '\\');
    }
    out
}

impl Rule {
    /// The specifier as written back, without its parentheses.
    fn specifier_text(&self) -> Option<String> {
        self.specifier.as_ref().map(|specifier| match specifier {
            Specifier::CommandPrefix { text, .. } => format!("{text}:*"),
            Specifier::CommandExact { text, .. } | Specifier::Other(text) => text.clone(),
            Specifier::Path(pattern) => pattern.text.clone(),
            Specifier::Domain(domain) => format!("domain:{domain}"),
        })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tool)?;
        match self.specifier_text() {
            Some(text) => write!(f, "({text})"),
            None => Ok(()),
        }
    }
}

/// Rules are equal when they name the same tool (case and `_` aside) and specifier.
impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.key == other.key && self.specifier_text() == other.specifier_text()
    }
}

impl Eq for Rule {}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Rule, RuleError> {
        Rule::parse(text)
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Rule, D::Error> {
        let text = String::deserialize(deserializer)?;
        Rule::parse(&text).map_err(serde::de::Error::custom)
    }
}
