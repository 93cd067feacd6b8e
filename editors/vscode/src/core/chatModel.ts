// The chat view's state: one transcript per Larik session, built from the `larik/event`
// stream (docs/events.md) and from the prompts the user sends. The view only renders what
// this model holds; the model knows nothing about VS Code, so the unit tests feed it event
// sequences and check the transcript.

import { countLineChanges } from "./diffStat";
import { type AgentEvent, type JsonObject, isObject, numberField, stringField } from "./protocol";

/** Where a tool call stands, as the chat view shows it. */
export type ToolStatus =
  | "pending"
  | "awaiting_permission"
  | "in_progress"
  | "completed"
  | "failed"
  | "denied";

/** One file change of a tool call, summarised. */
export interface DiffSummary {
  path: string;
  added: number;
  removed: number;
  /** Whether the file was created by the change (it had no old text). */
  created: boolean;
  /** `false` while the change is only proposed, `true` once it is done. */
  applied: boolean;
}

/** One entry of the model's task list. */
export interface PlanEntry {
  content: string;
  status: string;
  priority: string;
}

/** Tone of an informational line. */
export type InfoTone = "status" | "notice" | "error";

/** One entry of a transcript. */
export type ChatItem =
  | { kind: "user"; text: string }
  | { kind: "assistant"; text: string; streaming: boolean }
  | { kind: "thought"; text: string; streaming: boolean }
  | {
      kind: "tool";
      callId: string;
      tool: string;
      toolKind: string;
      title: string;
      status: ToolStatus;
      output: string | undefined;
      reason: string | undefined;
      diffs: DiffSummary[];
    }
  | { kind: "plan"; entries: PlanEntry[] }
  | { kind: "info"; text: string; tone: InfoTone }
  | { kind: "turnEnd"; stopReason: string };

/** The tool-call variant of `ChatItem`. */
export type ToolItem = Extract<ChatItem, { kind: "tool" }>;

/** What the model knows about one session. */
export interface Transcript {
  /** The session id; empty for the placeholder shown before any session exists. */
  sessionId: string;
  items: ChatItem[];
  /** A turn is running (between `turn_started` and `turn_complete`). */
  turnRunning: boolean;
  /** `larik/prompt` requests sent and not answered yet. */
  promptsInFlight: number;
  mode: string | undefined;
  model: string | undefined;
  cwd: string | undefined;
  /** The session's cost so far, from the latest `usage` event. */
  costUsd: number | undefined;
  /** Whether some request went to a model without a known price (the cost is unknown). */
  costUnknown: boolean;
}

/** How a `larik/prompt` request ended, for `ChatModel.endPrompt`. */
export type PromptOutcome = { stopReason: string } | { error: string };

function emptyTranscript(sessionId: string): Transcript {
  return {
    sessionId,
    items: [],
    turnRunning: false,
    promptsInFlight: 0,
    mode: undefined,
    model: undefined,
    cwd: undefined,
    costUsd: undefined,
    costUnknown: false,
  };
}

/** Whether a transcript is waiting on the agent. */
export function isBusy(transcript: Transcript): boolean {
  return transcript.turnRunning || transcript.promptsInFlight > 0;
}

/** All sessions' transcripts and which one the view shows. */
export class ChatModel {
  private readonly transcripts = new Map<string, Transcript>();
  private currentId: string | undefined;
  private readonly listeners: Array<() => void> = [];
  /** Text to put in the input box (a rewound prompt), until the view takes it. */
  private pendingInput: string | undefined;

  /** Takes the text the input box should show, if any (once). */
  takePendingInput(): string | undefined {
    const text = this.pendingInput;
    this.pendingInput = undefined;
    return text;
  }

  /** The session the view shows and new prompts go to, if any. */
  get currentSession(): string | undefined {
    return this.currentId;
  }

  /** The transcript the view shows (an empty placeholder before the first session). */
  get current(): Transcript {
    return this.currentId === undefined ? emptyTranscript("") : this.transcript(this.currentId);
  }

  /** The transcript of `sessionId`, made on first use. */
  transcript(sessionId: string): Transcript {
    let transcript = this.transcripts.get(sessionId);
    if (transcript === undefined) {
      transcript = emptyTranscript(sessionId);
      this.transcripts.set(sessionId, transcript);
    }
    return transcript;
  }

  /** Calls `listener` after every change. */
  onDidChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Shows `sessionId` from now on and sends new prompts there (keeping what it has). */
  switchTo(sessionId: string): void {
    this.transcript(sessionId);
    this.currentId = sessionId;
    this.changed();
  }

