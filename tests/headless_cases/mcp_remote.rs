//! Remote MCP servers (the Python SDK's, over streamable HTTP) through the binary. A
//! server's question during a call cannot be put to anyone in `-p`: the server hears why,
//! and the model reads it in the result. OAuth: a server behind the testkit's
//! authorization server shows as needing a login in `larik mcp list` (nothing opened a
//! browser), `larik mcp login` opens `$BROWSER` on the authorization page, prints the URL
//! and waits for the redirect; afterwards `larik -p` calls the server's tools with the
//! kept login, and `larik mcp logout` forgets it.

use larik_testkit::oauth::{AuthServer, AuthServerOptions};
use larik_testkit::turn;
use serde_json::json;

use super::browser::browser_env;
use super::notes_server::NotesServer;
use super::{Harness, last_json_line, stderr, stdout};

#[tokio::test(flavor = "multi_thread")]
async fn larik_mcp_login_then_p_calls_the_protected_server_and_logout_forgets_it() {
    let auth = AuthServer::start(AuthServerOptions::default()).await;
    let notes = NotesServer::start(&["streamable-http", "--oauth", &auth.issuer()]);
    let mut harness = Harness::new().await;
    harness.extra_env.push(browser_env(harness.data.path()));
    notes.configure_personal(harness.data.path());

    let listed = harness.run(&["mcp", "list"]).await;
    let text = stdout(&listed);
    assert!(text.contains("**notes**"), "{text}");
    assert!(text.contains("needs login"), "{text}");
    assert!(text.contains("/mcp login notes"), "{text}");
    assert_eq!(auth.count("authorize"), 0, "{:?}", auth.events());

    let login = harness.run(&["mcp", "login", "notes"]).await;
    assert!(login.status.success(), "{}", stderr(&login));
    assert!(
        stderr(&login).contains(&format!("{}/authorize?", auth.issuer())),
        "{}",
        stderr(&login)
    );
    assert!(
        stdout(&login).contains("Logged in to `notes`: ready with 4 tools"),
        "{}",
        stdout(&login)
    );
    assert_eq!(auth.count("register"), 1, "{:?}", auth.events());
    assert_eq!(
        auth.count("token authorization_code"),
        1,
        "{:?}",
        auth.events()
    );

    harness.server.enqueue(turn().tool_call(
        "n",
        "mcp__notes__add_note",
        json!({"text": "from -p"}),
    ));
    harness.server.enqueue(turn().text("noted"));
    let output = harness
        .run(&[
            "-p",
            "note it",
            "--output-format",
            "json",
            "--allowedTools",
            "mcp__notes",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let result = last_json_line(&output);
    assert_eq!(result["result"], "noted", "{result}");
    let requests = harness.server.requests();
    let answer = requests[1]
        .tool_result_text("n")
        .expect("the tool's result");
    assert!(answer.contains("1 notes"), "{answer}");

    let logout = harness.run(&["mcp", "logout", "notes"]).await;
    assert!(
        stdout(&logout).contains("Forgot the login"),
        "{}",
        stdout(&logout)
    );
    let listed = harness.run(&["mcp", "list"]).await;
    assert!(
        stdout(&listed).contains("needs login"),
        "{}",
        stdout(&listed)
    );
    assert_eq!(auth.count("authorize"), 1, "{:?}", auth.events());
}

#[tokio::test(flavor = "multi_thread")]
async fn in_p_a_servers_question_is_refused_with_why() {
    let notes = NotesServer::start(&["streamable-http"]);
    let harness = Harness::new().await;
    notes.configure_personal(harness.data.path());
    harness
        .server
        .enqueue(turn().tool_call("g", "mcp__notes__sign_guestbook", json!({})));
    harness.server.enqueue(turn().text("could not sign"));
    let output = harness
        .run(&[
            "-p",
            "sign the guestbook",
            "--output-format",
            "json",
            "--allowedTools",
            "mcp__notes",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = harness.server.requests();
    let answer = requests[1]
        .tool_result_text("g")
        .expect("the tool's result");
    assert!(
        answer
            .contains("Larik runs without an editor here (`larik -p`), so it cannot ask the user"),
        "{answer}"
    );
    assert!(answer.contains("Who signs the guestbook?"), "{answer}");
}
