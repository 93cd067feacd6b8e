//! The session's spending cap.
//!
//! A [`Budget`] is held in an `Arc`, so agents sharing one count their spending toward one
//! cap. Each model request's cost is charged when its usage arrives (a request to a model
//! without a known price charges nothing, which the agent says at the start), and a turn
//! checks the cap before every request: a request already under way is never cut off, and
//! no request starts once the cap is reached. A subagent's own cap sits [`within`](Budget::within)
//! its parent's budget: what it spends counts against both, and either stops it.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::runner::Runner;

/// A cap in US dollars and what was spent against it, in millionths of a dollar.
#[derive(Debug)]
pub struct Budget {
    cap_micro_usd: u64,
    spent_micro_usd: AtomicU64,
    /// The budget above this one (a subagent's parent's), charged too.
    within: Option<std::sync::Arc<Budget>>,
    /// Whether it is a subagent's own cap.
    for_subagent: bool,
}

fn to_micro(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        // Saturates for absurd values, which is what a cap wants.
        (usd * 1_000_000.0).round() as u64
    } else {
        0
    }
}

impl Budget {
    /// A cap of `cap_usd` dollars with `already_spent_usd` spent against it.
    pub fn new(cap_usd: f64, already_spent_usd: f64) -> Budget {
        Budget {
            cap_micro_usd: to_micro(cap_usd),
            spent_micro_usd: AtomicU64::new(to_micro(already_spent_usd)),
            within: None,
            for_subagent: false,
        }
    }

    /// A cap of `cap_usd` dollars of its own, inside `parent` (if any): each charge counts
    /// against both, and it is spent when either is.
    pub fn within(cap_usd: f64, parent: Option<std::sync::Arc<Budget>>) -> Budget {
        Budget {
            within: parent,
            for_subagent: true,
            ..Budget::new(cap_usd, 0.0)
        }
    }

    /// Adds a request's cost (to the budgets above this one too).
    pub fn charge(&self, usd: f64) {
        self.spent_micro_usd
            .fetch_add(to_micro(usd), Ordering::Relaxed);
        if let Some(parent) = &self.within {
            parent.charge(usd);
        }
    }

    /// The cap in dollars.
    pub fn cap_usd(&self) -> f64 {
        self.cap_micro_usd as f64 / 1_000_000.0
    }

    /// What was spent, in dollars.
    pub fn spent_usd(&self) -> f64 {
        self.spent_micro_usd.load(Ordering::Relaxed) as f64 / 1_000_000.0
    }

    /// Whether no further request may start.
    pub fn is_spent(&self) -> bool {
        self.spent().is_some()
    }

    /// The spent budget that stops further requests: this one or one above it.
    fn spent(&self) -> Option<&Budget> {
        if self.spent_micro_usd.load(Ordering::Relaxed) >= self.cap_micro_usd {
            return Some(self);
        }
        self.within.as_deref().and_then(Budget::spent)
    }
}

impl Runner {
    /// Says, when a budget is set and the current model has no known price, that its
    /// requests cannot count toward the budget: the budget stops the session only once a
    /// priced model has spent it.
    pub(crate) fn notice_unpriced_budget(&self) {
        let Some(budget) = &self.config.budget else {
            return;
        };
        if self.config.models.prices(&self.model_name).is_some() {
            return;
        }
        self.events.emit(larik_protocol::Event::Notice {
            message: format!(
                "no price is known for {model}, so its requests do not count toward the \
                 ${cap:.2} budget (their tokens are still counted); set \
                 `models.\"{model}\".prices` in a personal configuration file to count them",
                model = self.model_name,
                cap = budget.cap_usd()
            ),
        });
    }

    /// Why no further request may start, when the budget is spent.
    pub(crate) fn budget_notice(&self) -> Option<String> {
        let budget = self.config.budget.as_ref()?;
        let spent = budget.spent()?;
        Some(if spent.for_subagent {
            format!(
                "stopped: the subagent has spent ${:.4} of its own ${:.2} budget \
                 (`max_budget_usd` of its definition or role)",
                spent.spent_usd(),
                spent.cap_usd()
            )
        } else {
            format!(
                "stopped: the session has spent ${:.4} of its ${:.2} budget (raise it with \
                 --max-budget-usd or `max_budget_usd` in the configuration)",
                spent.spent_usd(),
                spent.cap_usd()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn charges_from_several_holders_count_toward_one_cap() {
        let root = Arc::new(Budget::new(0.10, 0.02));
        let subtask = Arc::clone(&root);
        assert!(!root.is_spent());
        root.charge(0.05);
        assert!(!subtask.is_spent());
        subtask.charge(0.03);
        assert!(root.is_spent(), "0.02 + 0.05 + 0.03 reaches 0.10");
        assert!((root.spent_usd() - 0.10).abs() < 1e-9);
        assert!((root.cap_usd() - 0.10).abs() < 1e-9);
    }

    #[test]
    fn a_zero_cap_allows_nothing_and_nonsense_costs_count_as_zero() {
        assert!(Budget::new(0.0, 0.0).is_spent());
        let budget = Budget::new(1.0, f64::NAN);
        budget.charge(-5.0);
        budget.charge(f64::INFINITY);
        assert_eq!(budget.spent_usd(), 0.0);
    }
}
