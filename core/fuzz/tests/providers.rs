//! The provider targets on their corpus and on mutated inputs (see `larik_fuzz::engine`);
//! each stream target's corpus is also read in pieces of every size.

use larik_fuzz::targets::providers::check_corpus_in_any_pieces;

fn check(name: &str) {
    larik_fuzz::engine::check(
        name,
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-found"),
    );
}

#[test]
fn provider_anthropic() {
    check("provider_anthropic");
    check_corpus_in_any_pieces("provider_anthropic");
}

#[test]
fn provider_openai_chat() {
    check("provider_openai_chat");
    check_corpus_in_any_pieces("provider_openai_chat");
}

#[test]
fn provider_openai_responses() {
    check("provider_openai_responses");
    check_corpus_in_any_pieces("provider_openai_responses");
}

#[test]
fn provider_gemini() {
    check("provider_gemini");
    check_corpus_in_any_pieces("provider_gemini");
}

#[test]
fn provider_ollama() {
    check("provider_ollama");
    check_corpus_in_any_pieces("provider_ollama");
}

#[test]
fn provider_error_body() {
    check("provider_error_body");
}
