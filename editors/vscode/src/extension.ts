/**
 * inkling for VS Code: starts `inkling serve` with vscode-languageclient, which provides the
 * server's inline completions (drafts cycled with VS Code's own next / previous inline
 * suggestion commands, the item's `inkling.accept` command forwarded to the server with
 * workspace/executeCommand). Adds a status bar item fed by `inkling/status`, commands, the
 * settings as the server's options tree, and restarts with backoff when the server is
 * missing or crashes (one message per outage).
 */
import * as os from "os";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

import { DEFAULT_BACKOFF, RestartPolicy } from "./backoff";
import { needsRestart, OptionsTree, SERVER_SETTINGS, serverCommand, toOptionsTree } from "./settings";
import { formatStats, formatStatus, ServerStats, ServerStatus, summarizeStats } from "./status";
import { findExecutable } from "./which";

const ACCEPT_COMMAND = "inkling.accept";
const STATUS_NOTIFICATION = "inkling/status";
const STATS_REQUEST = "inkling/stats";

/** The language client, minus its own error notifications: failures are reported by Inkling, once. */
class QuietLanguageClient extends LanguageClient {
  public error(message: string, data?: unknown, showNotification?: boolean | "force"): void {
    void showNotification;
    super.error(message, data, false);
  }

  /**
   * When the server dies during `initialize` the library calls `void this.stop()` on a
   * client that is still starting, which rejects with nobody listening; callers that await
   * stop() still see the rejection.
   */
  public start(): Promise<void> {
    const starting = super.start();
    // If the connection closes during start, the library drops its start promise (already
    // rejected) and start() resolves with nothing: mark that promise handled too. The caller
    // checks isRunning() afterwards.
    (this as unknown as { _onStart?: Promise<void> })._onStart?.catch(() => undefined);
    return starting;
  }

  public stop(timeout?: number): Promise<void> {
    const stopping = super.stop(timeout);
    stopping.catch(() => undefined);
    return stopping;
  }
}

