// Builds what the extension sends to `larik lsp` from editor state: `larik/prompt` params
// with the active document and selection, the arguments of the server's `larik.prompt`
// command (code actions) bound to the chat's session, and the client capabilities the
// contract asks for. Plain data in, plain data out: no `vscode` here.

import { type JsonObject, type PromptParams, type Range, isObject, stringField } from "./protocol";

/** The part of the active editor a prompt refers to. */
export interface EditorContext {
  /** The document's URI as a string (`file:///…`, `untitled:…`). */
  uri: string;
  /** The selection; an empty one (start equals end) sends no range. */
  selection: Range;
}

/** Options of `buildPromptParams`. */
export interface PromptOptions {
  sessionId?: string | undefined;
  editor?: EditorContext | undefined;
  workDoneToken?: string | undefined;
}

/** Whether a range selects nothing. */
export function isEmptyRange(range: Range): boolean {
  return range.start.line === range.end.line && range.start.character === range.end.character;
}

/** `larik/prompt` params for `text`. The editor's document goes along as `textDocument`,
 * and a non-empty selection as `range`, so the server adds that code as context. */
export function buildPromptParams(text: string, options: PromptOptions = {}): PromptParams {
  const params: PromptParams = { prompt: text };
  if (options.sessionId !== undefined) {
    params.sessionId = options.sessionId;
  }
  if (options.editor !== undefined) {
    params.textDocument = { uri: options.editor.uri };
    if (!isEmptyRange(options.editor.selection)) {
      params.range = options.editor.selection;
    }
  }
  if (options.workDoneToken !== undefined) {
    params.workDoneToken = options.workDoneToken;
  }
  return params;
}

/** The arguments of a `larik.prompt` command (from a code action) with `sessionId` filled in
 * where they name none, so the prompt runs in the chat's session rather than a new one. */
export function withSessionArgs(args: readonly unknown[], sessionId: string): unknown[] {
  const [first, ...rest] = args;
  if (typeof first === "string") {
    return [{ sessionId, prompt: first }, ...rest];
  }
  if (isObject(first) && first["sessionId"] === undefined) {
    return [{ ...first, sessionId }, ...rest];
  }
  return [...args];
}

/** The arguments of a `larik.prompt` command with the prompt text set to `text` (for a code
 * action that leaves the question to the user). */
export function withPromptText(args: readonly unknown[], text: string): unknown[] {
  const [first, ...rest] = args;
  return [{ ...(isObject(first) ? first : {}), prompt: text }, ...rest];
}

/** The session a `larik.prompt` command's arguments name, if any. */
export function sessionOfArgs(args: readonly unknown[]): string | undefined {
  const first = args[0];
  return isObject(first) ? stringField(first, "sessionId") : undefined;
}

/** The text of a prompt (the `prompt` of params, or a string), for the transcript. */
export function promptText(params: unknown): string {
  if (typeof params === "string") {
    return params;
  }
  if (!isObject(params)) {
    return "";
  }
  const prompt = params["prompt"];
  if (typeof prompt === "string") {
    return prompt;
  }
  if (Array.isArray(prompt)) {
    return prompt
      .map((block: unknown) => {
        if (!isObject(block)) {
          return "";
        }
        return block["type"] === "text" ? (stringField(block, "text") ?? "") : "[image]";
      })
      .filter((text) => text !== "")
      .join("\n");
  }
  return "";
}

/** Declares `experimental.larik.permissions` in the client capabilities, keeping whatever
 * else `experimental` holds: the server then asks permission with `larik/requestPermission`. */
export function addLarikCapabilities(capabilities: { experimental?: unknown }): void {
  const experimental: JsonObject = isObject(capabilities.experimental) ? capabilities.experimental : {};
  const larik: JsonObject = isObject(experimental["larik"]) ? experimental["larik"] : {};
  larik["permissions"] = true;
  experimental["larik"] = larik;
  capabilities.experimental = experimental;
}
