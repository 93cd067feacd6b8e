//! The texts of `/cost`, of `/rewind` without a number (the prompts to rewind to) and of
//! `/resume` without an id (the directory's sessions).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use larik_agent::Budget;
use larik_protocol::Usage;
use larik_session::{LoadedSession, SessionStore, preview};

/// How many sessions `/resume` lists.
const LISTED_SESSIONS: usize = 20;

/// How much of a prompt `/rewind` shows.
const PROMPT_CHARS: usize = 100;

/// What `/cost` says: the session's tokens and cost, a line per model, and the budget.
pub fn cost_text(
    usage: &Usage,
    by_model: &BTreeMap<String, Usage>,
    budget: Option<&Budget>,
) -> String {
    let mut text = format!(
        "This session so far: {} input tokens ({} read from cache, {} written to cache), {} \
         output tokens, cost {}.",
        usage.input_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.output_tokens,
        usage.cost_text()
    );
    if let Some(budget) = budget {
        text.push_str(&format!(
            " Budget: ${:.4} of ${:.2} spent.",
            budget.spent_usd(),
            budget.cap_usd()
        ));
    }
    if !by_model.is_empty() {
        text.push_str("\n\n| model | input | cache read | cache write | output | cost |\n|---|---:|---:|---:|---:|---:|\n");
        for (model, usage) in by_model {
            text.push_str(&format!(
                "| `{model}` | {} | {} | {} | {} | {} |\n",
                usage.input_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.output_tokens,
                usage.cost_text()
            ));
        }
    }
    text
}

/// What `/rewind` without a number says: the prompts of the session's current context.
pub fn prompts_text(loaded: &LoadedSession) -> String {
    let prompts = loaded.prompt_texts();
    if prompts.is_empty() {
        return "This context has no prompts to rewind to yet.".to_string();
    }
    let mut text = String::from(
        "Prompts of this conversation; `/rewind N` continues in a new session cut just before \
         prompt N and gives it back to edit (files are not touched):\n\n",
    );
    for (index, prompt) in prompts.iter().enumerate() {
        text.push_str(&format!(
            "{}. {}\n",
            index + 1,
            preview(prompt, PROMPT_CHARS)
        ));
    }
    text
}

/// What `/resume` without an id says: the sessions of `cwd`, newest first, `current` marked.
pub fn sessions_text(store: &SessionStore, cwd: &Path, current: &str) -> String {
    let sessions = match store.list(cwd) {
        Ok(sessions) => sessions,
        Err(error) => return format!("**Error:** cannot list the sessions: {error}"),
    };
    if sessions.is_empty() {
        return format!("No sessions in {} yet.", cwd.display());
    }
    let now = SystemTime::now();
    let mut text = format!(
        "Sessions in {} (newest first); `/resume ID` continues one here:\n\n| id | age | first prompt | model | cost |\n|---|---|---|---|---:|\n",
        cwd.display()
    );
    for info in sessions.iter().take(LISTED_SESSIONS) {
        let (model, cost) = match store.summary(&info.path) {
            Some(summary) => (format!("`{}`", summary.model), summary.usage.cost_text()),
            None => ("—".to_string(), "—".to_string()),
        };
        let marker = if info.id == current {
            " (this one)"
        } else {
            ""
        };
        let prompt = info
            .first_prompt
            .as_deref()
            .map_or_else(|| "(no prompt)".to_string(), |prompt| preview(prompt, 60));
        text.push_str(&format!(
            "| `{}`{marker} | {} | {} | {model} | {cost} |\n",
            info.id,
            age(now, info.modified),
            prompt.replace('|', "\\|")
        ));
    }
    if sessions.len() > LISTED_SESSIONS {
        text.push_str(&format!(
            "\n{} older session(s) not shown; `larik sessions` lists them all.\n",
            sessions.len() - LISTED_SESSIONS
        ));
    }
    text
}

/// How long ago `then` was, roughly.
fn age(now: SystemTime, then: SystemTime) -> String {
    let seconds = now
        .duration_since(then)
        .map_or(0, |elapsed| elapsed.as_secs());
    match seconds {
        0..60 => "just now".to_string(),
        60..3_600 => format!("{} min ago", seconds / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn ages_read_well() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(age(now, now), "just now");
        assert_eq!(age(now, now - Duration::from_secs(150)), "2 min ago");
        assert_eq!(age(now, now - Duration::from_secs(7_300)), "2 h ago");
        assert_eq!(age(now, now - Duration::from_secs(200_000)), "2 d ago");
    }

    #[test]
    fn cost_has_a_line_per_model() {
        let usage = |input, cost_usd| Usage {
            input_tokens: input,
            output_tokens: 1,
            cost_usd,
            ..Usage::default()
        };
        let mut by_model = BTreeMap::new();
        by_model.insert("anthropic/claude-sonnet-4-5".to_string(), usage(10, 0.5));
        by_model.insert("openai/gpt-5.1".to_string(), usage(20, 0.25));
        let text = cost_text(&usage(30, 0.75), &by_model, None);
        assert!(
            text.starts_with("This session so far: 30 input tokens"),
            "{text}"
        );
        assert!(
            text.contains("| `anthropic/claude-sonnet-4-5` | 10 | 0 | 0 | 1 | $0.5000 |"),
            "{text}"
        );
        assert!(
            text.contains("| `openai/gpt-5.1` | 20 | 0 | 0 | 1 | $0.2500 |"),
            "{text}"
        );
    }
}
