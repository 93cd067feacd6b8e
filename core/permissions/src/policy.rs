//! The decision procedure: rules first, then the permission mode.

use std::path::{Path, PathBuf};

use larik_protocol::{PermissionDecision, PermissionMode};
use serde::{Deserialize, Serialize};

use crate::command::{CommandPart, split_command};
use crate::paths::is_inside;
use crate::rule::{Rule, RuleError, canonical_name};
use crate::suggest::suggest_rule;
use crate::{Decision, PermissionQuery, ToolCategory};

/// The allow, ask and deny rules in force.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RuleSet {
    /// Calls these match run without asking (unless a deny or ask rule matches too).
    pub allow: Vec<Rule>,
    /// Calls these match always ask, even when an allow rule matches.
    pub ask: Vec<Rule>,
    /// Calls these match are refused, whatever else matches.
    pub deny: Vec<Rule>,
}

impl RuleSet {
    /// Parses and adds an allow rule.
    pub fn add_allow(&mut self, rule: &str) -> Result<(), RuleError> {
        add_unique(&mut self.allow, Rule::parse(rule)?);
        Ok(())
    }

    /// Parses and adds an ask rule.
    pub fn add_ask(&mut self, rule: &str) -> Result<(), RuleError> {
        add_unique(&mut self.ask, Rule::parse(rule)?);
        Ok(())
    }

    /// Parses and adds a deny rule.
    pub fn add_deny(&mut self, rule: &str) -> Result<(), RuleError> {
        add_unique(&mut self.deny, Rule::parse(rule)?);
        Ok(())
    }
}

fn add_unique(rules: &mut Vec<Rule>, rule: Rule) {
    if !rules.contains(&rule) {
        rules.push(rule);
    }
}

/// Decides whether tool calls run, ask or are refused.
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    mode: PermissionMode,
    rules: RuleSet,
    home: Option<PathBuf>,
}

/// A call's command, split once for every rule to look at.
struct Command<'a> {
    /// The command as given, for exact rules naming all of it.
    text: &'a str,
    /// The simple commands, as the shell runs them.
    parts: Vec<CommandPart>,
    /// Also the commands inside substitutions and subshells, for deny and ask rules.
    all_parts: Vec<CommandPart>,
}

impl PermissionPolicy {
    /// A policy in `mode` with `rules`; `home` resolves `~/` in path rules.
    pub fn new(mode: PermissionMode, rules: RuleSet, home: Option<PathBuf>) -> Self {
        PermissionPolicy { mode, rules, home }
    }

    /// The current mode.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// Switches the mode for the following calls.
    pub fn set_mode(&mut self, mode: PermissionMode) {
        self.mode = mode;
    }

    /// The rules in force, including those remembered this session.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Remembers an "always" answer: `AllowAlways` adds `rule` as an allow rule,
    /// `RejectAlways` as a deny rule; other answers change nothing.
    pub fn remember(&mut self, decision: PermissionDecision, rule: &str) -> Result<(), RuleError> {
        match decision {
            PermissionDecision::AllowAlways => self.rules.add_allow(rule),
            PermissionDecision::RejectAlways => self.rules.add_deny(rule),
            PermissionDecision::AllowOnce
            | PermissionDecision::RejectOnce
            | PermissionDecision::Cancelled => Ok(()),
        }
    }

    /// Whether deny rules hide the absolute `path` from reading, so that searches (grep,
    /// glob) can skip it: a deny rule matches a `Read` call on it (a bare `Read` deny
    /// hides everything), or, taking `path` as a directory, one covers all it could hold
    /// (`Read(secrets/**)` hides the directory `secrets`, so a walker need not descend).
    /// Ask rules and the mode do not count, nor rules naming other tools.
    ///
    /// Nothing here touches the filesystem, so a file named like such a directory (a file
    /// `secrets` under `Read(secrets/**)`) counts as hidden too.
    pub fn hides_from_reads(&self, path: &Path, cwd: &Path) -> bool {
        let query = PermissionQuery {
            tool: "read",
            category: ToolCategory::Read,
            read_only: true,
            path: Some(path),
            command: None,
            domain: None,
            cwd,
            sandboxed: false,
        };
        self.rules.deny.iter().any(|rule| {
            self.hits(rule, &query, None)
                || (rule.applies_to(query.tool, query.category)
                    && rule.covers_contents_of(path, cwd, self.home.as_deref()))
        })
    }

