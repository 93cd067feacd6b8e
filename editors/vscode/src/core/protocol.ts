// The `larik lsp` wire contract (docs/lsp.md) as TypeScript types: method names, request and
// result shapes, and validators for what the server sends us. Nothing here imports `vscode`,
// so the message handling built on it runs under plain Node in the unit tests.

/** The custom methods `larik lsp` serves or sends. */
export const Method = {
  newSession: "larik/newSession",
  prompt: "larik/prompt",
  cancel: "larik/cancel",
  sessions: "larik/sessions",
  setMode: "larik/setMode",
  setModel: "larik/setModel",
  commands: "larik/commands",
  event: "larik/event",
  requestPermission: "larik/requestPermission",
} as const;

/** The server's `workspace/executeCommand` commands; vscode-languageclient registers these
 * names as VS Code commands itself, so the extension's own commands must use other names. */
export const ServerCommand = {
  prompt: "larik.prompt",
  cancel: "larik.cancel",
  newSession: "larik.newSession",
} as const;

/** An LSP position: zero-based line and UTF-16 character offset (VS Code counts the same way). */
export interface Position {
  line: number;
  character: number;
}

/** An LSP range. */
export interface Range {
  start: Position;
  end: Position;
}

/** One block of a structured prompt. */
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; mediaType: string; data: string };

/** Params of `larik/prompt`. */
export interface PromptParams {
  sessionId?: string;
  prompt: string | ContentBlock[];
  textDocument?: { uri: string };
  range?: Range;
  workDoneToken?: string | number;
}

/** Why a turn ended, as `larik/prompt` answers it. */
export type StopReason = "end_turn" | "max_tokens" | "max_turns" | "refusal" | "cancelled";

/** Result of `larik/prompt`. */
export interface PromptResult {
  sessionId: string;
  stopReason: StopReason;
}

/** Params of `larik/newSession`. */
export interface NewSessionParams {
  cwd?: string;
}

/** Result of `larik/newSession`. */
export interface NewSessionResult {
  sessionId: string;
}

/** Params of `larik/cancel`. */
export interface CancelParams {
  sessionId: string;
}

/** The permission modes `larik/setMode` accepts. */
export type Mode = "default" | "acceptEdits" | "plan" | "bypassPermissions";

/** Params of `larik/setMode`. */
export interface SetModeParams {
  sessionId: string;
  mode: Mode;
}

/** An agent event (docs/events.md): always a `type`, other fields by type, read defensively. */
export interface AgentEvent {
  type: string;
  [field: string]: unknown;
}

/** Params of the `larik/event` notification. */
export interface EventParams {
  sessionId: string;
  event: AgentEvent;
}

/** One answer the user may give to a permission question. */
export interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}

/** The tool call a permission question is about. */
export interface PermissionToolCall {
  callId: string;
  tool: string;
  title: string;
  input: unknown;
}

/** Params of the `larik/requestPermission` request. */
export interface RequestPermissionParams {
  sessionId: string;
  toolCall: PermissionToolCall;
  options: PermissionOption[];
}

/** Result of `larik/requestPermission`: the chosen option, or the question dismissed. */
export type RequestPermissionResult = { optionId: string } | { cancelled: true };

/** A plain JSON object, for reading untrusted params field by field. */
export type JsonObject = Record<string, unknown>;

/** Whether `value` is a non-array object. */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `value[key]` if it is a string. */
export function stringField(value: JsonObject, key: string): string | undefined {
  const field = value[key];
  return typeof field === "string" ? field : undefined;
}

/** `value[key]` if it is a finite number. */
export function numberField(value: JsonObject, key: string): number | undefined {
  const field = value[key];
  return typeof field === "number" && Number.isFinite(field) ? field : undefined;
}

/** A slash command a session offers (`larik/commands`). */
export interface SlashCommand {
  name: string;
  description: string;
  /** What the argument is, when it takes one. */
  hint: string | undefined;
}

/** Params of `larik/commands`. */
export interface CommandsParams {
  sessionId?: string;
}

/** Reads a `larik/commands` result; entries without a name are dropped. */
export function parseCommands(raw: unknown): SlashCommand[] {
  if (!isObject(raw) || !Array.isArray(raw["commands"])) {
    return [];
  }
  const commands: SlashCommand[] = [];
  for (const entry of raw["commands"]) {
    if (!isObject(entry)) {
      continue;
    }
    const name = stringField(entry, "name");
    if (name !== undefined && name !== "") {
      commands.push({ name, description: stringField(entry, "description") ?? "", hint: stringField(entry, "hint") });
    }
  }
  return commands;
}

/** Reads `larik/event` params; `undefined` when they do not have the contract's shape. */
export function parseEventParams(raw: unknown): EventParams | undefined {
  if (!isObject(raw)) {
    return undefined;
  }
  const sessionId = stringField(raw, "sessionId");
  const event = raw["event"];
  if (sessionId === undefined || !isObject(event) || typeof event["type"] !== "string") {
    return undefined;
  }
  return { sessionId, event: event as AgentEvent };
}

/** Reads `larik/requestPermission` params; `undefined` when they do not have the contract's
 * shape (options without an id or a name are dropped, and at least one must remain). */
export function parsePermissionParams(raw: unknown): RequestPermissionParams | undefined {
  if (!isObject(raw)) {
    return undefined;
  }
  const sessionId = stringField(raw, "sessionId");
  const toolCall = raw["toolCall"];
  const rawOptions = raw["options"];
  if (sessionId === undefined || !isObject(toolCall) || !Array.isArray(rawOptions)) {
    return undefined;
  }
  const options: PermissionOption[] = [];
  for (const option of rawOptions) {
    if (!isObject(option)) {
      continue;
    }
    const optionId = stringField(option, "optionId");
    const name = stringField(option, "name");
    if (optionId !== undefined && name !== undefined) {
      options.push({ optionId, name, kind: stringField(option, "kind") ?? "" });
    }
  }
  if (options.length === 0) {
    return undefined;
  }
  const tool = stringField(toolCall, "tool") ?? "";
  return {
    sessionId,
    toolCall: {
      callId: stringField(toolCall, "callId") ?? "",
      tool,
      title: stringField(toolCall, "title") ?? tool,
      input: toolCall["input"],
    },
    options,
  };
}
