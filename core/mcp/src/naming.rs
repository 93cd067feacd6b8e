//! The names MCP tools go by: `mcp__<server>__<tool>`, with every character providers do
//! not accept in a tool name replaced by `_`, at most 64 characters (a longer name keeps
//! its start and ends in a hash of the whole), and unique within a context (a name taken
//! already gets `_2`, `_3`, …).

use std::collections::BTreeSet;

/// The longest tool name every provider accepts.
const MAX_NAME: usize = 64;

/// `text` with each character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_sanitized(&mut out, text);
    out
}

/// Appends `text` to `out`, sanitized.
fn push_sanitized(out: &mut String, text: &str) {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if text.chars().all(allowed) {
        out.push_str(text);
    } else {
        out.extend(text.chars().map(|c| if allowed(c) { c } else { '_' }));
    }
}

/// The longest server name: its tools' names keep the whole `mcp__<server>__` prefix
/// within the 64 characters providers take.
pub const MAX_SERVER_NAME: usize = 40;

/// Why `name` cannot name a server, if it cannot: its tool names must show which server
/// they belong to (rules like `mcp__<server>` rely on it).
pub fn check_server_name(name: &str) -> Result<(), String> {
    let sanitized = sanitize(name);
    if name.trim().is_empty() || sanitized.contains("__") || name.len() > MAX_SERVER_NAME {
        return Err(format!(
            "the server name `{name}` cannot name its tools: use at most {MAX_SERVER_NAME} \
             letters, digits, `_` or `-`, without `__`"
        ));
    }
    Ok(())
}

/// The prefix every tool of the server `server` has: `mcp__<server>__`.
pub fn server_prefix(server: &str) -> String {
    format!("mcp__{}__", sanitize(server))
}

/// The tool name for `tool` of `server`, before making it unique.
pub fn tool_name(server: &str, tool: &str) -> String {
    let mut name = String::with_capacity(7 + server.len() + tool.len());
    name.push_str("mcp__");
    push_sanitized(&mut name, server);
    name.push_str("__");
    push_sanitized(&mut name, tool);
    if name.len() <= MAX_NAME {
        return name;
    }
    let hash = format!("{:08x}", fnv1a(name.as_bytes()));
    // Every character is ASCII after sanitizing, so any byte index is a boundary.
    format!("{}_{hash}", &name[..MAX_NAME - hash.len() - 1])
}

/// Hands out names unique among those given so far.
#[derive(Debug, Default)]
pub struct UniqueNames {
    taken: BTreeSet<String>,
}

impl UniqueNames {
    /// Names already in use (the built-in tools').
    pub fn with_taken(names: impl IntoIterator<Item = String>) -> Self {
        UniqueNames {
            taken: names.into_iter().collect(),
        }
    }

    /// `wanted`, or with the first free `_N` suffix when it is taken.
    pub fn claim(&mut self, wanted: String) -> String {
        if self.taken.insert(wanted.clone()) {
            return wanted;
        }
        let mut name = wanted.clone();
        let mut number = 2;
        while self.taken.contains(&name) {
            let suffix = format!("_{number}");
            let keep = wanted.len().min(MAX_NAME - suffix.len());
            name = format!("{}{suffix}", &wanted[..keep]);
            number += 1;
        }
        self.taken.insert(name.clone());
        name
    }
}

/// The 32-bit FNV-1a hash: short, and the same in every build.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_bounded_and_unique() {
        assert_eq!(
            tool_name("my server", "get.thing"),
            "mcp__my_server__get_thing"
        );
        assert!(check_server_name("docs-2").is_ok());
        assert!(check_server_name("a__b").is_err());
        assert!(check_server_name("a..b").is_err());
        assert!(check_server_name(&"x".repeat(41)).is_err());
        assert!(check_server_name(" ").is_err());
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        assert_ne!(long, tool_name("server", &"x".repeat(101)));
        let mut names = UniqueNames::with_taken(["read".to_string()]);
        assert_eq!(names.claim("mcp__a__b".into()), "mcp__a__b");
        assert_eq!(names.claim("mcp__a__b".into()), "mcp__a__b_2");
        assert_eq!(names.claim("mcp__a__b".into()), "mcp__a__b_3");
        assert_eq!(names.claim("read".into()), "read_2");
        let mut names = UniqueNames::default();
        let first = names.claim(long.clone());
        let second = names.claim(long);
        assert_eq!(second.len(), 64);
        assert_ne!(first, second);
    }
}