  /** Records a prompt the user sent to `sessionId`. */
  beginPrompt(sessionId: string, text: string): void {
    const transcript = this.transcript(sessionId);
    transcript.items.push({ kind: "user", text });
    transcript.promptsInFlight += 1;
    this.changed();
  }

  /** Records the answer to a `larik/prompt` request of `sessionId`. */
  endPrompt(sessionId: string, outcome: PromptOutcome): void {
    const transcript = this.transcript(sessionId);
    transcript.promptsInFlight = Math.max(0, transcript.promptsInFlight - 1);
    if ("error" in outcome) {
      finishStreaming(transcript);
      transcript.items.push({ kind: "info", tone: "error", text: outcome.error });
    }
    this.changed();
  }

  /** Adds an informational line to the shown transcript (e.g. a failed request). */
  addInfo(text: string, tone: InfoTone): void {
    if (this.currentId === undefined) {
      return;
    }
    this.transcript(this.currentId).items.push({ kind: "info", text, tone });
    this.changed();
  }

  /** The server stopped: no turn runs any more. Running turns say so, since their
   * `turn_complete` will never come. */
  serverStopped(): void {
    for (const transcript of this.transcripts.values()) {
      if (transcript.turnRunning) {
        transcript.turnRunning = false;
        finishStreaming(transcript);
        transcript.items.push({ kind: "info", tone: "error", text: "Larik's server stopped during this turn." });
      }
    }
    this.changed();
  }

  /** Applies one `larik/event` of `sessionId`. A session that starts a turn elsewhere (a
   * code action, another command) becomes the shown one, so the user sees what runs. */
  applyEvent(sessionId: string, event: AgentEvent): void {
    if (event.type === "session_switched") {
      this.switched(sessionId, event);
      this.changed();
      return;
    }
    const transcript = this.transcript(sessionId);
    applyToTranscript(transcript, event);
    if (
      sessionId !== this.currentId &&
      (event.type === "session_configured" || event.type === "turn_started")
    ) {
      this.currentId = sessionId;
    }
    this.changed();
  }

  /** The conversation of `sessionId` continues in another session (`/fork`, `/rewind`,
   * `/resume`) or a fresh context (`/clear`): later events and prompts use the new id, whose
   * transcript starts with what it holds (all of it for a fork, the stored history for a
   * resume); a rewound prompt goes back to the input box. */
  private switched(sessionId: string, event: AgentEvent): void {
    const to = stringField(event, "session_id") ?? sessionId;
    const reason = stringField(event, "reason") ?? "";
    const from = this.transcript(sessionId);
    const target = this.transcript(to);
    if (target !== from) {
      target.items = reason === "fork" ? from.items.map((item) => ({ ...item })) : [];
      target.cwd = from.cwd;
      target.costUsd = undefined;
      target.costUnknown = false;
    }
    target.mode = stringField(event, "mode") ?? target.mode;
    target.model = stringField(event, "model") ?? target.model;
    const history = event["history"];
    if (Array.isArray(history)) {
      target.items.push(...historyItems(history));
    }
    const prompt = stringField(event, "prompt");
    const line: Record<string, string> = {
      clear: "Context cleared: the next prompt starts a fresh context.",
      fork: `Forked: this chat continues in session ${to}.`,
      rewind: `Rewound: this chat continues in session ${to}; the prompt is back in the input box.`,
      resume: `Resumed session ${to}.`,
    };
    target.items.push({ kind: "info", tone: "status", text: line[reason] ?? `Now in session ${to}.` });
    if (reason === "rewind" && prompt !== undefined) {
      this.pendingInput = prompt;
    }
    if (this.currentId === sessionId) {
      this.currentId = to;
    }
  }

  private changed(): void {
    for (const listener of this.listeners) {
      listener();
    }
  }
}

/** Applies one agent event to a transcript. Unknown event types and missing fields are
 * tolerated: a newer server must not break an older extension. */
