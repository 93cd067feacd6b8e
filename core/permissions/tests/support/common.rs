//! Helpers shared by the permission tests.

use larik_permissions::RuleSet;

/// A rule set from `(kind, rule)` pairs, `kind` being `allow`, `ask` or `deny`.
pub fn rules(list: &[(&str, &str)]) -> RuleSet {
    let mut set = RuleSet::default();
    for (kind, rule) in list {
        match *kind {
            "allow" => set.add_allow(rule),
            "ask" => set.add_ask(rule),
            "deny" => set.add_deny(rule),
            other => panic!("unknown rule kind {other}"),
        }
        .unwrap_or_else(|err| panic!("{rule}: {err}"));
    }
    set
}
