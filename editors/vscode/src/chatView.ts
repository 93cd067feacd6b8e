// The chat view in Larik's activity-bar container: a webview that shows the current
// session's transcript (rendered to HTML by `core/render`) and has an input box, a Stop
// button and a New Session button. Its script is media/chat.js.

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { ChatModel } from "./core/chatModel";
import { type Suggestion, parseViewMessage, viewState } from "./core/render";

/** What the view's buttons and input ask the extension to do. */
export interface ChatActions {
  prompt(text: string): void;
  cancel(): void;
  newSession(): void;
  /** The slash commands to suggest for what is typed so far. */
  complete(text: string): Suggestion[];
}

/** Streamed deltas arrive many times a second; the webview is redrawn at most this often. */
const REDRAW_INTERVAL_MS = 50;

/** Provides the chat webview view. */
export class ChatViewProvider implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private redrawTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly model: ChatModel,
    private readonly actions: ChatActions,
  ) {
    model.onDidChange(() => this.scheduleRedraw());
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((raw: unknown) => {
      const message = parseViewMessage(raw);
      switch (message?.type) {
        case "ready":
          this.redraw();
          return;
        case "prompt":
          this.actions.prompt(message.text);
          return;
        case "cancel":
          this.actions.cancel();
          return;
        case "newSession":
          this.actions.newSession();
          return;
        case "input":
          void view.webview.postMessage({ type: "suggestions", items: this.actions.complete(message.text) });
          return;
        case undefined:
          return;
      }
    });
    view.onDidChangeVisibility(() => {
      if (view.visible) {
        this.redraw();
      }
    });
    view.onDidDispose(() => {
      this.view = undefined;
    });
  }

  /** Stops pending redraws. */
  dispose(): void {
    if (this.redrawTimer !== undefined) {
      clearTimeout(this.redrawTimer);
      this.redrawTimer = undefined;
    }
  }

  private scheduleRedraw(): void {
    if (this.redrawTimer === undefined) {
      this.redrawTimer = setTimeout(() => {
        this.redrawTimer = undefined;
        this.redraw();
      }, REDRAW_INTERVAL_MS);
    }
  }

  private redraw(): void {
    if (this.view !== undefined) {
      const state = viewState(this.model.current, this.model.takePendingInput());
      void this.view.webview.postMessage({ type: "state", ...state });
    }
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Larik</title>
</head>
<body>
<div id="status" class="status"></div>
<div id="transcript" class="transcript" aria-live="polite"></div>
<form id="composer" class="composer">
<ul id="suggestions" class="suggestions" role="listbox" hidden></ul>
<textarea id="input" rows="3" placeholder="Ask Larik… (Enter to send, Shift+Enter for a new line)"></textarea>
<div class="buttons">
<button id="send" type="submit">Send</button>
<button id="stop" type="button" class="secondary" disabled>Stop</button>
<button id="new" type="button" class="secondary">New session</button>
</div>
</form>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }
}
