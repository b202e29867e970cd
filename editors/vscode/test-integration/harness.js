// Loads the compiled extension against the fake `vscode` module and activates it.
"use strict";

const path = require("path");
const { createFakeVscode, install } = require("./fake-vscode");

/** The contributed settings' defaults, as VS Code would apply them. */
function contributedDefaults() {
  const pkg = require(path.join(__dirname, "..", "package.json"));
  const out = {};
  for (const [key, spec] of Object.entries(pkg.contributes.configuration.properties)) {
    out[key] = spec.default;
  }
  return out;
}

async function activate(settings) {
  const fake = createFakeVscode({ ...contributedDefaults(), ...settings });
  install(fake);
  const extension = require(path.join(__dirname, "..", "out", "extension.js"));
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

module.exports = { activate, waitFor, sleep };
