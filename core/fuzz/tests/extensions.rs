//! The extension targets on their corpus and on mutated inputs (see `larik_fuzz::engine`).

fn check(name: &str) {
    larik_fuzz::engine::check(
        name,
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-found"),
    );
}

#[test]
fn settings_file() {
    check("settings_file");
}

#[test]
fn hook_output() {
    check("hook_output");
}

#[test]
fn skill_file() {
    check("skill_file");
}

#[test]
fn command_file() {
    check("command_file");
}

#[test]
fn agent_file() {
    check("agent_file");
}

#[test]
fn web_page() {
    check("web_page");
}
