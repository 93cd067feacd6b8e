// The extension's entry point: starts `larik lsp`, registers the chat view and the Larik
// commands, and keeps track of which session prompts go to. A thin shell over `core/`
// (what to send, how to show what comes back) and vscode-languageclient (the wire).

import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import { type ExecuteCommandSignature, type LanguageClient, WorkDoneProgress } from "vscode-languageclient/node";
import { ChatViewProvider } from "./chatView";
import { createClient, readServerSettings } from "./client";
import { ChatModel, isBusy } from "./core/chatModel";
import { CHAT_VIEW_ID, Command, MODES, UNDO_PROMPT, slashCompletions } from "./core/commands";
import {
  type CancelParams,
  type CommandsParams,
  Method,
  type NewSessionParams,
  type NewSessionResult,
  type PromptResult,
  ServerCommand,
  type SetModeParams,
  type SlashCommand,
  parseCommands,
} from "./core/protocol";
import { type Suggestion, suggestions } from "./core/render";
import {
  type EditorContext,
  buildPromptParams,
  promptText,
  sessionOfArgs,
  withPromptText,
  withSessionArgs,
} from "./core/requests";

/** Owns the language client and the chat model for the extension's lifetime. */
class Larik implements vscode.Disposable {
  readonly model = new ChatModel();
  private client: LanguageClient | undefined;
  private clientReady: Promise<LanguageClient> | undefined;
  private sessionCreation: Promise<string> | undefined;
  /** The slash commands of the shown session, and the session they were asked for. */
  private commands: SlashCommand[] = [];
  private commandsOf: string | undefined | null = null;

  constructor() {
    // A new shown session (new, forked, rewound, resumed) may offer other commands.
    this.model.onDidChange(() => {
      if (this.commandsOf !== this.model.currentSession) {
        void this.refreshCommands();
      }
    });
  }

  /** Asks the server for the shown session's slash commands (a new session's without one). */
  private async refreshCommands(): Promise<void> {
    const sessionId = this.model.currentSession;
    this.commandsOf = sessionId;
    const client = await this.clientReady?.catch(() => undefined);
    if (client === undefined) {
      return;
    }
    const params: CommandsParams = sessionId === undefined ? {} : { sessionId };
    const result: unknown = await client.sendRequest(Method.commands, params).catch(() => undefined);
    if (this.commandsOf === sessionId && result !== undefined) {
      this.commands = parseCommands(result);
    }
  }

  /** The slash commands to suggest for the chat input's text. */
  complete(text: string): Suggestion[] {
    return suggestions(slashCompletions(text, this.commands));
  }

  /** Starts the server (stopping a running one first). */
  async start(): Promise<void> {
    const previous = this.client;
    this.client = undefined;
    this.clientReady = undefined;
    if (previous !== undefined) {
      await previous.stop().catch(() => undefined);
      previous.dispose();
    }
    const settings = readServerSettings();
    const client = createClient(settings, this.model, (args, next) => this.runServerPrompt(args, next));
    this.client = client;
    this.clientReady = client.start().then(
      () => client,
      (error: unknown) => {
        const message = `Could not start \`${settings.path} lsp\`: ${errorText(error)}. Set "larik.path" to the larik executable.`;
        void vscode.window.showErrorMessage(message, "Open Settings").then((choice) => {
          if (choice === "Open Settings") {
            void vscode.commands.executeCommand("workbench.action.openSettings", "larik.path");
          }
        });
        throw new Error(message);
      },
    );
    await this.clientReady.catch(() => undefined);
    await this.refreshCommands();
  }

  /** The running client; rejects with a readable error when the server could not start. */
  private ready(): Promise<LanguageClient> {
    return this.clientReady ?? Promise.reject(new Error("Larik's server is not running."));
  }

  /** The session prompts go to, made with `larik/newSession` on first use. */
  private ensureSession(client: LanguageClient): Promise<string> {
    const current = this.model.currentSession;
    if (current !== undefined) {
      return Promise.resolve(current);
    }
    // Prompts sent while the session is being made must not make a second one.
    this.sessionCreation ??= this.newSession(client).finally(() => {
      this.sessionCreation = undefined;
    });
    return this.sessionCreation;
  }

