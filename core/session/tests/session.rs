//! Sessions written and read through real files in temp dirs.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use larik_protocol::{Block, Message, ResultPart, Role, Usage};
use larik_session::{SessionError, SessionMeta, SessionStore, SessionWriter, Shown, cwd_slug};
use serde_json::{Value, json};

fn meta(cwd: &Path) -> SessionMeta {
    SessionMeta {
        cwd: cwd.to_owned(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        fork_of: None,
        fork_at: None,
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: 1,
        cache_write_tokens: 2,
        cost_usd: 0.25,
        unpriced_requests: 0,
    }
}

/// A message using every block kind.
fn rich_assistant() -> Message {
    Message::assistant(
        vec![
            Block::Thinking {
                text: "let me look".into(),
                signature: Some("sig==".into()),
                provider: "anthropic".into(),
            },
            Block::Opaque {
                provider: "openai".into(),
                raw: r#"{"type":"reasoning","encrypted_content":"abc"}"#.into(),
            },
            Block::Text {
                text: "Reading the file.\nLine two \u{1F600}".into(),
            },
            Block::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
            Block::ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                input: json!({"path": "src/lib.rs", "limit": 10}),
            },
        ],
        "anthropic/claude-sonnet-4-5",
    )
}

fn tool_result() -> Message {
    Message {
        role: Role::User,
        content: vec![Block::ToolResult {
            call_id: "call_1".into(),
            content: vec![
                ResultPart::text("fn main() {}"),
                ResultPart::Image {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                },
            ],
            is_error: false,
        }],
        model: None,
    }
}

/// Two full turns: prompt, tool call, tool result, answer; then prompt, answer.
fn two_turns(writer: &mut SessionWriter) -> Vec<Message> {
    let messages = vec![
        Message::user_text("first prompt"),
        rich_assistant(),
        tool_result(),
        Message::assistant(
            vec![Block::Text {
                text: "done".into(),
            }],
            "anthropic/m",
        ),
        Message::user_text("second prompt"),
        Message::assistant(vec![Block::Text { text: "ok".into() }], "anthropic/m"),
    ];
    for (index, message) in messages.iter().enumerate() {
        writer.append_message(message).expect("append message");
        if message.role == Role::Assistant {
            writer
                .append_usage("anthropic/m", &usage(10 * index as u64, 1))
                .expect("append usage");
        }
    }
    messages
}

fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .expect("read session")
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect()
}

fn append_raw(path: &Path, text: &str) {
    let mut file = OpenOptions::new().append(true).open(path).expect("open");
    file.write_all(text.as_bytes()).expect("write");
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: SessionStore,
    cwd: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SessionStore::new(dir.path().join("data"));
    let cwd = dir.path().join("home").join("a").join("proj");
    Fixture {
        store,
        cwd,
        _dir: dir,
    }
}

#[test]
fn cwd_slug_replaces_everything_but_safe_characters() {
    assert_eq!(cwd_slug(Path::new("/home/a/proj")), "-home-a-proj");
    assert_eq!(cwd_slug(Path::new("/x/my proj_1.2-b")), "-x-my-proj_1.2-b");
}

#[test]
fn create_append_load_round_trips_every_block_kind() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    let messages = two_turns(&mut writer);
    assert!(writer.path().ends_with(format!(
        "sessions/{}/{}.jsonl",
        cwd_slug(&fx.cwd),
        writer.id()
    )));
    assert_eq!(writer.id().len(), "YYYYMMDD-HHMMSS-xxxxxx".len());

    let loaded = fx.store.load(writer.path()).expect("load");
    assert_eq!(loaded.id, writer.id());
    assert_eq!(loaded.path, writer.path());
    assert_eq!(loaded.meta, meta(&fx.cwd));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.messages, messages);
    assert_eq!(loaded.prompt_indexes, vec![0, 4]);
    let mut total = Usage::default();
    for index in [1u64, 3, 5] {
        total.add(&usage(10 * index, 1));
    }
    assert_eq!(loaded.usage, total);
}

#[test]
fn a_compaction_replaces_earlier_messages_on_replay() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    two_turns(&mut writer);
    writer.append_compaction("we talked").expect("compact");
    let loaded = fx.store.load(writer.path()).expect("load");
    assert_eq!(loaded.messages, vec![Message::user_text("we talked")]);
    assert!(
        loaded.prompt_indexes.is_empty(),
        "a summary is not a prompt"
    );
    assert_eq!(
        loaded.usage.output_tokens, 3,
        "usage before a compaction still counts"
    );
}

