#!/usr/bin/env node
// Drives an ACP agent through the official TypeScript SDK (@agentclientprotocol/sdk) as an
// editor would, following a JSON scenario, and prints every exchange as one JSON line on
// stdout. The scenario language is described in ../README.md; py/driver.py speaks the same one.
//
// Usage: node tests/acp/ts/driver.mjs SCENARIO.json

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { Readable, Writable } from "node:stream";
import { format } from "node:util";
import * as acp from "@agentclientprotocol/sdk";

const DEFAULT_TIMEOUT_MS = 60000;
const EXIT_GRACE_MS = 10000;
const OPTION_KINDS = new Set(["allow_once", "allow_always", "reject_once", "reject_always"]);

// Written synchronously so nothing is lost when the driver exits right after.
function emit(event) {
  writeFileSync(1, JSON.stringify(event) + "\n");
}

class DriverFailure extends Error {}

function fail(message) {
  throw new DriverFailure(message);
}

// The SDK reports messages it drops (e.g. a notification that fails schema validation) with
// console.error; surface them in the event log so tests can see them.
console.error = (...args) => emit({ event: "sdk_error", message: format(...args) });

/** Counts what the agent sent, and wakes the scenario steps waiting on those counts. */
class Inbox {
  constructor() {
    this.counts = new Map();
    this.waiters = new Set();
    this.closedReason = null;
  }

  record(key) {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    for (const waiter of [...this.waiters]) {
      if ((this.counts.get(waiter.key) ?? 0) >= waiter.count) {
        this.waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  waitFor(key, count, timeoutMs) {
    if ((this.counts.get(key) ?? 0) >= count) return Promise.resolve();
    if (this.closedReason) return Promise.reject(new DriverFailure(this.closedReason));
    return new Promise((resolve, reject) => {
      const waiter = { key, count, resolve, reject };
      this.waiters.add(waiter);
      waiter.timer = setTimeout(() => {
        this.waiters.delete(waiter);
        const have = this.counts.get(key) ?? 0;
        reject(new DriverFailure(`timed out after ${timeoutMs} ms waiting for ${count} x ${key} (got ${have})`));
      }, timeoutMs);
      const done = waiter.resolve;
      waiter.resolve = () => {
        clearTimeout(waiter.timer);
        done();
      };
    });
  }

  close(reason) {
    this.closedReason = reason;
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new DriverFailure(reason));
    }
    this.waiters.clear();
  }
}

// The SDK answers lines it cannot take as a JSON-RPC message (not JSON, a batch) on its own,
// with an error whose id is null, and tells nobody else: log those answers.
function toAgent(stdin) {
  const decoder = new TextDecoder();
  const writer = stdin.getWriter();
  return new WritableStream({
    write(chunk) {
      const text = decoder.decode(chunk);
      if (text.includes('"id":null')) {
        for (const line of text.split("\n").filter(Boolean)) {
          let message = null;
          try {
            message = JSON.parse(line);
          } catch {
            // Not ours to judge; the agent gets the bytes unchanged either way.
          }
          if (message?.id === null && message.error) {
            emit({ event: "sdk_error", message: `answered the agent with ${line}` });
          }
        }
      }
      return writer.write(chunk);
    },
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason),
  });
}