  private async newSession(client: LanguageClient): Promise<string> {
    const params: NewSessionParams = {};
    const result = await client.sendRequest<NewSessionResult>(Method.newSession, params);
    this.model.switchTo(result.sessionId);
    return result.sessionId;
  }

  /** Sends `text` to the current session (made if needed), with the editor's document and
   * selection as context when given, and reports the server's progress in the status bar. */
  async prompt(text: string, editor: EditorContext | undefined): Promise<void> {
    let client: LanguageClient;
    let sessionId: string;
    try {
      client = await this.ready();
      sessionId = await this.ensureSession(client);
    } catch (error) {
      void vscode.window.showErrorMessage(`Larik: ${errorText(error)}`);
      return;
    }
    const workDoneToken = randomUUID();
    const params = buildPromptParams(text, { sessionId, editor, workDoneToken });
    this.model.beginPrompt(sessionId, text);
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: "Larik" },
      async (progress) => {
        const subscription = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
          if (value.kind !== "end" && value.message !== undefined) {
            progress.report({ message: value.message });
          }
        });
        try {
          const result = await client.sendRequest<PromptResult>(Method.prompt, params);
          this.model.endPrompt(sessionId, { stopReason: result.stopReason });
        } catch (error) {
          this.model.endPrompt(sessionId, { error: errorText(error) });
        } finally {
          subscription.dispose();
        }
      },
    );
  }

  /** Runs the server's `larik.prompt` command (a code action) in the chat's session, asking
   * for the question when the action leaves it empty, and shows it in the chat. */
  private async runServerPrompt(args: unknown[], next: ExecuteCommandSignature): Promise<unknown> {
    let commandArgs = args;
    if (promptText(commandArgs[0]).trim() === "") {
      const question = await vscode.window.showInputBox({ title: "Ask Larik", ignoreFocusOut: true });
      if (question === undefined || question.trim() === "") {
        return undefined;
      }
      commandArgs = withPromptText(commandArgs, question);
    }
    let sessionId: string;
    try {
      const client = await this.ready();
      sessionId = sessionOfArgs(commandArgs) ?? (await this.ensureSession(client));
    } catch (error) {
      void vscode.window.showErrorMessage(`Larik: ${errorText(error)}`);
      return undefined;
    }
    commandArgs = withSessionArgs(commandArgs, sessionId);
    this.model.switchTo(sessionId);
    this.model.beginPrompt(sessionId, promptText(commandArgs[0]));
    void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    try {
      // The client reports a failed command itself and resolves with nothing.
      const result: unknown = await next(ServerCommand.prompt, commandArgs);
      this.model.endPrompt(
        sessionId,
        isStopResult(result) ? { stopReason: result.stopReason } : { error: "The prompt failed (see the Larik output)." },
      );
      return result;
    } catch (error) {
      this.model.endPrompt(sessionId, { error: errorText(error) });
      return undefined;
    }
  }

  /** "Larik: Ask…": a question about the active editor's document and selection. */
  async ask(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const context = editor === undefined ? undefined : editorContext(editor);
    const about =
      editor === undefined || context === undefined
        ? undefined
        : editor.selection.isEmpty
          ? `About ${vscode.workspace.asRelativePath(editor.document.uri)}`
          : `About the selection in ${vscode.workspace.asRelativePath(editor.document.uri)}`;
    const text = await vscode.window.showInputBox({
      title: "Ask Larik",
      ignoreFocusOut: true,
      ...(about === undefined ? {} : { prompt: about }),
    });
    if (text === undefined || text.trim() === "") {
      return;
    }
    void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    await this.prompt(text, context);
  }

  /** "Larik: Cancel": stops the current session's running turn. */
  async cancel(): Promise<void> {
    const sessionId = this.model.currentSession;
    if (sessionId === undefined || !isBusy(this.model.current)) {
      void vscode.window.showInformationMessage("Larik is not running anything.");
      return;
    }
    try {
      const client = await this.ready();
      const params: CancelParams = { sessionId };
      await client.sendRequest(Method.cancel, params);
    } catch (error) {
      void vscode.window.showErrorMessage(`Larik: ${errorText(error)}`);
    }
  }

  /** "Larik: New Session": a fresh session in the workspace, shown in the chat. */
  async startSession(): Promise<void> {
    try {
      const client = await this.ready();
      await this.newSession(client);
      void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    } catch (error) {
      void vscode.window.showErrorMessage(`Larik: ${errorText(error)}`);
    }
  }

  /** "Larik: Set Mode": the current session's permission mode. */
  async setMode(): Promise<void> {
    const current = this.model.current.mode;
    const picked = await vscode.window.showQuickPick(
      MODES.map((choice) => ({ ...choice, picked: choice.mode === current })),
      {
        title: "Larik: permission mode",
        placeHolder: current === undefined ? "Choose a mode" : `Now: ${current}`,
      },
    );
    if (picked === undefined) {
      return;
    }
    try {
      const client = await this.ready();
      const sessionId = await this.ensureSession(client);
      const params: SetModeParams = { sessionId, mode: picked.mode };
      await client.sendRequest(Method.setMode, params);
    } catch (error) {
      void vscode.window.showErrorMessage(`Larik: ${errorText(error)}`);
    }
  }

  /** "Larik: Undo": puts back the files of the latest turn that changed files. */
  async undo(): Promise<void> {
    if (this.model.currentSession === undefined) {
      void vscode.window.showInformationMessage("There is no Larik session to undo in yet.");
      return;
    }
    await this.prompt(UNDO_PROMPT, undefined);
  }

  dispose(): void {
    void this.stop();
  }

  /** Stops the server; VS Code waits for this on shutdown. */
  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.clientReady = undefined;
    await client?.stop().catch(() => undefined);
  }
}