export function applyToTranscript(transcript: Transcript, event: AgentEvent): void {
  const items = transcript.items;
  switch (event.type) {
    case "session_configured":
      transcript.mode = stringField(event, "mode") ?? transcript.mode;
      transcript.model = stringField(event, "model") ?? transcript.model;
      transcript.cwd = stringField(event, "cwd") ?? transcript.cwd;
      return;
    case "turn_started":
      transcript.turnRunning = true;
      return;
    case "message_delta":
      appendDelta(transcript, "assistant", stringField(event, "text") ?? "");
      return;
    case "thought_delta":
      appendDelta(transcript, "thought", stringField(event, "text") ?? "");
      return;
    case "retrying": {
      // The request starts over: what streamed since the last complete message is void.
      transcript.items = items.filter(
        (item) => !((item.kind === "assistant" || item.kind === "thought") && item.streaming),
      );
      const attempt = numberField(event, "attempt");
      const reason = stringField(event, "reason");
      transcript.items.push({
        kind: "info",
        tone: "status",
        text: `Retrying${attempt === undefined ? "" : ` (attempt ${attempt})`}${reason ? `: ${reason}` : ""}`,
      });
      return;
    }
    case "message_complete": {
      const text = stringField(event, "text") ?? "";
      const streaming = findLast(items, (item) => item.kind === "assistant" && item.streaming);
      if (streaming !== undefined && streaming.kind === "assistant") {
        streaming.text = text;
      } else if (text !== "") {
        items.push({ kind: "assistant", text, streaming: false });
      }
      finishStreaming(transcript);
      return;
    }
    case "tool_call_begin": {
      const item = toolItem(transcript, event);
      item.tool = stringField(event, "tool") ?? item.tool;
      item.toolKind = stringField(event, "kind") ?? item.toolKind;
      item.title = stringField(event, "title") ?? item.title;
      return;
    }
    case "tool_call_update": {
      const status = stringField(event, "status");
      if (status === "pending" || status === "in_progress") {
        toolItem(transcript, event).status = status;
      }
      return;
    }
    case "diff":
      applyDiff(toolItem(transcript, event), event);
      return;
    case "permission_request":
      toolItem(transcript, event).status = "awaiting_permission";
      return;
    case "permission_denied": {
      const item = toolItem(transcript, event);
      item.status = "denied";
      item.reason = stringField(event, "reason");
      return;
    }
    case "tool_call_end": {
      const item = toolItem(transcript, event);
      // A denied call also ends (as failed); keep saying that it was denied and why.
      if (item.status !== "denied") {
        item.status = stringField(event, "status") === "completed" ? "completed" : "failed";
        item.output = stringField(event, "output");
      }
      return;
    }
    case "usage": {
      const total = event["total"];
      if (isObject(total)) {
        transcript.costUsd = numberField(total, "cost_usd") ?? transcript.costUsd;
        transcript.costUnknown = (numberField(total, "unpriced_requests") ?? 0) > 0;
      }
      return;
    }
    case "plan":
      applyPlan(transcript, event);
      return;
    case "compacted": {
      const replaced = numberField(event, "messages_replaced");
      items.push({
        kind: "info",
        tone: "status",
        text: `Conversation compacted${replaced === undefined ? "" : ` (${replaced} messages replaced by a summary)`}`,
      });
      return;
    }
    case "mode_changed":
      transcript.mode = stringField(event, "mode") ?? transcript.mode;
      items.push({ kind: "info", tone: "status", text: `Mode: ${transcript.mode ?? "?"}` });
      return;
    case "model_changed":
      transcript.model = stringField(event, "model") ?? transcript.model;
      items.push({ kind: "info", tone: "status", text: `Model: ${transcript.model ?? "?"}` });
      return;
    case "reasoning_changed": {
      const effort = stringField(event, "effort");
      items.push({ kind: "info", tone: "status", text: `Reasoning effort: ${effort ?? "provider default"}` });
      return;
    }
    case "undone":
      items.push(undoneInfo(event));
      return;
    case "notice":
      items.push({ kind: "info", tone: "notice", text: stringField(event, "message") ?? "" });
      return;
    case "error": {
      const kind = stringField(event, "kind");
      const message = stringField(event, "message") ?? "unknown error";
      items.push({ kind: "info", tone: "error", text: kind ? `Error (${kind}): ${message}` : `Error: ${message}` });
      return;
    }
    case "turn_complete":
      transcript.turnRunning = false;
      finishStreaming(transcript);
      items.push({ kind: "turnEnd", stopReason: stringField(event, "stop_reason") ?? "end_turn" });
      return;
    default:
      return;
  }
}

/** The items of a stored conversation (a `session_switched` event's `history`). */
function historyItems(history: unknown[]): ChatItem[] {
  const items: ChatItem[] = [];
  for (const entry of history) {
    if (!isObject(entry)) {
      continue;
    }
    const text = stringField(entry, "text");
    const role = stringField(entry, "role");
    const mark = stringField(entry, "mark");
    const tool = stringField(entry, "tool");
    if (role === "user" && text !== undefined) {
      items.push({ kind: "user", text });
    } else if (role === "assistant" && text !== undefined) {
      items.push({ kind: "assistant", text, streaming: false });
    } else if (mark !== undefined) {
      const said = mark === "cleared" ? "Context cleared here." : "The conversation above was compacted.";
      items.push({ kind: "info", tone: "status", text: said });
    } else if (tool !== undefined) {
      items.push({
        kind: "tool",
        callId: stringField(entry, "callId") ?? "",
        tool,
        toolKind: "other",
        title: tool,
        status: stringField(entry, "status") === "failed" ? "failed" : "completed",
        output: stringField(entry, "output"),
        reason: undefined,
        diffs: [],
      });
    }
  }
  return items;
}

