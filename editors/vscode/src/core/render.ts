// The chat webview's two message directions: the transcript turned into the HTML the view
// shows (every piece of text from the agent or the user is escaped here, once, so the
// webview script only swaps markup in), and the messages the view sends back, validated.

import { type ChatItem, type DiffSummary, type ToolItem, type Transcript, isBusy } from "./chatModel";
import { completedInput } from "./commands";
import { type SlashCommand, isObject, stringField } from "./protocol";

/** Tool output longer than this is cut in the view (the model got all of it). */
const MAX_OUTPUT_CHARS = 4000;

/** What the webview receives on every change. */
export interface ViewState {
  /** The shown session ("" before the first one). */
  sessionId: string;
  /** The transcript as HTML. */
  html: string;
  /** One line about the session: mode, model, cost. */
  status: string;
  /** Whether a prompt or turn is running (the view offers Stop then). */
  busy: boolean;
  /** Text to put in the input box (a rewound prompt to edit), when there is some. */
  input?: string;
}

/** What the webview receives while the user types a slash command. */
export interface Suggestion {
  /** What picking it leaves in the input box. */
  insert: string;
  /** `/name hint`. */
  label: string;
  description: string;
}

/** What the webview sends: loaded, a prompt typed, the input changed (for completion), Stop
 * or New session pressed. */
export type ViewMessage =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "input"; text: string }
  | { type: "cancel" }
  | { type: "newSession" };

/** Reads a message from the webview; `undefined` for anything else (and for blank prompts). */
export function parseViewMessage(raw: unknown): ViewMessage | undefined {
  if (!isObject(raw)) {
    return undefined;
  }
  switch (raw["type"]) {
    case "ready":
      return { type: "ready" };
    case "cancel":
      return { type: "cancel" };
    case "newSession":
      return { type: "newSession" };
    case "prompt": {
      const text = stringField(raw, "text")?.trim();
      return text ? { type: "prompt", text } : undefined;
    }
    case "input": {
      const text = stringField(raw, "text");
      return text === undefined ? undefined : { type: "input", text };
    }
    default:
      return undefined;
  }
}

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** The view state of a transcript, with `input` for the input box when there is some. */
export function viewState(transcript: Transcript, input?: string): ViewState {
  const state: ViewState = {
    sessionId: transcript.sessionId,
    html: renderTranscript(transcript),
    status: renderStatus(transcript),
    busy: isBusy(transcript),
  };
  if (input !== undefined) {
    state.input = input;
  }
  return state;
}

/** The suggestions shown for slash commands (text only: the webview sets it as text). */
export function suggestions(commands: readonly SlashCommand[]): Suggestion[] {
  return commands.map((command) => ({
    insert: completedInput(command),
    label: command.hint === undefined ? `/${command.name}` : `/${command.name} ${command.hint}`,
    description: command.description,
  }));
}

/** The status line: session mode, model and cost so far. */
export function renderStatus(transcript: Transcript): string {
  if (transcript.sessionId === "") {
    return "No session yet";
  }
  const parts: string[] = [];
  if (transcript.mode !== undefined) {
    parts.push(`mode ${transcript.mode}`);
  }
  if (transcript.model !== undefined) {
    parts.push(transcript.model);
  }
  if (transcript.costUnknown) {
    parts.push("cost unknown");
  } else if (transcript.costUsd !== undefined) {
    parts.push(`$${transcript.costUsd.toFixed(4)}`);
  }
  if (isBusy(transcript)) {
    parts.push("working…");
  }
  return parts.length === 0 ? "Session started" : parts.join(" · ");
}

/** The transcript as HTML. */
export function renderTranscript(transcript: Transcript): string {
  if (transcript.items.length === 0) {
    return `<div class="empty">Ask Larik something below, or run “Larik: Ask…” with code selected.</div>`;
  }
  return transcript.items.map(renderItem).join("\n");
}

function renderItem(item: ChatItem): string {
  switch (item.kind) {
    case "user":
      return `<div class="item user">${escapeHtml(item.text)}</div>`;
    case "assistant":
      return `<div class="item assistant${item.streaming ? " streaming" : ""}">${escapeHtml(item.text)}</div>`;
    case "thought":
      return `<details class="item thought"${item.streaming ? " open" : ""}><summary>Thinking</summary>${escapeHtml(item.text)}</details>`;
    case "tool":
      return renderTool(item);
    case "plan":
      return `<div class="item plan"><div class="plan-title">Plan</div><ul>${item.entries
        .map(
          (entry) =>
            `<li class="plan-${escapeHtml(entry.status)}">${planMark(entry.status)} ${escapeHtml(entry.content)}</li>`,
        )
        .join("")}</ul></div>`;
    case "info":
      return `<div class="item info ${item.tone}">${escapeHtml(item.text)}</div>`;
    case "turnEnd":
      return `<div class="item turn-end">${escapeHtml(stopReasonText(item.stopReason))}</div>`;
  }
}

function renderTool(item: ToolItem): string {
  const head = `<div class="tool-head"><span class="tool-status">${statusText(item.status)}</span> <span class="tool-title">${escapeHtml(item.title || item.tool)}</span></div>`;
  const diffs =
    item.diffs.length === 0
      ? ""
      : `<ul class="diffs">${item.diffs.map((diff) => `<li>${renderDiff(diff)}</li>`).join("")}</ul>`;
  const reason = item.reason === undefined ? "" : `<div class="tool-reason">${escapeHtml(item.reason)}</div>`;
  let output = "";
  if (item.output !== undefined && item.output !== "") {
    const cut = item.output.length > MAX_OUTPUT_CHARS;
    const text = cut ? `${item.output.slice(0, MAX_OUTPUT_CHARS)}\n…` : item.output;
    output = `<details class="tool-output"><summary>Output</summary><pre>${escapeHtml(text)}</pre></details>`;
  }
  return `<div class="item tool status-${item.status}">${head}${diffs}${reason}${output}</div>`;
}

/** "src/a.rs +3 −1 (proposed)". */
export function diffSummaryText(diff: DiffSummary): string {
  const counts = diff.created ? `new file, +${diff.added}` : `+${diff.added} −${diff.removed}`;
  return `${diff.path} ${counts}${diff.applied ? "" : " (proposed)"}`;
}

function renderDiff(diff: DiffSummary): string {
  return `<span class="diff${diff.applied ? "" : " proposed"}">${escapeHtml(diffSummaryText(diff))}</span>`;
}

/** A readable word for a tool status. */
export function statusText(status: ToolItem["status"]): string {
  switch (status) {
    case "pending":
      return "queued";
    case "awaiting_permission":
      return "needs permission";
    case "in_progress":
      return "running";
    case "completed":
      return "done";
    case "failed":
      return "failed";
    case "denied":
      return "denied";
  }
}

function planMark(status: string): string {
  if (status === "completed") {
    return "☑";
  }
  return status === "in_progress" ? "▶" : "☐";
}

/** A readable line for how a turn ended. */
export function stopReasonText(stopReason: string): string {
  switch (stopReason) {
    case "end_turn":
      return "Done.";
    case "max_tokens":
      return "Stopped: the answer hit the output token limit.";
    case "max_turns":
      return "Stopped: the turn hit the maximum number of model requests.";
    case "refusal":
      return "The model refused.";
    case "cancelled":
      return "Cancelled.";
    case "error":
      return "The turn failed.";
    default:
      return `Ended: ${stopReason}`;
  }
}