class Inkling implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private generation = 0;
  private failedGeneration = -1;
  private restartTimer: NodeJS.Timeout | undefined;
  private lastStatus: ServerStatus | undefined;
  private lastError = "";
  private policy = new RestartPolicy(DEFAULT_BACKOFF);
  private readonly statusItem: vscode.StatusBarItem;
  private readonly output: vscode.LogOutputChannel;
  private readonly clientDisposables: vscode.Disposable[] = [];
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    this.policy = this.restartPolicy();
    this.output = vscode.window.createOutputChannel("inkling", { log: true });
    this.statusItem = vscode.window.createStatusBarItem("inkling.status", vscode.StatusBarAlignment.Right, 100);
    this.statusItem.name = "inkling";
    this.statusItem.command = "inkling.showStats";
    this.statusItem.show();
    this.disposables.push(
      this.output,
      this.statusItem,
      vscode.commands.registerCommand("inkling.toggle", () => this.toggle()),
      vscode.commands.registerCommand("inkling.showStats", () => this.showStats()),
      vscode.commands.registerCommand("inkling.restart", () => this.restart()),
      vscode.commands.registerCommand("inkling.showLog", () => this.output.show(true)),
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
    );
  }

  // ------------------------------------------------------------------ settings
  private config(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration("inkling");
  }

  private restartPolicy(): RestartPolicy {
    const cfg = this.config();
    const initialMs = cfg.get<number>("restart.initialDelayMs", DEFAULT_BACKOFF.initialMs);
    const maxMs = Math.max(initialMs, cfg.get<number>("restart.maxDelayMs", DEFAULT_BACKOFF.maxMs));
    return new RestartPolicy({ ...DEFAULT_BACKOFF, initialMs, maxMs });
  }

  private get enabled(): boolean {
    return this.config().get<boolean>("enable", true);
  }

  /** The settings as the server's options tree (initializationOptions / didChangeConfiguration). */
  private options(): OptionsTree {
    const cfg = this.config();
    const flat: Record<string, unknown> = {};
    for (const key of SERVER_SETTINGS) {
      flat[key] = cfg.get(key);
    }
    return toOptionsTree(flat);
  }

  private async onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!e.affectsConfiguration("inkling")) {
      return;
    }
    const affects = (name: string) => e.affectsConfiguration(`inkling.${name}`);
    if (affects("enable")) {
      if (this.enabled) {
        this.policy.reset();
        await this.start();
      } else {
        await this.stop();
        this.setStatus({ state: "off" });
      }
      return;
    }
    if (affects("restart")) {
      this.policy = this.restartPolicy();
    }
    if (needsRestart(affects)) {
      await this.restart();
      return;
    }
    if (SERVER_SETTINGS.some(affects) && this.client?.isRunning()) {
      const settings = this.options();
      this.output.info(`sending settings: ${JSON.stringify(settings)}`);
      await this.client.sendNotification(DidChangeConfigurationNotification.type, { settings });
    }
  }

  // ------------------------------------------------------------------ status
  private setStatus(status: ServerStatus): void {
    this.lastStatus = status;
    const view = formatStatus(status);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor =
      view.severity === "error" ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.severity === "warning" ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  // ------------------------------------------------------------------ lifecycle
  async start(): Promise<void> {
    if (!this.enabled) {
      this.setStatus({ state: "off" });
      return;
    }
    this.clearRestartTimer();
    await this.disposeClient();
    const gen = ++this.generation;
    const cfg = this.config();
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const { command, args } = serverCommand(cfg.get("serverCommand"), cfg.get("pythonPath"),
      { workspaceFolder: folder, userHome: os.homedir() });
    const resolved = findExecutable(command, process.env, process.platform, folder ?? process.cwd());
    if (!resolved) {
      this.fail(gen, `cannot start the server: "${command}" was not found or is not executable ` +
        "(set inkling.pythonPath or inkling.serverCommand)");
      return;
    }
    const languages = cfg.get<string[]>("languages", []);
    const serverOptions: ServerOptions = {
      command: resolved,
      args,
      transport: TransportKind.stdio,
      options: folder ? { cwd: folder } : undefined,
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: languages.flatMap((language) => [
        { scheme: "file", language },
        { scheme: "untitled", language },
      ]),
      initializationOptions: () => this.options(),
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          this.fail(gen, "the server stopped unexpectedly");
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      initializationFailedHandler: (error) => {
        this.fail(gen, `the server failed to initialize: ${error instanceof Error ? error.message : String(error)}`);
        return false;
      },
      middleware: {
        // VS Code calls this on typing (automatic) and when cycling drafts (invoked): the
        // request is asynchronous and cancellable, so typing never waits for the model.
        provideInlineCompletionItems: (document, position, context, token, next) =>
          this.enabled ? next(document, position, context, token) : null,
      },
    };
    const client = new QuietLanguageClient("inkling", "inkling", serverOptions, clientOptions);
    this.client = client;
    this.clientDisposables.push(client.onNotification(STATUS_NOTIFICATION, (params: ServerStatus) => {
      if (gen === this.generation) {
        this.setStatus(params);
        if (params.state === "ready") {
          this.policy.started();
        }
      }
    }));
    this.setStatus({ state: "starting", message: [resolved, ...args].join(" ") });
    this.output.info(`starting ${[resolved, ...args].join(" ")}`);
    try {
      await client.start();
    } catch (error) {
      this.fail(gen, `the server did not start: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (gen !== this.generation) {
      return;
    }
    if (!client.isRunning()) {     // it closed while starting (the close handler said so)
      this.fail(gen, "the server stopped while starting");
      return;
    }
    this.policy.started();
    this.ensureAcceptCommand(client);
  }

  /**
   * The items' command `inkling.accept` must reach the server. vscode-languageclient
   * registers a forwarding command for every command the server lists in
   * executeCommandProvider (inkling's does); a server that does not list it gets ours.
   */
  private ensureAcceptCommand(client: LanguageClient): void {
    const listed = client.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    if (listed.includes(ACCEPT_COMMAND)) {
      return;
    }
    this.clientDisposables.push(vscode.commands.registerCommand(ACCEPT_COMMAND, (...args: unknown[]) =>
      client.sendRequest(ExecuteCommandRequest.type, { command: ACCEPT_COMMAND, arguments: args })
        .catch((error: unknown) => this.output.warn(`${ACCEPT_COMMAND} failed: ${String(error)}`))));
  }

  /** A failure of generation `gen`: error status, one message per outage, a restart with backoff. */
  private fail(gen: number, message: string): void {
    if (gen !== this.generation || this.failedGeneration === gen) {
      return;               // an old client, or a failure already counted (start and closed both fire)
    }
    this.failedGeneration = gen;
    const { report, delayMs, failures } = this.policy.failed();
    this.lastError = message;
    this.output.error(`${message} (failure ${failures}; restarting in ${delayMs / 1000} s)`);
    this.setStatus({ state: "error", message: `${message}; restarting in ${Math.round(delayMs / 1000)} s` });
    if (report) {
      void vscode.window.showErrorMessage(`inkling: ${message}. It is restarted in the background.`,
        "Show log", "Restart now").then((choice) => {
        if (choice === "Show log") {
          this.output.show(true);
        } else if (choice === "Restart now") {
          void this.restart();
        }
      });
    }
    this.clearRestartTimer();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (gen === this.generation && this.enabled) {
        void this.start();
      }
    }, delayMs);
  }

  private clearRestartTimer(): void {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
    }
  }

  private async disposeClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const d of this.clientDisposables.splice(0)) {
      d.dispose();
    }
    if (client) {
      try {
        await client.dispose(2000);
      } catch (error) {
        this.output.warn(`stopping the server: ${String(error)}`);
      }
    }
  }

  async stop(): Promise<void> {
    this.clearRestartTimer();
    this.generation++;
    await this.disposeClient();
  }

  async restart(): Promise<void> {
    this.policy.reset();
    await this.stop();
    await this.start();
  }

  // ------------------------------------------------------------------ commands
  private async toggle(): Promise<void> {
    await this.config().update("enable", !this.enabled, vscode.ConfigurationTarget.Global);
    void vscode.window.showInformationMessage(`inkling ${this.enabled ? "enabled" : "disabled"}`);
  }

  private async showStats(): Promise<void> {
    if (!this.enabled) {
      const choice = await vscode.window.showInformationMessage("inkling is off.", "Turn on");
      if (choice === "Turn on") {
        await this.toggle();
      }
      return;
    }
    const client = this.client;
    if (!client || !client.isRunning()) {
      const choice = await vscode.window.showWarningMessage(
        `inkling: the server is not running${this.lastError ? `: ${this.lastError}` : ""}.`, "Restart now", "Show log");
      if (choice === "Restart now") {
        await this.restart();
      } else if (choice === "Show log") {
        this.output.show(true);
      }
      return;
    }
    try {
      const stats = await client.sendRequest<ServerStats>(STATS_REQUEST, {});
      this.output.info(["inkling/stats", ...formatStats(stats).map((l) => "  " + l)].join("\n"));
      const choice = await vscode.window.showInformationMessage(summarizeStats(stats), "Details");
      if (choice === "Details") {
        this.output.show(true);
      }
    } catch (error) {
      void vscode.window.showWarningMessage(`inkling: ${STATS_REQUEST} failed: ${String(error)}`);
    }
  }

  /** For tests and other extensions: what the status bar shows, and the failure count. */
  api(): InklingApi {
    return {
      status: () => this.lastStatus,
      statusText: () => this.statusItem.text,
      failures: () => this.policy.consecutiveFailures,
      isRunning: () => this.client?.isRunning() ?? false,
      stats: async () => (this.client?.isRunning() ? this.client.sendRequest<ServerStats>(STATS_REQUEST, {}) : undefined),
    };
  }

  dispose(): void {
    void this.stop();
    for (const d of this.disposables.splice(0)) {
      d.dispose();
    }
  }
}

/** What activate() returns (the extension's API). */
export interface InklingApi {
  status(): ServerStatus | undefined;
  statusText(): string;
  failures(): number;
  isRunning(): boolean;
  stats(): Promise<ServerStats | undefined>;
}

let inkling: Inkling | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<InklingApi> {
  inkling = new Inkling();
  context.subscriptions.push(inkling);
  // never block activation on the model: the server loads it after initialize
  void inkling.start();
  return inkling.api();
}

export async function deactivate(): Promise<void> {
  await inkling?.stop();
  inkling = undefined;
}