function withTimeout(promise, timeoutMs, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new DriverFailure(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Returns `content` from 1-based `line` on, at most `limit` lines, keeping line endings. */
function sliceLines(content, line, limit) {
  if (line == null && limit == null) return content;
  const lines = content.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const start = Math.max(1, line ?? 1) - 1;
  const end = limit == null ? lines.length : start + Math.max(0, limit);
  return lines.slice(start, end).join("");
}

function errorObject(error) {
  const out = { code: error.code, message: error.message };
  if (error.data !== undefined) out.data = error.data;
  return out;
}

async function main() {
  const scenarioPath = process.argv[2];
  if (!scenarioPath) fail("usage: driver.mjs SCENARIO.json");
  const scenario = JSON.parse(readFileSync(scenarioPath, "utf8"));
  const [command, ...args] = scenario.agent ?? fail("scenario.agent (argv) is required");
  const cwd = scenario.cwd ?? process.cwd();
  const timeoutMs = scenario.timeout_ms ?? DEFAULT_TIMEOUT_MS;
  const buffers = new Map(Object.entries(scenario.buffers ?? {}));
  const permissions = [...(scenario.permissions ?? [])];
  const elicitations = [...(scenario.elicitations ?? [])];
  const inbox = new Inbox();
  const held = new Map(); // sessionId -> resolvers of permission requests on "hold"
  let session = null;
  let done = false;

  const child = (agentProcess = spawn(command, args, {
    cwd,
    env: { ...process.env, ...(scenario.env ?? {}) },
    stdio: ["pipe", "pipe", "inherit"],
  }));
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
  let exitInfo = null;
  exited.then((info) => {
    exitInfo = info;
    if (!done) inbox.close(`agent exited early (code ${info.code}, signal ${info.signal})`);
  });
  const spawned = new Promise((resolve, reject) => {
    child.on("spawn", resolve);
    child.on("error", (error) => reject(new DriverFailure(`cannot start agent ${command}: ${error.message}`)));
  });
  await spawned;
  child.stdin.on("error", () => {}); // an agent that dies early is reported through `exited`

  // Taps on both directions: remember which request each id was, and log our answers
  // exactly as they go on the wire (including errors the SDK produces by itself).
  const incomingRequests = new Map();
  const raw = acp.ndJsonStream(toAgent(Writable.toWeb(child.stdin)), Readable.toWeb(child.stdout));
  const readable = raw.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        if (typeof message.method === "string" && message.id !== undefined) {
          incomingRequests.set(message.id, message.method);
        }
        controller.enqueue(message);
      },
    }),
  );
  const rawWriter = raw.writable.getWriter();
  const writable = new WritableStream({
    async write(message) {
      if (message.method === undefined && incomingRequests.has(message.id)) {
        const method = incomingRequests.get(message.id);
        incomingRequests.delete(message.id);
        const event = { event: "answered", method };
        if ("error" in message) event.error = message.error;
        else event.result = message.result;
        emit(event);
      }
      await rawWriter.write(message);
    },
    close: () => rawWriter.close(),
    abort: (reason) => rawWriter.abort(reason),
  });

  function received(kind, method, params) {
    emit({ event: kind, method, params });
    inbox.record(`method:${method}`);
    if (method === "session/update" && params?.update?.sessionUpdate) {
      inbox.record(`update:${params.update.sessionUpdate}`);
    }
  }

  async function answerPermission(params) {
    const entry = permissions.length > 0 ? permissions.shift() : "reject_once";
    if (OPTION_KINDS.has(entry)) {
      const option = params.options.find((candidate) => candidate.kind === entry);
      if (option) return { outcome: { outcome: "selected", optionId: option.optionId } };
      emit({
        event: "error",
        method: "session/request_permission",
        error: { message: `no offered option has kind ${entry}` },
      });
      return { outcome: { outcome: "cancelled" } };
    }
    if (entry === "hold") {
      // ACP: once the client cancels the turn it must answer pending permission requests
      // with `cancelled`, so a held request is released by our own session/cancel.
      await new Promise((resolve) => {
        const list = held.get(params.sessionId) ?? [];
        list.push(resolve);
        held.set(params.sessionId, list);
      });
      return { outcome: { outcome: "cancelled" } };
    }
    if (entry !== "cancelled") {
      emit({ event: "error", method: "session/request_permission", error: { message: `unknown permission entry ${entry}` } });
    }
    return { outcome: { outcome: "cancelled" } };
  }

  const app = acp
    .client({ name: "larik-acp-test-ts" })
    .onNotification("session/update", ({ params }) => received("notification", "session/update", params))
    .onRequest("session/request_permission", async ({ params }) => {
      received("request", "session/request_permission", params);
      return answerPermission(params);
    })
    .onRequest("fs/read_text_file", async ({ params }) => {
      received("request", "fs/read_text_file", params);
      let content = buffers.get(params.path);
      if (content === undefined) {
        try {
          content = await readFile(params.path, "utf8");
        } catch (error) {
          if (error.code === "ENOENT") throw acp.RequestError.resourceNotFound(params.path);
          throw acp.RequestError.internalError({ details: error.message });
        }
      }
      return { content: sliceLines(content, params.line, params.limit) };
    })
    .onRequest("fs/write_text_file", async ({ params }) => {
      received("request", "fs/write_text_file", params);
      buffers.set(params.path, params.content);
      try {
        await writeFile(params.path, params.content, "utf8");
      } catch (error) {
        throw acp.RequestError.internalError({ details: error.message });
      }
      return {};
    })
    .onRequest("elicitation/create", async ({ params }) => {
      received("request", "elicitation/create", params);
      return elicitations.length > 0 ? elicitations.shift() : { action: "cancel" };
    })
    // Anything else the agent sends (terminal/*, extensions) is logged, then refused.
    .onRequest("*", ({ method, params }) => {
      received("request", method, params);
      throw acp.RequestError.methodNotFound(method);
    })
    .onNotification("*", ({ method, params }) => received("notification", method, params));

  const connection = app.connect({ readable, writable });
  connection.signal.addEventListener("abort", () => {
    if (!done) inbox.close("the agent closed the connection");
  });
  const agent = connection.agent;

  function substitute(value) {
    if (typeof value === "string") {
      // Function replacements, so a `$` inside the values is taken literally.
      return value.replaceAll("$session", () => session ?? "$session").replaceAll("$cwd", () => cwd);
    }
    if (Array.isArray(value)) return value.map(substitute);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v)]));
    }
    return value;
  }

  function withDefaults(method, params) {
    const out = { ...params };
    if (method === "initialize") {
      out.protocolVersion ??= acp.PROTOCOL_VERSION;
      out.clientCapabilities ??= scenario.client_capabilities ?? {};
      out.clientInfo ??= { name: "larik-acp-test-ts", version: "0" };
    }
    if (method === "session/new" || method === "session/load") out.mcpServers ??= [];
    return out;
  }

  // Sends one request; resolves once its outcome is logged. Only driver failures reject.
  function sendRequest(name, method, params) {
    if ((method === "session/load" || method === "session/resume") && params.sessionId) {
      session = params.sessionId;
    }
    // One call for every method: built-in method names get the SDK's typed handling.
    return agent.request(method, params).then(
      (result) => {
        if (method === "session/new" && result?.sessionId) session = result.sessionId;
        emit({ event: "response", name, method, result: result ?? null });
      },
      (error) => {
        if (error instanceof acp.RequestError) {
          emit({ event: "error", name, method, error: errorObject(error) });
          return;
        }
        throw new DriverFailure(`${method} failed: ${error?.message ?? error}`);
      },
    );
  }

  const background = new Map();
  for (const [index, step] of (scenario.steps ?? []).entries()) {
    const name = step.name ?? `step${index}`;
    if (step.request !== undefined) {
      const params = substitute(withDefaults(step.request, step.params ?? {}));
      const pending = sendRequest(name, step.request, params);
      if (step.background) {
        const entry = { pending, failure: null };
        pending.catch((error) => {
          entry.failure = error; // reported when awaited, or at the end
        });
        background.set(name, entry);
      } else {
        await withTimeout(pending, timeoutMs, `the response to ${step.request} (${name})`);
      }
    } else if (step.notify !== undefined) {
      const params = substitute(step.params ?? {});
      await agent.notify(step.notify, params).catch((error) => {
        throw new DriverFailure(`cannot send ${step.notify}: ${error?.message ?? error}`);
      });
      if (step.notify === "session/cancel") {
        for (const release of held.get(params.sessionId) ?? []) release();
        held.delete(params.sessionId);
      }
    } else if (step.write !== undefined) {
      // The user edits a file between two prompts.
      await writeFile(substitute(step.write.path), step.write.text, "utf8");
    } else if (step.wait_for !== undefined) {
      const { method, update } = step.wait_for;
      const key = method !== undefined ? `method:${method}` : `update:${update}`;
      await inbox.waitFor(key, step.count ?? 1, timeoutMs);
    } else if (step.await !== undefined) {
      const entry = background.get(step.await) ?? fail(`no background request named ${step.await}`);
      await withTimeout(entry.pending, timeoutMs, `the response to background request ${step.await}`);
      background.delete(step.await);
    } else {
      fail(`unknown step: ${JSON.stringify(step)}`);
    }
  }

  // A background request nobody awaited still fails the run if the SDK raised on it.
  await Promise.resolve();
  for (const [name, entry] of background) {
    if (entry.failure) throw new DriverFailure(`background request ${name}: ${entry.failure.message}`);
  }
  done = true;
  emit({ event: "done" });
  child.stdin.end();
  const killTimer = setTimeout(() => child.kill("SIGKILL"), EXIT_GRACE_MS);
  const { code, signal } = exitInfo ?? (await exited);
  clearTimeout(killTimer);
  connection.close();
  const exitEvent = { event: "exit", code };
  if (signal) exitEvent.signal = signal;
  emit(exitEvent);
}

let agentProcess = null;
main().then(
  () => process.exit(0),
  async (error) => {
    let message = error instanceof DriverFailure ? error.message : error?.stack ?? error;
    if (agentProcess?.pid !== undefined) {
      // An agent that closed the connection is usually exiting: say how, it explains the failure.
      const exit = await exitWithin(agentProcess, 1000);
      if (exit) message += ` [agent exit code ${exit.code}${exit.signal ? `, signal ${exit.signal}` : ""}]`;
      agentProcess.kill("SIGKILL");
    }
    process.stderr.write(`acp ts driver: ${message}\n`);
    process.exit(1);
  },
);

function exitWithin(child, timeoutMs) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}
