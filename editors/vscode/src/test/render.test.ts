// Unit tests of the chat webview's messages: transcript HTML (escaped), the status line,
// and validation of what the webview sends back.

import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatModel } from "../core/chatModel";
import { diffSummaryText, escapeHtml, parseViewMessage, renderTranscript, viewState } from "../core/render";

test("text from the agent and the user is escaped", () => {
  const model = new ChatModel();
  model.switchTo("s1");
  model.beginPrompt("s1", "<img src=x onerror=alert(1)>");
  model.applyEvent("s1", { type: "message_complete", text: "use <script>alert('x')</script> & \"quotes\"" });
  model.applyEvent("s1", {
    type: "tool_call_begin",
    call_id: "c1",
    tool: "bash",
    kind: "execute",
    title: "echo <b>",
    input: {},
  });
  model.applyEvent("s1", { type: "tool_call_end", call_id: "c1", status: "completed", output: "</pre><script>" });
  const html = renderTranscript(model.current);
  assert.doesNotMatch(html, /<img|<script|<b>|<\/pre><script/);
  assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
  assert.match(html, /use &lt;script&gt;alert\(&#39;x&#39;\)&lt;\/script&gt; &amp; &quot;quotes&quot;/);
  assert.match(html, /echo &lt;b&gt;/);
  assert.equal(escapeHtml(`<>&"'`), "&lt;&gt;&amp;&quot;&#39;");
});

test("tool calls show status, diff summaries and cut output", () => {
  const model = new ChatModel();
  model.applyEvent("s1", { type: "tool_call_begin", call_id: "c1", tool: "write", kind: "edit", title: "Write new.txt", input: {} });
  model.applyEvent("s1", { type: "diff", call_id: "c1", change: { path: "new.txt", old_text: "", new_text: "x\ny\n" }, applied: false });
  model.applyEvent("s1", { type: "permission_request", request_id: "r", call_id: "c1", tool: "write", title: "Write new.txt", input: {}, options: [] });
  let html = renderTranscript(model.transcript("s1"));
  assert.match(html, /status-awaiting_permission/);
  assert.match(html, /needs permission/);
  assert.match(html, /new\.txt new file, \+2 \(proposed\)/);

  model.applyEvent("s1", { type: "tool_call_end", call_id: "c1", status: "completed", output: "x".repeat(5000) });
  html = renderTranscript(model.transcript("s1"));
  assert.match(html, /status-completed/);
  assert.match(html, /x{4000}\n…<\/pre>/);
  assert.doesNotMatch(html, /x{4001}/);
});

test("diff summaries read as path and counts", () => {
  assert.equal(
    diffSummaryText({ path: "src/a.rs", added: 3, removed: 1, created: false, applied: true }),
    "src/a.rs +3 −1",
  );
  assert.equal(
    diffSummaryText({ path: "b.txt", added: 2, removed: 0, created: true, applied: false }),
    "b.txt new file, +2 (proposed)",
  );
});

test("the view state carries session, status and busy", () => {
  const model = new ChatModel();
  assert.deepEqual(viewState(model.current).status, "No session yet");
  model.switchTo("s1");
  model.applyEvent("s1", { type: "session_configured", model: "fake/m", mode: "default" });
  model.applyEvent("s1", { type: "usage", total: { cost_usd: 0.5 } });
  model.applyEvent("s1", { type: "turn_started", turn: 1 });
  const state = viewState(model.current);
  assert.equal(state.sessionId, "s1");
  assert.equal(state.busy, true);
  assert.equal(state.status, "mode default · fake/m · $0.5000 · working…");
  model.applyEvent("s1", { type: "turn_complete", stop_reason: "cancelled" });
  const done = viewState(model.current);
  assert.equal(done.busy, false);
  assert.match(done.html, /Cancelled\./);
  // A request to a model without a known price makes the cost unknown.
  model.applyEvent("s1", { type: "usage", total: { cost_usd: 0.5, unpriced_requests: 1 } });
  assert.equal(viewState(model.current).status, "mode default · fake/m · cost unknown");
});

test("only well-formed webview messages are accepted", () => {
  assert.deepEqual(parseViewMessage({ type: "prompt", text: "  fix it  " }), { type: "prompt", text: "fix it" });
  assert.equal(parseViewMessage({ type: "prompt", text: "   " }), undefined);
  assert.equal(parseViewMessage({ type: "prompt", text: 3 }), undefined);
  assert.deepEqual(parseViewMessage({ type: "cancel" }), { type: "cancel" });
  assert.deepEqual(parseViewMessage({ type: "newSession" }), { type: "newSession" });
  assert.deepEqual(parseViewMessage({ type: "ready" }), { type: "ready" });
  assert.equal(parseViewMessage({ type: "rm -rf" }), undefined);
  assert.equal(parseViewMessage("prompt"), undefined);
  assert.equal(parseViewMessage(null), undefined);
});
