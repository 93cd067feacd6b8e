// Checks that hold the extension together without running VS Code: package.json declares
// exactly the commands the code registers (and none that the language client registers for
// the server), the files it points at exist, versions are pinned, and nothing under core/
// loads `vscode` (so the rest of these tests can run under plain Node at all).

import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { CHAT_VIEW_ID, Command } from "../core/commands";
import { ServerCommand } from "../core/protocol";

/** The extension's folder: this file runs as out/test/manifest.test.js. */
const root = join(__dirname, "..", "..");

interface Manifest {
  main: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  contributes: {
    commands: Array<{ command: string; title: string; category: string }>;
    viewsContainers: { activitybar: Array<{ id: string; icon: string }> };
    views: Record<string, Array<{ id: string; type: string }>>;
    configuration: { properties: Record<string, { default: unknown }> };
  };
}

const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Manifest;

test("package.json contributes exactly the commands the extension registers", () => {
  const declared = manifest.contributes.commands.map((entry) => entry.command).sort();
  assert.deepEqual(declared, Object.values(Command).sort());
  const compiled = readFileSync(join(root, "out", "extension.js"), "utf8");
  for (const key of Object.keys(Command)) {
    assert.match(compiled, new RegExp(`registerCommand\\(commands_1\\.Command\\.${key},`), `${key} is registered`);
  }
  for (const entry of manifest.contributes.commands) {
    assert.equal(entry.category, "Larik");
  }
});

test("no command clashes with the server's commands, which the client registers itself", () => {
  const ours = new Set<string>(Object.values(Command));
  for (const serverCommand of Object.values(ServerCommand)) {
    assert.ok(!ours.has(serverCommand), `${serverCommand} is the server's`);
  }
});

test("the chat view, its container icon, its media and the entry point exist", () => {
  const views = Object.values(manifest.contributes.views).flat();
  assert.ok(views.some((view) => view.id === CHAT_VIEW_ID && view.type === "webview"));
  for (const container of manifest.contributes.viewsContainers.activitybar) {
    assert.ok(existsSync(join(root, container.icon)), container.icon);
  }
  for (const file of ["media/chat.js", "media/chat.css", manifest.main]) {
    assert.ok(existsSync(join(root, file)), file);
  }
  assert.equal(manifest.contributes.configuration.properties["larik.path"]?.default, "larik");
});

test("every npm package is pinned to an exact version that the lock file holds", () => {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string }>;
  };
  for (const [name, version] of Object.entries({ ...manifest.dependencies, ...manifest.devDependencies })) {
    assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is pinned`);
    assert.equal(lock.packages[`node_modules/${name}`]?.version, version, `${name} is locked at ${version}`);
  }
});

test("nothing under core/ loads vscode or the language client", () => {
  const core = join(root, "out", "core");
  const files = readdirSync(core).filter((file) => file.endsWith(".js"));
  assert.ok(files.length >= 5, "core modules were compiled");
  for (const file of files) {
    const text = readFileSync(join(core, file), "utf8");
    assert.doesNotMatch(text, /require\("vscode(-languageclient)?(\/[^"]*)?"\)/, file);
  }
});
