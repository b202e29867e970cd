// Loads the compiled extension against the fake `vscode` module and activates it.
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { createFakeVscode, install } = require("./fake-vscode");

/** The contributed settings' defaults, as VS Code would apply them. */
function contributedDefaults() {
  const pkg = require(path.join(__dirname, "..", "package.json"));
  const out = {};
  const sections = [].concat(pkg.contributes.configuration);   // one section or several
  for (const [key, spec] of sections.flatMap((s) => Object.entries(s.properties))) {
    out[key] = spec.default;
  }
  return out;
}

/**
 * Activate the extension as VS Code does when a file is opened: with a Python document
 * open (an empty one in a temporary folder), so the server starts; `language` another.
 */
async function activate(settings, language = "python") {
  const fake = createFakeVscode(settings, contributedDefaults());
  install(fake);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "inkling-activation-"));
  fake.openDocument(path.join(dir, `first.${language}`), "", language);
  // a fresh extension (and language client) bound to this fake, also on a second activation
  const root = path.join(__dirname, "..");
  for (const key of Object.keys(require.cache)) {
    if (key.startsWith(path.join(root, "out")) || key.includes(`${path.sep}vscode-languageclient${path.sep}`)) {
      delete require.cache[key];
    }
  }
  const extension = require(path.join(root, "out", "extension.js"));
  const context = { subscriptions: [] };
  const api = await extension.activate(context);
  return { fake, api, extension, context };
}

async function waitFor(predicate, timeoutMs, stepMs = 25) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The scripted server (tests/editors/editor_fake_server.py) with INKLING_TEST_PYTHON, else undefined. */
function fakeServer() {
  const python = process.env.INKLING_TEST_PYTHON;
  return python ? [python, path.join(__dirname, "..", "..", "..", "tests", "editors", "editor_fake_server.py")] : undefined;
}

/** Ask the provider the language client registered, as VS Code does (0: invoked, 1: automatic). */
async function provide(fake, doc, line, character, triggerKind) {
  const { provider } = fake.recorded.inlineProviders[0];
  const { CancellationTokenSource, Position } = fake.module;
  const result = await provider.provideInlineCompletionItems(doc, new Position(line, character),
    { triggerKind, selectedCompletionInfo: undefined }, new CancellationTokenSource().token);
  return result ? (Array.isArray(result) ? result : result.items) : result;
}

module.exports = { activate, waitFor, sleep, fakeServer, provide };