function appendDelta(transcript: Transcript, kind: "assistant" | "thought", text: string): void {
  const last = transcript.items[transcript.items.length - 1];
  if (last !== undefined && last.kind === kind && last.streaming) {
    last.text += text;
  } else {
    transcript.items.push({ kind, text, streaming: true });
  }
}

/** Marks streamed messages and thoughts as finished. */
function finishStreaming(transcript: Transcript): void {
  for (const item of transcript.items) {
    if ((item.kind === "assistant" || item.kind === "thought") && item.streaming) {
      item.streaming = false;
    }
  }
}

/** The tool item for the event's `call_id`, made if the call's begin was not seen. */
function toolItem(transcript: Transcript, event: AgentEvent): ToolItem {
  const callId = stringField(event, "call_id") ?? "";
  const found = findLast(transcript.items, (item) => item.kind === "tool" && item.callId === callId);
  if (found !== undefined && found.kind === "tool") {
    return found;
  }
  const tool = stringField(event, "tool") ?? "";
  const item: ToolItem = {
    kind: "tool",
    callId,
    tool,
    toolKind: "other",
    title: stringField(event, "title") ?? tool,
    status: "pending",
    output: undefined,
    reason: undefined,
    diffs: [],
  };
  transcript.items.push(item);
  return item;
}

function applyDiff(item: ToolItem, event: AgentEvent): void {
  const change = event["change"];
  if (!isObject(change)) {
    return;
  }
  const path = stringField(change, "path") ?? "";
  const oldText = stringField(change, "old_text") ?? "";
  const counts = countLineChanges(oldText, stringField(change, "new_text") ?? "");
  const summary: DiffSummary = {
    path,
    ...counts,
    created: oldText === "",
    applied: event["applied"] === true,
  };
  const index = item.diffs.findIndex((diff) => diff.path === path);
  if (index >= 0) {
    item.diffs[index] = summary;
  } else {
    item.diffs.push(summary);
  }
}

/** The plan is sent whole each time: replace this turn's plan item, or add one. */
function applyPlan(transcript: Transcript, event: AgentEvent): void {
  const rawEntries = event["entries"];
  const entries: PlanEntry[] = [];
  if (Array.isArray(rawEntries)) {
    for (const entry of rawEntries) {
      if (isObject(entry)) {
        entries.push({
          content: stringField(entry, "content") ?? "",
          status: stringField(entry, "status") ?? "pending",
          priority: stringField(entry, "priority") ?? "medium",
        });
      }
    }
  }
  const items = transcript.items;
  for (let index = items.length - 1; index >= 0; index -= 1) {
    const item = items[index];
    if (item === undefined || item.kind === "user" || item.kind === "turnEnd") {
      break;
    }
    if (item.kind === "plan") {
      item.entries = entries;
      return;
    }
  }
  items.push({ kind: "plan", entries });
}

function undoneInfo(event: JsonObject): ChatItem {
  const turn = numberField(event, "turn");
  if (turn === undefined) {
    return { kind: "info", tone: "notice", text: "Nothing left to undo." };
  }
  const list = (key: string): string[] => {
    const value = event[key];
    return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === "string") : [];
  };
  const parts = [`Undid turn ${turn}`];
  const restored = list("restored");
  const deleted = list("deleted");
  const failed = list("failed");
  if (restored.length > 0) {
    parts.push(`restored ${restored.join(", ")}`);
  }
  if (deleted.length > 0) {
    parts.push(`deleted ${deleted.join(", ")}`);
  }
  if (failed.length > 0) {
    parts.push(`could not restore ${failed.join(", ")}`);
  }
  return { kind: "info", tone: failed.length > 0 ? "error" : "status", text: parts.join("; ") };
}

function findLast<T>(items: T[], predicate: (item: T) => boolean): T | undefined {
  for (let index = items.length - 1; index >= 0; index -= 1) {
    const item = items[index];
    if (item !== undefined && predicate(item)) {
      return item;
    }
  }
  return undefined;
}
