//! Servers that misbehave: one that never answers `initialize`, one slow to start, one
//! that crashes mid-call, one that answers malformed results, one that floods
//! notifications. None of them stops anything else from working.

use std::collections::BTreeMap;
use std::time::Duration;

use larik_mcp::{SearchPolicy, ServerPool, ServerSpec, ServerStatus, SessionTools, TransportSpec};
use larik_tools::{LateTools, LateToolsAsk};
use serde_json::json;

use crate::kit::*;

#[tokio::test]
async fn a_silent_server_costs_the_context_only_its_wait_then_fails_at_its_timeout() {
    let scratch = Scratch::new();
    let mut silent = faulty("silent", "silent", &scratch.root);
    silent.connect_wait = Duration::from_millis(200);
    silent.startup_timeout = Duration::from_secs(2);
    let working = with_wait(
        faulty("working", "ok", &scratch.root),
        Duration::from_secs(60),
    );
    let pool = ServerPool::new(&scratch.root);
    let servers = pool.servers_for(&[silent, working]);
    let tools = SessionTools::new(servers.clone(), SearchPolicy::default());
    let set = tools.tools(LateToolsAsk::default()).await;
    // The working server's tool is there; the silent one is named as still starting.
    assert!(
        set.tools
            .iter()
            .any(|tool| tool.name() == "mcp__working__ping")
    );
    assert_eq!(set.notices.len(), 1, "{:?}", set.notices);
    assert!(
        set.notices[0].contains("`silent` is still starting"),
        "{:?}",
        set.notices
    );

    // Its startup timeout ends it, with why.
    let settled = tokio::time::timeout(Duration::from_secs(60), servers[0].settled())
        .await
        .expect("the startup timeout fires");
    match settled {
        ServerStatus::Failed(why) => assert!(why.contains("startup timeout (2 s)"), "{why}"),
        other => panic!("{other:?}"),
    }
    pool.shutdown().await;
}

