// Permission questions (`larik/requestPermission`) as a quick pick: the items and prompt text
// built from the request, and the answer built from what the user picked. The VS Code side
// only shows the pick; this module decides what it says and what goes back.

import { type PermissionOption, type RequestPermissionParams, type RequestPermissionResult, isObject } from "./protocol";

/** One quick-pick entry; `optionId` is what the server gets back. */
export interface PermissionPickItem {
  label: string;
  description: string;
  optionId: string;
}

/** Title and placeholder of the quick pick. */
export interface PermissionPrompt {
  title: string;
  placeholder: string;
}

/** The longest input preview shown in the placeholder. */
const MAX_PREVIEW_CHARS = 200;

/** Codicons by option kind, so allow and deny read apart at a glance. */
function icon(kind: string): string {
  switch (kind) {
    case "allow_once":
      return "$(check) ";
    case "allow_always":
      return "$(check-all) ";
    case "reject_once":
      return "$(close) ";
    case "reject_always":
      return "$(circle-slash) ";
    default:
      return "";
  }
}

function kindDescription(option: PermissionOption): string {
  switch (option.kind) {
    case "allow_once":
      return "this call only";
    case "allow_always":
      return "remembered for this project";
    case "reject_once":
      return "the agent is told it was denied";
    case "reject_always":
      return "remembered for this project";
    default:
      return "";
  }
}

/** The quick-pick items, in the server's order. */
export function permissionPickItems(params: RequestPermissionParams): PermissionPickItem[] {
  return params.options.map((option) => ({
    label: `${icon(option.kind)}${option.name}`,
    description: kindDescription(option),
    optionId: option.optionId,
  }));
}

/** What the quick pick says: the call's title and a preview of what it would do. */
export function permissionPrompt(params: RequestPermissionParams): PermissionPrompt {
  const call = params.toolCall;
  return {
    title: `Larik wants to run ${call.tool || "a tool"}: ${call.title}`,
    placeholder: inputPreview(call.input) || "Allow this tool call?",
  };
}

/** A one-line preview of a tool's input: the command, the path, or compact JSON. */
export function inputPreview(input: unknown): string {
  let text = "";
  if (isObject(input)) {
    for (const key of ["command", "file_path", "path", "url", "pattern"]) {
      const value = input[key];
      if (typeof value === "string" && value !== "") {
        text = value;
        break;
      }
    }
  }
  if (text === "" && input !== undefined && input !== null) {
    text = JSON.stringify(input) ?? "";
  }
  text = text.replace(/\s+/g, " ").trim();
  return text.length > MAX_PREVIEW_CHARS ? `${text.slice(0, MAX_PREVIEW_CHARS - 1)}…` : text;
}

/** The answer to send: the picked option, or `cancelled` when the pick was dismissed. */
export function permissionAnswer(picked: PermissionPickItem | undefined): RequestPermissionResult {
  return picked === undefined ? { cancelled: true } : { optionId: picked.optionId };
}
