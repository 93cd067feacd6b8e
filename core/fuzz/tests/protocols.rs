//! The protocol targets on their corpus and on mutated inputs (see `larik_fuzz::engine`).

fn check(name: &str) {
    larik_fuzz::engine::check(
        name,
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-found"),
    );
}

#[test]
fn lsp_child_framing() {
    check("lsp_child_framing");
}

#[test]
fn acp_messages() {
    check("acp_messages");
}

#[test]
fn lsp_front_messages() {
    check("lsp_front_messages");
}

#[test]
fn mcp_results() {
    check("mcp_results");
}
