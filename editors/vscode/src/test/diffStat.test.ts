// Unit tests of the line counts behind the chat view's diff summaries.

import assert from "node:assert/strict";
import { test } from "node:test";
import { countLineChanges, splitLines } from "../core/diffStat";

test("lines split on any newline and a trailing newline adds no line", () => {
  assert.deepEqual(splitLines(""), []);
  assert.deepEqual(splitLines("a\nb\n"), ["a", "b"]);
  assert.deepEqual(splitLines("a\r\nb"), ["a", "b"]);
  assert.deepEqual(splitLines("a\n\n"), ["a", ""]);
});

test("counts match a real line diff", () => {
  assert.deepEqual(countLineChanges("", "a\nb\n"), { added: 2, removed: 0 });
  assert.deepEqual(countLineChanges("a\nb\n", ""), { added: 0, removed: 2 });
  assert.deepEqual(countLineChanges("a\nb\nc\n", "a\nb\nc\n"), { added: 0, removed: 0 });
  assert.deepEqual(countLineChanges("a\nb\nc\n", "a\nX\nc\n"), { added: 1, removed: 1 });
  // Two small edits far apart are two lines each, not the whole middle.
  const old = Array.from({ length: 50 }, (_, index) => `line ${index}`);
  const changed = [...old];
  changed[3] = "changed 3";
  changed[45] = "changed 45";
  changed.splice(20, 0, "inserted");
  assert.deepEqual(countLineChanges(old.join("\n"), changed.join("\n")), { added: 3, removed: 2 });
});

test("huge rewrites fall back to counting the changed middle", () => {
  const old = Array.from({ length: 3000 }, (_, index) => `old ${index}`).join("\n");
  const fresh = Array.from({ length: 2500 }, (_, index) => `new ${index}`).join("\n");
  assert.deepEqual(countLineChanges(`same\n${old}\nend`, `same\n${fresh}\nend`), { added: 2500, removed: 3000 });
});
