// The extension's command ids and the permission modes offered by "Larik: Set Mode". Kept
// apart from the VS Code wiring so a test can check them against package.json and against the
// server's own command names.

import type { Mode, SlashCommand } from "./protocol";

/** Every command the extension contributes. */
export const Command = {
  ask: "larik.ask",
  cancelTurn: "larik.cancelTurn",
  startSession: "larik.startSession",
  setMode: "larik.setMode",
  undo: "larik.undo",
  restartServer: "larik.restartServer",
} as const;

/** The chat view's id (package.json `contributes.views`). */
export const CHAT_VIEW_ID = "larik.chat";

/** The prompt "Larik: Undo" sends: the server runs it as the `undo` operation. */
export const UNDO_PROMPT = "/undo";

/** The slash commands to offer while the user types `input`: while it is one word starting
 * with `/`, the commands whose name starts with what follows the slash, in the session's
 * order; otherwise none. */
export function slashCompletions(input: string, commands: readonly SlashCommand[]): SlashCommand[] {
  const typed = input.trimStart();
  if (!typed.startsWith("/") || /\s/.test(typed)) {
    return [];
  }
  const prefix = typed.slice(1).toLowerCase();
  return commands.filter((command) => command.name.toLowerCase().startsWith(prefix));
}

/** The input text a picked completion leaves: the command, and a space when it takes an
 * argument. */
export function completedInput(command: SlashCommand): string {
  return command.hint === undefined ? `/${command.name}` : `/${command.name} `;
}

/** A permission mode as the Set Mode pick shows it. */
export interface ModeChoice {
  mode: Mode;
  label: string;
  description: string;
}

/** The modes `larik/setMode` accepts, in the order the pick lists them. */
export const MODES: readonly ModeChoice[] = [
  { mode: "default", label: "Default", description: "read inside the project freely; ask before anything else" },
  { mode: "acceptEdits", label: "Accept edits", description: "also edit files in the project without asking" },
  { mode: "plan", label: "Plan", description: "read-only tools only; anything that changes something is refused" },
  { mode: "bypassPermissions", label: "Bypass permissions", description: "run everything a deny rule does not refuse, without asking" },
];
