// Unit tests of permission questions: `larik/requestPermission` params in, quick-pick items
// and the answer out.

import assert from "node:assert/strict";
import { test } from "node:test";
import { inputPreview, permissionAnswer, permissionPickItems, permissionPrompt } from "../core/permission";
import { parsePermissionParams } from "../core/protocol";

/** The request exactly as docs/lsp.md shows it. */
const request = {
  sessionId: "s1",
  toolCall: { callId: "c1", tool: "bash", title: "Run npm test", input: { command: "npm test\n  --silent" } },
  options: [
    { optionId: "allow_once", name: "Allow", kind: "allow_once" },
    { optionId: "allow_always", name: "Always allow Bash(npm test:*)", kind: "allow_always" },
    { optionId: "reject_once", name: "Deny", kind: "reject_once" },
  ],
};

test("the contract's request becomes a quick pick in the server's order", () => {
  const params = parsePermissionParams(request);
  assert.ok(params);
  const items = permissionPickItems(params);
  assert.deepEqual(
    items.map((item) => [item.label, item.optionId]),
    [
      ["$(check) Allow", "allow_once"],
      ["$(check-all) Always allow Bash(npm test:*)", "allow_always"],
      ["$(close) Deny", "reject_once"],
    ],
  );
  assert.deepEqual(permissionPrompt(params), {
    title: "Larik wants to run bash: Run npm test",
    placeholder: "npm test --silent",
  });
});

test("the answer is the picked option id, or cancelled when dismissed", () => {
  const params = parsePermissionParams(request);
  assert.ok(params);
  const [allow, always, deny] = permissionPickItems(params);
  assert.deepEqual(permissionAnswer(allow), { optionId: "allow_once" });
  assert.deepEqual(permissionAnswer(always), { optionId: "allow_always" });
  assert.deepEqual(permissionAnswer(deny), { optionId: "reject_once" });
  assert.deepEqual(permissionAnswer(undefined), { cancelled: true });
});

test("malformed requests are refused and bad options dropped", () => {
  assert.equal(parsePermissionParams(null), undefined);
  assert.equal(parsePermissionParams({ sessionId: "s1", toolCall: {}, options: [] }), undefined);
  assert.equal(parsePermissionParams({ toolCall: {}, options: request.options }), undefined);
  assert.equal(parsePermissionParams({ sessionId: "s1", toolCall: "bash", options: request.options }), undefined);
  const params = parsePermissionParams({
    sessionId: "s1",
    toolCall: { tool: "write" },
    options: [{ optionId: "x" }, 7, { optionId: "allow_once", name: "Allow" }],
  });
  assert.deepEqual(params, {
    sessionId: "s1",
    toolCall: { callId: "", tool: "write", title: "write", input: undefined },
    options: [{ optionId: "allow_once", name: "Allow", kind: "" }],
  });
});

test("input previews pick the telling field and stay short", () => {
  assert.equal(inputPreview({ file_path: "/w/a.rs", content: "…" }), "/w/a.rs");
  assert.equal(inputPreview({ url: "https://example.invalid/x" }), "https://example.invalid/x");
  assert.equal(inputPreview({ a: 1 }), '{"a":1}');
  assert.equal(inputPreview(undefined), "");
  const long = inputPreview({ command: "x".repeat(500) });
  assert.equal(long.length, 200);
  assert.ok(long.endsWith("…"));
});
