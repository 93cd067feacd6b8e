// Starts `larik lsp` through vscode-languageclient and wires the contract's client side:
// the `experimental.larik.permissions` capability, `larik/event` into the chat model,
// `larik/requestPermission` as a quick pick, and the server's `larik.prompt` command (code
// actions) bound to the chat's session. Everything it decides is delegated to `core/`.

import * as vscode from "vscode";
import {
  type ClientCapabilities,
  type ExecuteCommandSignature,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  NotificationType,
  RequestType,
  type ServerOptions,
  State,
  type StaticFeature,
  TransportKind,
} from "vscode-languageclient/node";
import type { ChatModel } from "./core/chatModel";
import { type PermissionPickItem, permissionAnswer, permissionPickItems, permissionPrompt } from "./core/permission";
import {
  Method,
  type RequestPermissionParams,
  type RequestPermissionResult,
  ServerCommand,
  parseEventParams,
  parsePermissionParams,
} from "./core/protocol";
import { addLarikCapabilities } from "./core/requests";

/** `larik/event`, read as untrusted JSON and validated in `core/protocol`. */
const eventNotification = new NotificationType<unknown>(Method.event);
/** `larik/requestPermission`, likewise. */
const permissionRequest = new RequestType<unknown, RequestPermissionResult, void>(Method.requestPermission);

/** How the client runs the server's `larik.prompt` command; the extension supplies it so
 * code-action prompts show up in (and run in) the chat's session. */
export type ServerPromptRunner = (args: unknown[], next: ExecuteCommandSignature) => Promise<unknown>;

/** Declares the Larik capabilities in `initialize`; it has nothing to set up afterwards. */
class LarikCapabilitiesFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    addLarikCapabilities(capabilities);
  }

  initialize(): void {}

  getState(): FeatureState {
    return { kind: "static" };
  }

  clear(): void {}
}

/** Settings that choose how the server is started. */
export interface ServerSettings {
  path: string;
  args: string[];
}

/** Reads `larik.path` and `larik.args`. */
export function readServerSettings(): ServerSettings {
  const config = vscode.workspace.getConfiguration("larik");
  const path = config.get<string>("path", "larik").trim();
  const args = config.get<unknown[]>("args", []).filter((arg): arg is string => typeof arg === "string");
  return { path: path === "" ? "larik" : path, args };
}

/** Makes (without starting) a client for `larik lsp`. */
export function createClient(
  settings: ServerSettings,
  model: ChatModel,
  runServerPrompt: ServerPromptRunner,
): LanguageClient {
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const serverOptions: ServerOptions = {
    command: settings.path,
    args: ["lsp", ...settings.args],
    transport: TransportKind.stdio,
    ...(cwd === undefined ? {} : { options: { cwd } }),
  };
  const clientOptions: LanguageClientOptions = {
    // The agent reads open documents' unsaved text, so every document is synced.
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    outputChannelName: "Larik",
    middleware: {
      executeCommand: (command, args, next) =>
        command === ServerCommand.prompt ? runServerPrompt(args, next) : next(command, args),
    },
  };
  const client = new LanguageClient("larik", "Larik", serverOptions, clientOptions);
  client.registerFeature(new LarikCapabilitiesFeature());

  client.onDidChangeState((change) => {
    if (change.newState === State.Stopped) {
      model.serverStopped();
    }
  });

  client.onNotification(eventNotification, (raw) => {
    const params = parseEventParams(raw);
    if (params === undefined) {
      client.warn(`Ignored a malformed ${Method.event} notification`, raw);
      return;
    }
    model.applyEvent(params.sessionId, params.event);
  });

  // One quick pick at a time: showing a second one would hide, and so dismiss, the first.
  let permissionQueue: Promise<unknown> = Promise.resolve();
  client.onRequest(permissionRequest, (raw, token) => {
    const params = parsePermissionParams(raw);
    if (params === undefined) {
      client.warn(`Answered a malformed ${Method.requestPermission} request with cancelled`, raw);
      return permissionAnswer(undefined);
    }
    const answer: Promise<RequestPermissionResult> = permissionQueue.then(async () => {
      if (token.isCancellationRequested) {
        return permissionAnswer(undefined);
      }
      return permissionAnswer(await pickPermission(params, token));
    });
    permissionQueue = answer.catch(() => undefined);
    return answer;
  });
  return client;
}

/** Shows the permission quick pick; `undefined` when it is dismissed or the server withdraws
 * the question. `ignoreFocusOut` keeps it open while the user looks at the code. */
function pickPermission(
  params: RequestPermissionParams,
  token: vscode.CancellationToken,
): Promise<PermissionPickItem | undefined> {
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick<PermissionPickItem>();
    const prompt = permissionPrompt(params);
    pick.title = prompt.title;
    pick.placeholder = prompt.placeholder;
    pick.items = permissionPickItems(params);
    pick.ignoreFocusOut = true;
    let chosen: PermissionPickItem | undefined;
    const subscriptions: vscode.Disposable[] = [];
    subscriptions.push(
      pick.onDidAccept(() => {
        chosen = pick.selectedItems[0];
        pick.hide();
      }),
      pick.onDidHide(() => {
        for (const subscription of subscriptions) {
          subscription.dispose();
        }
        pick.dispose();
        resolve(chosen);
      }),
      token.onCancellationRequested(() => pick.hide()),
    );
    pick.show();
  });
}
