//! A skill's or command's text with its arguments put in: `$ARGUMENTS` is the whole
//! argument, `$1`, `$2`, … its words (quotes group words), and `${CLAUDE_SKILL_DIR}` the
//! entry's folder. When the text takes no argument and one is given, it follows the text
//! on a line of its own, so nothing the user typed is lost.

use crate::discover::Entry;

/// The text `entry` sends for `arguments`.
pub fn expand(entry: &Entry, arguments: &str) -> String {
    expand_arguments(&with_folder(entry), arguments)
}

/// `entry`'s text with `${CLAUDE_SKILL_DIR}` replaced by its folder.
pub fn with_folder(entry: &Entry) -> String {
    let dir = entry.dir.display().to_string();
    entry
        .body
        .replace("${CLAUDE_SKILL_DIR}", &dir)
        .replace("$CLAUDE_SKILL_DIR", &dir)
}

/// `text` with `$ARGUMENTS` and `$1`, `$2`, … replaced (or `arguments` after it, when it
/// takes none).
pub fn expand_arguments(text: &str, arguments: &str) -> String {
    let arguments = arguments.trim();
    let words = split_words(arguments);
    let mut out = String::with_capacity(text.len() + arguments.len());
    let mut used = false;
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(arguments);
            used = true;
            rest = tail;
            continue;
        }
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        match after[..digits].parse::<usize>() {
            Ok(index) if index >= 1 => {
                out.push_str(words.get(index - 1).map_or("", String::as_str));
                used = true;
                rest = &after[digits..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let out = out.trim_end().to_string();
    if !used && !arguments.is_empty() {
        format!("{out}\n\n{arguments}")
    } else {
        out
    }
}

/// The words of an argument: split at spaces, with `"…"` or `'…'` keeping spaces inside.
fn split_words(arguments: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut started = false;
    for c in arguments.chars() {
        match (quote, c) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            (None, c) => current.push(c),
        }
    }
    if started || !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::Kind;
    use std::path::PathBuf;

    fn entry(body: &str) -> Entry {
        Entry {
            name: "x".into(),
            description: "x".into(),
            kind: Kind::Skill,
            file: PathBuf::from("/s/x/SKILL.md"),
            dir: PathBuf::from("/s/x"),
            body: body.into(),
            argument_hint: None,
            model_invocable: true,
            user_invocable: true,
        }
    }

    #[test]
    fn arguments_words_and_the_folder_are_put_in() {
        let text = expand(
            &entry(
                "Fix #$1 with priority $2 ($ARGUMENTS). Run ${CLAUDE_SKILL_DIR}/check.sh, cost $5.\n",
            ),
            "123 \"very high\"",
        );
        assert_eq!(
            text,
            "Fix #123 with priority very high (123 \"very high\"). Run /s/x/check.sh, cost ."
        );
    }

    #[test]
    fn an_argument_the_text_does_not_take_follows_it() {
        assert_eq!(
            expand(&entry("Explain the tests.\n"), "slowly"),
            "Explain the tests.\n\nslowly"
        );
        assert_eq!(
            expand(&entry("Explain the tests.\n"), ""),
            "Explain the tests."
        );
        assert_eq!(expand(&entry("Costs $ and $0.\n"), ""), "Costs $ and $0.");
    }
}
