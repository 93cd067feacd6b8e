// Unit tests of what the extension sends: prompt params from editor state, code-action
// command arguments bound to the chat's session, and the client capabilities.

import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEventParams } from "../core/protocol";
import {
  addLarikCapabilities,
  buildPromptParams,
  promptText,
  sessionOfArgs,
  withPromptText,
  withSessionArgs,
} from "../core/requests";

const selection = { start: { line: 3, character: 2 }, end: { line: 7, character: 0 } };
const caret = { start: { line: 5, character: 4 }, end: { line: 5, character: 4 } };

test("a prompt carries the document and a non-empty selection as its range", () => {
  assert.deepEqual(
    buildPromptParams("explain", {
      sessionId: "s1",
      editor: { uri: "file:///w/src/a.rs", selection },
      workDoneToken: "t1",
    }),
    {
      sessionId: "s1",
      prompt: "explain",
      textDocument: { uri: "file:///w/src/a.rs" },
      range: selection,
      workDoneToken: "t1",
    },
  );
});

test("an empty selection sends the document without a range; no editor sends neither", () => {
  assert.deepEqual(buildPromptParams("what is this", { editor: { uri: "untitled:Untitled-1", selection: caret } }), {
    prompt: "what is this",
    textDocument: { uri: "untitled:Untitled-1" },
  });
  assert.deepEqual(buildPromptParams("/undo", { sessionId: "s1" }), { sessionId: "s1", prompt: "/undo" });
  assert.deepEqual(buildPromptParams("hi"), { prompt: "hi" });
});

test("code-action arguments are bound to the chat's session unless they name one", () => {
  const fromAction = { prompt: "Fix: unused variable", textDocument: { uri: "file:///w/a.ts" }, range: selection };
  assert.deepEqual(withSessionArgs([fromAction], "s1"), [{ ...fromAction, sessionId: "s1" }]);
  assert.deepEqual(withSessionArgs(["just text"], "s1"), [{ sessionId: "s1", prompt: "just text" }]);
  assert.deepEqual(withSessionArgs([{ ...fromAction, sessionId: "other" }], "s1"), [
    { ...fromAction, sessionId: "other" },
  ]);
  assert.equal(sessionOfArgs([{ sessionId: "other" }]), "other");
  assert.equal(sessionOfArgs(["text"]), undefined);
  assert.deepEqual(withPromptText([{ textDocument: { uri: "file:///a" } }], "why?"), [
    { textDocument: { uri: "file:///a" }, prompt: "why?" },
  ]);
  assert.deepEqual(withPromptText([], "why?"), [{ prompt: "why?" }]);
});

test("prompt text is read from strings, params and content blocks", () => {
  assert.equal(promptText("plain"), "plain");
  assert.equal(promptText({ prompt: "from params" }), "from params");
  assert.equal(
    promptText({
      prompt: [
        { type: "text", text: "look" },
        { type: "image", mediaType: "image/png", data: "AAAA" },
      ],
    }),
    "look\n[image]",
  );
  assert.equal(promptText({}), "");
  assert.equal(promptText(42), "");
});

test("the permissions capability is added next to other experimental ones", () => {
  const capabilities: { experimental?: unknown } = { experimental: { other: { x: 1 }, larik: { y: 2 } } };
  addLarikCapabilities(capabilities);
  assert.deepEqual(capabilities.experimental, { other: { x: 1 }, larik: { y: 2, permissions: true } });
  const bare: { experimental?: unknown } = {};
  addLarikCapabilities(bare);
  assert.deepEqual(bare, { experimental: { larik: { permissions: true } } });
});

test("larik/event params are validated", () => {
  assert.deepEqual(parseEventParams({ sessionId: "s1", event: { type: "message_delta", text: "x" } }), {
    sessionId: "s1",
    event: { type: "message_delta", text: "x" },
  });
  assert.equal(parseEventParams({ sessionId: "s1", event: { text: "no type" } }), undefined);
  assert.equal(parseEventParams({ event: { type: "notice" } }), undefined);
  assert.equal(parseEventParams([]), undefined);
});
