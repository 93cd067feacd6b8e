//! The frontmatter of a skill or command file: an optional `---` block of YAML before the
//! body. `argument-hint` is taken as the raw rest of its line before the YAML is read,
//! since Claude Code's `[file] [line]` style is not valid YAML. Unknown keys are ignored;
//! a key Larik reads with a value of the wrong kind is an error naming the key.

use serde_yaml_ng::Value;

/// What a file's frontmatter says, as far as Larik reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontmatter {
    /// `name`.
    pub name: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `argument-hint`, as written on its line.
    pub argument_hint: Option<String>,
    /// `disable-model-invocation: true`.
    pub disable_model_invocation: bool,
    /// `user-invocable: false` makes this false.
    pub user_invocable: bool,
}

/// Splits `text` into its frontmatter (read) and its body; a file without a `---` block is
/// all body.
pub fn read(text: &str) -> Result<(Frontmatter, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((
            Frontmatter {
                user_invocable: true,
                ..Frontmatter::default()
            },
            text.to_string(),
        ));
    };
    let mut front = Vec::new();
    let mut body = None;
    let mut lines = rest.split_inclusive('\n');
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            body = Some(lines.collect::<String>());
            break;
        }
        front.push(line);
    }
    let body = body.ok_or("its frontmatter has no closing `---`")?;
    let mut argument_hint = None;
    let yaml: String = front
        .into_iter()
        .filter(|line| match line.strip_prefix("argument-hint:") {
            Some(hint) => {
                let hint = hint.trim();
                let hint = ['"', '\'']
                    .into_iter()
                    .find_map(|quote| hint.strip_prefix(quote)?.strip_suffix(quote))
                    .unwrap_or(hint);
                argument_hint = Some(hint.to_string()).filter(|hint| !hint.is_empty());
                false
            }
            None => true,
        })
        .collect();
    let fields = larik_tools::yaml::read(&yaml)?;
    let fields = match fields {
        Value::Mapping(fields) => fields,
        Value::Null => Default::default(),
        _ => return Err("its frontmatter is not a mapping of fields".to_string()),
    };
    let text_of = |name: &str| -> Result<Option<String>, String> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => {
                Ok(Some(text.trim().to_string()).filter(|text| !text.is_empty()))
            }
            Some(Value::Number(number)) => Ok(Some(number.to_string())),
            Some(_) => Err(format!("`{name}` must be text")),
        }
    };
    let flag = |name: &str, default: bool| -> Result<bool, String> {
        match fields.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(flag)) => Ok(*flag),
            Some(Value::String(text)) if text == "true" || text == "false" => Ok(text == "true"),
            Some(_) => Err(format!("`{name}` must be true or false")),
        }
    };
    Ok((
        Frontmatter {
            name: text_of("name")?,
            description: text_of("description")?,
            argument_hint,
            disable_model_invocation: flag("disable-model-invocation", false)?,
            user_invocable: flag("user-invocable", true)?,
        },
        body,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_frontmatter_is_all_body() {
        let (front, body) = read("Review the diff.\n").expect("reads");
        assert_eq!(front.description, None);
        assert!(front.user_invocable);
        assert_eq!(body, "Review the diff.\n");
    }

    #[test]
    fn argument_hint_is_a_raw_line_and_unknown_keys_are_ignored() {
        let text = "---\ndescription: Fix an issue\nargument-hint: [issue] [priority]\n\
                    allowed-tools: Bash(git add:*), Bash(git status:*)\nmodel: haiku\n\
                    disable-model-invocation: true\n---\nFix issue $1.\n";
        let (front, body) = read(text).expect("reads");
        assert_eq!(front.description.as_deref(), Some("Fix an issue"));
        assert_eq!(front.argument_hint.as_deref(), Some("[issue] [priority]"));
        assert!(front.disable_model_invocation);
        assert!(front.user_invocable);
        assert_eq!(body, "Fix issue $1.\n");
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
        let error = read(&wide).expect_err("a bomb");
        assert!(error.contains("expands to more than"), "{error}");
    }

    #[test]
    fn wrong_kinds_and_broken_blocks_are_errors() {
        assert!(
            read("---\nuser-invocable: maybe\n---\nx")
                .expect_err("not a flag")
                .contains("user-invocable")
        );
        assert!(
            read("---\ndescription: x\n")
                .expect_err("unclosed")
                .contains("closing")
        );
        assert!(
            read("---\n: : :\n---\n")
                .expect_err("not yaml")
                .contains("not YAML")
        );
    }
}