let larik: Larik | undefined;

/** Called by VS Code when the extension activates. */
export function activate(context: vscode.ExtensionContext): void {
  const instance = new Larik();
  larik = instance;
  const view = new ChatViewProvider(context.extensionUri, instance.model, {
    prompt: (text) => void instance.prompt(text, undefined),
    cancel: () => void instance.cancel(),
    newSession: () => void instance.startSession(),
    complete: (text) => instance.complete(text),
  });
  context.subscriptions.push(
    instance,
    view,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, view, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    vscode.commands.registerCommand(Command.ask, () => instance.ask()),
    vscode.commands.registerCommand(Command.cancelTurn, () => instance.cancel()),
    vscode.commands.registerCommand(Command.startSession, () => instance.startSession()),
    vscode.commands.registerCommand(Command.setMode, () => instance.setMode()),
    vscode.commands.registerCommand(Command.undo, () => instance.undo()),
    vscode.commands.registerCommand(Command.restartServer, () => instance.start()),
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (change.affectsConfiguration("larik.path") || change.affectsConfiguration("larik.args")) {
        void instance.start();
      }
    }),
  );
  void instance.start();
}

/** Called by VS Code when the extension deactivates. */
export function deactivate(): Promise<void> | undefined {
  const instance = larik;
  larik = undefined;
  return instance?.stop();
}

/** The editor's document and selection as prompt context; `undefined` for documents the
 * server does not see (only `file` and `untitled` documents are synced). */
function editorContext(editor: vscode.TextEditor): EditorContext | undefined {
  const uri = editor.document.uri;
  if (uri.scheme !== "file" && uri.scheme !== "untitled") {
    return undefined;
  }
  const selection = editor.selection;
  return {
    uri: uri.toString(),
    selection: {
      start: { line: selection.start.line, character: selection.start.character },
      end: { line: selection.end.line, character: selection.end.character },
    },
  };
}

function isStopResult(value: unknown): value is { stopReason: string } {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { stopReason?: unknown }).stopReason === "string"
  );
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
