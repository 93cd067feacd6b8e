//! Splitting a shell command into the simple commands a rule is checked against.
//!
//! A rule such as `Bash(git status:*)` must not allow `git status && rm -rf /`, so the
//! command is cut at `&&`, `||`, `;`, `|`, `&` and newlines (outside quotes) and every part
//! is judged on its own. A part that runs a substitution (`$(…)`, backticks, `<(…)`) or
//! redirects output to a file is flagged, because its prefix says nothing about its effect.
//! This is a conservative reading of shell syntax, not a shell parser: anything it does not
//! understand makes a part match fewer allow rules, never more.

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandPart {
    /// Its words, split at unquoted whitespace, quotes kept.
    pub words: Vec<String>,
    /// Whether it runs a substitution or writes to a file through a redirection.
    pub has_side_channel: bool,
}

/// Splits `command` into its simple commands.
///
/// With `deep`, substitutions and parentheses also separate parts, so that deny rules see
/// the commands inside `$(…)` and subshells; the result is only used to find more matches.
pub(crate) fn split_command(command: &str, deep: bool) -> Vec<CommandPart> {
    let chars: Vec<char> = command.chars().collect();
    let mut splitter = Splitter::default();
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match quote {
            Some('\'') => {
                splitter.push(c);
                if c == '\'' {
                    quote = None;
                }
                i += 1;
                continue;
            }
            Some(_) => {
                if c == '\\' {
                    splitter.push(c);
                    if let Some(next) = next {
                        splitter.push(next);
                    }
                    i += 2;
                    continue;
                }
                let substitution = c == '`' || (c == '$' && next == Some('('));
                if substitution {
                    splitter.side_channel = true;
                    if deep {
                        // The substitution's body is shell code of its own.
                        quote = None;
                        splitter.flush();
                        i += if c == '$' { 2 } else { 1 };
                        continue;
                    }
                }
                if c == '"' {
                    quote = None;
                }
                splitter.push(c);
                i += 1;
                continue;
            }
            None => {}
        }
        match c {
            '\\' => {
                splitter.push(c);
                if let Some(next) = next {
                    splitter.push(next);
                }
                i += 2;
            }
            '\'' | '"' => {
                quote = Some(c);
                splitter.push(c);
                i += 1;
            }
            ';' | '\n' => {
                splitter.flush();
                i += 1;
            }
            '&' if next == Some('&') => {
                splitter.flush();
                i += 2;
            }
            '&' if next == Some('>') => {
                splitter.push(c);
                i = splitter.redirect(&chars, i + 1);
            }
            '&' => {
                splitter.flush();
                i += 1;
            }
            '|' => {
                splitter.flush();
                i += if matches!(next, Some('|' | '&')) {
                    2
                } else {
                    1
                };
            }
            '$' if next == Some('(') => {
                splitter.side_channel = true;
                if deep {
                    splitter.flush();
                } else {
                    splitter.push_str("$(");
                }
                i += 2;
            }
            '`' => {
                splitter.side_channel = true;
                if deep {
                    splitter.flush();
                } else {
                    splitter.push(c);
                }
                i += 1;
            }
            '<' | '>' if next == Some('(') => {
                splitter.side_channel = true;
                if deep {
                    splitter.flush();
                } else {
                    splitter.push(c);
                    splitter.push('(');
                }
                i += 2;
            }
            '>' => i = splitter.redirect(&chars, i),
            '(' | ')' | '{' | '}' if deep => {
                splitter.flush();
                i += 1;
            }
            _ => {
                splitter.push(c);
                i += 1;
            }
        }
    }
    splitter.flush();
    splitter.parts
}

