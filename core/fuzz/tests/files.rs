//! The file targets on their corpus and on mutated inputs (see `larik_fuzz::engine`).

fn check(name: &str) {
    larik_fuzz::engine::check(
        name,
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-found"),
    );
}

#[test]
fn session_jsonl() {
    check("session_jsonl");
}

#[test]
fn permission_rule() {
    check("permission_rule");
}
