// Unit tests of the chat model: event sequences from docs/events.md in, transcripts out.

import assert from "node:assert/strict";
import { test } from "node:test";
import { type ChatItem, ChatModel, type ToolItem, isBusy } from "../core/chatModel";
import type { AgentEvent } from "../core/protocol";

function feed(model: ChatModel, sessionId: string, events: AgentEvent[]): void {
  for (const event of events) {
    model.applyEvent(sessionId, event);
  }
}

function tools(items: ChatItem[]): ToolItem[] {
  return items.filter((item): item is ToolItem => item.kind === "tool");
}

test("streamed deltas become one message that message_complete settles", () => {
  const model = new ChatModel();
  model.switchTo("s1");
  model.beginPrompt("s1", "hello");
  feed(model, "s1", [
    { type: "turn_started", turn: 1 },
    { type: "thought_delta", text: "Let me " },
    { type: "thought_delta", text: "think." },
    { type: "message_delta", text: "Hi " },
    { type: "message_delta", text: "there" },
  ]);
  let items = model.current.items;
  assert.deepEqual(items, [
    { kind: "user", text: "hello" },
    { kind: "thought", text: "Let me think.", streaming: true },
    { kind: "assistant", text: "Hi there", streaming: true },
  ]);
  assert.equal(isBusy(model.current), true);

  feed(model, "s1", [
    { type: "message_complete", text: "Hi there!" },
    { type: "turn_complete", stop_reason: "end_turn", num_requests: 1 },
  ]);
  model.endPrompt("s1", { stopReason: "end_turn" });
  items = model.current.items;
  assert.deepEqual(items.slice(1), [
    { kind: "thought", text: "Let me think.", streaming: false },
    { kind: "assistant", text: "Hi there!", streaming: false },
    { kind: "turnEnd", stopReason: "end_turn" },
  ]);
  assert.equal(isBusy(model.current), false);
});

test("retrying drops what streamed since the last complete message", () => {
  const model = new ChatModel();
  feed(model, "s1", [
    { type: "turn_started", turn: 1 },
    { type: "message_complete", text: "First." },
    { type: "message_delta", text: "half an ans" },
    { type: "retrying", attempt: 2, delay_ms: 500, reason: "stream cut" },
    { type: "message_delta", text: "Whole answer" },
  ]);
  const texts = model.transcript("s1").items.map((item) => ("text" in item ? item.text : item.kind));
  assert.deepEqual(texts, ["First.", "Retrying (attempt 2): stream cut", "Whole answer"]);
});

test("a tool call goes from queued through permission to done, with its diff", () => {
  const model = new ChatModel();
  feed(model, "s1", [
    { type: "turn_started", turn: 1 },
    { type: "tool_call_begin", call_id: "c1", tool: "edit", kind: "edit", title: "Edit src/a.rs", input: {} },
    { type: "diff", call_id: "c1", change: { path: "src/a.rs", old_text: "a\nb\nc\n", new_text: "a\nB\nc\nd\n" }, applied: false },
    { type: "tool_call_update", call_id: "c1", status: "pending" },
    { type: "permission_request", request_id: "r1", call_id: "c1", tool: "edit", title: "Edit src/a.rs", input: {}, options: [] },
  ]);
  let [tool] = tools(model.transcript("s1").items);
  assert.equal(tool?.status, "awaiting_permission");
  assert.deepEqual(tool?.diffs, [{ path: "src/a.rs", added: 2, removed: 1, created: false, applied: false }]);

  feed(model, "s1", [
    { type: "tool_call_update", call_id: "c1", status: "in_progress" },
    { type: "diff", call_id: "c1", change: { path: "src/a.rs", old_text: "a\nb\nc\n", new_text: "a\nB\nc\nd\n" }, applied: true },
    { type: "tool_call_end", call_id: "c1", status: "completed", output: "Edited src/a.rs" },
  ]);
  [tool] = tools(model.transcript("s1").items);
  assert.equal(tool?.status, "completed");
  assert.equal(tool?.output, "Edited src/a.rs");
  assert.equal(tool?.title, "Edit src/a.rs");
  assert.equal(tool?.diffs.length, 1, "the applied diff replaces the proposed one");
  assert.equal(tool?.diffs[0]?.applied, true);
});

test("a denied call stays denied with its reason after it ends", () => {
  const model = new ChatModel();
  feed(model, "s1", [
    { type: "tool_call_begin", call_id: "c2", tool: "bash", kind: "execute", title: "rm -rf build", input: {} },
    { type: "permission_denied", call_id: "c2", tool: "bash", input: {}, reason: "denied by the user" },
    { type: "tool_call_end", call_id: "c2", status: "failed", output: "The user denied this call." },
  ]);
  const [tool] = tools(model.transcript("s1").items);
  assert.equal(tool?.status, "denied");
  assert.equal(tool?.reason, "denied by the user");
});

test("events for a call whose begin was missed still make a tool item", () => {
  const model = new ChatModel();
  feed(model, "s1", [{ type: "tool_call_end", call_id: "lost", status: "failed", output: "boom" }]);
  const [tool] = tools(model.transcript("s1").items);
  assert.equal(tool?.callId, "lost");
  assert.equal(tool?.status, "failed");
});

