//! Subagents: child agents the model starts with a fresh context. This crate holds what a
//! child is made from: the [`Definition`]s of Claude Code's agent files (`<name>.md` with
//! YAML frontmatter) and Larik's built-ins, discovered by precedence from the user's and
//! the project's folders ([`discover`]).

mod definitions;

pub use definitions::{
    Definition, DefinitionRoots, Discovered, Isolation, Origin, builtins, discover, parse,
};
