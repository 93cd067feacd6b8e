//! Which targets a hook runs for. A matcher is empty or `*` (every target), a plain name or
//! a `|` list of plain names (each compared with the whole target, ignoring case), or else a
//! regular expression searched in the target, ignoring case (`mcp__github__.*`,
//! `Edit|Write`, `Notebook.*`).

use regex::{Regex, RegexBuilder};

/// A hook's matcher.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Every target.
    Any,
    /// Targets equal to one of these names, ignoring case.
    Names(Vec<String>),
    /// Targets the expression finds a match in, ignoring case.
    Pattern(Regex),
}

/// The most bytes a compiled matcher may take: a hostile file cannot make one huge.
const SIZE_LIMIT: usize = 1 << 20;

impl Matcher {
    /// Reads a matcher; the error says why the expression is not valid.
    pub fn parse(text: &str) -> Result<Matcher, String> {
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::Any);
        }
        let plain = text
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '|' | ' '));
        if plain {
            let names = text
                .split('|')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_string)
                .collect();
            return Ok(Matcher::Names(names));
        }
        RegexBuilder::new(text)
            .case_insensitive(true)
            .size_limit(SIZE_LIMIT)
            .build()
            .map(Matcher::Pattern)
            .map_err(|error| format!("is not a valid regular expression: {error}"))
    }

    /// Whether it matches any of `targets` (one target may go by several names).
    pub fn matches(&self, targets: &[&str]) -> bool {
        match self {
            Matcher::Any => true,
            Matcher::Names(names) => targets
                .iter()
                .any(|target| names.iter().any(|name| name.eq_ignore_ascii_case(target))),
            Matcher::Pattern(pattern) => targets.iter().any(|target| pattern.is_match(target)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(matcher: &str, target: &str) -> bool {
        Matcher::parse(matcher).expect("valid").matches(&[target])
    }

    #[test]
    fn plain_names_match_whole_targets_ignoring_case() {
        assert!(matches("Bash", "bash"));
        assert!(matches("Edit|Write", "write"));
        assert!(matches("Edit | Write", "Edit"));
        assert!(!matches("Edit", "multi_edit"));
        assert!(!matches("Bash", "bash_output"));
        assert!(matches("startup", "startup"));
    }

    #[test]
    fn expressions_search_ignoring_case() {
        assert!(matches("mcp__memory__.*", "mcp__memory__create_entities"));
        assert!(matches("Notebook.*", "notebookedit"));
        assert!(matches("^(read|grep)$", "Grep"));
        assert!(!matches("mcp__github__.*", "mcp__memory__x"));
    }

    #[test]
    fn empty_and_star_match_everything() {
        assert!(matches("", "anything"));
        assert!(matches("*", "anything"));
    }

    #[test]
    fn an_invalid_expression_says_why() {
        let error = Matcher::parse("(bash").expect_err("invalid");
        assert!(error.contains("not a valid regular expression"), "{error}");
    }

    #[test]
    fn one_target_may_go_by_several_names() {
        let matcher = Matcher::parse("MultiEdit").expect("valid");
        assert!(matcher.matches(&["multi_edit", "MultiEdit"]));
    }
}