    /// Decides one call: deny rules, then (outside `bypassPermissions`) ask rules, then
    /// allow rules, then the mode. In `plan` mode nothing that changes anything runs,
    /// whatever the allow rules say.
    pub fn decide(&self, query: &PermissionQuery) -> Decision {
        let command = query.command.map(|text| {
            let parts = split_command(text, false);
            let mut all_parts = parts.clone();
            all_parts.extend(split_command(text, true));
            Command {
                text,
                parts,
                all_parts,
            }
        });

        if let Some(rule) = self
            .rules
            .deny
            .iter()
            .find(|rule| self.hits(rule, query, command.as_ref()))
        {
            return Decision::Deny {
                reason: format!(
                    "{} is denied by the rule `{rule}`",
                    canonical_name(query.tool)
                ),
            };
        }
        if self.mode == PermissionMode::Plan && !query.read_only {
            return Decision::Deny {
                reason: format!(
                    "plan mode: {} is not allowed while planning; present the plan instead",
                    canonical_name(query.tool)
                ),
            };
        }
        let ask = || Decision::Ask {
            rule_suggestion: suggest_rule(query),
        };
        if self.mode != PermissionMode::BypassPermissions
            && self
                .rules
                .ask
                .iter()
                .any(|rule| self.hits(rule, query, command.as_ref()))
        {
            return ask();
        }
        if self.allowed_by_rules(query, command.as_ref()) {
            return Decision::Allow;
        }

        let inside_cwd = query.path.is_none_or(|path| is_inside(path, query.cwd));
        match self.mode {
            PermissionMode::BypassPermissions => Decision::Allow,
            PermissionMode::AcceptEdits
                if query.category == ToolCategory::Edit
                    && query.path.is_some_and(|path| is_inside(path, query.cwd)) =>
            {
                Decision::Allow
            }
            // Plan mode reaches here only for read-only calls, which it treats as default does.
            PermissionMode::Default | PermissionMode::AcceptEdits | PermissionMode::Plan => {
                let local_read = query.read_only && query.category != ToolCategory::Network;
                if (local_read && inside_cwd) || query.sandboxed {
                    Decision::Allow
                } else {
                    ask()
                }
            }
        }
    }

    /// Whether a deny or ask rule matches the call: its path, or any part of its command.
    fn hits(&self, rule: &Rule, query: &PermissionQuery, command: Option<&Command>) -> bool {
        if !rule.applies_to(query.tool, query.category) {
            return false;
        }
        if rule.is_bare() {
            return true;
        }
        if let Some(path) = query.path
            && rule.matches_path(path, query.cwd, self.home.as_deref())
        {
            return true;
        }
        if query.domain.is_some_and(|host| rule.matches_domain(host)) {
            return true;
        }
        command.is_some_and(|command| {
            rule.matches_whole_command(command.text)
                || command
                    .all_parts
                    .iter()
                    .any(|part| rule.matches_command(part, false))
        })
    }

    /// Whether allow rules cover the call; for a command, an exact rule must name all of it
    /// or every part must be covered.
    fn allowed_by_rules(&self, query: &PermissionQuery, command: Option<&Command>) -> bool {
        let allow: Vec<&Rule> = self
            .rules
            .allow
            .iter()
            .filter(|rule| rule.applies_to(query.tool, query.category))
            .collect();
        match command {
            Some(command) => {
                allow
                    .iter()
                    .any(|rule| rule.matches_whole_command(command.text))
                    || (!command.parts.is_empty()
                        && command.parts.iter().all(|part| {
                            allow
                                .iter()
                                .any(|rule| rule.is_bare() || rule.matches_command(part, true))
                        }))
            }
            None => allow.iter().any(|rule| {
                rule.is_bare()
                    || query.path.is_some_and(|path| {
                        rule.matches_path(path, query.cwd, self.home.as_deref())
                    })
                    || query.domain.is_some_and(|host| rule.matches_domain(host))
            }),
        }
    }
}