test("parallel calls end in any order and each keeps its own status", () => {
  const model = new ChatModel();
  feed(model, "s1", [
    { type: "tool_call_begin", call_id: "a", tool: "read", kind: "read", title: "Read a", input: {} },
    { type: "tool_call_begin", call_id: "b", tool: "read", kind: "read", title: "Read b", input: {} },
    { type: "tool_call_end", call_id: "b", status: "completed", output: "B" },
    { type: "tool_call_end", call_id: "a", status: "failed", output: "no such file" },
  ]);
  const statuses = tools(model.transcript("s1").items).map((tool) => [tool.callId, tool.status]);
  assert.deepEqual(statuses, [
    ["a", "failed"],
    ["b", "completed"],
  ]);
});

test("the plan is replaced within a turn and starts anew in the next", () => {
  const model = new ChatModel();
  model.beginPrompt("s1", "do it");
  feed(model, "s1", [
    { type: "plan", entries: [{ content: "step 1", status: "in_progress", priority: "high" }] },
    { type: "message_delta", text: "working" },
    { type: "plan", entries: [{ content: "step 1", status: "completed", priority: "high" }] },
  ]);
  let plans = model.transcript("s1").items.filter((item) => item.kind === "plan");
  assert.equal(plans.length, 1);
  assert.deepEqual(plans[0], { kind: "plan", entries: [{ content: "step 1", status: "completed", priority: "high" }] });

  feed(model, "s1", [{ type: "turn_complete", stop_reason: "end_turn" }]);
  model.beginPrompt("s1", "more");
  feed(model, "s1", [{ type: "plan", entries: [] }]);
  plans = model.transcript("s1").items.filter((item) => item.kind === "plan");
  assert.equal(plans.length, 2);
});

test("session details, usage cost, undo and errors are recorded", () => {
  const model = new ChatModel();
  feed(model, "s1", [
    { type: "session_configured", session_id: "s1", model: "fake/model", mode: "default", cwd: "/w", tools: [] },
    { type: "usage", model: "fake/model", request: {}, total: { cost_usd: 0.0125 } },
    { type: "mode_changed", mode: "plan" },
    { type: "undone", turn: 2, restored: ["a.txt"], deleted: ["new.txt"], failed: [] },
    { type: "undone", turn: null, restored: [], deleted: [], failed: [] },
    { type: "error", kind: "auth", message: "bad key" },
    { type: "notice", message: "heads up" },
    { type: "some_future_event", payload: 1 },
  ]);
  const transcript = model.transcript("s1");
  assert.equal(transcript.model, "fake/model");
  assert.equal(transcript.mode, "plan");
  assert.equal(transcript.cwd, "/w");
  assert.equal(transcript.costUsd, 0.0125);
  assert.deepEqual(
    transcript.items.map((item) => (item.kind === "info" ? [item.tone, item.text] : item.kind)),
    [
      ["status", "Mode: plan"],
      ["status", "Undid turn 2; restored a.txt; deleted new.txt"],
      ["notice", "Nothing left to undo."],
      ["error", "Error (auth): bad key"],
      ["notice", "heads up"],
    ],
  );
});

test("a session that starts a turn elsewhere becomes the shown one; others stay apart", () => {
  const model = new ChatModel();
  let changes = 0;
  model.onDidChange(() => {
    changes += 1;
  });
  assert.equal(model.currentSession, undefined);
  assert.equal(model.current.sessionId, "");
  model.switchTo("s1");
  model.beginPrompt("s1", "first");
  feed(model, "s2", [{ type: "message_delta", text: "background" }]);
  assert.equal(model.currentSession, "s1", "a plain delta does not steal the view");
  feed(model, "s2", [{ type: "turn_started", turn: 1 }]);
  assert.equal(model.currentSession, "s2");
  assert.deepEqual(
    model.transcript("s1").items.map((item) => item.kind),
    ["user"],
  );
  assert.equal(changes, 4);
});

test("a failed prompt ends streaming and shows the error", () => {
  const model = new ChatModel();
  model.switchTo("s1");
  model.beginPrompt("s1", "go");
  feed(model, "s1", [{ type: "message_delta", text: "partial" }]);
  model.endPrompt("s1", { error: "provider unavailable" });
  assert.deepEqual(model.current.items.slice(1), [
    { kind: "assistant", text: "partial", streaming: false },
    { kind: "info", tone: "error", text: "provider unavailable" },
  ]);
  assert.equal(isBusy(model.current), false);
});

test("a server that stops ends the running turns it left behind", () => {
  const model = new ChatModel();
  feed(model, "s1", [
    { type: "turn_started", turn: 1 },
    { type: "message_delta", text: "half" },
  ]);
  feed(model, "s2", [
    { type: "turn_started", turn: 1 },
    { type: "turn_complete", stop_reason: "end_turn" },
  ]);
  model.serverStopped();
  const running = model.transcript("s1");
  assert.equal(isBusy(running), false);
  assert.deepEqual(running.items, [
    { kind: "assistant", text: "half", streaming: false },
    { kind: "info", tone: "error", text: "Larik's server stopped during this turn." },
  ]);
  assert.deepEqual(
    model.transcript("s2").items.map((item) => item.kind),
    ["turnEnd"],
  );
});