/// The words of `text`, split at whitespace outside quotes; quotes stay in the words.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                word.push(c);
                if c == '\\' && q == '"' {
                    word.extend(chars.next());
                } else if c == q {
                    quote = None;
                }
            }
            None if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            None => {
                word.push(c);
                match c {
                    '\\' => word.extend(chars.next()),
                    '\'' | '"' => quote = Some(c),
                    _ => {}
                }
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[derive(Default)]
struct Splitter {
    parts: Vec<CommandPart>,
    current: String,
    side_channel: bool,
}

impl Splitter {
    fn push(&mut self, c: char) {
        self.current.push(c);
    }

    fn push_str(&mut self, text: &str) {
        self.current.push_str(text);
    }

    fn flush(&mut self) {
        let words = words(&self.current);
        if !words.is_empty() {
            self.parts.push(CommandPart {
                words,
                has_side_channel: self.side_channel,
            });
        }
        self.current.clear();
        self.side_channel = false;
    }

    /// Consumes an output redirection starting at the `>` at `start`, flags it unless it
    /// only duplicates a descriptor or discards to `/dev/null`, and returns where to go on.
    fn redirect(&mut self, chars: &[char], start: usize) -> usize {
        let mut i = start + 1;
        if matches!(chars.get(i), Some('>' | '|')) {
            i += 1;
        }
        let duplicates = chars.get(i) == Some(&'&');
        if duplicates {
            i += 1;
        }
        while chars.get(i).is_some_and(|c| *c == ' ' || *c == '\t') {
            i += 1;
        }
        let target_start = i;
        while chars
            .get(i)
            .is_some_and(|c| !c.is_whitespace() && !";&|<>()".contains(*c))
        {
            i += 1;
        }
        let target: String = chars[target_start..i].iter().collect();
        let harmless = if duplicates {
            target == "-" || (!target.is_empty() && target.chars().all(|c| c.is_ascii_digit()))
        } else {
            target == "/dev/null"
        };
        if !harmless {
            self.side_channel = true;
        }
        self.current.push(' ');
        self.current.extend(&chars[start..i]);
        self.current.push(' ');
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shallow(command: &str) -> Vec<(String, bool)> {
        split_command(command, false)
            .into_iter()
            .map(|part| (part.words.join(" "), part.has_side_channel))
            .collect()
    }

    fn deep(command: &str) -> Vec<String> {
        split_command(command, true)
            .into_iter()
            .map(|part| part.words.join(" "))
            .collect()
    }

    fn parts(list: &[(&str, bool)]) -> Vec<(String, bool)> {
        list.iter().map(|(t, f)| ((*t).to_owned(), *f)).collect()
    }

    #[test]
    fn splits_on_operators_outside_quotes() {
        assert_eq!(
            shallow("git status && rm -rf /"),
            parts(&[("git status", false), ("rm -rf /", false)])
        );
        assert_eq!(
            shallow("a; b || c | d |& e & f\ng"),
            parts(&[
                ("a", false),
                ("b", false),
                ("c", false),
                ("d", false),
                ("e", false),
                ("f", false),
                ("g", false)
            ])
        );
        assert_eq!(
            shallow(r#"echo 'a && b' "c; d" e\;f"#),
            parts(&[(r#"echo 'a && b' "c; d" e\;f"#, false)])
        );
        assert!(shallow("  ;; \n ").is_empty());
    }

    #[test]
    fn flags_substitutions_and_file_redirections() {
        assert_eq!(
            shallow("echo $(whoami)"),
            parts(&[("echo $(whoami)", true)])
        );
        assert_eq!(shallow("echo `id`"), parts(&[("echo `id`", true)]));
        assert_eq!(
            shallow(r#"echo "$(id)""#),
            parts(&[(r#"echo "$(id)""#, true)])
        );
        assert_eq!(shallow("echo '$(id)'"), parts(&[("echo '$(id)'", false)]));
        assert_eq!(shallow("diff <(ls) x"), parts(&[("diff <(ls) x", true)]));
        assert!(shallow("git log > out.txt")[0].1);
        assert!(shallow("git log >>out.txt")[0].1);
        assert!(shallow("git log &> out.txt")[0].1);
        assert!(shallow("git log >& out.txt")[0].1);
        assert!(!shallow("git log 2>&1")[0].1);
        assert!(!shallow("git log > /dev/null 2>&1")[0].1);
        assert!(!shallow("git log 'a > b'")[0].1);
    }

    #[test]
    fn deep_split_exposes_commands_inside_substitutions() {
        assert_eq!(deep("echo $(rm -rf /)"), ["echo", "rm -rf /"]);
        assert!(deep(r#"echo "x `curl evil` y""#).contains(&"curl evil".to_owned()));
        assert_eq!(deep("(cd x && rm y)"), ["cd x", "rm y"]);
    }

    #[test]
    fn words_keep_quotes_together() {
        assert_eq!(
            words(r#"git  commit -m "a b" 'c d'"#),
            ["git", "commit", "-m", r#""a b""#, "'c d'"]
        );
    }
}
