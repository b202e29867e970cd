/**
 * inkling for VS Code: starts `inkling serve` with vscode-languageclient, which provides the
 * server's inline completions (drafts cycled with VS Code's own next / previous inline
 * suggestion commands, the item's `inkling.accept` command forwarded to the server with
 * workspace/executeCommand). Adds a status bar item fed by `inkling/status`, commands, the
 * settings as the server's options tree, and restarts with backoff when the server is
 * missing or crashes (one message per outage).
 */
import * as os from "os";
import * as readline from "readline";
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
  State,
  TransportKind,
} from "vscode-languageclient/node";

import { DEFAULT_BACKOFF, RestartPolicy } from "./backoff";
import { EnableSetting, enabledForLanguage, globallyEnabled, remaining, triggerMode, TriggerMode, withEnabled } from "./enablement";
import { attaches, needsRestart, OptionsTree, SERVER_SETTINGS, serverCommand, toOptionsTree, userValue } from "./settings";
import { formatStats, formatStatus, ServerStats, ServerStatus, stderrLevel, summarizeStats } from "./status";
import { findExecutable } from "./which";

const ACCEPT_COMMAND = "inkling.accept";
const STATUS_NOTIFICATION = "inkling/status";
const STATS_REQUEST = "inkling/stats";
const LAST_COMPLETION_REQUEST = "inkling/lastCompletion";

/** The drafts of the last answer, kept to follow typing along them without asking again. */
interface Offered {
  uri: string;
  /** The document offset the drafts start at, and the text of its line before it. */
  anchor: number;
  linePrefix: string;
  items: { text: string; command?: vscode.Command }[];
}

/** The language client, minus its own error notifications: failures are reported by Inkling, once. */
class QuietLanguageClient extends LanguageClient {
  /** Stopped on purpose (restart, toggle of the command, deactivate): what it says as it goes is no error. */
  public retired = false;

