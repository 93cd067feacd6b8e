// Unit tests of session control in the extension: slash-command completion for the chat
// input (from `larik/commands`), and the chat model following a `session_switched` event
// (`/fork`, `/rewind`, `/resume`, `/clear`) to the session the conversation continues in.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatModel } from "../core/chatModel";
import { completedInput, slashCompletions } from "../core/commands";
import { parseCommands } from "../core/protocol";
import { suggestions } from "../core/render";

const commands = parseCommands({
  commands: [
    { name: "compact", description: "Summarise", hint: "what to keep (optional)" },
    { name: "clear", description: "Fresh context", hint: null },
    { name: "config", description: "Configuration", hint: "set KEY VALUE (optional)" },
    { name: "cost", description: "Tokens and cost" },
    { name: "", description: "nameless" },
    "not an entry",
  ],
});

test("larik/commands is read defensively", () => {
  assert.deepEqual(
    commands.map((command) => command.name),
    ["compact", "clear", "config", "cost"],
  );
  assert.equal(commands[1]?.hint, undefined);
  assert.deepEqual(parseCommands({ commands: "nope" }), []);
  assert.deepEqual(parseCommands(null), []);
});

test("a slash and a prefix suggest the matching commands until the first space", () => {
  const names = (input: string) => slashCompletions(input, commands).map((command) => command.name);
  assert.deepEqual(names("/"), ["compact", "clear", "config", "cost"]);
  assert.deepEqual(names("/co"), ["compact", "config", "cost"]);
  assert.deepEqual(names("/CL"), ["clear"]);
  assert.deepEqual(names("/cost now"), []);
  assert.deepEqual(names("what is /co"), []);
  assert.deepEqual(names("/zzz"), []);
  const config = commands[2];
  assert.ok(config !== undefined);
  assert.equal(completedInput(config), "/config ");
  assert.deepEqual(suggestions([config]), [
    { insert: "/config ", label: "/config set KEY VALUE (optional)", description: "Configuration" },
  ]);
});

test("a fork continues the chat in the new session with what it showed", () => {
  const model = new ChatModel();
  model.switchTo("a");
  model.beginPrompt("a", "prompt one");
  model.applyEvent("a", { type: "message_complete", text: "Answer one." });
  model.applyEvent("a", {
    type: "session_switched",
    reason: "fork",
    session_id: "b",
    from: "a",
    fork_at: 2,
    model: "anthropic/claude-sonnet-4-5",
    mode: "plan",
  });
  assert.equal(model.currentSession, "b");
  const items = model.current.items;
  assert.deepEqual(items.slice(0, 2), [
    { kind: "user", text: "prompt one" },
    { kind: "assistant", text: "Answer one.", streaming: false },
  ]);
  assert.equal(items[2]?.kind, "info");
  assert.equal(model.current.mode, "plan");
  assert.equal(model.takePendingInput(), undefined);
});

test("a rewind puts the prompt back in the input box, once", () => {
  const model = new ChatModel();
  model.switchTo("a");
  model.applyEvent("a", { type: "session_switched", reason: "rewind", session_id: "c", from: "a", prompt: "prompt two" });
  assert.equal(model.currentSession, "c");
  assert.equal(model.takePendingInput(), "prompt two");
  assert.equal(model.takePendingInput(), undefined);
  assert.equal(model.current.items.filter((item) => item.kind === "user").length, 0);
});

test("a resume shows the stored history; a clear stays in the same session", () => {
  const model = new ChatModel();
  model.switchTo("new");
  model.applyEvent("new", {
    type: "session_switched",
    reason: "resume",
    session_id: "old",
    from: "new",
    history: [
      { role: "user", text: "prompt one" },
      { callId: "r1", tool: "read", input: { file_path: "a.rs" }, status: "completed", output: "fn a() {}" },
      { role: "assistant", text: "Answer one." },
      { mark: "cleared" },
      7,
    ],
  });
  assert.equal(model.currentSession, "old");
  const kinds = model.current.items.map((item) => item.kind);
  assert.deepEqual(kinds, ["user", "tool", "assistant", "info", "info"]);
  const tool = model.current.items[1];
  assert.ok(tool?.kind === "tool" && tool.status === "completed" && tool.output === "fn a() {}");

  model.applyEvent("old", { type: "session_switched", reason: "clear", session_id: "old", from: "old" });
  assert.equal(model.currentSession, "old");
  assert.equal(model.current.items.length, 6, "the history stays; a line says the context was cleared");
});
