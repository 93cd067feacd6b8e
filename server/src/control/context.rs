//! The text of `/context`: the next request part by part, in tokens and as a share of the
//! model's window, and what compaction would do.

use larik_protocol::{ContextPartKind, ContextReport};

use super::{share, tokens};

/// What `/context` says about `report`.
pub fn context_text(report: &ContextReport) -> String {
    let window = report.context_window;
    let mut text = format!(
        "The next request holds about **{} tokens**",
        tokens(report.total_tokens)
    );
    match window {
        Some(window) => text.push_str(&format!(
            ", {} of the {}-token window of `{}`",
            share(report.total_tokens, Some(window)),
            tokens(window),
            report.model
        )),
        None => text.push_str(&format!(" (the window of `{}` is not known)", report.model)),
    }
    text.push_str(".\n\n| part | tokens | share of window |\n|---|---:|---:|\n");
    for part in &report.parts {
        let label = match part.kind {
            ContextPartKind::SystemPrompt => "System prompt".to_string(),
            ContextPartKind::Instructions => format!("Instruction file `{}`", part.name),
            ContextPartKind::PromptSection => format!("Prompt section from {}", part.name),
            ContextPartKind::Tools => format!(
                "Tools: {} ({} tool{})",
                part.name,
                part.items,
                plural(part.items)
            ),
            ContextPartKind::Summary => "Summary of the earlier conversation".to_string(),
            ContextPartKind::Conversation => format!(
                "Conversation ({} message{})",
                part.items,
                plural(part.items)
            ),
            ContextPartKind::Notes => "Notes for the next prompt".to_string(),
        };
        text.push_str(&format!(
            "| {label} | {} | {} |\n",
            tokens(part.tokens),
            share(part.tokens, window)
        ));
    }
    text.push_str(&format!(
        "| **Total** | **{}** | **{}** |\n\n",
        tokens(report.total_tokens),
        share(report.total_tokens, window)
    ));
    if let Some(measured) = report.measured_tokens {
        text.push_str(&format!(
            "The provider counted the last request; with what was added since, that makes \
             about {} tokens.\n",
            tokens(measured)
        ));
    }
    text.push_str("Counts are estimates (four bytes per token).\n\n");
    match (report.auto_compact_share, window) {
        (Some(at), Some(window)) => text.push_str(&format!(
            "Compaction runs by itself before a request would pass {:.0}% of the window \
             (about {} tokens). ",
            at * 100.0,
            tokens((window as f64 * at) as u64)
        )),
        (Some(_), None) => text.push_str(
            "Compaction runs by itself only when the provider says the conversation no \
             longer fits, since the window is not known. ",
        ),
        (None, _) => text.push_str("Automatic compaction is off. "),
    }
    if report.compactable_messages == 0 {
        text.push_str("There is nothing to compact yet.");
    } else {
        text.push_str(&format!(
            "`/compact` now would replace {} message{} (about {} tokens) with one summary \
             the model writes.",
            report.compactable_messages,
            plural(report.compactable_messages),
            tokens(report.compactable_tokens)
        ));
    }
    text
}

fn plural(count: u32) -> &'static str {
    if count == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use larik_protocol::ContextPart;

    use super::*;

    #[test]
    fn every_part_gets_a_row_and_the_total_its_share() {
        let part = |kind, name: &str, items, tokens| ContextPart {
            kind,
            name: name.into(),
            items,
            tokens,
        };
        let report = ContextReport {
            model: "anthropic/claude-sonnet-4-5".into(),
            context_window: Some(200_000),
            parts: vec![
                part(ContextPartKind::SystemPrompt, "", 1, 800),
                part(ContextPartKind::Instructions, "/p/AGENTS.md", 1, 200),
                part(ContextPartKind::Tools, "built-in", 8, 2_000),
                part(ContextPartKind::Conversation, "", 4, 1_000),
            ],
            total_tokens: 4_000,
            measured_tokens: Some(4_100),
            auto_compact_share: Some(0.8),
            compactable_messages: 4,
            compactable_tokens: 1_000,
        };
        let text = context_text(&report);
        assert!(
            text.starts_with(
                "The next request holds about **4.0k tokens**, 2.0% of the 200.0k-token window"
            ),
            "{text}"
        );
        assert!(
            text.contains("| Instruction file `/p/AGENTS.md` | 200 | 0.1% |"),
            "{text}"
        );
        assert!(
            text.contains("| Tools: built-in (8 tools) | 2.0k | 1.0% |"),
            "{text}"
        );
        assert!(
            text.contains("| Conversation (4 messages) | 1.0k | 0.5% |"),
            "{text}"
        );
        assert!(text.contains("about 160.0k tokens"), "{text}");
        assert!(
            text.contains("`/compact` now would replace 4 messages"),
            "{text}"
        );
    }
}