#[test]
fn a_clear_starts_a_fresh_context_and_keeps_the_history_for_replays() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    let before = two_turns(&mut writer);
    writer.append_note("files were put back").expect("note");
    writer.append_clear().expect("clear");
    let after = vec![
        Message::user_text("third prompt"),
        Message::assistant(
            vec![Block::Text {
                text: "fine".into(),
            }],
            "openai/gpt-5.1",
        ),
    ];
    for message in &after {
        writer.append_message(message).expect("append");
    }
    writer
        .append_usage("openai/gpt-5.1", &usage(100, 5))
        .expect("usage");
    assert_eq!(lines(writer.path())[11]["type"], "clear");

    let loaded = fx.store.load(writer.path()).expect("load");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.messages, after,
        "the model sees only what follows the clear"
    );
    assert_eq!(loaded.prompt_indexes, vec![0]);
    assert_eq!(loaded.prompt_texts(), vec!["third prompt".to_string()]);
    assert!(
        loaded.pending_notes.is_empty(),
        "a note about the cleared conversation is not delivered"
    );
    let mut expected: Vec<Shown<'_>> = before.iter().map(Shown::Message).collect();
    expected.push(Shown::Cleared);
    expected.extend(after.iter().map(Shown::Message));
    assert_eq!(loaded.replay(), expected);

    // Usage before the clear still counts, by model.
    assert_eq!(loaded.usage.output_tokens, 8);
    assert_eq!(loaded.usage_by_model.len(), 2);
    assert_eq!(loaded.usage_by_model["openai/gpt-5.1"], usage(100, 5));
    assert_eq!(loaded.usage_by_model["anthropic/m"].output_tokens, 3);
    let summary = fx.store.summary(writer.path()).expect("summary");
    assert_eq!(summary.model, "openai/gpt-5.1");
    assert_eq!(summary.usage, loaded.usage);

    // A fork after the clear copies the current context only.
    let fork = fx.store.fork(&loaded, loaded.messages.len()).expect("fork");
    let forked = fx.store.load(fork.path()).expect("load fork");
    assert_eq!(forked.messages, after);
    assert_eq!(forked.meta.fork_at, Some(2));
}

#[test]
fn a_clear_after_a_compaction_replays_the_summary_as_its_mark() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    let first = two_turns(&mut writer);
    writer.append_compaction("we talked").expect("compact");
    let third = Message::user_text("third");
    writer.append_message(&third).expect("append");
    writer.append_clear().expect("clear");
    let loaded = fx.store.load(writer.path()).expect("load");
    assert!(loaded.messages.is_empty());
    assert!(loaded.prompt_indexes.is_empty());
    let mut expected: Vec<Shown<'_>> = first.iter().map(Shown::Message).collect();
    expected.push(Shown::Compacted {
        summary: "we talked",
    });
    expected.push(Shown::Message(&third));
    expected.push(Shown::Cleared);
    assert_eq!(loaded.replay(), expected);

    // Without a clear, the summary still shows as its mark and not as a prompt.
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    two_turns(&mut writer);
    writer.append_compaction("summary two").expect("compact");
    let loaded = fx.store.load(writer.path()).expect("load");
    assert_eq!(loaded.replay().len(), 7);
    assert_eq!(
        loaded.replay()[6],
        Shown::Compacted {
            summary: "summary two"
        }
    );
    let fresh = fx.store.create(meta(&fx.cwd)).expect("create");
    let summary = fx
        .store
        .summary(fresh.path())
        .expect("summary of a new file");
    assert_eq!(summary.model, "anthropic/claude-sonnet-4-5");
    assert_eq!(summary.usage, Usage::default());
}