  public error(message: string, data?: unknown, showNotification?: boolean | "force"): void {
    void showNotification;
    if (this.retired) {
      super.info(`${message} (stopping on purpose)`, data, false);
      return;
    }
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

/**
 * The server's standard error, line by line, at the level its logging gave each line
 * ("2025-01-01 12:00:00,000 inkling.server WARNING ..."; a traceback's lines follow the
 * line they belong to): the language client would log every one as an error.
 */
function serverStderr(client: () => QuietLanguageClient | undefined) {
  return (input: NodeJS.ReadableStream, channel: vscode.OutputChannel) => {
    const log = channel as vscode.LogOutputChannel;
    let level = "info";
    readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on("line", (line: string) => {
      level = stderrLevel(line, level);
      const retired = client()?.retired ?? false;
      const write = retired || level === "info" ? log.info : level === "warn" ? log.warn : log.error;
      write.call(log, line);
    });
  };
}

class Inkling implements vscode.Disposable {
  private client: QuietLanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private generation = 0;
  private failedGeneration = -1;
  private restartTimer: NodeJS.Timeout | undefined;
  private lastStatus: ServerStatus | undefined;
  private lastError = "";
  private policy = new RestartPolicy(DEFAULT_BACKOFF);
  /** Documents turned off for this session (inkling: Toggle completions for this file). */
  private readonly offDocuments = new Set<string>();
  private offered: Offered | undefined;
  /** Stopping on purpose (restart, deactivate): the client's complaints are no failures. */
  private stopping = 0;
  /** No document of `inkling.languages` was open at start: the first one opened starts the server. */
  private waiting = false;
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
      vscode.commands.registerCommand("inkling.toggleLanguage", () => this.toggleLanguage()),
      vscode.commands.registerCommand("inkling.toggleFile", () => this.toggleFile()),
      vscode.commands.registerCommand("inkling.toggleTriggerMode", () => this.toggleTriggerMode()),
      vscode.commands.registerCommand("inkling.showStats", () => this.showStats()),
      vscode.commands.registerCommand("inkling.restart", () => this.restart()),
      vscode.commands.registerCommand("inkling.showLog", () => this.output.show(true)),
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
      vscode.window.onDidChangeActiveTextEditor(() => this.showStatus()),
      vscode.workspace.onDidOpenTextDocument((document) => this.onOpened(document)),
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

  /** Completions are on at all (`inkling.enable`, or its "*"). */
  private get enabled(): boolean {
    return globallyEnabled(this.config().get<EnableSetting>("enable"));
  }

  private get triggerMode(): TriggerMode {
    return triggerMode(this.config().get("triggerMode"));
  }

  /** Why completions are off for a document ("" when they are on). */
  private offReason(document: vscode.TextDocument | undefined): string {
    const setting = this.config().get<EnableSetting>("enable");
    if (!globallyEnabled(setting)) {
      return "off";
    }
    if (!document) {
      return "";
    }
    if (!enabledForLanguage(setting, document.languageId)) {
      return `off for ${document.languageId}`;
    }
    if (this.offDocuments.has(document.uri.toString())) {
      return "off for this file";
    }
    return "";
  }

  /**
   * The settings as the server's options tree (initializationOptions / didChangeConfiguration):
   * only the values the user set (user, workspace or folder settings); the defaults are the
   * server's own, so they are not sent.
   */
  private options(): OptionsTree {
    const cfg = this.config();
    const flat: Record<string, unknown> = {};
    for (const key of SERVER_SETTINGS) {
      flat[key] = userValue(cfg.inspect(key));
    }
    return toOptionsTree(flat);
  }

  private async onConfigurationChanged(e: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!e.affectsConfiguration("inkling")) {
      return;
    }
    const affects = (name: string) => e.affectsConfiguration(`inkling.${name}`);
    if (affects("enable") || affects("triggerMode")) {
      // Turning completions off keeps the server (and its loaded model): on again is instant.
      if (this.enabled && !this.client && !this.restartTimer) {
        this.policy.reset();
        await this.start();
      }
      this.showStatus();
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
  /** The server's state (from inkling/status, or ours while it starts or fails). */
  private setStatus(status: ServerStatus): void {
    this.lastStatus = status;
    this.showStatus();
  }

  /** The status bar: "off" where completions are off for the active editor, else the server's state. */
  private showStatus(): void {
    const off = this.offReason(vscode.window.activeTextEditor?.document);
    const status: ServerStatus | undefined = off ? { state: "off", message: off } : this.lastStatus;
    if (status?.state === "waiting") {
      this.statusItem.hide();       // nothing to say in a window without a file inkling completes
      return;
    }
    this.statusItem.show();
    const view = formatStatus(status);
    const manual = this.triggerMode === "manual" && !off;
    this.statusItem.text = view.text + (manual ? " $(keyboard)" : "");
    this.statusItem.tooltip = view.tooltip + (manual ? "\nManual trigger mode: Alt+\\ asks for a suggestion." : "");
    this.statusItem.accessibilityInformation = { label: view.label + (manual ? ", manual trigger" : ""), role: "button" };
    this.statusItem.backgroundColor =
      view.severity === "error" ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.severity === "warning" ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  // ------------------------------------------------------------------ typing along
  /** Keep the drafts of an answer, to follow typing along them (across a newline too). */
  private remember(document: vscode.TextDocument, position: vscode.Position,
    result: vscode.InlineCompletionItem[] | vscode.InlineCompletionList | null | undefined): void {
    const items = Array.isArray(result) ? result : result?.items ?? [];
    const offered: Offered["items"] = [];
    let anchor: vscode.Position | undefined;
    for (const item of items) {
      const text = typeof item.insertText === "string" ? item.insertText : undefined;
      const start = item.range?.start ?? position;
      if (text === undefined || !(item.range === undefined || item.range.isEmpty) || (anchor && !start.isEqual(anchor))) {
        continue;
      }
      anchor = start;
      offered.push({ text, command: item.command });
    }
    if (!anchor || offered.length === 0) {
      return;     // keep the last drafts: an empty answer while typing along them is no news
    }
    this.offered = {
      uri: document.uri.toString(), anchor: document.offsetAt(anchor),
      linePrefix: document.lineAt(anchor.line).text.slice(0, anchor.character), items: offered,
    };
  }

  /** What is left of the last drafts after what was typed since, as items at the cursor, or undefined. */
  private typedAlong(document: vscode.TextDocument, position: vscode.Position): vscode.InlineCompletionItem[] | undefined {
    const o = this.offered;
    if (!o || o.uri !== document.uri.toString()) {
      return undefined;
    }
    const cursor = document.offsetAt(position);
    if (cursor < o.anchor) {
      return undefined;
    }
    const anchor = document.positionAt(o.anchor);
    if (document.lineAt(anchor.line).text.slice(0, anchor.character) !== o.linePrefix) {
      return undefined;
    }
    const typed = document.getText(new vscode.Range(anchor, position));
    const items: vscode.InlineCompletionItem[] = [];
    for (const item of o.items) {
      const rest = remaining(item.text, typed);
      if (rest !== undefined) {
        items.push(new vscode.InlineCompletionItem(rest, new vscode.Range(position, position), item.command));
      }
    }
    return items.length > 0 ? items : undefined;
  }

  private async provideInline(document: vscode.TextDocument, position: vscode.Position,
    context: vscode.InlineCompletionContext, token: vscode.CancellationToken,
    next: (document: vscode.TextDocument, position: vscode.Position, context: vscode.InlineCompletionContext,
      token: vscode.CancellationToken) => vscode.ProviderResult<vscode.InlineCompletionItem[] | vscode.InlineCompletionList>,
  ): Promise<vscode.InlineCompletionItem[] | vscode.InlineCompletionList | null | undefined> {
    if (this.offReason(document)) {
      return null;
    }
    if (context.triggerKind === vscode.InlineCompletionTriggerKind.Automatic) {
      // typing along the drafts on screen (a newline and its indentation included): the
      // rest of them at once, without asking the server
      const along = this.typedAlong(document, position);
      if (along) {
        return along;
      }
      if (this.triggerMode === "manual") {
        return null;
      }
    }
    const result = await next(document, position, context, token);
    if (!token.isCancellationRequested) {
      this.remember(document, position, result);
    }
    return result;
  }

  // ------------------------------------------------------------------ lifecycle
  /** Whether a document of a language inkling completes is open (the server is started for one). */
  private wanted(): boolean {
    const languages = this.config().get<string[]>("languages", []);
    return vscode.workspace.textDocuments.some((d) => attaches(languages, d.languageId, d.uri.scheme));
  }

  private onOpened(document: vscode.TextDocument): void {
    if (this.waiting && attaches(this.config().get<string[]>("languages", []), document.languageId, document.uri.scheme)) {
      void this.start();
    }
  }

  async start(): Promise<void> {
    if (!this.enabled) {
      this.setStatus({ state: "off" });
      return;
    }
    // activated by any language (the setting decides which): no model loads in a window
    // without a file inkling completes
    this.waiting = !this.wanted();
    if (this.waiting) {
      this.setStatus({ state: "waiting" });
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
      stdioOptions: {
        stdout: (input, channel) => readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 })
          .on("line", (line: string) => (channel as vscode.LogOutputChannel).info(line)),
        stderr: serverStderr(() => client),
      },
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
          this.provideInline(document, position, context, token, next),
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
      this.starting = client.start();
      await this.starting;
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
  private ensureAcceptCommand(client: QuietLanguageClient): void {
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
    const starting = this.starting;
    this.client = undefined;
    this.starting = undefined;
    for (const d of this.clientDisposables.splice(0)) {
      d.dispose();
    }
    if (client) {
      client.retired = true;
      if (starting && client.state === State.Starting) {
        // a client cannot be stopped while it starts: let it finish first (or fail)
        await Promise.race([starting.catch(() => undefined), new Promise((r) => setTimeout(r, 30000))]);
      }
      try {
        await client.dispose(5000);
      } catch (error) {
        this.output.info(`stopping the server: ${String(error)}`);
      }
    }
  }

  async stop(): Promise<void> {
    this.clearRestartTimer();
    this.generation++;
    this.stopping++;
    try {
      await this.disposeClient();
    } finally {
      this.stopping--;
    }
  }

  async restart(): Promise<void> {
    this.policy.reset();
    await this.stop();
    await this.start();
  }

  // ------------------------------------------------------------------ commands
  /** Completions on / off everywhere (`inkling.enable`'s "*"); the server keeps running. */
  private async toggle(): Promise<void> {
    const setting = this.config().get<EnableSetting>("enable");
    const on = !globallyEnabled(setting);
    await this.config().update("enable", typeof setting === "boolean" || setting === undefined ? on
      : withEnabled(setting, on), vscode.ConfigurationTarget.Global);
    void vscode.window.showInformationMessage(`inkling ${on ? "enabled" : "disabled"}`);
  }

  /** Completions on / off for the active editor's language (`inkling.enable[languageId]`). */
  private async toggleLanguage(): Promise<void> {
    const document = vscode.window.activeTextEditor?.document;
    if (!document) {
      return;
    }
    const setting = this.config().get<EnableSetting>("enable");
    const on = !enabledForLanguage(setting, document.languageId);
    await this.config().update("enable", withEnabled(setting, on, document.languageId), vscode.ConfigurationTarget.Global);
    this.showStatus();
    void vscode.window.showInformationMessage(`inkling ${on ? "enabled" : "disabled"} for ${document.languageId}`);
  }

  /** Completions on / off for the active editor's file, for this session. */
  private toggleFile(): void {
    const document = vscode.window.activeTextEditor?.document;
    if (!document) {
      return;
    }
    const uri = document.uri.toString();
    const on = this.offDocuments.has(uri);
    if (on) {
      this.offDocuments.delete(uri);
    } else {
      this.offDocuments.add(uri);
    }
    this.showStatus();
    void vscode.window.showInformationMessage(`inkling ${on ? "enabled" : "disabled"} for this file`);
  }

  /** Automatic (as you type) or manual (Alt+\\, cycling) suggestions (`inkling.triggerMode`). */
  private async toggleTriggerMode(): Promise<void> {
    const mode: TriggerMode = this.triggerMode === "manual" ? "automatic" : "manual";
    await this.config().update("triggerMode", mode, vscode.ConfigurationTarget.Global);
    this.showStatus();
    void vscode.window.showInformationMessage(`inkling: ${mode} suggestions${mode === "manual" ? " (Alt+\\ asks for one)" : ""}`);
  }

  private async showStats(): Promise<void> {
    if (!this.enabled && !this.client?.isRunning()) {
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
      lastCompletion: async () => (this.client?.isRunning()
        ? this.client.sendRequest<Record<string, unknown> | null>(LAST_COMPLETION_REQUEST, {}) : undefined),
      starts: () => this.generation,
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
  /** inkling/lastCompletion: the server's figures for its last answer (drafts asked, shown, left out). */
  lastCompletion(): Promise<Record<string, unknown> | null | undefined>;
  /** How many times a server was started (or stopped) by this extension. */
  starts(): number;
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
