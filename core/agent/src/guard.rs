//! The loop guard: notices a model stuck repeating the same calls with the same results.

use std::collections::VecDeque;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use larik_protocol::Block;
use serde_json::Value;

/// How many recent rounds the guard remembers.
const WINDOW: usize = 8;
/// How many identical rounds within the window stop the turn.
const LIMIT: usize = 4;

/// Remembers a fingerprint of each round of tool calls and their results.
#[derive(Debug, Default)]
pub(crate) struct LoopGuard {
    recent: VecDeque<u64>,
}

impl LoopGuard {
    /// Records one round; true when the same round has now been seen `LIMIT` times within
    /// the last `WINDOW` rounds.
    pub(crate) fn observe(&mut self, calls: &[(String, String, Value)], results: &[Block]) -> bool {
        let fingerprint = fingerprint(calls, results);
        if self.recent.len() == WINDOW {
            self.recent.pop_front();
        }
        self.recent.push_back(fingerprint);
        self.recent
            .iter()
            .filter(|seen| **seen == fingerprint)
            .count()
            >= LIMIT
    }
}

/// A hash of the calls' names and inputs and of what they returned, ignoring call ids
/// (which differ every time).
fn fingerprint(calls: &[(String, String, Value)], results: &[Block]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for (_, name, input) in calls {
        name.hash(&mut hasher);
        input.to_string().hash(&mut hasher);
    }
    for block in results {
        if let Block::ToolResult {
            content, is_error, ..
        } = block
        {
            serde_json::to_string(content)
                .unwrap_or_default()
                .hash(&mut hasher);
            is_error.hash(&mut hasher);
        }
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use larik_protocol::ResultPart;

    fn round(command: &str, output: &str) -> (Vec<(String, String, Value)>, Vec<Block>) {
        (
            vec![(
                "id".into(),
                "bash".into(),
                serde_json::json!({ "command": command }),
            )],
            vec![Block::ToolResult {
                call_id: "id".into(),
                content: vec![ResultPart::text(output)],
                is_error: false,
            }],
        )
    }

    #[test]
    fn fourth_identical_round_within_eight_trips_the_guard() {
        let mut guard = LoopGuard::default();
        let (calls, results) = round("ls", "a");
        let (other_calls, other_results) = round("ls", "b");
        assert!(!guard.observe(&calls, &results));
        assert!(!guard.observe(&other_calls, &other_results));
        assert!(!guard.observe(&calls, &results));
        assert!(!guard.observe(&calls, &results));
        assert!(guard.observe(&calls, &results));
    }

    #[test]
    fn repeats_spread_wider_than_the_window_do_not_trip_it() {
        let mut guard = LoopGuard::default();
        let (calls, results) = round("ls", "a");
        for index in 0..12 {
            let tripped = if index % 3 == 0 {
                guard.observe(&calls, &results)
            } else {
                let (c, r) = round("cat", &index.to_string());
                guard.observe(&c, &r)
            };
            assert!(!tripped, "round {index}");
        }
    }
}