#[test]
fn entries_have_the_documented_shape_and_form_a_parent_chain() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    two_turns(&mut writer);
    writer.append_compaction("summary").expect("compaction");
    let entries = lines(writer.path());
    assert_eq!(entries.len(), 1 + 6 + 3 + 1);

    let first = &entries[0];
    assert_eq!(first["type"], "meta");
    assert_eq!(first["parent_id"], Value::Null);
    assert_eq!(first["meta"]["cwd"], json!(fx.cwd));
    assert_eq!(first["meta"]["provider"], "anthropic");
    assert!(first["meta"]["version"].is_string());
    assert!(first["meta"].get("fork_of").is_none());

    for pair in entries.windows(2) {
        assert_eq!(
            pair[1]["parent_id"], pair[0]["id"],
            "broken chain: {pair:?}"
        );
    }
    for entry in &entries {
        let id = entry["id"].as_str().expect("id");
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        let time = entry["time"].as_str().expect("time");
        assert!(time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T');
    }
    assert_eq!(entries[2]["type"], "message");
    assert_eq!(entries[2]["message"]["role"], "assistant");
    assert_eq!(entries[3]["type"], "usage");
    assert_eq!(entries[3]["model"], "anthropic/m");
    assert_eq!(entries[3]["usage"]["input_tokens"], 10);
    assert_eq!(entries[10]["type"], "compaction");
    assert_eq!(entries[10]["summary"], "summary");
}

#[test]
fn torn_last_line_is_tolerated_and_resume_appends_after_it() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    two_turns(&mut writer);
    let path = writer.path().to_owned();
    drop(writer);
    append_raw(&path, r#"{"id":"deadbeef","parent_id":"0000","type":"mess"#);

    let loaded = fx.store.load(&path).expect("load torn");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.messages.len(), 6);

    let mut writer = fx.store.resume(&loaded).expect("resume");
    assert_eq!(writer.id(), loaded.id);
    writer
        .append_message(&Message::user_text("third prompt"))
        .expect("append after torn line");
    drop(writer);

    let text = fs::read_to_string(&path).expect("read");
    assert!(text.ends_with('\n'));
    let last: Value = serde_json::from_str(text.lines().last().expect("a line")).expect("json");
    assert_eq!(last["message"]["content"][0]["text"], "third prompt");

    let reloaded = fx.store.load(&path).expect("reload");
    assert!(reloaded.warnings.is_empty(), "{:?}", reloaded.warnings);
    assert_eq!(reloaded.messages.len(), 7);
    assert_eq!(reloaded.prompt_indexes, vec![0, 4, 6]);
    // The new entry's parent is the last complete entry, not the torn one.
    let valid: Vec<Value> = text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let n = valid.len();
    assert_eq!(valid[n - 1]["parent_id"], valid[n - 2]["id"]);
}

#[test]
fn resume_of_a_clean_file_adds_no_blank_line() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    writer
        .append_message(&Message::user_text("hi"))
        .expect("append");
    let path = writer.path().to_owned();
    drop(writer);
    let loaded = fx.store.load(&path).expect("load");
    let mut writer = fx.store.resume(&loaded).expect("resume");
    writer
        .append_message(&Message::user_text("again"))
        .expect("append");
    let text = fs::read_to_string(&path).expect("read");
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains("\n\n"));
}

#[test]
fn garbage_lines_in_the_middle_are_skipped_with_warnings() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    writer
        .append_message(&Message::user_text("one"))
        .expect("append");
    let path = writer.path().to_owned();
    append_raw(&path, "this is not json\n");
    append_raw(
        &path,
        r#"{"id":"1","parent_id":null,"type":"telemetry","time":"x"}"#,
    );
    append_raw(&path, "\n");
    append_raw(
        &path,
        r#"{"id":"2","parent_id":null,"type":"message","time":"x","message":7}"#,
    );
    append_raw(&path, "\n[1,2,3]\n");
    writer
        .append_message(&Message::user_text("two"))
        .expect("append");

    let loaded = fx.store.load(&path).expect("load");
    assert_eq!(
        loaded.messages,
        vec![Message::user_text("one"), Message::user_text("two")]
    );
    assert_eq!(loaded.warnings.len(), 4, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].starts_with("line 3: not JSON"),
        "{:?}",
        loaded.warnings
    );
    assert!(loaded.warnings[1].starts_with("line 4: unknown entry type `telemetry`"));
    assert!(loaded.warnings[2].starts_with("line 5: malformed `message` entry"));
    assert!(loaded.warnings[3].starts_with("line 6: not a session entry"));
    assert!(loaded.warnings.iter().all(|w| w.ends_with("skipped")));
}

