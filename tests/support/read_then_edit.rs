//! The model's side of a turn the front-end snapshots share: read `src/lib.rs` with a
//! word first, edit it (which asks permission in the default mode), then answer.

use larik_testkit::{FakeModelServer, turn};
use serde_json::json;

/// What `src/lib.rs` holds after the edit.
pub const EDITED: &str = "pub fn greet() -> &'static str {\n    \"hello, world\"\n}\n";

/// Scripts the three requests of the turn; `lib` is the absolute path the read names.
pub fn enqueue(server: &FakeModelServer, lib: &str) {
    server.enqueue(
        turn()
            .text("Reading the library.")
            .tool_call("r1", "read", json!({ "file_path": lib }))
            .usage(100, 10),
    );
    server.enqueue(
        turn()
            .tool_call(
                "e1",
                "edit",
                json!({"file_path": "src/lib.rs", "old_string": "\"hello\"",
                       "new_string": "\"hello, world\""}),
            )
            .usage(10, 1),
    );
    server.enqueue(turn().text("greet now says hello, world.").usage(10, 1));
}
