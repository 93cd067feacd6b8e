//! Session control every front end shares (`-p`, ACP, LSP): the texts of `/context`,
//! `/cost`, `/rewind` and `/resume` without an argument, `/tasks`, `/worktrees`, `/skills`,
//! and `/config` — shown and changed.
//! Front ends only carry these texts to the user; what they say is decided here once.

mod config;
mod context;
mod sessions;
mod skills;
mod tasks;
mod worktrees;

pub use config::{config_text, set_config};
pub use context::context_text;
pub use sessions::{cost_text, prompts_text, sessions_text};
pub use skills::{skill_roots, skills_text};
pub use tasks::tasks_text;
pub use worktrees::{WorktreeAction, worktree_action, worktrees_text};

/// A token count as people read it: `950`, `12.3k`, `1.2M`.
fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}

/// `part` of `whole` as a percentage, `—` without a whole.
fn share(part: u64, whole: Option<u64>) -> String {
    match whole {
        Some(whole) if whole > 0 => format!("{:.1}%", part as f64 * 100.0 / whole as f64),
        _ => "—".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_shares_read_well() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(1_200_000), "1.2M");
        assert_eq!(share(1_000, Some(200_000)), "0.5%");
        assert_eq!(share(1_000, None), "—");
    }
}