#[test]
fn a_file_without_meta_or_missing_is_an_error() {
    let fx = fixture();
    let dir = fx.cwd.join("x");
    fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join("20250101-000000-abcdef.jsonl");
    let message = json!({"id":"a","parent_id":null,"type":"message","time":"t",
        "message": Message::user_text("hi")});
    fs::write(&path, format!("{message}\n")).expect("write");
    let err = fx.store.load(&path).expect_err("no meta");
    assert!(matches!(err, SessionError::NoMeta { .. }), "{err}");
    assert!(err.to_string().contains("no meta entry"));

    let err = fx
        .store
        .load(&dir.join("missing.jsonl"))
        .expect_err("missing");
    assert!(matches!(err, SessionError::Io { .. }), "{err}");
}

#[test]
fn fork_copies_messages_but_not_usage_and_leaves_the_source_alone() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    let messages = two_turns(&mut writer);
    let source_path = writer.path().to_owned();
    drop(writer);
    let before = fs::read(&source_path).expect("read source");
    let source = fx.store.load(&source_path).expect("load");

    let mut fork = fx.store.fork(&source, 4).expect("fork at prompt 2");
    assert_ne!(fork.id(), source.id);
    assert_ne!(fork.path(), source_path);
    fork.append_usage("openai/gpt", &usage(7, 7))
        .expect("usage");
    let fork_path = fork.path().to_owned();
    drop(fork);

    assert_eq!(fs::read(&source_path).expect("read source"), before);
    let forked = fx.store.load(&fork_path).expect("load fork");
    assert_eq!(forked.meta.fork_of.as_deref(), Some(source.id.as_str()));
    assert_eq!(forked.meta.fork_at, Some(4));
    assert_eq!(forked.meta.model, source.meta.model);
    assert_eq!(forked.messages, messages[..4]);
    assert_eq!(forked.usage, usage(7, 7));
    let entries = lines(&fork_path);
    for pair in entries.windows(2) {
        assert_eq!(pair[1]["parent_id"], pair[0]["id"]);
    }

    let whole = fx.store.fork(&source, messages.len()).expect("fork all");
    let whole = fx.store.load(whole.path()).expect("load");
    assert_eq!(whole.messages, messages);
}

#[test]
fn fork_inside_a_turn_is_rejected() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    two_turns(&mut writer);
    let source = fx.store.load(writer.path()).expect("load");
    // 2 is a tool result, 3 an answer, 99 past the end.
    for keep in [1, 2, 3, 5, 99] {
        let err = fx.store.fork(&source, keep).expect_err("not a boundary");
        assert!(
            matches!(err, SessionError::NotATurnBoundary { keep: k, len: 6 } if k == keep),
            "{err}"
        );
    }
    assert_eq!(
        fx.store.list(&fx.cwd).expect("list").len(),
        1,
        "no file made"
    );
}

#[test]
fn fork_after_a_compaction_keeps_the_summary() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    two_turns(&mut writer);
    writer.append_compaction("we read lib.rs").expect("compact");
    writer
        .append_message(&Message::user_text("third"))
        .expect("append");
    writer
        .append_message(&Message::assistant(vec![], "anthropic/m"))
        .expect("append");
    let source = fx.store.load(writer.path()).expect("load");
    assert_eq!(source.messages.len(), 3);
    assert_eq!(source.prompt_indexes, vec![1]);

    let fork = fx.store.fork(&source, 1).expect("fork before third");
    let forked = fx.store.load(fork.path()).expect("load");
    assert_eq!(forked.messages, vec![Message::user_text("we read lib.rs")]);
    assert_eq!(lines(fork.path())[1]["type"], "compaction");
}

#[test]
fn rewind_branches_before_the_nth_prompt() {
    let fx = fixture();
    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    let messages = two_turns(&mut writer);
    let source = fx.store.load(writer.path()).expect("load");

    let (branch, prompt) = fx.store.rewind(&source, 2).expect("rewind");
    assert_eq!(prompt, Message::user_text("second prompt"));
    let branched = fx.store.load(branch.path()).expect("load");
    assert_eq!(branched.messages, messages[..4]);
    assert_eq!(branched.prompt_indexes, vec![0]);
    assert_eq!(branched.meta.fork_at, Some(4));

    let (first, prompt) = fx.store.rewind(&source, 1).expect("rewind to start");
    assert_eq!(prompt, Message::user_text("first prompt"));
    assert!(
        fx.store
            .load(first.path())
            .expect("load")
            .messages
            .is_empty()
    );

    for number in [0, 3] {
        let err = fx
            .store
            .rewind(&source, number)
            .expect_err("no such prompt");
        assert!(
            matches!(err, SessionError::NoSuchPrompt { count: 2, .. }),
            "{err}"
        );
    }
}

