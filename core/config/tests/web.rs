//! `web` settings on real files: personal files set everything; a shared file may switch the
//! web tools off (never on), only shorten `allowed_hosts`, and choose neither the search
//! backend nor the browser program unless approved; wrong values are notices.

use larik_config::{SearchSettings, WebSettings};
use serde_json::json;

#[path = "support/world.rs"]
mod world;

use world::{CLAUDE, World};

#[test]
fn personal_web_settings_count_as_written() {
    let world = World::new();
    world.user(
        &json!({"web": {
            "allowed_hosts": ["LocalHost", "127.0.0.1", "dev.internal"],
            "search": {"backend": "Brave", "api_key_env": "MY_BRAVE_KEY", "url": "http://127.0.0.1:9/x"},
            "browser": {"path": "chromium", "headless": false}
        }})
        .to_string(),
    );
    world.personal_project(&json!({"web": {"browser": {"path": "bin/chrome"}}}).to_string());
    let loaded = world.load();
    assert_eq!(loaded.notices, []);
    let web = &loaded.settings.web;
    assert!(web.enabled());
    assert_eq!(
        web.allowed_hosts(),
        ["localhost", "127.0.0.1", "dev.internal"]
    );
    assert_eq!(
        web.search,
        Some(SearchSettings {
            backend: "brave".into(),
            url: Some("http://127.0.0.1:9/x".into()),
            api_key: None,
            api_key_env: Some("MY_BRAVE_KEY".into()),
        })
    );
    assert_eq!(web.browser.path, Some(world.project.join("bin/chrome")));
    assert_eq!(web.browser.headless, Some(false));
}

#[test]
fn a_shared_file_only_narrows_and_switches_off() {
    let world = World::new();
    world.user(&json!({"web": {"allowed_hosts": ["localhost", "127.0.0.1"]}}).to_string());
    world.shared(
        &json!({"web": {
            "allowed_hosts": ["127.0.0.1", "10.0.0.8"],
            "search": {"backend": "searxng", "url": "http://10.0.0.8"},
            "browser": {"path": "/tmp/evil", "headless": false}
        }})
        .to_string(),
    );
    world.claude(&json!({"web": {"enabled": false}}).to_string());
    let loaded = world.load();
    let web = &loaded.settings.web;
    // The shared list keeps 127.0.0.1, drops localhost, and adds nothing.
    assert_eq!(web.allowed_hosts(), ["127.0.0.1"]);
    assert_eq!(web.search, None);
    assert_eq!(web.browser.path, None);
    assert_eq!(web.browser.headless, Some(false));
    assert!(!web.enabled());
    let mut keys: Vec<&str> = loaded
        .pending_approvals
        .iter()
        .map(|pending| pending.key.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["web.browser.path", "web.search"]);

    // A personal `enabled: true` does not undo a shared file's `false`; a shared `true`
    // is refused with a notice.
    world.user(&json!({"web": {"enabled": true}}).to_string());
    world.claude(&json!({"web": {"enabled": true}}).to_string());
    world.shared("{}");
    let loaded = world.load();
    assert!(loaded.settings.web.enabled());
    assert!(
        loaded
            .notices
            .iter()
            .any(|notice| notice.file == world.project.join(CLAUDE)
                && notice
                    .message
                    .contains("may switch the web tools off, not on")),
        "{:?}",
        loaded.notices
    );
    world.claude(&json!({"web": {"enabled": false}}).to_string());
    assert!(!world.load().settings.web.enabled());
}

#[test]
fn an_approved_shared_search_backend_counts() {
    let world = World::new();
    let search = json!({"backend": "searxng", "url": "http://127.0.0.1:8888"});
    world.shared(&json!({"web": {"search": search}}).to_string());
    assert_eq!(world.load().settings.web.search, None);
    world.approve("web.search", search);
    let loaded = world.load();
    assert_eq!(
        loaded.settings.web.search.map(|search| search.backend),
        Some("searxng".to_string())
    );
}

#[test]
fn wrong_web_values_are_notices() {
    let world = World::new();
    world.user(
        &json!({"web": {
            "enabled": "yes",
            "allowed_hosts": "localhost",
            "search": {"backend": "bing"},
            "browser": {"headless": 1, "window": true},
            "proxy": "x"
        }})
        .to_string(),
    );
    world.personal_project(&json!({"web": {"search": {"backend": "searxng"}}}).to_string());
    let loaded = world.load();
    assert_eq!(loaded.settings.web, WebSettings::default());
    let messages: Vec<&str> = loaded
        .notices
        .iter()
        .map(|notice| notice.message.as_str())
        .collect();
    for expected in [
        "`web.enabled` ignored: expected true or false",
        "`web.allowed_hosts` ignored: expected a list of strings",
        "`web.search` ignored: `backend` must be one of brave, tavily, searxng",
        "`web.browser.headless` ignored: expected true or false",
        "`web.browser.window` ignored: not a setting",
        "`web.proxy` ignored: not a setting",
        "`web.search` ignored: a `searxng` backend needs its `url`",
    ] {
        assert!(
            messages.iter().any(|message| message.starts_with(expected)),
            "{expected} in {messages:?}"
        );
    }
}
