// A small stand-in for the `vscode` module, enough for vscode-languageclient and the
// extension to run under plain Node: it records what the extension registers and shows
// (commands, providers, messages, the status bar item) so tests can drive and inspect it.
// Anything not modelled here is a permissive proxy (functions that return disposables).
"use strict";

const Module = require("module");
const path = require("path");

class Disposable {
  constructor(fn) { this._fn = fn; }
  static from(...items) { return new Disposable(() => items.forEach((d) => d && d.dispose && d.dispose())); }
  dispose() { if (this._fn) { const fn = this._fn; this._fn = undefined; fn(); } }
}

class EventEmitter {
  constructor() { this._listeners = new Set(); }
  get event() {
    return (listener, thisArg, disposables) => {
      const l = thisArg ? listener.bind(thisArg) : listener;
      this._listeners.add(l);
      const d = new Disposable(() => this._listeners.delete(l));
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(value) { for (const l of [...this._listeners]) l(value); }
  dispose() { this._listeners.clear(); }
}

class CancellationTokenSource {
  constructor() {
    const emitter = new EventEmitter();
    this._emitter = emitter;
    this.token = { isCancellationRequested: false, onCancellationRequested: emitter.event };
  }
  cancel() { if (!this.token.isCancellationRequested) { this.token.isCancellationRequested = true; this._emitter.fire(); } }
  dispose() { this._emitter.dispose(); }
}

class CancellationError extends Error {}

class Position {
  constructor(line, character) { this.line = line; this.character = character; }
  isEqual(o) { return o.line === this.line && o.character === this.character; }
}

class Range {
  constructor(a, b, c, d) {
    if (typeof a === "number") { this.start = new Position(a, b); this.end = new Position(c, d); }
    else { this.start = a; this.end = b; }
  }
  get isEmpty() { return this.start.isEqual(this.end); }
}

class Uri {
  constructor(scheme, fsPath) { this.scheme = scheme; this.fsPath = fsPath; this.path = fsPath; }
  static file(p) { return new Uri("file", path.resolve(p)); }
  static parse(s) {
    if (s.startsWith("file://")) return new Uri("file", decodeURIComponent(s.slice(7)));
    const i = s.indexOf(":");
    return new Uri(s.slice(0, i), s.slice(i + 1));
  }
  toString() { return this.scheme === "file" ? "file://" + this.fsPath : `${this.scheme}:${this.fsPath}`; }
  toJSON() { return this.toString(); }
  with() { return this; }
}

class ThemeColor { constructor(id) { this.id = id; } }
class MarkdownString { constructor(value) { this.value = value || ""; } appendText(t) { this.value += t; return this; } appendMarkdown(t) { this.value += t; return this; } }
class SnippetString { constructor(value) { this.value = value; } }
class InlineCompletionItem { constructor(insertText, range, command) { this.insertText = insertText; this.range = range; this.command = command; } }
class InlineCompletionList { constructor(items) { this.items = items; } }

/** A permissive stand-in: callable, constructible, every property another stand-in. */
function anything(name) {
  const fn = function () { return new Disposable(() => {}); };
  return new Proxy(fn, {
    get(target, prop) {
      if (prop === "then") return undefined;              // not a promise
      if (prop === Symbol.toPrimitive) return () => 0;
      if (prop === "prototype") return target.prototype;
      if (!(prop in target)) target[prop] = anything(`${name}.${String(prop)}`);
      return target[prop];
    },
    construct() { return {}; },
  });
}

/**
 * `settings`: what the user set (user settings); `defaults`: the contributed defaults. `get`
 * gives the first of them that is set, `inspect` tells them apart, as VS Code does.
 */
function createFakeVscode(settings = {}, defaults = {}) {
  const recorded = {
    commands: new Map(),
    inlineProviders: [],
    messages: [],          // {level, text}
    statusItem: undefined,
    output: [],
    configListeners: new EventEmitter(),
  };
  const store = { ...settings };
  const documents = [];
  const openEmitter = new EventEmitter();

  function getConfiguration(section) {
    const prefix = section ? section + "." : "";
    return {
      get(key, dflt) {
        const v = store[prefix + key];
        const d = defaults[prefix + key];
        return v !== undefined ? v : d !== undefined ? d : dflt;
      },
      has(key) { return (prefix + key) in store || (prefix + key) in defaults; },
      inspect(key) { return { key: prefix + key, defaultValue: defaults[prefix + key], globalValue: store[prefix + key] }; },
      async update(key, value) {
        store[prefix + key] = value;
        const changed = prefix + key;
        recorded.configListeners.fire({
          affectsConfiguration: (s) => changed === s || changed.startsWith(s + ".") || s.startsWith(changed + "."),
        });
      },
    };
  }

  function outputChannel(name) {
    const log = (level) => (...args) => recorded.output.push(`[${level}] ${args.map(String).join(" ")}`);
    return {
      name, logLevel: 2, onDidChangeLogLevel: new EventEmitter().event,
      append: log("append"), appendLine: log("line"), replace() {}, clear() {}, show() {}, hide() {}, dispose() {},
      trace: log("trace"), debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error"),
    };
  }

  function message(level) {
    return (text) => { recorded.messages.push({ level, text }); return Promise.resolve(undefined); };
  }

  function matches(selector, document) {
    const list = Array.isArray(selector) ? selector : [selector];
    return list.some((s) => typeof s === "string" ? s === document.languageId
      : (!s.language || s.language === document.languageId) && (!s.scheme || s.scheme === document.uri.scheme)) ? 10 : 0;
  }

  const vscode = {
    version: "1.91.0",
    Disposable, EventEmitter, CancellationTokenSource, CancellationError, Position, Range, Uri, ThemeColor,
    MarkdownString, SnippetString, InlineCompletionItem, InlineCompletionList,
    StatusBarAlignment: { Left: 1, Right: 2 },
    ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
    InlineCompletionTriggerKind: { Invoke: 0, Automatic: 1 },
    LogLevel: { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    env: { machineId: "test", sessionId: "test", language: "en", appName: "fake", appRoot: "/", uriScheme: "vscode" },
    commands: {
      registerCommand(id, fn) {
        if (recorded.commands.has(id)) throw new Error(`command '${id}' already exists`);
        recorded.commands.set(id, fn);
        return new Disposable(() => recorded.commands.delete(id));
      },
      async executeCommand(id, ...args) {
        const fn = recorded.commands.get(id);
        if (!fn) throw new Error(`command '${id}' not found`);
        return fn(...args);
      },
      async getCommands() { return [...recorded.commands.keys()]; },
    },
    window: new Proxy({
      createOutputChannel: outputChannel,
      createStatusBarItem() {
        recorded.statusItem = { text: "", tooltip: "", show() {}, hide() {}, dispose() {} };
        return recorded.statusItem;
      },
      showErrorMessage: message("error"),
      showWarningMessage: message("warning"),
      showInformationMessage: message("info"),
      withProgress: (_opts, task) => task({ report() {} }, new CancellationTokenSource().token),
      visibleTextEditors: [],
      activeTextEditor: undefined,
      tabGroups: { all: [], onDidChangeTabs: new EventEmitter().event, onDidChangeTabGroups: new EventEmitter().event },
    }, { get: (t, p) => (p in t ? t[p] : (t[p] = anything(`window.${String(p)}`))) }),
    workspace: new Proxy({
      getConfiguration,
      onDidChangeConfiguration: recorded.configListeners.event,
      workspaceFolders: undefined,
      get textDocuments() { return documents; },
      onDidOpenTextDocument: openEmitter.event,
      getWorkspaceFolder: () => undefined,
    }, { get: (t, p) => (p in t ? t[p] : (t[p] = anything(`workspace.${String(p)}`))) }),
    languages: new Proxy({
      match: matches,
      registerInlineCompletionItemProvider(selector, provider) {
        const entry = { selector, provider };
        recorded.inlineProviders.push(entry);
        return new Disposable(() => recorded.inlineProviders.splice(recorded.inlineProviders.indexOf(entry), 1));
      },
    }, { get: (t, p) => (p in t ? t[p] : (t[p] = anything(`languages.${String(p)}`))) }),
  };
  const module = new Proxy(vscode, { get: (t, p) => (p in t ? t[p] : (t[p] = anything(String(p)))) });

  /** Open a document: the language client sends didOpen for it (`setText` changes it, unannounced). */
  function openDocument(file, text, languageId = "python") {
    let lines = text.split("\n");
    const doc = {
      uri: Uri.file(file), fileName: file, languageId, version: 1, isClosed: false, isUntitled: false, isDirty: false,
      eol: 1, get lineCount() { return lines.length; },
      getText: (range) => (range ? text.slice(doc.offsetAt(range.start), doc.offsetAt(range.end)) : text),
      setText: (next) => { text = next; lines = text.split("\n"); doc.version += 1; },
      lineAt: (n) => ({ text: lines[typeof n === "number" ? n : n.line] }),
      offsetAt: (pos) => lines.slice(0, pos.line).reduce((a, l) => a + l.length + 1, 0) + pos.character,
      positionAt: (offset) => {
        let line = 0;
        while (line < lines.length - 1 && offset > lines[line].length) { offset -= lines[line].length + 1; line++; }
        return new Position(line, offset);
      },
      save: async () => true,
    };
    documents.push(doc);
    openEmitter.fire(doc);
    return doc;
  }

  return { module, recorded, store, openDocument };
}

/** Make `require("vscode")` return `fake` from now on. */
function install(fake) {
  const original = Module._load;
  Module._load = function (request, parent, isMain) {
    if (request === "vscode") return fake.module;
    return original.call(this, request, parent, isMain);
  };
  return () => { Module._load = original; };
}

module.exports = { createFakeVscode, install };
