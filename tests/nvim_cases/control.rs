//! Session control in Neovim, on both Neovims: `:Larik /<Tab>` completes the session's
//! slash commands (from `larik/commands`), `/rewind 1` moves the plugin to the branch and
//! offers the prompt again for editing, `/resume ID` shows the stored conversation and
//! moves back, and `/context` shows Larik's own answer in the chat.

use larik_testkit::turn;
use serde_json::Value;

use crate::kit::*;

async fn session_control(neovim: Neovim) {
    let harness = Harness::new().await;
    harness
        .server
        .enqueue(turn().text("Answer one.").usage(10, 1));

    let result = harness.run(neovim, "control.lua").await;
    assert_eq!(result["error"], Value::Null, "{result}");
    assert_eq!(result["nvim"], neovim.expected_version());

    let all = strings(&result["completion_all"]);
    for name in [
        "/compact", "/model", "/mode", "/cost", "/undo", "/clear", "/fork", "/rewind", "/resume",
        "/context", "/config",
    ] {
        assert!(
            all.iter().any(|item| item == name),
            "{name} completes: {all:?}"
        );
    }
    assert_eq!(strings(&result["completion_re"]), ["/rewind", "/resume"]);
    assert!(strings(&result["completion_after_space"]).is_empty());
    assert!(strings(&result["completion_of_text"]).is_empty());

    let first = result["first_session"].as_str().expect("first session");
    assert_eq!(result["input_default"], "prompt one", "{result}");
    assert_eq!(result["rewound_prompt"], "prompt one");
    let rewound = result["rewound_session"].as_str().expect("rewound session");
    assert_ne!(rewound, first, "the plugin follows the branch");
    assert_eq!(
        result["resumed_session"], first,
        "and comes back on /resume"
    );

    let chat = strings(&result["chat"]);
    let count = |wanted: &str| chat.iter().filter(|line| line.contains(wanted)).count();
    assert_eq!(
        count(&format!("── rewound into session {rewound} ──")),
        1,
        "{chat:#?}"
    );
    assert_eq!(
        count(&format!("── resumed session {first} ──")),
        1,
        "{chat:#?}"
    );
    // The prompt and answer: once as they happened, once as the resume's history.
    assert_eq!(count("> prompt one"), 2, "{chat:#?}");
    assert_eq!(count("Answer one."), 2, "{chat:#?}");
    assert_eq!(count("The next request holds about"), 1, "{chat:#?}");
    assert_eq!(
        harness.server.requests().len(),
        1,
        "only the first prompt asked the model"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debian_neovim_completes_rewinds_and_resumes() {
    session_control(Neovim::Debian).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_neovim_completes_rewinds_and_resumes() {
    session_control(Neovim::Current).await;
}