#[test]
fn list_and_latest_order_newest_first() {
    let fx = fixture();
    assert!(fx.store.list(&fx.cwd).expect("empty list").is_empty());
    assert!(fx.store.latest(&fx.cwd).expect("latest").is_none());

    let mut writer = fx.store.create(meta(&fx.cwd)).expect("create");
    writer
        .append_message(&Message::user_text(format!(
            "  explain\n{}",
            "x".repeat(200)
        )))
        .expect("append");
    let template = fs::read(writer.path()).expect("read");
    let dir = writer.path().parent().expect("dir").to_owned();
    fs::remove_file(writer.path()).expect("remove");

    // Same content under ids from different times, and two from the same second.
    let now = SystemTime::now();
    let plan = [
        ("20200101-000000-aaaaaa", now),
        ("20300101-120000-000000", now - Duration::from_secs(3600)),
        ("20250601-080000-ffffff", now - Duration::from_secs(7200)),
        ("20250601-080000-000001", now),
    ];
    for (id, modified) in plan {
        let path = dir.join(format!("{id}.jsonl"));
        fs::write(&path, &template).expect("write");
        let file = OpenOptions::new().append(true).open(&path).expect("open");
        file.set_modified(modified).expect("set mtime");
    }
    fs::write(dir.join("notes.txt"), "ignored").expect("write");

    let list = fx.store.list(&fx.cwd).expect("list");
    let ids: Vec<&str> = list.iter().map(|info| info.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "20300101-120000-000000",
            "20250601-080000-000001",
            "20250601-080000-ffffff",
            "20200101-000000-aaaaaa"
        ]
    );
    let preview = list[0].first_prompt.as_deref().expect("first prompt");
    assert!(preview.starts_with("explain xxx"), "{preview}");
    assert_eq!(preview.chars().count(), 80);
    let latest = fx.store.latest(&fx.cwd).expect("latest").expect("some");
    assert_eq!(latest, list[0]);
}

#[test]
fn find_looks_in_this_project_then_all_others() {
    let fx = fixture();
    let other = fx.cwd.with_file_name("other");
    let here = fx.store.create(meta(&fx.cwd)).expect("create here");
    let there = fx.store.create(meta(&other)).expect("create there");

    assert_eq!(
        fx.store.find(&fx.cwd, here.id()).expect("here"),
        here.path()
    );
    assert_eq!(
        fx.store
            .find(&fx.cwd, there.id())
            .expect("in the other project"),
        there.path()
    );
    let loaded = fx
        .store
        .load(&fx.store.find(&fx.cwd, there.id()).expect("find"))
        .expect("load");
    assert_eq!(loaded.meta.cwd, other);

    let err = fx
        .store
        .find(&fx.cwd, "20990101-000000-000000")
        .expect_err("missing");
    assert!(matches!(err, SessionError::NotFound { .. }), "{err}");
    for bad in ["../x", "a/b", "..", ""] {
        let err = fx.store.find(&fx.cwd, bad).expect_err("rejected");
        assert!(
            matches!(err, SessionError::InvalidId { .. }),
            "{bad}: {err}"
        );
    }
}

#[test]
fn list_all_names_each_sessions_project_from_its_meta() {
    let fx = fixture();
    assert!(fx.store.list_all().expect("nothing yet").is_empty());
    let other = fx.cwd.with_file_name("other project");
    let mut first = fx.store.create(meta(&fx.cwd)).expect("create");
    first
        .append_message(&Message::user_text("in proj"))
        .expect("append");
    let mut second = fx.store.create(meta(&other)).expect("create");
    second
        .append_message(&Message::user_text("in the other one"))
        .expect("append");

    let all = fx.store.list_all().expect("list all");
    let mut found: Vec<(PathBuf, String, Option<String>)> = all
        .into_iter()
        .map(|(cwd, info)| (cwd, info.id, info.first_prompt))
        .collect();
    found.sort();
    let mut expected = vec![
        (
            fx.cwd.clone(),
            first.id().to_string(),
            Some("in proj".to_string()),
        ),
        (
            other.clone(),
            second.id().to_string(),
            Some("in the other one".to_string()),
        ),
    ];
    expected.sort();
    assert_eq!(found, expected);
}