#[tokio::test]
async fn a_slow_server_joins_the_next_context() {
    let scratch = Scratch::new();
    // The server starts once the test opens this pipe.
    let gate = scratch.root.join("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let gate_arg = gate.display().to_string();
    let mut slow = faulty_with("slow", &["slow-start", &gate_arg], &scratch.root);
    slow.connect_wait = Duration::from_millis(100);
    let pool = ServerPool::new(&scratch.root);
    let first = SessionTools::new(
        pool.servers_for(std::slice::from_ref(&slow)),
        SearchPolicy::default(),
    )
    .tools(LateToolsAsk::default())
    .await;
    assert!(first.tools.is_empty());
    assert!(
        first.notices[0].contains("still starting"),
        "{:?}",
        first.notices
    );
    // Once it is up, the next context (the same definition, so the same server) has it.
    let opened = tokio::task::spawn_blocking(move || {
        std::fs::OpenOptions::new().write(true).open(gate).map(drop)
    });
    opened
        .await
        .expect("the gate task")
        .expect("the gate opens");
    let servers = pool.servers_for(std::slice::from_ref(&slow));
    let settled = tokio::time::timeout(Duration::from_secs(60), servers[0].settled())
        .await
        .expect("the server settles");
    assert_eq!(settled, ServerStatus::Ready { tools: 1 });
    let next = SessionTools::new(servers, SearchPolicy::default())
        .tools(LateToolsAsk::default())
        .await;
    assert!(
        next.tools
            .iter()
            .any(|tool| tool.name() == "mcp__slow__ping"),
        "{:?}",
        next.notices
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_result_and_the_next_context_restarts_it() {
    let scratch = Scratch::new();
    let spec = with_wait(
        faulty("crashy", "crash", &scratch.root),
        Duration::from_secs(60),
    );
    let pool = ServerPool::new(&scratch.root);
    let set = SessionTools::new(
        pool.servers_for(std::slice::from_ref(&spec)),
        SearchPolicy::default(),
    )
    .tools(LateToolsAsk::default())
    .await;
    let ctx = context(&scratch.root);
    let output = tool(&set, "mcp__crashy__ping").run(json!({}), &ctx).await;
    assert!(output.is_error);
    assert!(
        text_of(&output).contains("stopped during the call"),
        "{output:?}"
    );
    // Later calls say it is gone.
    let output = tool(&set, "mcp__crashy__ping").run(json!({}), &ctx).await;
    assert!(text_of(&output).contains("is not connected"), "{output:?}");
    // A fresh context starts it again.
    let again = SessionTools::new(
        pool.servers_for(std::slice::from_ref(&spec)),
        SearchPolicy::default(),
    )
    .tools(LateToolsAsk::default())
    .await;
    assert!(
        again
            .tools
            .iter()
            .any(|tool| tool.name() == "mcp__crashy__ping")
    );
    pool.shutdown().await;
}

#[tokio::test]
async fn malformed_results_and_notification_floods_are_survived() {
    let scratch = Scratch::new();
    let malformed = with_wait(
        faulty("bad", "malformed", &scratch.root),
        Duration::from_secs(60),
    );
    let flood = with_wait(
        faulty("flood", "flood", &scratch.root),
        Duration::from_secs(60),
    );
    let (set, pool) = session_tools(&scratch, &[malformed, flood]).await;
    let ctx = context(&scratch.root);
    let output = tool(&set, "mcp__bad__ping").run(json!({}), &ctx).await;
    assert!(output.is_error, "{output:?}");
    assert!(text_of(&output).contains("`bad`"), "{output:?}");
    let output = tool(&set, "mcp__flood__ping").run(json!({}), &ctx).await;
    assert!(!output.is_error, "{output:?}");
    assert_eq!(text_of(&output), "pong");
    // The flood is one line in the log, not twenty thousand.
    let log = scratch.log_of("flood");
    assert!(log.matches("tool list changed").count() <= 2, "{log}");
    pool.shutdown().await;
}

#[tokio::test]
async fn a_lazy_server_is_offered_from_its_kept_tool_list_and_started_on_first_call() {
    let scratch = Scratch::new();
    let mut spec = with_wait(generated("lazy", 3, &scratch.root), Duration::from_secs(60));
    spec.lazy = true;
    // The first time, nothing is kept: it starts with the session and keeps its list.
    let pool = ServerPool::new(&scratch.root);
    let first = SessionTools::new(
        pool.servers_for(std::slice::from_ref(&spec)),
        SearchPolicy::default(),
    )
    .tools(LateToolsAsk::default())
    .await;
    assert_eq!(first.tools.len(), 3, "{:?}", first.notices);
    pool.shutdown().await;
    assert_eq!(scratch.log_of("lazy").matches("connecting (").count(), 1);

    // A later process offers its tools without starting it.
    let pool = ServerPool::new(&scratch.root);
    let servers = pool.servers_for(std::slice::from_ref(&spec));
    let later = SessionTools::new(servers.clone(), SearchPolicy::default())
        .tools(LateToolsAsk::default())
        .await;
    assert!(later.notices.is_empty(), "{:?}", later.notices);
    let names: Vec<&str> = later.tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(
        names,
        [
            "mcp__lazy__ticket_list",
            "mcp__lazy__ticket_lookup",
            "mcp__lazy__ticket_update"
        ]
    );
    assert_eq!(servers[0].status(), ServerStatus::Idle { tools: 3 });
    assert_eq!(scratch.log_of("lazy").matches("connecting (").count(), 1);

    // The first call starts it.
    let ctx = context(&scratch.root);
    let output = tool(&later, "mcp__lazy__ticket_lookup")
        .run(json!({"id": "t"}), &ctx)
        .await;
    assert_eq!(
        text_of(&output),
        "ticket_lookup on server 3: {\"id\": \"t\"}"
    );
    let log = scratch.log_of("lazy");
    assert!(log.contains("starting on first use"), "{log}");
    assert_eq!(log.matches("connecting (").count(), 2);
    pool.shutdown().await;
}

#[tokio::test]
async fn servers_no_session_uses_any_more_are_stopped() {
    let scratch = Scratch::new();
    let kept = generated("kept", 1, &scratch.root);
    let dropped = generated("dropped", 2, &scratch.root);
    let pool = ServerPool::new(&scratch.root);
    let held = pool.servers_for(std::slice::from_ref(&kept));
    let released = pool.servers_for(std::slice::from_ref(&dropped));
    for server in held.iter().chain(&released) {
        assert_eq!(server.settled().await, ServerStatus::Ready { tools: 3 });
    }
    drop(released);
    pool.stop_unused().await;
    assert_eq!(pool.status_of(&dropped), None);
    assert!(
        scratch
            .log_of("dropped")
            .contains("stopped: no session uses it any more"),
        "{}",
        scratch.log_of("dropped")
    );
    assert_eq!(
        pool.status_of(&kept),
        Some(ServerStatus::Ready { tools: 3 })
    );
    // Asked for again, it starts anew.
    let again = pool.servers_for(std::slice::from_ref(&dropped));
    assert_eq!(again[0].settled().await, ServerStatus::Ready { tools: 3 });
    drop(held);
    pool.shutdown().await;
}

/// A server that fails its handshake (it writes something that is no MCP and exits) is
/// stopped with what it started: a helper left in its process group does not outlive it.
#[tokio::test]
async fn a_server_failing_its_handshake_takes_its_helpers_with_it() {
    let scratch = Scratch::new();
    let pid_file = scratch.root.join("helper.pid");
    let mut spec = with_wait(
        ServerSpec::new(
            "brief",
            TransportSpec::Stdio {
                command: "sh".into(),
                args: vec![
                    "-c".into(),
                    format!(
                        "sleep 600 < /dev/null > /dev/null 2>&1 & echo $! > {}; echo not-mcp; exit 3",
                        pid_file.display()
                    ),
                ],
                env: BTreeMap::new(),
                cwd: scratch.root.clone(),
            },
        ),
        Duration::from_secs(60),
    );
    // Far past the wait below, so only the failed handshake can stop the helper.
    spec.startup_timeout = Duration::from_secs(600);
    let pool = ServerPool::new(&scratch.root);
    let servers = pool.servers_for(std::slice::from_ref(&spec));
    let settled = tokio::time::timeout(Duration::from_secs(60), servers[0].settled())
        .await
        .expect("the handshake fails in time");
    assert!(matches!(settled, ServerStatus::Failed(_)), "{settled:?}");
    let helper: libc::pid_t = std::fs::read_to_string(&pid_file)
        .expect("the helper's pid")
        .trim()
        .parse()
        .expect("a pid");
    // A pidfd turns readable when the process ends (a zombie included); none can be opened
    // for a process already reaped.
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor, which the
    // OwnedFd then owns and the AsyncFd alone uses.
    #[allow(unsafe_code)]
    let pidfd = unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, helper, 0);
        (fd >= 0).then(|| {
            let fd = <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(
                i32::try_from(fd).expect("a descriptor"),
            );
            tokio::io::unix::AsyncFd::register(fd).expect("a pidfd can be watched")
        })
    };
    match pidfd {
        Some(pidfd) => {
            let ended = tokio::time::timeout(Duration::from_secs(10), pidfd.readable()).await;
            assert!(ended.is_ok(), "the helper {helper} still runs");
        }
        None => assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ESRCH),
            "the helper {helper} is gone"
        ),
    }
    pool.shutdown().await;
}

/// A server that writes something other than MCP and then nothing: its startup timeout
/// says what it wrote.
#[tokio::test]
async fn a_server_writing_no_mcp_is_named_with_what_it_wrote_at_its_startup_timeout() {
    let scratch = Scratch::new();
    let mut spec = ServerSpec::new(
        "chatty",
        TransportSpec::Stdio {
            command: "sh".into(),
            args: vec![
                "-c".into(),
                "echo 'Server starting...'; echo 'Listening on stdio'; exec sleep 600".into(),
            ],
            env: BTreeMap::new(),
            cwd: scratch.root.clone(),
        },
    );
    spec.startup_timeout = Duration::from_secs(2);
    let pool = ServerPool::new(&scratch.root);
    let servers = pool.servers_for(std::slice::from_ref(&spec));
    let settled = tokio::time::timeout(Duration::from_secs(60), servers[0].settled())
        .await
        .expect("the startup timeout fires");
    match settled {
        ServerStatus::Failed(why) => assert!(
            why.contains(
                "did not answer within its startup timeout (2 s); it wrote 2 lines that are \
                 no MCP messages, the first: \"Server starting...\""
            ),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    pool.shutdown().await;
}
